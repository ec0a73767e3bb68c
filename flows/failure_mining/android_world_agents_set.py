"""A sixth labelled set: T3A- and SeeAct-style agents on AndroidWorld as data.jsonl for `real_eval` (ANDROID_WORLD_AGENTS.md).

The source (gyaanantia/android_world_agents) holds one JSON file per AndroidWorld episode under `results/`:
the task's `goal`, the model, the prompt variant, `success`, and per step a `step_records` entry whose
`agent_data` has the model's turn (`action_output`: `Reason: ...` then `Action: {"action_type": ...}`),
the accessibility elements the turn saw (`before_element_list`, each with text, content description,
class and pixel box) and, written after the action ran, the model's own `summary` of what it did and saw.
`build_android_world_agents_set` writes each run in our own JSONL schema: one step per source step, the
action as our actions (an element index counts the elements the turn's prompt listed, A., B., ...; it
becomes a click on that element, named as the prompt named it and placed at its box's centre on the 0..999
grid of the 1080 x 2400 screen; a click given in pixels stays a point) and, as
`raw_output`, the turn's words verbatim followed by `Summary: ` and the summary; when the harness wrote its
own message instead of a summary (the action could not be parsed, the index was out of range, the action
raised), that message is also the step's `error`. Files are parsed with
`json` and never run; a run whose blob the snapshot lacks, or with no steps, is left out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "gyaanantia/android_world_agents"
LICENSE = "none stated (no licence file; the README says it follows AndroidWorld's terms, Apache-2.0)"
SCREEN = (1080, 2400)
SCROLL_PIXELS = 300
_ACTION = re.compile(r"Action:\s*(\{.*\})", re.S)
# The harness's own summaries of a turn it could not run (AndroidWorld's T3A writes these instead of the model's).
_REJECTED = (
    "Can not parse the output",
    "The parameter index is out of range",
    "Some error happened executing the action",
)
_CLASS_ROLES = {
    "Button": "button", "ImageButton": "button", "EditText": "textbox", "CheckBox": "checkbox",
    "Switch": "switch", "RadioButton": "radio", "TextView": "text", "ImageView": "image",
}  # fmt: skip


def build_android_world_agents_set(git_dir: str | Path, out: str | Path, commit: str = "HEAD") -> int:
    """data.jsonl from a snapshot of the repository (every run JSON under results/); returns the runs written."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        for name in sorted(n for n in snap.names("results/") if n.endswith(".json")):
            # a blob the snapshot does not carry, or not JSON, is None: not an episode
            record = trajectory(name.removesuffix(".json"), snap.json(name))
            if record is not None:
                record["source"] = snap.source(REPO, name, LICENSE)
                lines.append(record)
    return write_jsonl(out, lines)


def trajectory(task_id: str, run: Any) -> dict | None:
    """One episode's JSON as a data.jsonl record; None when it is not an episode with step records."""
    if not isinstance(run, dict) or not isinstance(run.get("goal"), str):
        return None
    records = run.get("step_records") or []
    if not records:
        return None
    policy = "seeact" if "seeact" in task_id else "t3a"
    steps = []
    for i, rec in enumerate(records):
        data = rec.get("agent_data") or {}
        said = data.get("action_output")
        if not isinstance(said, str):
            said = (run.get("actions") or [None] * len(records))[i]
        said = said if isinstance(said, str) else json.dumps(said)
        summary = data.get("summary")
        elements = listed_elements(data.get("action_prompt"), data.get("before_element_list") or [])
        raw = f"{said}\nSummary: {summary}" if isinstance(summary, str) and summary.strip() else said
        step = {
            "actions": actions_of(said, elements),
            "raw_output": raw,
            "screen_width": SCREEN[0],
            "screen_height": SCREEN[1],
        }
        if isinstance(summary, str) and summary.strip().startswith(_REJECTED):
            step["error"] = summary.strip()
        steps.append(step)
    model = run.get("model_name") or "unknown"
    variant = run.get("prompt_variant") or ""
    return {
        "task_id": task_id,
        "policy": f"{policy}-{variant}" if variant else policy,
        "model": model,
        "instruction": run["goal"],
        "steps": steps,
    }


def action_json(said: str) -> dict | None:
    """The turn's `Action: {...}` object, parsed with json (the last one written), else None."""
    m = _ACTION.search(said)
    if not m:
        return None
    text = m[1]
    for end in range(
        len(text), 0, -1
    ):  # trailing words after the object: shrink to the last brace that parses
        if text[end - 1] != "}":
            continue
        try:
            value = json.loads(text[:end])
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def actions_of(said: str, elements: list) -> list[dict]:
    """Our action dicts for one turn (an unparsed or unknown action: none)."""
    act = action_json(said)
    return sent_actions(act, _element(elements, act.get("index")) if act is not None else None)


def sent_actions(act: dict | None, element: dict | None) -> list[dict]:
    """Our action dicts for one AndroidWorld JSON action (`action_type`, with `index`, `x` / `y`, `text`,
    `direction`, `app_name`, `goal_status`); `element` is the indexed element's target and point as the caller's
    listing gives them (None: no such element). Other harnesses that send AndroidWorld's actions share it."""
    if not isinstance(act, dict):
        return []
    kind = act.get("action_type")
    if element is None and _is_number(act.get("x")) and _is_number(act.get("y")):  # a click by pixels
        element = {"target": None, "point": (_grid(act["x"], SCREEN[0]), _grid(act["y"], SCREEN[1]))}
    if kind in ("click", "long_press", "double_tap"):
        if element is None:
            return []
        point = element["point"]
        if kind == "long_press":
            return [{"action": "long_press", "x": point[0], "y": point[1]}] if point else []
        click: dict[str, Any] = {"action": "double_click" if kind == "double_tap" else "left_click"}
        if point:
            click["x"], click["y"] = point
        if element["target"]:
            click["target"] = element["target"]
        return [click]
    if kind == "input_text" and isinstance(act.get("text"), str):
        typed: dict[str, Any] = {"action": "type", "text": act["text"]}
        if element is not None and element["target"]:
            typed["target"] = element["target"]
        return [typed]
    if kind in ("scroll", "swipe"):
        return _wheel(kind, act.get("direction"), element)
    if kind == "navigate_home":
        return [{"action": "system_button", "button": "home"}]
    if kind == "navigate_back":
        return [{"action": "system_button", "button": "back"}]
    if kind == "keyboard_enter":
        return [{"action": "system_button", "button": "enter"}]
    if kind == "open_app" and isinstance(act.get("app_name"), str) and act["app_name"].strip():
        return [{"action": "open_app", "app": act["app_name"]}]
    if kind == "wait":
        return [{"action": "wait"}]
    if kind == "status":
        return [
            {
                "action": "terminate",
                "status": "success" if act.get("goal_status") == "complete" else "failure",
            }
        ]
    if kind == "answer" and isinstance(act.get("text"), str):
        return [{"action": "terminate", "status": "success", "answer": act["text"]}]
    return []


def _wheel(kind: str, direction: Any, element: dict | None) -> list[dict]:
    """A scroll (content moves the way named) or a swipe (the finger moves the way named)."""
    if direction not in ("up", "down", "left", "right"):
        return []
    at = element["point"] if element is not None else None
    x, y = at or (500, 500)
    if kind == "swipe":
        dx, dy = {"up": (0, -300), "down": (0, 300), "left": (-300, 0), "right": (300, 0)}[direction]
        return [{"action": "swipe", "x": x, "y": y, "x2": _clip(x + dx), "y2": _clip(y + dy)}]
    sign = 1 if direction in ("up", "right") else -1
    wheel = {"action": "scroll" if direction in ("up", "down") else "hscroll", "pixels": sign * SCROLL_PIXELS}
    if at is not None:
        wheel["x"], wheel["y"] = x, y
    return [wheel]


_LISTED = re.compile(r"^[A-Z]{1,2}\. (.*)$", re.M)
_QUOTED = re.compile(r'"(.*?)"')
_ROLES = (
    ("text box", "textbox"),
    ("button", "button"),
    ("checkbox", "checkbox"),
    ("switch", "switch"),
    ("image", "image"),
    ("icon", "image"),
)


def listed_elements(prompt: Any, elements: list) -> list:
    """The elements as the model saw them: the turn's prompt lists "some UI elements" as A., B., ...,
    and the model's index counts that list, not the harness's element list (which also holds elements the
    prompt leaves out). Each listed line is matched, in order, to the next element whose text, description
    or resource name it quotes, for that element's box; a line no element matches keeps its name only.
    Without a lettered listing in the prompt, the harness's list is taken as it is."""
    if not isinstance(prompt, str):
        return elements
    at = prompt.rfind("Here is a list of descriptions for some UI elements")
    if at < 0:
        return elements
    listing = prompt[at:].split("\n\n", 1)[0]
    out, j = [], 0
    for m in _LISTED.finditer(listing):
        line = m[1]
        quoted = _QUOTED.findall(line)
        name = quoted[0] if quoted else line.strip()
        role = next((r for word, r in _ROLES if word in line.rsplit('"', 1)[-1] or word in line), "generic")
        found = None
        for k in range(j, len(elements)):
            el = elements[k] if isinstance(elements[k], dict) else {}
            labels = {el.get(f) for f in ("text", "content_description", "resource_name", "hint_text")} - {
                None,
                "",
            }
            if labels & set(quoted):
                found, j = el, k + 1
                break
        out.append({"listed": name, "role": role, "box": (found or {}).get("bbox_pixels")})
    return out or elements  # T3A's own listing, "UI element <i>: UIElement(...)", counts the harness's list


def _element(elements: list, index: Any) -> dict | None:
    """The indexed element's target (role from its class, name from its text or description) and centre."""
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(elements):
        return None
    el = elements[index]
    if not isinstance(el, dict):
        return None
    if "listed" in el:  # as the prompt listed it
        box, name, role = el["box"], el["listed"], el["role"]
    else:
        box = el.get("bbox_pixels")
        name = next(
            (
                el[k].strip()
                for k in ("text", "content_description", "hint_text")
                if isinstance(el.get(k), str) and el[k].strip()
            ),
            None,
        )
        role = _CLASS_ROLES.get(str(el.get("class_name") or "").rsplit(".", 1)[-1], "generic")
    point = None
    if isinstance(box, dict) and all(_is_number(box.get(k)) for k in ("x_min", "x_max", "y_min", "y_max")):
        point = (
            _grid((box["x_min"] + box["x_max"]) / 2, SCREEN[0]),
            _grid((box["y_min"] + box["y_max"]) / 2, SCREEN[1]),
        )
    target = {"role": role, "name": name} if name else None
    if point is None and target is None:
        return None
    return {"target": target, "point": point}


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _grid(v: float, size: int) -> int:
    return max(0, min(999, int(v * 1000 / size)))


def _clip(v: int) -> int:
    return max(0, min(999, v))
