"""The two ways code the LLM agent wrote is run, both through an isolated runner:

- a **code verifier** defines `judge(evidence, params) -> {"passed": bool, "reason": str}`; it gets the
  probe values as JSON (`{"initial": {...}, "final": {...}}`) and returns a verdict as JSON;
- a **python skill** defines `inject(db_path, args)`; it gets a copy of the app's SQLite file in its work
  dir and the args as JSON; after a clean run the copy goes back into the live database (SQLite's
  backup API, safe while the app serves), so a skill that misbehaves never touches the app's state.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from flywheel.isolation.runners import Job, Runner, RunResult, default_runner
from sandboxes.app_process import sqlite_copy


def code_timeout_s() -> float:
    """Seconds one call of generated code may take: FLYWHEEL_CODE_TIMEOUT_S (default 15)."""
    return float(os.environ.get("FLYWHEEL_CODE_TIMEOUT_S") or 15)


# runner reason -> the validation gate's rejection reason
GATE_REASONS = {"forbidden": "unsafe_code", "oom": "unsafe_code", "killed": "unsafe_code", "timeout": "code_timeout",
                "unavailable": "sandbox_error"}  # the machine, not the code, stopped it: never a verdict


class GeneratedCodeFailed(Exception):
    """Generated code misbehaved or broke its contract; `result` says how."""

    def __init__(self, what: str, result: RunResult) -> None:
        super().__init__(f"{what}: {result.reason} ({result.runner} runner): {result.detail}"[:1000])
        self.result = result

    def gate_reason(self, otherwise: str) -> str:
        """unsafe_code | code_timeout, or `otherwise` (the caller's code for plain errors)."""
        return GATE_REASONS.get(self.result.reason or "", otherwise)


def run_code_judge(code: str, evidence: dict[str, Any], params: dict[str, Any], runner: Runner | None = None,
                   timeout_s: float | None = None) -> tuple[bool, str]:
    job = Job(code, "judge", [evidence, params], timeout_s=timeout_s or code_timeout_s())
    result = (runner or default_runner()).run(job)
    if not result.ok:
        raise GeneratedCodeFailed("code verifier", result)
    value = result.value
    if not isinstance(value, dict) or not isinstance(value.get("passed"), bool):
        result.ok, result.reason, result.detail = False, "error", f"judge returned {str(value)[:200]!r}, not {{passed, reason}}"
        raise GeneratedCodeFailed("code verifier", result)
    return value["passed"], str(value.get("reason") or ("passed" if value["passed"] else "failed"))


def run_python_skill(db_path: Path, code: str, args: dict[str, Any], runner: Runner | None = None,
                     timeout_s: float | None = None) -> RunResult:
    """Runs `inject("app.sqlite", args)` on a copy of the DB and writes the copy back; raises on failure."""
    with tempfile.TemporaryDirectory(prefix="flywheel-skill-") as tmp:
        copy_in, copy_out = Path(tmp) / "in.sqlite", Path(tmp) / "out.sqlite"
        sqlite_copy(db_path, copy_in)
        job = Job(code, "inject", ["app.sqlite", args], files={"app.sqlite": copy_in},
                  fetch={"app.sqlite": copy_out}, timeout_s=timeout_s or code_timeout_s())
        result = (runner or default_runner()).run(job)
        if not result.ok:
            raise GeneratedCodeFailed("python skill", result)
        if not copy_out.is_file():
            result.ok, result.reason, result.detail = False, "error", "the skill removed the database"
            raise GeneratedCodeFailed("python skill", result)
        try:
            sqlite_copy(copy_out, db_path)
        except sqlite3.DatabaseError as exc:
            result.ok, result.reason, result.detail = False, "error", f"the skill left no valid database: {exc}"
            raise GeneratedCodeFailed("python skill", result) from None
    return result
