"""In a JSON file, the field at a dotted path equals the expected value (numbers and text compared normalised)."""

from __future__ import annotations

import json
from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict, normalise

NAME = "json_field_equals"
HOLDS_INITIALLY = False
_MISSING = object()


def probes(params: dict[str, Any]) -> list[Probe]:
    params["field"], params["value"]  # a missing parameter is a bad verifier, found before any sandbox starts
    return [Probe("file", "file", params["path"])]


def _get(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


def _same(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return str(got).lower() == str(want).lower()
    if isinstance(got, (dict, list)) or isinstance(want, (dict, list)):
        return got == want
    return normalise(got) == normalise(want)


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    seen = evidence.final.get("file")
    if not isinstance(seen, dict) or not seen.get("exists") or not isinstance(seen.get("text"), str):
        return Verdict(False, f"{params['path']} does not exist or is not text")
    try:
        data = json.loads(seen["text"])
    except json.JSONDecodeError as exc:
        return Verdict(False, f"{params['path']} is not valid JSON ({exc.msg} at line {exc.lineno})")
    got = _get(data, params["field"])
    if got is _MISSING:
        return Verdict(False, f"{params['path']} has no field {params['field']!r}")
    if _same(got, params["value"]):
        return Verdict(True, f"{params['path']}:{params['field']} = {got!r}")
    return Verdict(False, f"{params['path']}:{params['field']} is {got!r}, expected {params['value']!r}")
