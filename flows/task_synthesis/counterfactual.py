"""Counterfactual replays: the near misses a verifier must tell apart from the task done right.

- one value the request names, replaced by another plausible one of the same type (typed text, a
  select's option, a checkbox the request says to tick): the verifier must fail, else it does not
  check that value (`underspecified_verifier`);
- the same actions on a different record than the named one (a twin of an injected record, with its
  own id and values, reached the same way): the verifier must fail (`passes_on_other_record`);
- the reference followed by harmless unrelated navigation (open the home page, go back): the verifier
  must still pass (`brittle_verifier`: it read something transient, such as a flash message).
One replay per named value and one per injected record the reference acts on; the navigation detour
continues the gate's repeat episode, so it costs two page loads, not a replay: the cost is bounded by the
request, not by the app.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from flows.task_synthesis.values import another_like


@dataclass
class Variant:
    stage: str  # counterfactual | other_record
    describe: str
    reference: list[dict[str, Any]]
    injection: list[dict[str, Any]]
    expect_pass: bool
    reason: str  # the rejection code when the verifier does not do what is expected
    other_option_at: int | None = None  # a select to switch to another option at replay time (read off the page)
    named: list[str] = field(default_factory=list)


def names(instruction: str, value: str) -> bool:
    """Does the request name this value (as a word or phrase of its own, case-insensitively)?"""
    value = value.strip()
    if not value:
        return False
    return re.search(rf"(?<!\w){re.escape(value.casefold())}(?!\w)", instruction.casefold()) is not None


def variants(instruction: str, reference: list[dict[str, Any]], injection: list[dict[str, Any]]) -> list[Variant]:
    """The near misses that must fail; the navigation detour, which must pass, continues the gate's repeat
    episode (`detour`)."""
    return _value_variants(instruction, reference, injection) + _other_record_variants(reference, injection)


def _value_variants(instruction: str, reference: list[dict[str, Any]], injection: list[dict[str, Any]]) -> list[Variant]:
    out: list[Variant] = []
    for i, action in enumerate(reference):
        kind = action.get("action")
        if kind == "type" and names(instruction, str(action.get("text", ""))):
            changed = copy.deepcopy(reference)
            changed[i]["text"] = another_like(str(action["text"]))
            for later in changed[i + 1:]:  # what was typed, later found by its text (a card then dragged), alike
                for key in ("target", "to"):
                    target = later.get(key)
                    if isinstance(target, dict):
                        for part in ("name", "text"):
                            if target.get(part) == action["text"]:
                                target[part] = changed[i]["text"]
            out.append(Variant("counterfactual", f"step {i + 1} types {changed[i]['text']!r} instead of {action['text']!r}",
                               changed, injection, False, "underspecified_verifier", named=[str(action["text"])]))
        elif kind == "select":
            # which option is another one is read off the live page; whether the request names the chosen
            # option's text too (a value attribute is rarely what a person says)
            out.append(Variant("counterfactual", f"step {i + 1} picks another option", copy.deepcopy(reference),
                               injection, False, "underspecified_verifier", other_option_at=i))
        elif kind == "check":
            label = (action.get("target") or {}).get("label") or ""
            if names(instruction, label):
                changed = copy.deepcopy(reference)
                changed[i]["checked"] = not action.get("checked", True)
                out.append(Variant("counterfactual", f"step {i + 1} leaves {label!r} {'un' if action.get('checked', True) else ''}ticked",
                                   changed, injection, False, "underspecified_verifier", named=[label]))
    return out


def _other_record_variants(reference: list[dict[str, Any]], injection: list[dict[str, Any]]) -> list[Variant]:
    """For each injected record the reference reaches by its id (in a URL) or by one of its values (a
    target's name or text): inject a twin with its own id and values, and act on the twin instead."""
    out: list[Variant] = []
    used_ids = {inj.get("args", {}).get("id") for inj in injection}
    for inj in injection:
        args = inj.get("args") or {}
        rid = args.get("id")
        if not isinstance(rid, int):
            continue
        twin_id = rid + 1
        while twin_id in used_ids:
            twin_id += 1
        twin = {key: (another_like(v) if isinstance(v, str) and v else v) for key, v in args.items()} | {"id": twin_id}
        mapping = {str(v): str(twin[key]) for key, v in args.items() if isinstance(v, str) and v}
        changed, touched = _retarget(reference, str(rid), str(twin_id), mapping)
        if not touched:
            continue
        out.append(Variant(
            "other_record", f"the reference acts on a twin of injected record {rid} (id {twin_id})", changed,
            [*injection, {"skill": inj["skill"], "args": twin}], False, "passes_on_other_record",
        ))
    return out


def _retarget(reference: list[dict[str, Any]], rid: str, twin_id: str, mapping: dict[str, str]) -> tuple[list[dict[str, Any]], bool]:
    changed, touched = copy.deepcopy(reference), False
    id_in_path = re.compile(rf"(?<=/){re.escape(rid)}(?=/|\?|#|$)")
    for action in changed:
        if action.get("action") == "goto" and id_in_path.search(action.get("url", "")):
            action["url"] = id_in_path.sub(twin_id, action["url"])
            touched = True
        for key in ("target", "to"):
            target = action.get(key)
            if isinstance(target, dict):
                for part in ("name", "text", "label", "within"):
                    if target.get(part) in mapping:
                        target[part] = mapping[target[part]]
                        touched = True
    return changed, touched


def detour(home_path: str) -> list[dict[str, Any]]:
    """Harmless unrelated navigation: open the home page, then go back."""
    return [{"action": "goto", "url": home_path}, {"action": "system_button", "button": "back"}]


def options_expression(target: dict[str, Any]) -> str:
    """A JS expression listing a select's options as [value, text, selected], the select found by its
    label (or aria-label) inside the landmark named `within`; null when there is no such select."""
    label, within = json.dumps(target.get("label") or target.get("name") or ""), json.dumps(target.get("within"))
    return (
        f"(() => {{ const label = {label}, within = {within};"
        " const scope = within ? document.querySelector('[aria-label=\"' + CSS.escape(within) + '\"]') : document;"
        " if (!scope) return null;"
        " const sel = [...scope.querySelectorAll('select')].find(s => [...(s.labels || [])].some("
        "l => l.textContent.trim() === label) || s.getAttribute('aria-label') === label);"
        " return sel ? [...sel.options].map(o => [o.value, o.textContent.trim(), o.selected]) : null; })()"
    )


def other_option(options: list[list[Any]], action: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The reference's option and the next non-empty other one: (changed action, chosen text)."""
    texts = {str(v): str(t) for v, t, _ in options}
    current = str(action["value"]) if action.get("value") is not None else next(
        (str(v) for v, t, _ in options if t == action.get("option")), None)
    if current not in texts:
        return None
    values = [str(v) for v, _, _ in options if str(v) != ""]
    others = [v for v in values if v != current]
    if not others:
        return None
    after = [v for v in values[values.index(current) + 1:] if v != current] if current in values else []
    pick = (after or others)[0]
    changed = {k: v for k, v in action.items() if k not in ("value", "option")} | {"value": pick}
    return changed, texts[current]
