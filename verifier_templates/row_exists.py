"""A row matching every field constraint exists (e.g. the address the user asked to add)."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict, ident, where_clause

NAME = "row_exists"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    where, args = where_clause(params["where"])
    return [Probe("matches", "sql", f"SELECT count(*) FROM {ident(params['table'])} WHERE {where}", args)]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    n = evidence.final.get("matches")
    if not isinstance(n, int):
        return Verdict(False, f"no row count observed (got {n!r})")
    want = int(params.get("min_count", 1))
    if n >= want:
        return Verdict(True, f"{n} row(s) in {params['table']} match {params['where']}")
    return Verdict(False, f"{n} row(s) in {params['table']} match {params['where']}; expected at least {want}")
