"""A sandbox's source moved to a new commit: its stored pairs must prove themselves again.

Verified pairs stored at an older commit are *stale*. The coding agent sees them (the LLM agent gets the
list and the diff, and may retire pairs itself); whatever it does not retire goes through the
validation gate again at the new commit, as a new version of the task (tasks are never edited in place):
- it passes: the new version lands as verified and the old one is retired (`superseded_on_new_commit`);
- it fails: the old one is retired (`verifier_broken_on_new_commit`, the gate's reason in the detail).
After one pass no verified pair of the sandbox points at an old commit, so a re-run does nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

from lake import Lake, utcnow

BROKEN = "verifier_broken_on_new_commit"
SUPERSEDED = "superseded_on_new_commit"


def stale_pairs(lake: Lake | None, sandbox: str, commit: str) -> dict[str, dict[str, Any]]:
    """task_id -> latest row, for the sandbox's verified pairs stored at another commit."""
    if lake is None or not lake.files("tasks"):
        return {}
    rows = lake.query("SELECT * FROM tasks WHERE sandbox = ? AND status = 'verified' AND source_commit <> ?",
                      [sandbox, commit])
    return {r["task_id"]: r for r in rows}


def retire(lake: Lake, run_id: str, sandbox: str, retirements: list[tuple[dict[str, Any], str, str]], by: str) -> None:
    """Append a `retired` row per (stored row, reason code, detail); `by` names the batch (agent | gate)."""
    now = utcnow()
    rows = [row | {"status": "retired", "reason": reason, "reason_detail": detail[:2000], "run_id": run_id,
                   "recorded_at": now} for row, reason, detail in retirements]
    if rows:
        lake.write("tasks", rows, run_id, f"{sandbox}-retired-by-{by}")


def handle_new_commit(manifest, lake: Lake, run_id: str, commit: str, output, workers: int = 1) -> list[str]:
    """Retire what the agent retired, re-gate the rest of the stale pairs at `commit`; returns notes."""
    from flows.task_synthesis import synthesis
    from flows.task_synthesis.gate import ValidationGate
    from flows.task_synthesis.task_spec import TaskSpec
    from sandboxes.pool import SandboxPool

    sandbox = manifest.name
    stale = stale_pairs(lake, sandbox, commit)
    if not stale:
        return []
    by_agent = {r["task_id"]: r for r in getattr(output, "retired", []) if r.get("task_id") in stale}
    retire(lake, run_id, sandbox, [(stale.pop(t), r.get("reason") or "retired_by_agent", r.get("detail") or "")
                                   for t, r in by_agent.items()], by="agent")
    skills = synthesis.stored_skills(lake, sandbox)
    new_skills = [s for s in output.skills if s.name not in skills or skills[s.name].skill_id != s.skill_id]
    skills.update({s.name: s for s in output.skills})
    successors = []
    for row in stale.values():
        old = TaskSpec.from_row(row)
        successors.append(dataclasses.replace(
            old, source_commit=commit, version=old.version + 1,
            provenance=old.provenance | {"supersedes": row["task_id"], "from_commit": row["source_commit"]},
        ))
    gated = SandboxPool(manifest, workers).map(lambda driver, spec: ValidationGate(driver, skills).validate(spec),
                                               successors)
    outcome: Counter = Counter()
    verified, retirements = [], []
    for row, spec, result in zip(stale.values(), successors, gated):
        if result.status == "verified":
            verified.append((spec, result))
            retirements.append((row, SUPERSEDED, f"re-verified at {commit[:12]} as {spec.task_id}"))
        else:
            retirements.append((row, BROKEN, f"{result.reason}: {result.detail}"))
        outcome[SUPERSEDED if result.status == "verified" else BROKEN] += 1
    if verified:
        synthesis.land(lake, run_id, sandbox, "recheck", new_skills, verified)
    retire(lake, run_id, sandbox, retirements, by="gate")
    return [f"{sandbox}: new commit {commit[:12]}: {len(by_agent)} pairs retired by the agent; re-gated "
            f"{len(successors)}: {json.dumps(dict(outcome))}"]
