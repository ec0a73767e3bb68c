"""A second labelled set: nottelabs/open-operator-evals' WebVoyager30 runs as data.jsonl for `real_eval`.

The repository (no licence stated: nothing of it is committed, see tests/data/mining_eval/OPERATOR_EVALS.md)
holds three agents' runs of 30 WebVoyager tasks, 8 runs each: Notte (gemini-2.0-flash), Browser-Use 0.1.40
(gpt-4o) and Convergence proxy-lite. Each `results_no_screenshot.json` keeps, per model call, the messages
in (with the page's interactive elements as text) and the model's reply (its own evaluation of the last
action, memory and next goal, or proxy-lite's observation and thinking) with the actions it chose by
element index. `build_operator_evals_set` writes those as BrowserGym-style steps the importer reads:
`click('12')`, `fill('I1', 'text')`, `goto(url)`, ..., with an `axtree` of the elements that call saw
(`[12] button 'Search'`) so a click's target has a role and a name, the model's words as `thought`, the
page's `url`, and for Notte, whose harness reports each action's outcome, the failure as `error`. A turn
of several actions (Browser-Use) is one step per action sharing the turn's thought. Actions with no
counterpart in our space (extract_content, switch_tab, scrape, google_search, ...) are kept as calls
the importer marks unmapped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "nottelabs/open-operator-evals"
AGENTS = {"Notte": "notte-gemini-2.0-flash", "BrowserUse": "browser-use-gpt-4o", "Convergence": "proxy-lite"}
RUNS = ("0", "1")  # the labelled sample: the first two of the eight runs of every task, for every agent
_ROLES = {
    "a": "link",
    "button": "button",
    "select": "combobox",
    "textarea": "textbox",
    "option": "option",
    "img": "img",
    "li": "listitem",
    "label": "label",
}
_BU_ELEMENT = re.compile(r"^\[(\d+)\]<(\w+)\s*(.*)$")  # [12]<button Search/>
_NOTTE_ELEMENT = re.compile(r"^([A-Z]\d+)\[:\]<(\w+)([^>]*)>(.*)$")  # B5[:]<div role="button">text</div>
_PROXY_ELEMENT = re.compile(r"^- \[(\d+)\] <(\w+)([^>]*)>?(.*)$")  # - [1] <input ... title="Search"/>
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def build_operator_evals_set(git_dir: str | Path, out: str | Path, commit: str = "HEAD", runs=RUNS) -> int:
    """data.jsonl from a snapshot of open-operator-evals (runs `runs` of every task); returns the count."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        names = snap.names("WebVoyager30")  # task folder names hold spaces ("Google Map--1")
        for path in sorted(p for p in names if p.endswith("/results_no_screenshot.json")):
            agent, _stamp, _task, run = path.split("/")[1:5]
            if agent not in AGENTS or run not in runs:
                continue
            result = snap.json(path)
            if not isinstance(result, dict):  # a blob the snapshot does not carry, or not JSON
                continue
            record = trajectory(agent, result, run)
            if record["steps"]:  # a run that timed out before its first model call has nothing to judge
                record["source"] = snap.source(REPO, path, "none stated")
                lines.append(record)
    return write_jsonl(out, lines)


def trajectory(agent: str, result: dict, run: str) -> dict:
    """One run as a data.jsonl record (steps in BrowserGym form, see the module's doc)."""
    steps: list[dict] = []
    for page in _dicts(result.get("steps")):
        for call in _dicts(page.get("llm_calls")):
            turn = {"Notte": _notte_turn, "BrowserUse": _browser_use_turn, "Convergence": _proxy_turn}[agent]
            thought, actions, elements, error_before = turn(call)
            if error_before and steps:
                steps[-1]["error"] = error_before
            for action in actions:
                steps.append(
                    {"action": action, "thought": thought, "url": page.get("url"), "axtree": elements}
                )
    task = _dict(result.get("task"))
    return {
        "task_id": f"{agent}/{result.get('task_id') or task.get('id')}/{run}",
        "policy": AGENTS[agent],
        "instruction": _str(result.get("task_description") or task.get("question")),
        "final_answer": _str(result.get("agent_answer")) if steps else None,
        "steps": steps,
    }


def _call(name: str, *args: Any) -> str:
    return f"{name}({', '.join(repr(a) for a in args)})"


def _scroll(direction: str | None, amount: Any = None) -> str:
    dy = int(amount) if isinstance(amount, int | float) and amount else 500
    return _call("scroll", 0, -dy if direction == "up" else dy)


def _generic(name: str, args: dict) -> str | None:
    """The actions the three agents share, by name; None for one only an agent-specific rule knows."""
    bid = args.get("id", args.get("index", args.get("mark_id")))
    if name in ("click", "click_element") and bid is not None:
        return _call("click", str(bid))
    if name in ("goto", "go_to_url", "open_tab") and args.get("url"):
        return _call("goto", str(args["url"]))
    if name in ("go_back", "back"):
        return "go_back()"
    if name in ("scroll_down", "scroll_up"):
        return _scroll(name.removeprefix("scroll_"), args.get("amount"))
    if name == "select_dropdown_option" and bid is not None:
        return _call("select_option", str(bid), str(args.get("value", args.get("text", ""))))
    return None


def _unmapped(name: str) -> str:
    return f"{re.sub(r'[^a-z0-9_]', '_', name.lower()) or 'unknown'}()"


def _role(tag: str, attrs: str) -> str:
    found = dict(_ATTR.findall(attrs))
    if found.get("role"):
        return found["role"]
    if tag == "input":
        kind = found.get("element_type") or found.get("type") or attrs
        return "button" if re.search(r"\b(submit|button)\b", kind) else "textbox"
    return _ROLES.get(tag, "generic")


def _line(bid: str, role: str, name: str) -> str:
    name = " ".join(name.replace("'", "’").split())[:80]
    return f"[{bid}] {role} '{name}'" if name else f"[{bid}] {role}"


def _dicts(value: Any) -> list[dict]:
    """The records of a list the source should hold; anything else in a run (the files are another project's
    output, read as untrusted) is passed over rather than trusted."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _json_in(text: str) -> dict:
    try:
        return json.loads(text[text.index("{") : text.rindex("}") + 1])
    except ValueError:
        return {}


def _label(attrs: str, shown: str) -> str:
    return dict(_ATTR.findall(attrs)).get("aria_label") or re.sub(r"<[^>]*>", " ", shown)


# ---- Notte -------------------------------------------------------------------------------------------


def _notte_turn(call: dict) -> tuple[str, list[str], str, str | None]:
    reply = _json_in(_text(_dict(call.get("message_out")).get("content")))
    state = _dict(reply.get("state"))
    thought = " ".join(
        str(state[k])
        for k in ("previous_goal_status", "previous_goal_eval", "memory", "next_goal")
        if state.get(k)
    )
    actions = []
    for item in _dicts(reply.get("actions")) or [{"invalid_reply": {}}]:
        for name, args in item.items():
            args = args if isinstance(args, dict) else {}
            if name == "fill":
                actions.append(_call("fill", str(args.get("id")), str(args.get("value", ""))))
            elif name == "completion":
                done = "send_msg_to_user" if args.get("success") else "report_infeasible"
                actions.append(_call(done, str(args.get("answer", ""))))
            elif name == "press_key":
                actions.append(_call("keyboard_press", str(args.get("key", ""))))
            else:
                actions.append(_generic(name, args) or _unmapped(name))
    messages = _dicts(call.get("messages_in"))
    elements, error = [], None
    for message in messages:
        text = _text(message.get("content"))
        if message.get("role") == "user" and "[:]<" in text:  # the system prompt's example has one too
            elements = []
            for raw in text.splitlines():
                m = _NOTTE_ELEMENT.match(raw.strip())
                if m:
                    elements.append(_line(m[1], _role(m[2], m[3]), _label(m[3], m[4])))
    results = [_text(m.get("content")) for m in messages if m.get("role") == "user"]
    last = next((t for t in reversed(results) if re.match(r"^\s*(✅|❌)", t)), None)
    if last and last.lstrip().startswith("❌"):
        error = last.strip()[:300]
    return thought, actions, "\n".join(elements), error


# ---- Browser-Use -------------------------------------------------------------------------------------


def _browser_use_turn(call: dict) -> tuple[str, list[str], str, str | None]:
    out = _dict(call.get("message_out"))
    reply: dict = {}
    for tool in _dicts(out.get("tool_calls")):
        reply = _json_in(str(_dict(tool.get("function")).get("arguments", "")))
    state = _dict(reply.get("current_state"))
    thought = " ".join(
        str(state[k]) for k in ("evaluation_previous_goal", "memory", "next_goal") if state.get(k)
    )
    actions = []
    for item in _dicts(reply.get("action")) or [{"invalid_reply": {}}]:
        for name, args in item.items():
            args = args if isinstance(args, dict) else {}
            if name == "input_text":
                actions.append(_call("fill", str(args.get("index")), str(args.get("text", ""))))
            elif name == "done":
                actions.append(_call("send_msg_to_user", str(args.get("text", ""))))
            elif name == "send_keys":
                actions.append(_call("keyboard_press", str(args.get("keys", ""))))
            else:
                actions.append(_generic(name, args) or _unmapped(name))
    elements: list[str] = []
    for message in _dicts(call.get("messages_in")):
        text = _text(message.get("content"))
        if "Interactive elements" not in text:
            continue
        elements = []
        for raw in text.splitlines():
            m = _BU_ELEMENT.match(raw.strip())
            if m:
                attrs, _, shown = m[3].removesuffix("/>").rpartition(">")  # <tag attrs>text/> or <tag attrs/>
                parts = (shown if attrs else "").strip() or ";".join([attrs, shown])
                label = next(
                    (p for p in reversed(parts.split(";")) if p.strip() not in ("", "false", "true")), ""
                )
                elements.append(_line(m[1], _role(m[2], m[3]), label))
    return thought, actions, "\n".join(elements), None


# ---- Convergence proxy-lite --------------------------------------------------------------------------


def _proxy_turn(call: dict) -> tuple[str, list[str], str, str | None]:
    out = _dict(call.get("message_out"))
    content = _text(out.get("content"))
    thought = " ".join(
        m.strip()
        for m in re.findall(r"<(?:observation|thinking)>(.*?)</(?:observation|thinking)>", content, re.S)
    )
    tools = [_dict(t.get("function")) for t in _dicts(out.get("tool_calls"))]
    if not tools:  # a tool call written into the text instead of the API's field
        tools = [_json_in(t) for t in re.findall(r"<tool_call>(.*?)(?:</tool_call>|$)", content, re.S)]
    actions = []
    for tool in tools or [{"name": "invalid_reply"}]:
        name = str(tool.get("name", "invalid_reply"))
        args = tool.get("arguments", {})
        args = _json_in(args) if isinstance(args, str) else args if isinstance(args, dict) else {}
        if name == "type":
            for entry in _dicts(args.get("entries")):
                actions.append(_call("fill", str(entry.get("mark_id")), str(entry.get("content", ""))))
            if args.get("submit"):
                actions.append(_call("keyboard_press", "Enter"))
        elif name == "scroll":
            actions.append(_scroll(args.get("direction")))
        elif name == "return_value":
            actions.append(_call("send_msg_to_user", str(args.get("value", ""))))
        else:
            actions.append(_generic(name, args) or _unmapped(name))
    elements: list[str] = []
    for message in _dicts(call.get("messages_in")):
        if message.get("label") != "screenshot":
            continue
        elements = []
        for raw in _text(message.get("content")).splitlines():
            m = _PROXY_ELEMENT.match(raw.strip())
            if m:
                title = dict(_ATTR.findall(m[3])).get("title", "")
                elements.append(_line(m[1], _role(m[2], m[3]), _label(m[3], m[4]).strip() or title))
    return thought, actions, "\n".join(elements), None
