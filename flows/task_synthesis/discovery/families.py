"""Transitions -> task families -> candidate pairs. Every transition that changed state is a family
(create, update, delete, move, toggle, submit, search) whose parameters are the values typed (or the
record acted on); families are varied across seeds (other values, other records), chained into
multi-step tasks, and read-only lists give retrieve tasks with answer verifiers. The verifier is
built from the observed state diff and checks every value the request names; records a task needs
are set up by replaying the recorded UI path that made them (checked to have taken effect)."""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from flows.exploration.reverse import _table_verifier
from flows.task_synthesis.discovery.fill import fill_action
from flows.task_synthesis.discovery.state import (
    RECORDS_JS,
    items_expression,
    records_path,
    storage_expression,
)
from flows.task_synthesis.discovery.walk import Transition, WalkResult
from flows.task_synthesis.task_spec import TaskSpec
from verifier_templates import js_state_matches
from verifier_templates.base import Evidence, normalise

VERSION = "discovery-1"
REPLAY_SKILL = "replay_ui"
GENERIC_BUTTONS = {"", "submit", "ok", "save", "send", "go", "continue", "next", "done", "apply", "confirm", "finish", "enter", "add"}
MAKING = re.compile(r"^(add|new|create|register|compose|write)\b", re.I)
MULTI_SHARE = 0.4  # of the candidates drawn, at least this share chains steps (the gate rejects more chains than single steps)


def quote(value: Any) -> str:
    return f"“{value}”"


@dataclass
class Family:
    name: str  # create | update | delete | move | toggle | submit | search
    key: str
    transition: Transition
    verifier: dict[str, Any]
    values: list[str]  # the values the request names, as observed
    setup: Transition | None = None  # the create step whose record this family acts on
    setup_verifier: dict[str, Any] | None = None
    setup_family: Family | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def variable(self) -> bool:
        return (bool(self.transition.slots) or self.setup is not None or self.transition.kind == "drag"
                or bool(self.extra.get("options")))


@dataclass
class Instance:
    family: Family
    request: str
    setup: list[dict[str, Any]]  # UI actions that make the records it needs (before the reference)
    setup_check: dict[str, Any] | None
    reference: list[dict[str, Any]]
    verifier: dict[str, Any]
    values: list[str]
    item: str = ""
    setup_request: str = ""
    setup_slots: dict[str, str] = field(default_factory=dict)  # what the making step typed, by field
    slots: dict[str, str] = field(default_factory=dict)  # what this step typed, by field
    ends: Transition | None = None  # a chain's last step (None: the family's own step)
    dropped: list[dict[str, Any]] = field(default_factory=list)  # a last press left out of `reference` (typing was enough)


# ---- verifiers from diffs ------------------------------------------------------------------------------
def verifier_for(t: Transition, initial_records: list[dict]) -> tuple[str, dict[str, Any], list[str]] | None:
    """(family, verifier, the values it checks) for the clearest change the transition made."""
    typed = tuple(s.value for s in t.slots if s.value and s.value not in ("yes",))
    said = {v.strip().casefold() for v in typed}
    d = t.diff
    # a table holding what was typed first (a record's own table, not a side table the step also touched)
    for table, change in sorted(d.db.items(), key=lambda tc: not _holds_typed(tc[1], said)):
        found = _table_verifier(table, change, said) or _replaced_row(table, change, said)
        if found:
            return found[0], found[1], list(typed) or [str(v) for v in found[1]["params"].get("where", {}).values()]
    items = _items_verifier(t)
    if items:
        return items
    records = _records_verifier(t)
    named = typed or ((t.item,) if t.item else ())
    stored = _stored_verifier(t, named)
    if stored and records:  # what the app keeps outlives a reload; the page's lists say what kind of change it was
        return records[0], stored[1], records[2]
    return stored or records or _shown_or_searched(t, typed)


def _holds_typed(change: dict[str, Any], said: set[str]) -> bool:
    return any(isinstance(v, str) and v.strip().casefold() in said for row in change.get("inserted", []) + [
        u.get("row", {}) | {k: new for k, (_old, new) in u.get("changes", {}).items()} for u in change.get("updated", [])]
        for v in row.values())


def _replaced_row(table: str, change: dict[str, Any], said: set[str]) -> tuple[str, dict[str, Any], list[str]] | None:
    """A record renamed by being made anew (one row gone, one row holding the typed name in its place): an update,
    checked by the new row's typed values and the old row's values there being gone."""
    c = change["counts"]
    if not (c["inserted"] == 1 and c["deleted"] == 1 and not c["updated"]):
        return None
    new, old = change["inserted"][0], change["deleted"][0]
    typed = {k: v for k, v in new.items() if isinstance(v, str) and v.strip().casefold() in said}
    was = {k: old[k] for k in typed if old.get(k) not in (None, "", new[k])}
    if not typed or not was:
        return None
    checks = [{"template": "row_exists", "params": {"table": table, "where": typed}},
              {"template": "row_absent", "params": {"table": table, "where": was}}]
    return "update", {"template": "all_of", "params": {"checks": checks}}, [str(v) for v in typed.values()]


def _items_verifier(t: Transition) -> tuple[str, dict[str, Any], list[str]] | None:
    """For a step on one record of a state that is lists of plain values (a card dragged on a board or a
    sortable list): the card now in another list (move), at another place in its list (reorder), or
    gone (delete) — checked on the manifest's state read as items (state.items_expression)."""
    if t.diff.items is None or not _manifest_expression(t):
        return None
    before, after = t.diff.items
    if not t.item:
        return _item_added_or_removed(t, before, after)
    text = _state_text(t.item, before) or _state_text(t.item, after)
    if text is None:
        return None
    same = normalise(text)

    def places(items: list[dict[str, Any]]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for r in items:
            if normalise(r.get("text", "")) == same:
                out.setdefault(r["list"], []).append(r["at"])
        return out

    was, now = places(before), places(after)
    expr = items_expression(_manifest_expression(t))

    def check(where: dict[str, Any]) -> dict[str, Any]:
        n = sum(1 for r in after if js_state_matches.matches(r, where))
        return {"template": "js_state_matches", "params": {"expression": expr, "where": where, "count": n}}

    gained = [lst for lst in now if len(now[lst]) > len(was.get(lst, []))]
    lost = [lst for lst in was if len(was[lst]) > len(now.get(lst, []))]
    moved = [lst for lst in now if lst in was and len(now[lst]) == 1 == len(was[lst]) and now[lst] != was[lst]]
    if len(gained) == 1:  # moved or copied to one other list
        family, v = "move", check({"text": text, "list": gained[0]})
    elif len(lost) == 1 and not gained:
        family, v = "delete", check({"text": text, "list": lost[0]})
    elif not gained and not lost and len(moved) == 1:
        family, v = "reorder", check({"text": text, "list": moved[0], "at": now[moved[0]][0]})
    else:
        return None
    p = v["params"]
    holds = (js_state_matches.judge(Evidence({}, {"state": after}), p).passed
             and not js_state_matches.judge(Evidence({}, {"state": before}), p).passed)
    if not holds:
        return None
    if family == "reorder":
        t.to = t.to or t.heading
    return family, v, [t.item] + ([t.to] if t.to and family != "delete" else [])


def _item_added_or_removed(t: Transition, before: list[dict], after: list[dict]) -> tuple[str, dict[str, Any], list[str]] | None:
    """A press that adds one item to a list (or takes one away): checked by that list's count of the item."""
    def tally(items: list[dict]) -> Counter:
        return Counter((r["list"], normalise(r.get("text", ""))) for r in items)

    was, now = tally(before), tally(after)
    up, down = now - was, was - now
    if len(up) + len(down) != 1 or sum((up + down).values()) != 1:
        return None
    ((lst, said),) = (up or down).keys()
    text = next(r["text"] for r in (after if up else before) if r["list"] == lst and normalise(r.get("text", "")) == said)
    where = {"text": text, "list": lst}
    v = {"template": "js_state_matches", "params": {"expression": items_expression(_manifest_expression(t)), "where": where,
                                                     "count": sum(1 for r in after if js_state_matches.matches(r, where))}}
    p = v["params"]
    if js_state_matches.judge(Evidence({}, {"state": before}), p).passed or not js_state_matches.judge(Evidence({}, {"state": after}), p).passed:
        return None
    return ("create" if up else "delete"), v, []


def _state_text(shown: str, items: list[dict[str, Any]]) -> str | None:
    """The state's text for a card the page shows as `shown`: the same text, else the one item whose
    text holds it (a handle's glyph or a badge the page scan left out)."""
    want = normalise(shown)
    texts = {r.get("text", "") for r in items}
    exact = [x for x in texts if normalise(x) == want]
    if exact:
        return exact[0]
    holding = [x for x in texts if want and want in normalise(x) and len(x) <= len(shown) + 8]
    return holding[0] if len(holding) == 1 else None


def _shown_or_searched(t: Transition, typed: tuple[str, ...]) -> tuple[str, dict[str, Any], list[str]] | None:
    """A form whose values went into the address (a search: checked on the URL, which says what was asked), else
    one whose typed values the page shows afterwards."""
    if t.url_after and urlsplit(t.url_after).query:
        query = [(k, v) for k, v in parse_qsl(urlsplit(t.url_after).query) if v and v in typed]
        if query:
            path = urlsplit(t.url_after).path
            looks = "".join(f"(?=(?:.*&)?{re.escape(k)}={_spaced(v)}(?:&|$))" for k, v in query)
            return "search", {"template": "url_matches", "params": {"pattern": f"{re.escape(path)}\\?{looks}"}}, [v for _, v in query]
    shown = [v for v in typed if len(v) >= 3 and v.casefold() in t.text_after.casefold()
             and v.casefold() not in t.text_before.casefold()]  # an option's label the page showed already says nothing
    if shown and t.kind in ("form", "enter"):
        checks = [{"template": "page_contains", "params": {"text": v}} for v in shown]
        return "submit", checks[0] if len(checks) == 1 else {"template": "all_of", "params": {"checks": checks}}, shown
    return None


def _stored_verifier(t: Transition, named: tuple[str, ...]) -> tuple[str, dict[str, Any], list[str]] | None:
    """A verifier over the state the app keeps (the manifest's expression, else browser storage), when the
    change there names the values the request names."""
    d = t.diff
    if d.manifest is not None:
        expr = _manifest_expression(t)
        typed = tuple(s.value for s in t.slots if s.value and s.value != "yes")
        pressed = "" if typed else (t.button or t.control.get("name", ""))
        labels = {s.value: s.field.spoken for s in t.slots if s.value}
        picked = tuple(s.value for s in t.slots if s.value and s.field.type in ("radio", "select"))
        found = expr and (_document_change(d.manifest[0], d.manifest[1], expr, typed, pressed, labels, picked)
                          or js_state_matches.from_change(d.manifest[0], d.manifest[1], expr, named))
        if found and _names_typed(found[1], named):
            return found[0], found[1], _checked_values(found[1]) or [v for v in named if v]
    for key, (before, after) in sorted(d.storage.items()):
        path = records_path(after) if after is not None else records_path(before)
        expr = storage_expression(key, path or []) if path is not None else ""
        if not expr:
            continue
        found = js_state_matches.from_change(_at(before, path), _at(after, path), expr, named)
        if found and _names_typed(found[1], named):
            return found[0], found[1], _checked_values(found[1])
    return None


MAX_DOCUMENT_CHANGES = 12  # more changed leaves than this is not one step a request can name


def _document_change(before: Any, after: Any, expression: str, typed: tuple[str, ...] = (), pressed: str = "",
                     labels: dict[str, str] | None = None, picked: tuple[str, ...] = ()) -> tuple[str, dict[str, Any], str] | None:
    """For a state that is one document (an object, not a list of records): the leaves the step set (items
    of lists by their index), and what it removed (checked as absent). When some leaves took the values
    typed, or the value the pressed control names (a swatch "Color:#194D33"), only those are checked:
    the rest follows from them (a colour's rgb and hsl from its hex) and would tie the check to one value.
    A flag flipped is a toggle, a value the press named (or options picked: `picked`) a select, leaves only
    added a create, leaves only removed a delete, anything else an update."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    a, b = document_leaves(before), document_leaves(after)
    changed = {k: v for k, v in b.items() if k not in a or a[k] != v}
    removed = {_absent_root(k, after): None for k in a if k not in b and a[k] is not None}
    said = {_bare(v): str(v) for v in typed if _bare(v)}
    # a number as typed ("94"), so another value typed in a variant swaps into the check
    # a leaf that held about that value already (51.0000001, then 51) did not take it from the step: left out
    named = {k: v if isinstance(v, str) else said[_bare(v)] for k, v in changed.items() if _bare(v) in said and not _about(a.get(k), v)}
    # several leaves took one typed value (b typed as 25, and r recomputed to 25): the one named like the field typed into
    by_label = {k: v for k, v in named.items() if normalise(k.rsplit(".", 1)[-1]) == normalise((labels or {}).get(str(v), ""))}
    if len(named) > 1 and by_label and len(by_label) == len({str(v) for v in named.values() if normalise((labels or {}).get(str(v), ""))}):
        named = by_label
    shown = normalise(pressed)
    chosen = {k: v for k, v in changed.items() if isinstance(v, str) and len(v.strip()) >= 3 and normalise(v) in shown} if shown else {}
    where = named or chosen or (changed | removed)
    if not where or len(where) > MAX_DOCUMENT_CHANGES:
        return None
    options = {_bare(v) for v in picked}
    if chosen and not named or named and options and all(_bare(v) in options for v in named.values()):
        family = "select"
    elif removed and not changed:
        family = "delete"
    elif not removed and all(k not in a for k in changed):
        family = "create"
    elif not removed and all(isinstance(v, bool) for v in changed.values()):
        family = "toggle"
    else:
        family = "update"
    params = {"expression": expression, "where": where, "count": 1}
    if js_state_matches.judge(Evidence({}, {"state": before}), params).passed or not js_state_matches.judge(Evidence({}, {"state": after}), params).passed:
        return None
    return family, {"template": "js_state_matches", "params": params}, f"set {where}"


def _about(was: Any, now: Any) -> bool:
    """Two numbers that differ only by rounding (a leaf recomputed from another)."""
    try:
        x, y = float(was), float(now)
    except (TypeError, ValueError):
        return False
    return abs(x - y) <= 1e-3 * max(1.0, abs(y))


def _bare(value: Any) -> str:
    """A value as typed or stored, without the marks an app adds or drops ("#F2BF78" and "F2BF78")."""
    return normalise(value).strip("#$€£%")


def document_leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    """Scalar leaves of a document by dotted path, items of lists by their index ("array.2")."""
    if isinstance(value, dict):
        parts: Any = value.items()
    elif isinstance(value, list):
        parts = ((str(i), v) for i, v in enumerate(value))
    else:
        return {prefix: value}
    out: dict[str, Any] = {}
    for k, v in parts:
        out |= document_leaves(v, f"{prefix}.{k}" if prefix else str(k))
    return out


def _absent_root(path: str, after: Any) -> str:
    """The shortest part of a removed leaf's path that the new document no longer has ("array" for
    "array.2" when the whole list went)."""
    parts = path.split(".")
    for n in range(1, len(parts) + 1):
        if js_state_matches.field(after, ".".join(parts[:n])) is None:
            return ".".join(parts[:n])
    return path


def _spaced(value: str) -> str:
    """A query value as a URL shows it: spaces as +, %20 or a space."""
    return "(?:\\+|%20| )".join(re.escape(part) for part in value.split(" "))


def _manifest_expression(t: Transition) -> str:
    return getattr(t, "_manifest_expression", "") or ""


def _at(value: Any, path: list[Any] | None) -> Any:
    for p in path or []:
        value = value.get(p) if isinstance(value, dict) else None
    return value if value is not None else []


def _names_typed(verifier: dict[str, Any], typed: tuple[str, ...]) -> bool:
    """The verifier checks a value the request names: a typed value, or (for a record acted on, "boolean:
    true" in a tree) a word of its name among the fields it checks."""
    if not typed:
        return True
    shown = json.dumps(verifier["params"].get("where", {}), ensure_ascii=False).casefold()
    if any(v.casefold() in shown for v in typed if len(v) >= 2):
        return True
    words = {w for v in typed for w in re.findall(r"[^\W_]+", v.casefold())}
    return any(w in re.findall(r"[^\W_]+", k.casefold()) for k in verifier["params"].get("where", {}) for w in words)


def _checked_values(verifier: dict[str, Any]) -> list[str]:
    return [str(v) for v in verifier["params"].get("where", {}).values() if isinstance(v, str)]


def _records_verifier(t: Transition) -> tuple[str, dict[str, Any], list[str]] | None:
    if t.diff.records is None:
        return None
    before, after = t.diff.records
    typed = [s.value for s in t.slots if len(s.value) >= 3]

    def params(where: dict[str, Any], count: int) -> dict[str, Any]:
        return {"template": "js_state_matches", "params": {"expression": RECORDS_JS, "where": where, "count": count}}

    def holds(v: dict[str, Any]) -> bool:
        p = v["params"]
        return (js_state_matches.judge(Evidence({}, {"state": after}), p).passed
                and not js_state_matches.judge(Evidence({}, {"state": before}), p).passed)

    if t.item:
        was = [r for r in before if r.get("text") == t.item]
        now = [r for r in after if r.get("text") == t.item]
        renamed = [r for r in after if r not in before and any(v.casefold() in r.get("text", "").casefold() for v in typed)]
        if was and not now and renamed:
            gone, new = params({"text": t.item}, 0), params({"text": renamed[0]["text"]}, 1)
            v = {"template": "all_of", "params": {"checks": [gone, new]}}
            return ("update", v, [t.item, renamed[0]["text"]]) if holds(new) and holds(gone) else None
        if was and not now:
            v = params({"text": t.item}, 0)
            return ("delete", v, [t.item]) if holds(v) else None
        if was and now and was[0] != now[0]:
            changed = {k: now[0][k] for k in now[0] if was[0].get(k) != now[0][k]}
            family = "move" if "list" in changed else "toggle" if "checked" in changed else "update"
            where = {"text": t.item} | changed
            v = params(where, sum(1 for r in after if js_state_matches.matches(r, where)))
            return (family, v, [t.item] + [str(x) for x in changed.values() if isinstance(x, str)]) if holds(v) else None
        return None
    added = sorted((r for r in after if r not in before and any(v.casefold() in r.get("text", "").casefold() for v in typed)),
                   key=lambda r: len(r.get("text", "")))
    if added:
        r = added[0]
        where = {k: r[k] for k in ("list", "text", "checked") if k in r and (k != "list" or r[k])}
        v = params(where, sum(1 for x in after if js_state_matches.matches(x, where)))
        if holds(v):
            return "create", v, [r["text"]] + ([r["list"]] if r.get("list") else [])
    return None


# ---- families ----------------------------------------------------------------------------------------
def families_from(walk: WalkResult, manifest_expression: str | None) -> tuple[list[Family], Counter]:
    """One family per state-changing transition (the first of each kind and place); and, per reason,
    the transitions that gave none."""
    out: dict[str, Family] = {}
    dropped: Counter = Counter()
    made: dict[int, Family] = {}
    for t in walk.transitions:
        t._manifest_expression = manifest_expression  # type: ignore[attr-defined]
        if not t.diff and not (t.url_after and urlsplit(t.url_after).query):
            dropped["no state change"] += 1
            continue
        found = verifier_for(t, walk.initial.records if walk.initial else [])
        if found is None:
            dropped["change without a checkable value"] += 1
            continue
        name, verifier, values = found
        if t.kind == "drag" and name in ("update", "create"):
            name = "move"
        fields = json.dumps([t.actions[s.index].get("target") for s in t.slots if s.index < len(t.actions)], sort_keys=True)
        key = f"{name}|{t.kind}|{t.page}|{t.heading}|{t.button}|{t.control.get('name', '')}|{t.to}|{bool(t.made_by)}|{fields}"
        if key in out:
            continue
        fam = Family(name, key, t, verifier, values)
        if isinstance((t.diff.manifest or (None,))[0], dict) and verifier.get("params", {}).get("expression") == manifest_expression:
            fam.extra["document"] = True  # one object, not records: two steps that set the same leaf never chain
            if name == "select":
                fam.extra["options"] = _options(walk, t, verifier)
            elif t.kind == "item" and t.made_by is None:
                fam.extra["records"] = _other_records(walk, t)
        if t.made_by is not None:
            setup = made.get(id(t.made_by))
            if setup is None:
                dropped["acts on a record whose making has no verifier"] += 1
                continue
            fam.setup, fam.setup_verifier, fam.setup_family = t.made_by, setup.verifier, setup
        out[key] = fam
        made[id(t)] = fam
    return list(out.values()), dropped


MAX_OPTIONS = 16


def _options(walk: WalkResult, t: Transition, verifier: dict[str, Any]) -> list[dict[str, Any]]:
    """The other choices beside a pressed one: the page's buttons named alike but for the value the press
    set ("Color:#194D33", "Color:#F44336", ...), each with the value its name gives and its own target."""
    values = {str(v) for v in verifier["params"]["where"].values()}
    choice = next((s.field for s in t.slots if s.field.type == "radio" and s.field.options), None)
    if choice is not None and len(values) == 1:  # a radio picked: the group's other options, but the one it came with
        return [{"value": o["value"], "target": o["target"]} for o in choice.options
                if not o.get("checked") and _bare(o["value"]) not in {_bare(v) for v in values}][:MAX_OPTIONS]
    scan = walk.scans.get(t.page)
    if len(values) != 1 or scan is None:
        return []
    (value,) = values
    at = t.button.casefold().find(value.casefold())
    if at < 0:
        return []
    head, tail = t.button[:at], t.button[at + len(value):]
    out, seen = [], {t.button}
    for b in scan.page_buttons:
        name = b.get("name", "")
        middle = name[len(head): len(name) - len(tail)] if name.startswith(head) and name.endswith(tail) else ""
        if middle.strip() and name not in seen and len(name) > len(head) + len(tail):
            seen.add(name)
            out.append({"value": middle, "target": b["target"]})
    return out[:MAX_OPTIONS]


def _other_records(walk: WalkResult, t: Transition) -> list[dict[str, Any]]:
    """The other records with the control the step pressed first (a row's menu button, its checkbox): the
    same step on each of them is a task of the family, whose check a replay shows (`observed_on_record`)."""
    scan = walk.scans.get(t.page)
    first = t.actions[0].get("target") if t.actions else None
    if scan is None or first is None:
        return []
    mine = next((c for c in scan.on_items if c["item"] == t.item and c["target"] == first), None)
    if mine is None:
        return []
    return [{"item": c["item"], "target": c["target"]} for c in scan.on_items
            if (c["role"], c["name"]) == (mine["role"], mine["name"]) and c["item"] != t.item][:MAX_OPTIONS]


def on_other_record(fam: Family, record: dict[str, Any]) -> Instance:
    """The family's step on another record, its check not yet known (`observed_on_record` gives it)."""
    t = fam.transition
    actions = copy.deepcopy(t.actions)
    actions[0]["target"] = record["target"]
    return Instance(fam, _request(fam, [], record["item"]), [], None, t.path + actions, {}, [record["item"]], record["item"])


def observed_on_record(inst: Instance, before: Any, after: Any) -> Instance | None:
    """The check of a step on another record from what its replay did, when that names the record and is
    the family's kind of change (a remove removed, a flag flipped)."""
    expression = inst.family.verifier.get("params", {}).get("expression", "")
    found = _document_change(before, after, expression)
    if found is None or found[0] != inst.family.name or not _names_typed(found[1], (inst.item,)):
        return None
    if inst.family.name == "toggle":
        inst.request = _request(Family(inst.family.name, "", inst.family.transition, found[1], []), [], inst.item)
    return Instance(inst.family, inst.request, [], None, inst.reference, found[1], inst.values, inst.item)


def observed_reorder(inst: Instance, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Instance | None:
    """A reorder of another card, its check from what its replay did: where a card lands after a drop onto
    another depends on where it started and on the library (before or after the card dropped on), so the
    walk's place is not another card's. None when the card did not move to another place in its list."""
    p = inst.verifier.get("params", {})
    where = p.get("where", {})
    card, lst = normalise(str(where.get("text", ""))), where.get("list")

    def places(items: Any) -> list[int]:
        return [r.get("at") for r in items or [] if isinstance(r, dict) and r.get("list") == lst and normalise(str(r.get("text", ""))) == card]

    was, now = places(before), places(after)
    if len(was) != 1 or len(now) != 1 or was == now:
        return None
    seen = {**where, "at": now[0]}
    verifier = {"template": "js_state_matches",
                "params": {**p, "where": seen, "count": sum(1 for r in after if js_state_matches.matches(r, seen))}}
    if js_state_matches.judge(Evidence({}, {"state": before}), verifier["params"]).passed:
        return None
    request = _request(inst.family, inst.values, inst.item, verifier=verifier)
    return Instance(inst.family, request, [], None, inst.reference, verifier, inst.values, inst.item)


def _option_instance(fam: Family, rng: random.Random, fresh: bool) -> Instance:
    """A select: the observed choice, or another of the options beside it."""
    t = fam.transition
    (value,) = {str(v) for v in fam.verifier["params"]["where"].values()}
    actions = copy.deepcopy(t.actions)
    verifier = fam.verifier
    if fresh:
        option = rng.choice(fam.extra["options"])
        for act in actions[::-1]:
            if act.get("action") in ("left_click", "check"):
                act["target"] = option["target"]
                break
        verifier = copy.deepcopy(fam.verifier)
        p = verifier["params"]
        p["where"] = {k: option["value"] for k in p["where"]}
        value = option["value"]
    return Instance(fam, _request(fam, [value], ""), [], None, t.path + actions, verifier, [value])


# ---- instances -------------------------------------------------------------------------------------------
def _substitute(value: Any, swaps: dict[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in swaps.items():
            if old and (value == old or (len(old) >= 3 and old in value)):
                value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [_substitute(v, swaps) for v in value]
    if isinstance(value, dict):
        return {k: _substitute_where(v, swaps) if k == "where" and isinstance(v, dict) else _substitute(v, swaps)
                for k, v in value.items()}
    return value


def _substitute_where(where: dict[str, Any], swaps: dict[str, str]) -> dict[str, Any]:
    """A check's conditions with the new values, in its paths too: a document's leaf is named by its path,
    and a key typed in place (a field renamed in a tree editor) is part of that path."""
    return {_substitute(k, swaps): _substitute(v, swaps) for k, v in where.items()}


def _revalue(t: Transition, rng: random.Random) -> tuple[list[dict], dict[str, str]]:
    """The transition's actions with fresh values in every slot, and old -> new per value; slots that held
    one value (a password and its confirmation) get one new value."""
    actions = copy.deepcopy(t.actions)
    swaps: dict[str, str] = {}
    for s in t.slots:
        if s.value in swaps and actions[s.index].get("action") == "type":
            actions[s.index] = {**actions[s.index], "text": swaps[s.value]}
            continue
        made = fill_action(s.field, rng)
        if made is None:
            continue
        act, value = made
        if s.field.type in ("checkbox", "radio"):
            continue
        actions[s.index] = act
        if value != s.value:
            swaps[s.value] = value
    return actions, swaps


def instance(fam: Family, rng: random.Random, fresh: bool) -> Instance | None:
    """One task of the family: the observed one (fresh=False) or one with new values/records."""
    t = fam.transition
    if fam.setup is not None:
        s_actions, swaps = _revalue(fam.setup, rng) if fresh else (fam.setup.actions, {})
        own, own_swaps = _revalue(t, rng) if fresh and t.slots else (list(t.actions), {})
        own = _substitute(own, swaps)  # actions that name the record (a double click on its text)
        setup = fam.setup.path + s_actions
        check = _substitute(fam.setup_verifier, swaps)
        item = _substitute(t.item, swaps)
        both = swaps | own_swaps
        verifier = _substitute(fam.verifier, both)
        values = [_substitute(v, both) for v in fam.values]
        made = fam.setup_family
        slots = {s.field.spoken: swaps.get(s.value, s.value) for s in fam.setup.slots}
        setup_request = _request(made, [_substitute(v, swaps) for v in made.values], "", slots, check) if made else ""
        mine = {s.field.spoken: own_swaps.get(s.value, s.value) for s in t.slots}
        return Instance(fam, _request(fam, values, item, mine, verifier), setup, check, own, verifier, values, item, setup_request,
                        slots, mine)
    if t.kind == "drag":
        return _drag_instance(fam, rng, fresh)
    if fam.extra.get("options"):
        return _option_instance(fam, rng, fresh)
    actions, swaps = _revalue(t, rng) if fresh else (list(t.actions), {})
    if fresh and t.slots and not swaps:
        return None
    verifier = _substitute(fam.verifier, swaps)
    values = [_substitute(v, swaps) for v in fam.values]
    slots = {s.field.spoken: swaps.get(s.value, s.value) for s in t.slots}
    return Instance(fam, _request(fam, values, t.item, slots, verifier), [], None, t.path + actions, verifier, values, t.item)


def _substitute_card(value: Any, swaps: dict[str, str]) -> Any:
    """The verifier with another card: in a record check only its text changes (a list or a place that
    happens to read like the card, "1" in a grid of "1".."5", stays), and expressions never do."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "where" and isinstance(v, dict):
                out[k] = {kk: _substitute(vv, swaps) if kk == "text" else vv for kk, vv in v.items()}
            else:
                out[k] = v if k == "expression" else _substitute_card(v, swaps)
        return out
    if isinstance(value, list):
        return [_substitute_card(v, swaps) for v in value]
    return _substitute(value, swaps)


def _placed_lists(verifier: dict[str, Any]) -> set[tuple[str, str]]:
    """(expression, list) of every check on a card's place in a list: two steps that reorder one list move
    each other's cards."""
    out: set[tuple[str, str]] = set()
    p = verifier.get("params", {})
    if "at" in p.get("where", {}):
        out.add((p.get("expression", ""), str(p["where"].get("list"))))
    for c in p.get("checks", []):
        out |= _placed_lists(c)
    return out


def _drag_instance(fam: Family, rng: random.Random, fresh: bool) -> Instance | None:
    t = fam.transition
    card = t.item
    if fresh:
        peers = fam.extra.get("peers", [])
        if not peers:
            return None
        card = rng.choice(peers)
    swaps = {t.item: card} if card != t.item else {}
    act = copy.deepcopy(t.actions)
    act[0]["target"] = {"text": card}
    verifier = _substitute_card(fam.verifier, swaps)
    return Instance(fam, _request(fam, [card, t.to], card, verifier=verifier), [], None, t.path + act, verifier, [card, t.to], card)


# ---- requests ------------------------------------------------------------------------------------------
def _clean(label: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"^[+×✕✖x]\s+|[:*]+$", "", label.strip())).strip()


def _checked_slots(slots: dict[str, str] | None, verifier: dict[str, Any]) -> dict[str, str] | None:
    """The typed values the verifier checks (and every ticked box): a value the request names must be one the
    check tells apart, so a field the app ignores (a filter box, a source for a kind that has none) goes
    unsaid. All of them when none is checked (the gate then says why)."""
    if not slots:
        return slots
    shown = json.dumps(verifier, ensure_ascii=False).casefold()
    kept = {k: v for k, v in slots.items() if v == "yes" or (v.strip() and v.strip().casefold() in shown)}
    return kept if any(v != "yes" for v in kept.values()) else slots


def _request(fam: Family, values: list[str], item: str, slots: dict[str, str] | None = None,
             verifier: dict[str, Any] | None = None, by_field: bool = False) -> str:
    """What a person asks for; `by_field` says each value with its field's name, even a lone one (what is said
    is not all that was typed, so a lone value need not be the record's name)."""
    t, name = fam.transition, fam.name
    slots = _checked_slots(slots, verifier or fam.verifier)
    where = _clean(t.heading)
    if name == "reorder":
        where_ = (verifier or fam.verifier)["params"].get("where", {})
        at = where_.get("at")
        place = f"position {at + 1}" if isinstance(at, int) else "another place"
        return _sentence(f"move {quote(item)} to {place}" + (f" in {quote(where or _clean(t.to))}" if where or t.to else ""))
    if name == "move":
        dest = _clean(t.to) or (values[1] if len(values) > 1 else "")
        return _sentence(f"move {quote(item)} to {quote(dest)}")
    if name == "toggle":
        where_ = fam.verifier["params"].get("where", {})
        flags = [k for k, v in where_.items() if isinstance(v, bool)]
        if "checked" not in where_ and len(flags) == 1:  # a document's flag: say which and to what
            return _sentence(f"set {quote(flags[0])} to {str(where_[flags[0]]).lower()}")
        checked = where_.get("checked", next((v for v in where_.values() if isinstance(v, bool)), None))
        return _sentence(f"{'check off' if checked else 'uncheck'} {quote(item)}")
    if name == "select" and values:
        return _sentence(f"choose {quote(values[0])}" + (f" in {quote(where)}" if where else ""))
    if name == "update" and item and slots:
        return _sentence(f"rename {quote(item)} to {quote(next(iter(slots.values())))}")
    if name == "update" and fam.extra.get("document") and slots:  # a value of the document set through a field
        said = " and ".join(f"{quote(_clean(k))} to {quote(v)}" for k, v in slots.items() if v != "yes")
        return _sentence(f"set {said}" + (f" in {quote(where)}" if where else ""))
    if name == "delete" and item:
        return _sentence(f"remove {quote(item)}" + (f" from {quote(where)}" if where else ""))
    if t.kind == "page_button" or (t.kind == "item" and not slots):
        button = _clean(t.button or t.control.get("name", ""))
        on = f" on {quote(item)}" if item else ""
        return _sentence(f"{button}{on}" if re.match(r"[A-Za-z]", button) else f"press {quote(button)}{on}")
    slots = slots or {}
    texts = [v for k, v in slots.items() if v not in ("yes",)]
    making = name == "create" and bool(MAKING.match(where))  # the form says what it makes: "Add group"
    if name == "create" and len(texts) == 1 and not by_field:
        if making:
            return _sentence(f"{where} {quote(texts[0])}")
        return _sentence(f"add {quote(texts[0])} to " + (quote(where) if where else "my list"))
    button = _clean(t.button)
    details = ", ".join(f"{_clean(k)} {quote(v)}" if v != "yes" else f"tick {quote(_clean(k))}" for k, v in slots.items())
    if making:
        return _sentence(f"{where} with {details}")
    if name == "search":
        return _sentence(f"search for {', '.join(quote(v) for v in texts)}" if len(texts) == 1 else f"search with {details}")
    if button.casefold() in GENERIC_BUTTONS:
        form = f"the {quote(where)} form" if where else "the form"
        return _sentence(f"fill in {form} with {details} and submit it")
    return _sentence(f"{button} with {details}")


def _sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else ".")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:].rstrip(".")


# ---- chains and retrieve -----------------------------------------------------------------------------------
def chain(first: Instance, second: Instance) -> Instance | None:
    """Two tasks done one after the other; both verifiers must hold at the end."""
    if first.setup or second.setup:
        return None
    if set(first.values) & set(second.values):
        return None
    if _placed_lists(first.verifier) & _placed_lists(second.verifier):
        return None
    if _same_leaves(_document_leaves(first), _document_leaves(second) | changed_leaves(second)):  # the second sets what the first checks
        return None
    if _dropped_on(second) & _dragged(first):  # the second drops onto the card the first took away: it lands elsewhere
        return None
    if first.item and first.family.name in ("update", "delete") and normalise(first.item) == normalise(second.item):
        return None  # the first renames or removes the record the second names: it is not there any more
    if not follows(first, second):
        return None
    req = _sentence(f"{_lower_first(first.request)}, then {_lower_first(second.request)}")
    verifier = {"template": "all_of", "params": {"checks": [first.verifier, second.verifier]}}
    then = _after(_last(first), second.family.transition, second.reference)
    return Instance(first.family, req, [], None, first.reference + _continuing(first, second, then), verifier,
                    first.values + second.values, ends=second.family.transition, dropped=second.dropped)


def _last(inst: Instance) -> Transition:
    return inst.ends or inst.family.transition


def _root(t: Transition) -> Transition:
    while t.continues is not None:
        t = t.continues
    return t


def follows(first: Instance, second: Instance) -> bool:
    """Whether the second step can be done where the first ends: a wizard's later step only right after the step
    before it (its path went through that one), and a wizard's first step not after a later one of the same wizard."""
    last, step = _last(first), second.family.transition
    if step.continues is not None:
        return step.continues is last
    if last is step:  # the same step again (Next, then Next), unless it led on to fields that hide its own
        return not step.leads_on
    return _root(last) is not step


def _continuing(first: Instance, second: Instance, then: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The second step's actions after the first's: when it continues the first (a wizard's next step), the press
    that led on from the first (left out of its reference when typing alone was its check) comes back first."""
    return first.dropped + then if second.family.transition.continues is _last(first) else then


def _dragged(inst: Instance) -> set[str]:
    """The texts of the cards an instance's reference drags away."""
    return {normalise(a["target"]["text"]) for a in inst.reference
            if a.get("action") == "left_click_drag" and isinstance(a.get("target"), dict) and a["target"].get("text")}


def _dropped_on(inst: Instance) -> set[str]:
    """The texts of the cards an instance's reference drops onto (a list is found by a card it holds)."""
    return {normalise(a["to"]["text"]) for a in inst.reference
            if a.get("action") == "left_click_drag" and isinstance(a.get("to"), dict) and a["to"].get("text")}


def _after(first: Transition, second: Transition, reference: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The second step of a chain without what the first already established. A step's path opens a page (signing
    in first when the sign-in lives in the page: its `arrival`), then may press what leads to the step (a ➕ that
    opens a form). When the first step ended on that page, the arrival both paths share holds already and is left
    out — a reload would lose what an in-page app holds, and a sign-in typed again goes into a page already signed
    in — while the presses that lead to the step are done again."""
    if second.continues is not None and second.continues is first:  # a wizard's next step: its path is the first step
        return reference[len(second.path):]
    if not reference or reference[0].get("action") != "goto" or not _ended_at(first, reference[0]["url"]):
        return reference
    arrival = second.path[: second.arrival]
    if arrival and reference[: len(arrival)] == arrival and first.path[: len(arrival)] == arrival:
        return reference[len(arrival):]
    return reference[1:]  # the page's opening: the first step ended there


def _ended_at(t: Transition, url: str) -> bool:
    ended = urlsplit(t.url_after or "")
    return bool(ended.path) and (ended.path + (f"#{ended.fragment}" if ended.fragment else "")) in (url, urlsplit(url).path)


def chain_on_document(first: Instance, second: Instance) -> Instance | None:
    """Two steps on one document whose effects meet (Next, then Next; a colour, then its alpha), as one task
    whose verifier is not yet known: the caller replays it and builds the check from what it did
    (`observed_chain`). None when they are not two steps on one document."""
    if first.setup or second.setup or not (first.family.extra.get("document") and second.family.extra.get("document")):
        return None
    if {normalise(v) for v in first.values} & {normalise(v) for v in second.values}:
        return None
    return _joined(first, second)


def _joined(first: Instance, second: Instance) -> Instance:
    req = _sentence(f"{_lower_first(first.request)}, then {_lower_first(second.request)}")
    then = second.reference
    if then and then[0].get("action") == "goto" and first.reference and first.reference[0] == then[0]:
        then = _after(_last(first), second.family.transition, then)
        if then is second.reference:  # no address after the first step: it stays on the page it opened
            then = then[1:]
    return Instance(first.family, req, [], None, first.reference + _continuing(first, second, then), {},
                    first.values + second.values, ends=second.family.transition, dropped=second.dropped)


def observed_chain(inst: Instance, before: Any, after: Any, singles: list[dict[str, Any]]) -> Instance | None:
    """A chained task's check from the document before and after its replay: the leaves it set, naming
    every value its request names, and other than what either step alone gives (each step counts)."""
    expression = inst.family.verifier.get("params", {}).get("expression", "")
    found = _document_change(before, after, expression, tuple(inst.values))
    if found is None:
        return None
    where = found[1]["params"]["where"]
    shown = {normalise(v) for v in where.values() if v is not None}
    if any(normalise(v) not in shown for v in inst.values):
        return None
    if any(where == s.get("params", {}).get("where") for s in singles):
        return None
    return Instance(inst.family, inst.request, [], None, inst.reference, found[1], inst.values, ends=inst.ends, dropped=inst.dropped)


def _document_leaves(inst: Instance) -> set[tuple[str, str]]:
    if not inst.family.extra.get("document"):
        return set()
    p = inst.verifier.get("params", {})
    return {(p.get("expression", ""), k) for k in p.get("where", {})}


def changed_leaves(inst: Instance) -> set[tuple[str, str]]:
    """Every leaf of the document the step changed when the walk did it (a colour's red changes its hex and hsl
    too), by the check's expression: what a step after another would overwrite."""
    before, after = inst.family.transition.diff.manifest or (None, None)
    if not inst.family.extra.get("document") or not isinstance(before, dict) or not isinstance(after, dict):
        return set()
    a, b = document_leaves(before), document_leaves(after)
    expression = inst.family.verifier.get("params", {}).get("expression", "")
    return {(expression, k) for k in a.keys() | b.keys() if a.get(k) != b.get(k) and not _about(a.get(k), b.get(k))}  # not by rounding


def overwrites(first: Instance, second: Instance) -> bool:
    """The second step changes a leaf that holds a value the first step's request names (a hex, then a red that
    changes the hex): the first value is gone at the end, so the chain would not say what it leaves."""
    return bool(first.values) and _same_leaves(_document_leaves(first), changed_leaves(second))


def _same_leaves(a: set[tuple[str, str]], b: set[tuple[str, str]]) -> bool:
    """Some path of one is a path of the other or inside it ("object" and "object.a")."""
    return any(ea == eb and (ka == kb or ka.startswith(kb + ".") or kb.startswith(ka + ".")) for ea, ka in a for eb, kb in b)


def made_then(inst: Instance) -> Instance | None:
    """Make a record, then act on it (the family's step, on the record just made), as one task. Its check is
    the record as it ends (`_as_it_ends`): what the making set and the step left, with what the step set. The
    request names what that check tells apart: a value the step replaced (the title before a rename) is typed
    by the reference but not said — no end state shows it, so a check could not tell it from another — and the
    record is then "it" ("Add calendar with description “Plans”, then rename it to “Team trip”")."""
    if not inst.setup or not inst.setup_request or inst.family.name == "delete":
        return None
    fam, made = inst.family, inst.family.setup_family
    if made is None:
        return None
    seen = _as_it_ends(fam.setup_verifier or {}, fam.verifier)  # on the walk's own values, where its end state is known
    ends = seen is not None and _holds_after(seen, fam.transition)
    verifier = (_as_it_ends(inst.setup_check or {}, inst.verifier) if ends else None) or inst.verifier
    shown = _shown_values(verifier)
    said = {k: v for k, v in inst.setup_slots.items() if v == "yes" or normalise(v) in shown}
    if any(v != "yes" for v in said.values()):
        first = _request(made, [], "", said, verifier, by_field=len(said) < len(inst.setup_slots))
    elif made.name == "create":  # none of its values is left, but the record it made is the one the step changed
        first = _making(made)
    else:  # a value set and then set again: the first step leaves nothing the end shows, so it does not count
        return None
    then = inst.request
    if inst.item and normalise(inst.item) not in shown:
        then = then.replace(quote(inst.item), "it")
    req = _sentence(f"{_lower_first(first)}, then {_lower_first(then)}")
    values = [v for v in [*inst.setup_slots.values(), *inst.values] if v != "yes" and normalise(v) in shown]
    return Instance(fam, req, [], None, inst.setup + inst.reference, verifier, list(dict.fromkeys(values)), inst.item)


def _as_it_ends(made: dict[str, Any], step: dict[str, Any]) -> dict[str, Any] | None:
    """The record a making step made, as the step that followed it leaves it: the making's check with the
    values the step set in place of those it replaced — one record check, so the values of both are checked
    on the same record. None when the two checks are not of one record."""
    mp = made.get("params", {})
    if made.get("template") == "row_exists" and step.get("template") == "field_equals" and step["params"].get("table") == mp.get("table"):
        sp = step["params"]
        return {"template": "row_exists", "params": {"table": mp["table"], "where": mp["where"] | {sp["field"]: sp["value"]}}}
    if made.get("template") != "js_state_matches" or int(mp.get("count", 0)) != 1:
        return None
    set_ = [c["params"]["where"] for c in _checks(step) if c.get("template") == "js_state_matches"
            and c["params"].get("expression") == mp.get("expression") and int(c["params"].get("count", 0)) >= 1]
    if len(set_) != 1:
        return None
    return {"template": "js_state_matches", "params": {"expression": mp["expression"], "where": mp["where"] | set_[0], "count": 1}}


def _holds_after(verifier: dict[str, Any], t: Transition) -> bool:
    """Whether a record check holds on the state the step left, where the walk read that state (else it is
    left to the gate)."""
    p = verifier["params"]
    after = _state_after(t, p.get("expression", "")) if verifier["template"] == "js_state_matches" else None
    return after is None or sum(1 for r in after if js_state_matches.matches(r, p["where"])) == int(p["count"])


def _checks(verifier: dict[str, Any]) -> list[dict[str, Any]]:
    if verifier.get("template") == "all_of":
        return [c for sub in verifier["params"].get("checks", []) for c in _checks(sub)]
    return [verifier]


def _state_after(t: Transition, expression: str) -> list[Any] | None:
    """The state the expression reads, as the step left it (as records), where the walk read it."""
    d, manifest = t.diff, _manifest_expression(t)
    if expression == RECORDS_JS and d.records is not None:
        return d.records[1]
    if manifest and expression == items_expression(manifest) and d.items is not None:
        return d.items[1]
    if manifest and expression == manifest and d.manifest is not None:
        after = d.manifest[1]
        return after if isinstance(after, list) else [after]
    return None


def _shown_values(verifier: dict[str, Any]) -> set[str]:
    """The values an end state that passes the check must hold: those of its positive record checks."""
    out: set[str] = set()
    for c in _checks(verifier):
        p = c.get("params", {})
        if c.get("template") == "js_state_matches" and int(p.get("count", 0)) >= 1 or c.get("template") == "row_exists":
            out |= {normalise(v) for v in p.get("where", {}).values() if v is not None}
        elif c.get("template") == "field_equals":
            out.add(normalise(p.get("value")))
    return out


def _making(fam: Family) -> str:
    """A making step said without its values (they are all gone by the end): the form's own words ("Create
    calendar"), else an item added to its list."""
    where = _clean(fam.transition.heading)
    if MAKING.match(where):
        return _sentence(where)
    return _sentence("add an item to " + (quote(where) if where else "my list"))


def retrieve_instances(walk: WalkResult) -> list[Instance]:
    """Questions about what the page lists at reset, answered from the records read then."""
    records = walk.initial.records if walk.initial else []
    by_list: dict[str, list[str]] = {}
    for r in records:
        if r.get("list") and r.get("text"):
            by_list.setdefault(r["list"], []).append(r["text"])
    out = []
    fam = Family("retrieve", "retrieve", Transition("read", [], [], None), {}, [])  # type: ignore[arg-type]
    page = walk.pages[0] if walk.pages else "/"
    for lst, texts in sorted(by_list.items()):
        n = len(texts)
        out.append(_answer(fam, page, f"How many items are in {quote(_clean(lst))}? Answer with the number.", str(n), [lst]))
        counts = Counter(r["text"] for r in records)
        for text in texts[:3]:
            homes = {r["list"] for r in records if r.get("text") == text}
            if counts[text] == 1 and len(homes) == 1 and len(text) <= 60:
                out.append(_answer(fam, page, f"Which list is {quote(text)} in? Answer with the list's name.", _clean(lst), [text], [lst]))
    return out


def counted_after_making(fams: list[Family], walk: WalkResult, seed: int) -> list[Instance]:
    """Questions about records the task first sets up through the UI (apps that start empty): make
    two to four records with a create family, then ask how many the list holds."""
    records = walk.initial.records if walk.initial else []
    out = []
    for fam in fams:
        p = fam.verifier.get("params", {})
        if fam.name != "create" or fam.setup or p.get("expression") != RECORDS_JS or not p.get("where", {}).get("list"):
            continue
        lst = p["where"]["list"]
        for k in range(4):
            rng = random.Random(f"{seed}-count-{fam.key}-{k}")
            made = [instance(fam, rng, fresh=True) for _ in range(rng.randint(2, 4))]
            if any(m is None for m in made) or len({m.values[0] for m in made}) < len(made):
                continue
            setup: list[dict[str, Any]] = []
            for m in made:
                setup += m.reference if not setup else _after(fam.transition, fam.transition, m.reference)
            check = {"template": "all_of", "params": {"checks": [m.verifier for m in made]}}
            n = sum(1 for r in records if r.get("list") == lst) + len(made)
            retrieve = Family("retrieve", f"retrieve|count|{fam.key}", fam.transition, {}, [])
            question = f"How many items are in {quote(_clean(lst))}? Answer with the number."
            inst = _answer(retrieve, fam.transition.page, question, str(n), [lst, *[m.values[0] for m in made]])
            inst.setup, inst.setup_check = setup, check
            inst.reference = inst.reference[1:]  # the setup leaves the list on screen
            out.append(inst)
    return out


def _answer(fam: Family, page: str, request: str, answer: str, values: list[str], also: list[str] | None = None) -> Instance:
    verifier = {"template": "answer_equals", "params": {"answer": answer, **({"also_accept": also} if also and also[0] != answer else {})}}
    return Instance(fam, request, [], None, [{"action": "goto", "url": page}, {"action": "terminate", "status": "success", "answer": answer}],
                    verifier, values)


# ---- to task specs -------------------------------------------------------------------------------------------
def to_spec(inst: Instance, sandbox: str, commit: str, seed: int, sign_in: list[dict[str, Any]], multi: bool = False) -> TaskSpec:
    family = "multi_step" if multi else inst.family.name
    injection = []
    setup = [*sign_in, *inst.setup]
    if setup:
        args: dict[str, Any] = {"actions": setup}
        if inst.setup_check:
            args["check"] = inst.setup_check
        injection.append({"skill": REPLAY_SKILL, "args": args})
    params = {"origin": "discovery", "family_key": inst.family.key, "values": inst.values, "item": inst.item,
              "steps": [family] if not multi else ["chain"]}
    area = inst.family.transition.page.strip("/").split("/")[0] or "home"
    return TaskSpec(
        sandbox=sandbox, source_commit=commit, family=family, app_area=area, instruction=inst.request, params=params,
        seed=seed, injection=injection, verifier=inst.verifier, reference=inst.reference,
        provenance={"agent": "static", "path": "discovery", "model": None, "synthesiser_version": VERSION},
    )
