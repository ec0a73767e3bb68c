"""Re-runs the validation gate on one stored task (`flywheel tasks validate`)."""

from __future__ import annotations

from typing import Any

from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.synthesis import stored_skills
from flows.task_synthesis.task_spec import TaskSpec
from lake import Lake
from sandboxes.app_process import SandboxError
from sandboxes.drivers import open_driver
from sandboxes.registry import select


def revalidate(task_id: str, truncate: int = 0, lake: Lake | None = None) -> dict[str, Any]:
    """The gate's JSON verdict; with truncate=K the reference loses its last K actions, and the task must
    still pass the verifier to be `verified` (so a sound pair comes back `rejected`)."""
    lake = lake or Lake()
    rows = lake.query("SELECT * FROM tasks WHERE task_id = ?", [task_id]) if lake.files("tasks") else []
    if not rows:
        return {"task_id": task_id, "status": "error", "detail": f"no task {task_id!r} in the lake at {lake.root}; list ids with: flywheel lake sql \"SELECT task_id, instruction FROM tasks\""}
    spec = TaskSpec.from_row(rows[0])
    if truncate:
        spec.reference = spec.reference[: max(0, len(spec.reference) - truncate)]
    manifests, problems = select([spec.sandbox])
    if not manifests:
        return {"task_id": task_id, "status": "error", "detail": "; ".join(str(p) for p in problems)}
    try:
        with open_driver(manifests[0]) as driver:
            result = ValidationGate(driver, stored_skills(lake, spec.sandbox), truncate=0 if truncate else 1).validate(spec)
    except SandboxError as exc:
        return {"task_id": task_id, "status": "error", "detail": str(exc)}
    out = result.to_json() | {"instruction": spec.instruction, "truncated_actions": truncate}
    return out
