"""A labelled set of an AndroidWorld agent's failing runs (LYXFOREVER/my_android_world) as data.jsonl for `real_eval`
(LYX_ANDROID_WORLD.md).

The source is a research fork of AndroidWorld whose harness dumped each episode it ran as
`data_history/<start time>/history.json`. Such a file is a list with one entry per step, holding the task's goal
(`task_goal`), the episode's outcome (`result`), the prompt the model got (AndroidWorld's "UI element <i>: {...}"
listing of the screen), the model's turn (`action_output`: its reason, then `Action: ...`), the reason alone
(`action_reason`), the harness's `summary` of the step and the screen's elements with their pixel boxes
(`ui_description`: `UI element <i>: {...}` and `ui_bbox` = [x_min, x_max, y_min, y_max] on the 1080 x 2400 screen).

The model often wrote its action in another grammar (`click(start_box='(500,891)')`, `open_app(app_name='Recorder')`);
the harness then wrote the action it actually sent as `Action selected: {"action_type": ...}` at the head of the
summary, or `Can not parse the output ...` when it sent none. `build_lyx_android_world_set` keeps step i = the
source's step i and maps it so:

- **Action.** The `Action selected` JSON when the summary has one, else the turn's own `Action: {...}` JSON: click /
  long_press / input_text by `index` name the element `UI element <index>` (its text, description or hint; a
  `textbox` when editable) and its box's centre on the 0..999 grid; a click given as `x`, `y` is the pixel point;
  scroll (the content moves the way named, 300 px; at the element when one is indexed), navigate_back / home and
  keyboard_enter (`system_button`), open_app, wait, status (`terminate`: complete = success) and answer
  (`terminate` with the answer) as in `android_world_agents_set`.
- **Words.** `raw_output` is the turn verbatim, then `\\nSummary: ` and the harness's summary.
- **Errors.** A summary that is the harness's own refusal (`Can not parse the output`, `The parameter index is out
  of range`) is the step's `error`, and the step has no action (none was sent). `Some error occurred calling LLM
  during summarization phase` comes after the action ran: the step keeps the turn's action and has no error.

Files are parsed with `json` (the element lines with regular expressions) and never run; a file that is missing,
not JSON or has no steps is left out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from flows.failure_mining.android_world_agents_set import action_json, sent_actions
from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "LYXFOREVER/my_android_world"
COMMIT = "33227453903bc3adf394ee17dee26c75767a7e3a"
LICENSE = "Apache-2.0 (the repository's LICENSE, the Apache License 2.0 text AndroidWorld ships)"
SCREEN = (1080, 2400)
# The harness's own summaries of a step it could not run: the step's error, and no action was sent.
_REJECTED = ("Can not parse the output", "The parameter index is out of range")
_SELECTED = "Action selected: "
_FIELD = re.compile(r'"(text|content_description|hint_text)": "((?:[^"\\]|\\.)*)"')


def build_lyx_android_world_set(git_dir: str | Path, out: str | Path, commit: str = COMMIT) -> int:
    """data.jsonl from a snapshot of the repository (every data_history/*/history.json); returns the runs written."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        for name in sorted(n for n in snap.names("data_history/") if n.endswith("/history.json")):
            record = trajectory(name.removesuffix("/history.json"), snap.json(name))
            if record is not None:
                record["source"] = snap.source(REPO, name, LICENSE)
                lines.append(record)
    return write_jsonl(out, lines)


def trajectory(task_id: str, history: Any) -> dict | None:
    """One history.json as a data.jsonl record; None when it is not a list of steps with a goal."""
    if not isinstance(history, list) or not history or not all(isinstance(s, dict) for s in history):
        return None
    goal = history[0].get("task_goal")
    if not isinstance(goal, str) or not goal.strip():
        return None
    steps = []
    for entry in history:
        said = entry.get("action_output")
        said = said if isinstance(said, str) else json.dumps(said)
        summary = entry.get("summary") if isinstance(entry.get("summary"), str) else ""
        elements = entry.get("ui_description") if isinstance(entry.get("ui_description"), list) else []
        rejected = summary.strip().startswith(_REJECTED)
        step: dict[str, Any] = {
            "actions": [] if rejected else actions_of(executed(said, summary), elements),
            "raw_output": f"{said}\nSummary: {summary}" if summary.strip() else said,
            "screen_width": SCREEN[0],
            "screen_height": SCREEN[1],
        }
        if rejected:
            step["error"] = summary.strip()
        steps.append(step)
    return {
        "task_id": task_id,
        "policy": "my_android_world",
        "model": "unknown (not recorded)",
        "instruction": goal,
        "steps": steps,
    }


def executed(said: str, summary: str) -> dict | None:
    """The action the harness sent: its `Action selected: {...}` when the summary has one, else the turn's own JSON."""
    if summary.startswith(_SELECTED):
        try:
            value, _end = json.JSONDecoder().raw_decode(summary[len(_SELECTED) :])
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return action_json(said)


def actions_of(act: dict | None, elements: list) -> list[dict]:
    """Our action dicts for one sent action (none for an unknown one): AndroidWorld's JSON actions, mapped as the
    sixth set maps them, on this harness's element listing."""
    if not isinstance(act, dict):
        return []
    return sent_actions(act, element_at(elements, act.get("index")))


def element_at(elements: list, index: Any) -> dict | None:
    """`UI element <index>` of the step's listing: its target (name from text, description or hint) and box centre."""
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(elements):
        return None
    entry = elements[index]
    if not isinstance(entry, dict) or not isinstance(entry.get("ui_description"), str):
        return None
    line = entry["ui_description"]
    fields = {key: _unquoted(value) for key, value in _FIELD.findall(line)}
    name = next(
        (
            fields[k].strip()
            for k in ("text", "content_description", "hint_text")
            if fields.get(k, "").strip()
        ),
        None,
    )
    role = "textbox" if '"is_editable": True' in line else "generic"
    box = entry.get("ui_bbox")
    point = None
    if isinstance(box, list) and len(box) == 4 and all(_is_number(v) for v in box):
        x_min, x_max, y_min, y_max = box
        point = (_grid((x_min + x_max) / 2, SCREEN[0]), _grid((y_min + y_max) / 2, SCREEN[1]))
    target = {"role": role, "name": name} if name else None
    if point is None and target is None:
        return None
    return {"target": target, "point": point}


def _unquoted(value: str) -> str:
    try:
        return json.loads(f'"{value}"')
    except ValueError:
        return value


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _grid(v: float, size: int) -> int:
    return max(0, min(999, int(v * 1000 / size)))
