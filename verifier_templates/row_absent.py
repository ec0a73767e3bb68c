"""No row matches the constraints (e.g. the contact the user asked to delete is gone)."""

from __future__ import annotations

from typing import Any

from verifier_templates import row_exists
from verifier_templates.base import Evidence, Probe, Verdict

NAME = "row_absent"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    return row_exists.probes(params)


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    n = evidence.final.get("matches")
    if not isinstance(n, int):
        return Verdict(False, f"no row count observed (got {n!r})")
    if n == 0:
        return Verdict(True, f"no row in {params['table']} matches {params['where']}")
    return Verdict(False, f"{n} row(s) in {params['table']} still match {params['where']}")
