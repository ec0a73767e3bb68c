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
    """A dotted path into nested records ("address.city", an item of a list by its index: "tags.0"); ""
    is the record itself (a list of plain values); None where it leads nowhere."""
    if path == "":
        return record
    for part in path.split("."):
        if isinstance(record, dict):
            record = record.get(part)
        elif isinstance(record, list) and part.isdigit() and int(part) < len(record):
            record = record[int(part)]
        else:
            return None
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


# ---- from an observed change (reverse synthesis over page state) ----------------------------------------
def from_change(before: Any, after: Any, expression: str, typed: tuple[str, ...] = ()) -> tuple[str, dict[str, Any], str] | None:
    """(family, verifier, what changed) for the clearest change between two page states — one record
    added, removed or changed, or one field set alike on many — or None when there is no clear one.
    The verifier holds after the change and not before it. `typed` values name records first."""
    old, new = _records(before), _records(after)
    if old is None or new is None:
        return None
    added = [r for r in new if r not in old]
    gone = [r for r in old if r not in new]
    found = None
    if len(added) == 1 and not gone:
        where = _identity(added[0], typed) | _flags(added[0])
        found = ("create", where, 1, f"a record {where} was added")
    elif len(gone) == 1 and not added:
        where = _identity(gone[0], typed)
        found = ("delete", where, 0, f"the record {where} was removed")
    elif len(added) == len(gone) == 1:
        a, b = _flat(gone[0]), _flat(added[0])
        changed = {k: v for k, v in b.items() if a.get(k) != v}
        kept = {k: v for k, v in _identity(added[0], typed).items() if k not in changed}
        where = kept | changed
        found = ("update", where, 1, f"set {changed} on the record {kept or where}")
    elif added and len(added) == len(gone) and len(old) == len(new):
        fields = {k for r_old, r_new in zip(old, new) for k, v in _flat(r_new).items() if _flat(r_old).get(k) != v}
        if len(fields) == 1:
            (key,) = fields
            was = {_flat(r).get(key) for r in gone}
            if len(was) == 1 and (value := was.pop()) is not None and not any(_flat(r).get(key) == value for r in new):
                found = ("update", {key: value}, 0, f"no record has {key} = {value!r} any more")
    if found is None or not found[1]:
        return None
    family, where, count, what = found
    params = {"expression": expression, "where": where, "count": count}
    initially = judge(Evidence({}, {"state": before}), params)
    finally_ = judge(Evidence({}, {"state": after}), params)
    if initially.passed or not finally_.passed:
        return None
    return family, {"template": NAME, "params": params}, what


def _records(state: Any) -> list[Any] | None:
    if isinstance(state, list):
        return state
    return [state] if isinstance(state, dict) else None


def _flat(record: Any, prefix: str = "") -> dict[str, Any]:
    """Scalar leaves by dotted path; lists are left out (a record's identity is in its scalars)."""
    if not isinstance(record, dict):
        return {prefix: record} if not isinstance(record, list) else {}
    out: dict[str, Any] = {}
    for k, v in record.items():
        path = f"{prefix}.{k}" if prefix else str(k)
        out |= _flat(v, path) if isinstance(v, dict) else ({} if isinstance(v, list) else {path: v})
    return out


def _identity(record: Any, typed: tuple[str, ...]) -> dict[str, Any]:
    """The text fields that name a record (those holding typed values first); never ids or numbers,
    which apps generate."""
    texts = {k: v for k, v in _flat(record).items() if isinstance(v, str) and v.strip() and k.rsplit(".", 1)[-1] != "id"}
    said = {normalise(t) for t in typed}
    named = {k: v for k, v in texts.items() if normalise(v) in said}
    return named or texts


def _flags(record: Any) -> dict[str, Any]:
    return {k: v for k, v in _flat(record).items() if isinstance(v, bool)}
