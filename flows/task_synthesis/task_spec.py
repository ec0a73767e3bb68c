"""A task is data: request, injection, verifier, reference solution, provenance. Never edited in place."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

SYNTHESISER_VERSION = "static-1"


@dataclass
class TaskSpec:
    sandbox: str
    source_commit: str
    family: str  # create | update | delete | retrieve | search | multi_step
    app_area: str
    instruction: str
    params: dict[str, Any]
    seed: int
    injection: list[dict[str, Any]]  # [{"skill": name, "args": {...}}]
    verifier: dict[str, Any]  # {"template": name, "params": {...}}
    reference: list[dict[str, Any]]  # actions (sandboxes.actions)
    provenance: dict[str, Any] = field(default_factory=dict)
    version: int = 1

    @property
    def task_id(self) -> str:
        """Content identity: what is asked (the normalised request), the state it starts from (injection)
        and what counts as done (verifier), at the sandbox's commit. Not the seed or the parameters that
        produced it: two draws that say and check the same thing are one task. The commit stays in the
        key so that a new commit re-gates stored pairs as new versions (DESIGN_NOTES)."""
        key = json.dumps(
            [self.sandbox, self.source_commit, normalised_request(self.instruction), self.injection, self.verifier],
            sort_keys=True, default=str,
        )
        return f"{self.sandbox}-{self.family}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"

    @property
    def difficulty(self) -> str:
        n = len(self.reference)
        return "easy" if n <= 3 else "medium" if n <= 7 else "hard"

    def to_row(self, status: str, reason: str | None, detail: str | None, run_id: str, now: Any) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "version": self.version,
            "sandbox": self.sandbox,
            "source_commit": self.source_commit,
            "family": self.family,
            "app_area": self.app_area,
            "difficulty": self.difficulty,
            "instruction": self.instruction,
            "status": status,
            "reason": reason,
            "reason_detail": detail,
            "seed": self.seed,
            "params_json": _j(self.params),
            "injection_json": _j(self.injection),
            "verifier_json": _j(self.verifier),
            "reference_json": _j(self.reference),
            "provenance_json": _j(self.provenance),
            "run_id": run_id,
            "recorded_at": now,
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TaskSpec:
        return cls(
            sandbox=row["sandbox"],
            source_commit=row["source_commit"],
            family=row["family"],
            app_area=row["app_area"],
            instruction=row["instruction"],
            params=json.loads(row["params_json"]),
            seed=row["seed"],
            injection=json.loads(row["injection_json"]),
            verifier=json.loads(row["verifier_json"]),
            reference=json.loads(row["reference_json"]),
            provenance=json.loads(row["provenance_json"] or "{}"),
            version=row["version"],
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"task_id": self.task_id, "difficulty": self.difficulty}


def normalised_request(text: str) -> str:
    """The request as compared for identity: case, runs of whitespace and closing punctuation ignored."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".?!").strip().casefold()


def dedupe(specs: list[TaskSpec]) -> list[TaskSpec]:
    """The first of each content identity, in order."""
    seen: dict[str, TaskSpec] = {}
    for spec in specs:
        seen.setdefault(spec.task_id, spec)
    return list(seen.values())


def _j(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
