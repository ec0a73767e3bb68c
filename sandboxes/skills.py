"""Data-injection skills: named, parameterised changes that put an app into a known state."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Skill:
    """A skill the coding agent wrote. `sql` skills run statements with named parameters on the app DB."""

    name: str
    sandbox: str
    kind: str  # sql | local_storage | python
    description: str
    spec: dict[str, Any] = field(hash=False)

    @property
    def skill_id(self) -> str:
        body = json.dumps([self.sandbox, self.name, self.kind, self.spec], sort_keys=True)
        return f"{self.sandbox}.{self.name}.{hashlib.sha256(body.encode()).hexdigest()[:10]}"


class InjectionError(Exception):
    """A skill could not be applied; the candidate is rejected with `reason` (inject_error, or unsafe_code /
    code_timeout for a python skill that misbehaved in isolation)."""

    def __init__(self, message: str, reason: str = "inject_error") -> None:
        super().__init__(message)
        self.reason = reason


def run_skill(db_path: Path, skill: Skill, args: dict[str, Any]) -> None:
    """`sql` skills run here (statements with named parameters); `python` skills (code the LLM agent wrote,
    defining inject(db_path, args)) run through flywheel.isolation, never in this process."""
    if skill.kind == "sql":
        return run_sql_skill(db_path, skill, args)
    if skill.kind != "python":
        raise InjectionError(f"skill {skill.name}: unknown kind {skill.kind!r}; kinds: sql, python")
    from flywheel.isolation.generated import GeneratedCodeFailed, run_python_skill

    try:
        run_python_skill(db_path, skill.spec.get("code", ""), args)
    except GeneratedCodeFailed as exc:
        raise InjectionError(f"skill {skill.name}: {exc}", exc.gate_reason("inject_error")) from None


def run_sql_skill(db_path: Path, skill: Skill, args: dict[str, Any]) -> None:
    """A database another process holds locked past the (generous) busy wait is the environment's
    (SandboxError), never a verdict on the skill."""
    from sandboxes.app_process import ANSWER_TIMEOUT_S, SandboxError

    statements = skill.spec.get("statements", [])
    con = sqlite3.connect(db_path, timeout=ANSWER_TIMEOUT_S)
    try:
        with con:
            for stmt in statements:
                con.execute(stmt, args)
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise SandboxError(f"the app DB stayed locked while skill {skill.name} ran: {exc}") from None
        raise InjectionError(f"skill {skill.name} failed on the app DB: {exc}") from None
    except sqlite3.Error as exc:
        raise InjectionError(f"skill {skill.name} failed on the app DB: {exc}") from None
    finally:
        con.close()


def local_storage_entries(skill: Skill, args: dict[str, Any]) -> dict[str, str]:
    """A `local_storage` skill: spec {"key": K, "items": "a.b"}, args {"value": V}; stores V under K,
    nested at the dotted path (how the app keeps its records), as JSON text."""
    key = skill.spec.get("key")
    if not isinstance(key, str) or "value" not in args:
        raise InjectionError(f"skill {skill.name}: a local_storage skill needs spec.key and an args.value")
    value = args["value"]
    for part in reversed([p for p in str(skill.spec.get("items", "")).split(".") if p]):
        value = {part: value}
    return {key: json.dumps(value)}
