"""The number of matching rows changed by exactly `delta` between injection and the end."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict, ident, where_clause

NAME = "count_changed"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    where, args = where_clause(params.get("where", {}))
    return [Probe("count", "sql", f"SELECT count(*) FROM {ident(params['table'])} WHERE {where}", args)]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    before, after = evidence.initial.get("count"), evidence.final.get("count")
    if not isinstance(before, int) or not isinstance(after, int):
        return Verdict(False, f"counts not observed (initial {before!r}, final {after!r})")
    delta = int(params["delta"])
    if after - before == delta:
        return Verdict(True, f"{params['table']} count went {before} -> {after} (delta {delta})")
    return Verdict(False, f"{params['table']} count went {before} -> {after}; expected delta {delta}")
