"""In a CSV file, the one row whose key column has the key has a cell equal to the expected value."""

from __future__ import annotations

import csv
import io
from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict, normalise

NAME = "csv_cell_equals"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    for key in ("key_column", "key", "column", "value"):
        params[key]  # a missing parameter is a bad verifier, found before any sandbox starts
    return [Probe("file", "file", params["path"])]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    seen = evidence.final.get("file")
    if not isinstance(seen, dict) or not seen.get("exists") or not isinstance(seen.get("text"), str):
        return Verdict(False, f"{params['path']} does not exist or is not text")
    rows = list(csv.DictReader(io.StringIO(seen["text"])))
    if rows and (params["key_column"] not in rows[0] or params["column"] not in rows[0]):
        return Verdict(False, f"{params['path']} has no column {params['key_column']!r} or {params['column']!r}")
    hits = [r for r in rows if normalise(r.get(params["key_column"], "")) == normalise(params["key"])]
    if len(hits) != 1:
        return Verdict(False, f"{len(hits)} rows of {params['path']} have {params['key_column']} = {params['key']!r}; expected one")
    got = hits[0][params["column"]]
    where = f"{params['path']}[{params['key']}].{params['column']}"
    if normalise(got) == normalise(params["value"]):
        return Verdict(True, f"{where} = {got!r}")
    return Verdict(False, f"{where} is {got!r}, expected {params['value']!r}")
