"""Reverse task synthesis: a transition that changed the app's state becomes a candidate task. The
request comes from the controls' labels and the change (rewritten by the LLM when one is configured),
the reference solution is the recorded path, the verifier is the template that matches the observed
change. Candidates then go through the same validation gate as every other pair."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from flows.exploration.explorer import Transition
from flows.task_synthesis.agents.static import quote, singular
from flows.task_synthesis.task_spec import TaskSpec
from verifier_templates.js_state_matches import from_change

REVERSE_VERSION = "explore-1"
DISPLAY_COLUMNS = ("name", "title", "subject", "label", "display_name", "full_name", "code", "email")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d")


def derive(
    transitions: list[Transition], sandbox: str, source_commit: str, thin: set[str], initial: dict[str, Any] | None,
    per_area: int = 4, seed: int = 0, rewrite: Any = None, expression: str | None = None,
) -> list[TaskSpec]:
    """Candidates from the performed, state-changing (or URL-changing form) transitions in thin areas.
    `initial` is the app's DB at reset (names rows in requests); `rewrite(draft, change) -> str | None`
    is the LLM rewriter, when one is configured; `expression` reads an in-page app's state."""
    out: dict[str, TaskSpec] = {}
    per: dict[str, int] = {}
    reached = {_key(t.path + t.actions): t for t in transitions if t.outcome == "performed"}
    for t in transitions:
        if t.outcome != "performed" or t.area not in thin or per.get(t.area, 0) >= per_area:
            continue
        spec = candidate(t, sandbox, source_commit, initial or {}, seed, expression, _lead_in(t, reached, initial or {}, expression))
        if spec is None or spec.task_id in out:
            continue
        if rewrite is not None:
            better = rewrite(spec.instruction, spec.params["change"])
            if better:
                spec.instruction = better
                spec.provenance["rewritten"] = True
        out[spec.task_id] = spec
        per[t.area] = per.get(t.area, 0) + 1
    return list(out.values())


def _key(actions: list[dict[str, Any]]) -> str:
    return json.dumps(actions, sort_keys=True)


def _lead_in(t: Transition, reached: dict[str, Transition], initial: dict[str, Any], expression: str | None) -> list[str]:
    """What the steps of a transition's path did, said in order (its path reached a page by submitting
    forms: the request must ask for those steps too)."""
    parts: list[str] = []
    seen = 0
    while len(t.path) > 1 and seen < 5:
        parent = reached.get(_key(t.path))
        if parent is None:
            break
        picked = verifier_for(parent, expression)
        family = picked[0] if picked else "create"
        parts.insert(0, _request(parent, family, _subject(_path(parent.from_url), initial) if family != "search" else None))
        t, seen = parent, seen + 1
    return parts


def candidate(
    t: Transition, sandbox: str, source_commit: str, initial: dict[str, Any], seed: int = 0, expression: str | None = None,
    lead_in: list[str] | None = None,
) -> TaskSpec | None:
    if not t.actions or t.actions[-1].get("action") == "goto":
        return None  # navigation alone is not a task; its page's forms are
    picked = verifier_for(t, expression)
    if picked is None:
        return None
    family, verifier, change = picked
    page = _path(t.from_url)
    reference = [*t.path, *t.actions]
    subject = _subject(page, initial) if family != "search" else None
    instruction = _request(t, family, subject)
    if lead_in:
        steps = [p.rstrip(".") for p in lead_in] + [instruction.rstrip(".")]
        instruction = _sentence(", then ".join(x[:1].lower() + x[1:] if i else x for i, x in enumerate(steps)))
    params = {"origin": "explore", "area": t.area, "page": page, "actions": t.actions, "verifier": verifier, "change": change}
    area = page.strip("/").split("/")[0].split("?")[0] or "home"
    return TaskSpec(
        sandbox=sandbox, source_commit=source_commit, family=family, app_area=area, instruction=instruction,
        params=params, seed=seed, injection=[], verifier=verifier, reference=reference,
        provenance={"agent": "explore", "model": None, "synthesiser_version": REVERSE_VERSION,
                    "transition": {"from_state": t.from_state, "to_state": t.to_state, "area": t.area}},
    )


# ---- verifiers from changes ----------------------------------------------------------------------------
def verifier_for(t: Transition, expression: str | None = None) -> tuple[str, dict[str, Any], str] | None:
    """(family, verifier, a one-line description of the change) for the clearest change the transition made."""
    typed = {str(v).strip().casefold() for v in t.fills.values()}
    db = {k: v for k, v in t.diff.items() if isinstance(v, dict) and "counts" in v}
    ranked = sorted(db.items(), key=lambda kv: _rank(kv[1]))
    for table, change in ranked:
        found = _table_verifier(table, change, typed)
        if found and _holds_from_reset(found[1], t.net.get(table)):
            return found
    if "page_state" in t.net and expression:
        found = from_change(t.net["page_state"]["before"], t.net["page_state"]["after"], expression, tuple(t.fills.values()))
        if found:
            return found[0], found[1], found[2]
    if "page_text" in t.diff:
        shown = json.dumps(t.diff, default=str).casefold()
        for value in t.fills.values():
            if len(str(value)) >= 3 and str(value).casefold() in shown:
                return "update", {"template": "page_contains", "params": {"text": str(value)}}, f"the page now shows {value!r}"
    if not t.diff and t.to_url and urlsplit(t.to_url).query and _path(t.to_url) != _path(t.from_url):
        path, query = urlsplit(t.to_url).path, parse_qsl(urlsplit(t.to_url).query)
        looks = "".join(f"(?=(?:.*&)?{re.escape(k)}={re.escape(v)}(?:&|$))" for k, v in query if v)
        if looks:
            return "search", {"template": "url_matches", "params": {"pattern": f"{re.escape(path)}\\?{looks}"}}, f"opens {path} with {dict(query)}"
    return None


def _holds_from_reset(verifier: dict[str, Any], net: dict[str, Any] | None) -> bool:
    """The step's change must also be a change from the reset state the gate starts at (a path that
    starred a message and this step unstarred it changed nothing overall)."""
    if net is None:
        return False
    p, template = verifier["params"], verifier["template"]
    if template == "field_equals":
        return any(
            u["row"].get("id") == p["key"]["id"] and p["field"] in u["changes"] and u["changes"][p["field"]][1] == p["value"]
            for u in net["updated"]
        )
    if template == "row_exists":
        return any(all(row.get(k) == v for k, v in p["where"].items()) for row in net["inserted"])
    if template == "row_absent":
        return any(all(row.get(k) == v for k, v in p["where"].items()) for row in net["deleted"])
    if template == "count_changed":
        c = net["counts"]
        return (c["deleted"] if p["delta"] < 0 else c["updated"]) == abs(p["delta"])
    return True


def _rank(change: dict[str, Any]) -> tuple[int, int]:
    c = change["counts"]
    if c["inserted"] == 1 and not c["deleted"]:
        return (0, 0)
    if c["updated"] == 1 and not c["inserted"] and not c["deleted"]:
        return (1, 0)
    if c["deleted"] and not c["inserted"]:
        return (2, c["deleted"])
    return (3, sum(c.values()))


def _table_verifier(table: str, change: dict[str, Any], typed: set[str]) -> tuple[str, dict, str] | None:
    c = change["counts"]
    if c["inserted"] == 1 and not c["deleted"]:
        row = change["inserted"][0]
        where = _distinctive(row, typed)
        if where:
            return "create", {"template": "row_exists", "params": {"table": table, "where": where}}, f"a new {table} row {where}"
    if c["updated"] == 1 and not c["inserted"] and not c["deleted"]:
        upd = change["updated"][0]
        cols = [k for k, (old, new) in upd["changes"].items() if not _is_timestamp(k, new)]
        if not cols or "id" not in upd["row"]:
            return None
        col = next((k for k in cols if str(upd["changes"][k][1]).strip().casefold() in typed), cols[0])
        value = upd["changes"][col][1]
        params = {"table": table, "key": {"id": upd["row"]["id"]}, "field": col, "value": value}
        return "update", {"template": "field_equals", "params": params}, f"{table} #{upd['row']['id']}: {col} -> {value!r}"
    if c["deleted"] == 1 and not c["inserted"] and not c["updated"]:
        row = change["deleted"][0]
        where = {"id": row["id"]} if "id" in row else _distinctive(row, set())
        if where:
            return "delete", {"template": "row_absent", "params": {"table": table, "where": where}}, f"{table} row {where} removed"
    if c["deleted"] > 1 and not c["inserted"] and not c["updated"]:
        return "delete", {"template": "count_changed", "params": {"table": table, "where": {}, "delta": -c["deleted"]}}, \
            f"{c['deleted']} {table} rows removed"
    if c["updated"] > 1 and not c["inserted"] and not c["deleted"] and len(change["updated"]) == c["updated"]:
        common = _common_new_value(change["updated"])
        if common:
            col, value = common
            params = {"table": table, "where": {col: value}, "delta": c["updated"]}
            return "update", {"template": "count_changed", "params": params}, f"{c['updated']} {table} rows: {col} -> {value!r}"
    return None


def _distinctive(row: dict[str, Any], typed: set[str]) -> dict[str, Any]:
    """The columns that pin the row: the values the user typed, else its plain (non-id, non-time) values."""
    by_typed = {k: v for k, v in row.items() if isinstance(v, str) and v.strip().casefold() in typed and k != "id"}
    if by_typed:
        return dict(list(by_typed.items())[:3])
    plain = {
        k: v for k, v in row.items()
        if k != "id" and v is not None and not _is_timestamp(k, v) and (not isinstance(v, str) or len(v) <= 60)
    }
    return dict(list(plain.items())[:4])


def _common_new_value(updated: list[dict[str, Any]]) -> tuple[str, Any] | None:
    first = updated[0]["changes"]
    for col, (_old, new) in first.items():
        if _is_timestamp(col, new):
            continue
        if all(u["changes"].get(col, [None, object()])[1] == new for u in updated):
            return col, new
    return None


def _is_timestamp(column: str, value: Any) -> bool:
    c = column.casefold()
    return c.endswith(("_at", "_on", "date", "time")) or (isinstance(value, str) and bool(_TIMESTAMP.match(value)))


# ---- requests -------------------------------------------------------------------------------------------
def _path(url: str | None) -> str:
    if not url:
        return "/"
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _subject(page: str, initial: dict[str, Any]) -> tuple[str, str] | None:
    """(entity, how a person names the row) of the page's record, read from the app's DB at reset."""
    segments = [s for s in urlsplit(page).path.strip("/").split("/") if s]
    if len(segments) < 2 or not segments[1].isdigit():
        return None
    table = segments[0].replace("-", "_")
    data = initial.get(table)
    if not data:
        return None
    cols = data["columns"]
    for rowid, row in data["rows"].items():
        record = dict(zip(cols, row))
        if record.get("id", rowid) == int(segments[1]):
            shown = next((record[c] for c in DISPLAY_COLUMNS if record.get(c)), None)
            return singular(table), str(shown) if shown else f"#{segments[1]}"
    return None


def _request(t: Transition, family: str, subject: tuple[str, str] | None) -> str:
    the = f"the {subject[0]} {quote(subject[1])}" if subject else ""
    fills = {k: v for k, v in t.fills.items() if v not in ("True", "False")}
    ticks = [k for k, v in t.fills.items() if v in ("True", "False")]
    if family == "update" and len(fills) == 1 and not ticks and not (t.form_label or t.button).casefold().startswith(("move", "apply")):
        label, value = next(iter(fills.items()))
        owner = f" of {the}" if the else ""
        return _sentence(f"change {quote(label)}{owner} to {quote(value)}")
    if t.submit == "enter" and len(fills) == 1:
        label, value = next(iter(fills.items()))
        return _sentence(f"enter {quote(value)} in {quote(label)}")
    if family == "search":
        the = ""
    phrase = (t.button if t.buttons > 1 or not t.form_label else t.form_label).strip()
    words = phrase.split()
    if subject and words and words[-1].casefold() in (subject[0], subject[0] + "s"):
        phrase = " ".join(words[:-1]) + " " + the
    elif the:
        phrase = f"{phrase} for {the}"
    details = [f"{label} {quote(value)}" for label, value in fills.items()]
    details += [f"{'tick' if t.fills[k] == 'True' else 'untick'} {quote(k)}" for k in ticks]
    return _sentence(phrase + (", with " + ", ".join(details) if details else ""))


def _sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?")) else ".")


def rewrite_with(client: Any) -> Any:
    """A request rewriter over an LLMClient: keeps the draft when the model fails or drops a quoted value."""

    def rewrite(draft: str, change: str) -> str | None:
        messages = [
            {"role": "system", "content": "You turn a drafted task for a GUI agent into the request a person would "
             "type to an assistant. Keep every quoted value exactly as written. Answer with the request only."},
            {"role": "user", "content": f"Draft: {draft}\nWhat the app should show afterwards: {change}"},
        ]
        result = client.complete(messages, purpose="explore_request")
        text = (result.content or "").strip().strip('"') if result.ok else ""
        quoted = re.findall(r"“([^”]*)”", draft)
        if not text or any(q.casefold() not in text.casefold() for q in quoted):
            return None
        return text

    return rewrite
