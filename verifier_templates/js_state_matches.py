"""The page state (a JS expression's value: a list of records, or one record) holds exactly `count`
records whose fields equal `where` — for apps that keep their state in the page or in localStorage."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict, normalise

NAME = "js_state_matches"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    if not isinstance(params.get("expression"), str) or not params["expression"].strip():
        raise ValueError("js_state_matches needs params.expression, the JS expression that reads the state")
    int(params["count"])
    return [Probe("state", "js", params["expression"])]


def field(record: Any, path: str) -> Any:
    """A dotted path into nested records ("address.city"); None where it leads nowhere."""
    for part in path.split("."):
        record = record.get(part) if isinstance(record, dict) else None
    return record


def matches(record: Any, where: dict[str, Any]) -> bool:
    """Every field equals its value; text trimmed and case-folded, numbers and booleans by their text."""
    return all(
        (got := field(record, path)) is None and want is None
        or got is not None and want is not None and normalise(got) == normalise(want)
        for path, want in where.items()
    )


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    state = evidence.final.get("state")
    if state is None:
        return Verdict(False, "no page state observed (the expression gave null)")
    records = state if isinstance(state, list) else [state]
    where, want = params.get("where", {}), int(params["count"])
    found = sum(1 for r in records if matches(r, where))
    what = ", ".join(f"{k} = {v!r}" for k, v in sorted(where.items())) or "any record"
    if found == want:
        return Verdict(True, f"{found} of {len(records)} records with {what}")
    return Verdict(False, f"{found} of {len(records)} records with {what}; expected {want}")
