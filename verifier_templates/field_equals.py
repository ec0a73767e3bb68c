"""The one row picked by a key has a field equal to the expected value (an update landed)."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict, ident, normalise, where_clause

NAME = "field_equals"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    where, args = where_clause(params["key"])
    sql = f"SELECT {ident(params['field'])} FROM {ident(params['table'])} WHERE {where} LIMIT 2"
    return [Probe("values", "sql", sql, args, shape="rows")]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    rows = evidence.final.get("values")
    if not isinstance(rows, list):
        return Verdict(False, f"no rows observed (got {rows!r})")
    if len(rows) != 1:
        return Verdict(False, f"{len(rows)} rows match key {params['key']}; expected exactly one")
    got = rows[0][0] if isinstance(rows[0], (list, tuple)) else rows[0]
    if normalise(got) == normalise(params["value"]):
        return Verdict(True, f"{params['table']}.{params['field']} = {got!r}")
    return Verdict(False, f"{params['table']}.{params['field']} is {got!r}, expected {params['value']!r}")
