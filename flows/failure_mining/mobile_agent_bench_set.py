"""Another labelled set (issue 15, helper 15n): Claude (through Claude Code) driving a real Android phone with four MCP
tool stacks, as data.jsonl for `real_eval` (MOBILE_AGENT_BENCH.md).

The source (LincForge/mobile-agent-bench, MIT) holds one folder per run of its v1 grid, `results/<tool>/<task>/
run-<n>/`: `meta.json` (the task, the model, the verdict, whether it timed out) and `transcript.jsonl`, Claude
Code's stream-json log of the session - the model's text blocks, its tool calls (`tool_use`: the MCP tool and its
JSON input) and the tool results (`tool_result`, `is_error` when the tool failed). The task's prompt is
`tasks/<task>-*.yaml`'s `prompt`. `build_mobile_agent_bench_set` writes each run in our own JSONL schema: one step
per tool call, in the transcript's order, with

- the call as our actions: a tap, double tap, long press or swipe in screen pixels (the tools' own space, the
  phone's 1008 x 2244, the watch's 384 x 384 for task b8) on the 0..999 grid; typed text; Back / Home / Enter as system buttons, other keys as
  keys; an app launch as `open_app`; a screen capture as `screenshot` (one saved to a file, `saveTo`, is the call as a
  `shell` action: it writes the file); a wait as `wait`; Maestro flows (YAML,
  read with `yaml.safe_load_all`) command by command (`tapOn: "Form"` is a click on the text "Form", a point
  `"50%,15%"` or `"631,323"` (pixels) a tap there); every other device or harness operation of the MCP servers (logcat, UI dumps, app
  lists, force-stop, clear data, install, settings, recordings) as a `shell` action whose command is the call
  itself, `<server>.<tool> <input JSON>` - named by the builder, not typed by the agent; Claude Code's own
  tools (ToolSearch, Read, TaskCreate, ...) map to nothing (the step keeps its place, `format_error`
  `unmapped_action: <tool>`);
- as `raw_output`, the model's text since its previous tool call (empty for the second and later calls of one
  message) and then the call, `<tool> <input JSON>`;
- as `error`, the tool result's text when the result is an error (`is_error`) or reports `"success": false`.

The text after the last tool call, the model's final answer, is a last `terminate` step carrying it. Files are
parsed with `json` / `yaml` and never run; a run whose transcript the snapshot lacks, or with no tool call, is
left out. Only `results/` (the v1 grid) is read; `results_v2/`, `results_invalid/` and the others are not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "LincForge/mobile-agent-bench"
LICENSE = "MIT"
SCREEN = (1008, 2244)  # the phone's screen in the pixels the tools' coordinates use (mobile_get_screen_size)
WATCH = (384, 384)  # the Wear OS watch of task b8 (meta.json's device "Google Pixel Watch 2")
RESULT_CHARS = 600  # of a failed tool result kept as the step's error
_HARNESS = ("ToolSearch", "Read", "TaskCreate", "TaskUpdate", "TaskList", "ListMcpResourcesTool",
            "ReadMcpResourceTool")  # fmt: skip
_SCREENSHOT = re.compile(r"(^|_)(take_screenshot|screenshot|save_screenshot)$")
_SAVED_TO = ("saveTo", "path", "output", "filename", "file")  # a capture's arguments naming the file it writes
_PERCENT = re.compile(r"^\s*(-?[\d.]+)%\s*,\s*(-?[\d.]+)%\s*$")
_PIXELS = re.compile(r"^\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*$")
_KEYS = {"back": "back", "home": "home", "enter": "enter", "menu": "menu"}


def build_mobile_agent_bench_set(git_dir: str | Path, out: str | Path, commit: str = "HEAD") -> int:
    """data.jsonl from a snapshot of the repository (every run under results/); returns the runs written."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        names = snap.names()
        prompts = {}
        for name in names:
            if name.startswith("tasks/") and name.endswith(".yaml"):
                task = yaml.safe_load(snap.blob(name) or b"") or {}
                if isinstance(task, dict) and isinstance(task.get("id"), str):
                    prompts[task["id"]] = task.get("prompt")
        for name in sorted(n for n in names if n.startswith("results/") and n.endswith("/transcript.jsonl")):
            run_dir = name.removesuffix("/transcript.jsonl")
            transcript = snap.text(name)
            if transcript is None:
                continue
            meta = snap.json(f"{run_dir}/meta.json")
            meta = meta if isinstance(meta, dict) else {}
            task = meta.get("task") or run_dir.split("/")[2]
            record = trajectory(run_dir, transcript, meta, prompts.get(task))
            if record is not None:
                record["source"] = snap.source(REPO, name, LICENSE)
                lines.append(record)
    return write_jsonl(out, lines)


def trajectory(task_id: str, transcript: str, meta: dict, prompt: Any) -> dict | None:
    """One run's transcript as a data.jsonl record; None when it has no tool call."""
    device = (
        str((meta.get("device") or {}).get("model") or "") if isinstance(meta.get("device"), dict) else ""
    )
    screen = WATCH if "watch" in device.lower() else SCREEN
    steps, answer, model, _stop = transcript_steps(transcript, lambda name, given: actions_of(name, given, screen), screen)
    if not steps:
        return None
    tool = task_id.split("/")[1] if task_id.count("/") >= 2 else "unknown"
    return {
        "task_id": task_id,
        "policy": f"claude-code+{tool}",
        "model": meta.get("model") or model or "unknown",
        "instruction": prompt.strip() if isinstance(prompt, str) else None,
        "ended": "terminated" if answer else "max_steps" if meta.get("timed_out") else "env_error",
        "end_detail": f"verdict {meta.get('verdict')}" if meta.get("verdict") else None,
        "final_answer": answer[:4000] or None,
        "steps": steps,
    }


def transcript_steps(
    transcript: str, actions_for: Callable[[str, dict], list[dict]], screen: tuple[int, int]
) -> tuple[list[dict], str, str | None, str | None]:
    """A Claude Code stream-json transcript (one JSON event a line) as steps: one per tool call, its raw output the
    assistant's words since the last call and then the call, its actions `actions_for(tool name, input)` (none:
    `unmapped_action`), its error the tool result's text when the result is an error or reports a failure; the
    words after the last call, if any, end the run as its answer. Returns (steps, answer, model, the result
    event's subtype); unreadable lines and events are skipped."""
    events = []
    for line in transcript.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    results, stop = {}, None  # tool_use id -> (text, is_error)
    for ev in events:
        if ev.get("type") == "result" and not stop:
            stop = ev.get("subtype")
        content = (ev.get("message") or {}).get("content") if ev.get("type") == "user" else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results[block.get("tool_use_id")] = (
                    _result_text(block.get("content")),
                    bool(block.get("is_error")),
                )
    steps, said, model = [], [], None
    for ev in events:
        if ev.get("type") != "assistant" or not isinstance(ev.get("message"), dict):
            continue
        message = ev["message"]
        model = model or message.get("model")
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                said.append(block["text"].strip())
            elif block.get("type") == "tool_use":
                name, given = str(block.get("name")), block.get("input")
                given = given if isinstance(given, dict) else {}
                call = f"{name} {json.dumps(given, ensure_ascii=False, sort_keys=True)}"
                step: dict[str, Any] = {
                    "raw_output": "\n".join([*said, call]),
                    "screen_width": screen[0],
                    "screen_height": screen[1],
                }
                said = []
                step["actions"] = actions_for(name, given)
                if not step["actions"]:
                    step["format_error"] = f"unmapped_action: {name}"
                text, failed = results.get(block.get("id"), ("", False))
                if failed or _reports_failure(text):
                    step["error"] = text[:RESULT_CHARS] or "tool error"
                steps.append(step)
    answer = "\n".join(said).strip()
    if steps and answer:
        steps.append({"actions": [{"action": "terminate", "status": "success", "answer": answer[:4000]}],
                      "raw_output": answer, "screen_width": screen[0], "screen_height": screen[1]})  # fmt: skip
    return steps, answer, model, stop


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _reports_failure(text: str) -> bool:
    """A result that says, as JSON, that the tool did not succeed (`{"success": false, ...}`)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("success") is False


def actions_of(name: str, given: Any, screen: tuple[int, int] = SCREEN) -> list[dict]:
    """Our action dicts for one tool call (none for Claude Code's own tools)."""
    given = given if isinstance(given, dict) else {}
    if name in _HARNESS or not name.startswith("mcp__"):
        if name == "ScheduleWakeup" and _is_number(given.get("delaySeconds")):
            return [{"action": "wait", "seconds": min(60.0, max(0.0, float(given["delaySeconds"])))}]
        return []
    server, _, tool = name.removeprefix("mcp__").partition("__")
    if not tool:
        return []
    if server == "maestro" and tool == "run":
        return maestro_actions(given.get("yaml"), screen)
    if server == "agent-device" and tool == "batch":
        out = []
        for sub in given.get("steps") or []:
            if isinstance(sub, dict) and isinstance(sub.get("command"), str):
                out += device_actions(server, sub["command"], sub.get("input") or {}, screen) or _shell(
                    server, sub["command"], sub.get("input") or {}
                )
        return out
    return device_actions(server, tool, given, screen) or _shell(server, tool, given)


def device_actions(server: str, tool: str, given: dict, screen: tuple[int, int] = SCREEN) -> list[dict]:
    """Touch, keys, text, launches, captures and waits of the four stacks; [] for anything else."""
    x, y = _xy(given.get("x"), given.get("y"), screen)
    target = given.get("target") if isinstance(given.get("target"), dict) else {}
    if tool in ("nerve_tap", "mobile_click_on_screen_at_coordinates") and x is not None:
        return [{"action": "tap", "x": x, "y": y}]
    if tool == "click":  # agent-device: a point, or a ref / selector it resolves
        px, py = _xy(target.get("x"), target.get("y"), screen)
        if px is not None:
            return [{"action": "tap", "x": px, "y": py}]
        label = target.get("ref") or target.get("selector") or target.get("text") or given.get("selector")
        return [{"action": "left_click", "target": {"text": str(label)}}] if label else []
    if tool == "mobile_double_tap_on_screen" and x is not None:
        return [{"action": "double_click", "x": x, "y": y}]
    if (
        tool in ("nerve_long_press", "mobile_long_press_on_screen_at_coordinates", "longpress")
        and x is not None
    ):
        ms = given.get("duration") or given.get("duration_ms") or given.get("durationMs")
        seconds = min(60.0, max(0.05, float(ms) / 1000)) if _is_number(ms) else 1.0
        return [{"action": "long_press", "x": x, "y": y, "duration": seconds}]
    if tool == "find" and given.get("action") == "click" and given.get("query"):
        return [{"action": "left_click", "target": {"text": str(given["query"])}}]
    if tool in ("nerve_swipe", "mobile_swipe_on_screen", "swipe", "gesture"):
        return _swipe(given, screen)
    if tool in ("nerve_type", "mobile_type_keys", "type", "fill") and isinstance(given.get("text"), str):
        typed = [{"action": "type", "text": given["text"]}]
        return typed + ([{"action": "system_button", "button": "enter"}] if given.get("submit") else [])
    if tool in ("nerve_key", "mobile_press_button", "press"):
        key = given.get("key") or given.get("keycode") or given.get("button")
        return _key(key) if isinstance(key, str) else []
    if tool in ("back", "home"):
        return [{"action": "system_button", "button": tool}]
    if tool in ("nerve_launch", "mobile_launch_app", "open"):
        app = given.get("package") or given.get("packageName") or given.get("app")
        return [{"action": "open_app", "app": str(app)}] if app else []
    if _SCREENSHOT.search(tool) and not any(given.get(k) for k in _SAVED_TO):
        return [{"action": "screenshot"}]  # (one saved to a file writes it: the call, as a `shell` action)
    if tool == "wait" and server == "agent-device":
        ms = given.get("durationMs") or given.get("ms")
        try:
            seconds = float(ms) / 1000
        except (TypeError, ValueError):
            seconds = 1.0
        return [{"action": "wait", "seconds": min(60.0, max(0.0, seconds))}]
    return []


def maestro_actions(flow: Any, screen: tuple[int, int] = SCREEN) -> list[dict]:
    """A Maestro flow's commands as our actions (assertions and scripts map to nothing; lifecycle commands are
    shell actions named `maestro.<command>`)."""
    if not isinstance(flow, str):
        return []
    try:
        docs = list(yaml.safe_load_all(flow))
    except yaml.YAMLError:
        return []
    app = next((d.get("appId") for d in docs if isinstance(d, dict) and d.get("appId")), None)
    out: list[dict] = []
    for doc in docs:
        for command in doc if isinstance(doc, list) else []:
            out += _maestro_command(command, app, screen)
    return out


def _maestro_command(command: Any, app: Any, screen: tuple[int, int] = SCREEN) -> list[dict]:
    name, arg = (command, None) if isinstance(command, str) else next(iter(command.items()), (None, None))
    if not isinstance(name, str):
        return []
    if name in ("tapOn", "doubleTapOn", "longPressOn"):
        point = arg.get("point") if isinstance(arg, dict) else None
        label = (
            arg
            if isinstance(arg, str)
            else (arg.get("text") or arg.get("id"))
            if isinstance(arg, dict)
            else None
        )
        at = _point(point, screen) if isinstance(point, str) else None
        if name == "longPressOn":
            return [{"action": "long_press", "x": at[0], "y": at[1]}] if at else []
        kind = "double_click" if name == "doubleTapOn" else "left_click"
        if at:
            return [{"action": "tap", "x": at[0], "y": at[1]}] if kind == "left_click" else [
                {"action": kind, "x": at[0], "y": at[1]}]  # fmt: skip
        return [{"action": kind, "target": {"text": str(label)}}] if label else []
    if name == "inputText" and arg is not None:
        return [{"action": "type", "text": str(arg)}]
    if name == "launchApp":
        target = (arg.get("appId") if isinstance(arg, dict) else None) or app
        launch = [{"action": "open_app", "app": str(target)}] if target else []
        clear = isinstance(arg, dict) and arg.get("clearState")
        return ([{"action": "shell", "command": f"maestro.clearState {target}"}] if clear else []) + launch
    if name in ("back", "pressKey"):
        return _key("back" if name == "back" else str(arg))
    if name in ("swipe",) and isinstance(arg, dict):
        start, end = _point(str(arg.get("start", "")), screen), _point(str(arg.get("end", "")), screen)
        if start and end:
            return [{"action": "swipe", "x": start[0], "y": start[1], "x2": end[0], "y2": end[1]}]
        return _swipe({"direction": str(arg.get("direction", "")).lower()})
    if name in ("scroll", "scrollUntilVisible"):
        direction = str((arg or {}).get("direction", "DOWN") if isinstance(arg, dict) else "DOWN").upper()
        pixels = 300 if direction == "UP" else -300
        kind = "hscroll" if direction in ("LEFT", "RIGHT") else "scroll"
        return [
            {
                "action": kind,
                "pixels": pixels if kind == "scroll" else (300 if direction == "RIGHT" else -300),
            }
        ]
    if name == "repeat" and isinstance(arg, dict):
        times = arg.get("times") if isinstance(arg.get("times"), int) else 1
        inner = [a for c in arg.get("commands") or [] for a in _maestro_command(c, app, screen)]
        return inner * max(1, min(times, 50))
    if name in ("wait", "extendedWaitUntil", "waitForAnimationToEnd"):
        ms = arg if _is_number(arg) else (arg or {}).get("timeout") if isinstance(arg, dict) else None
        return [{"action": "wait", "seconds": min(60.0, float(ms) / 1000) if _is_number(ms) else 1.0}]
    if name == "takeScreenshot":
        return [{"action": "screenshot"}]
    if name in ("stopApp", "killApp", "clearState", "clearKeychain", "setOrientation", "openLink"):
        detail = f" {arg}" if arg not in (None, "") else f" {app}" if app else ""
        return [{"action": "shell", "command": f"maestro.{name}{detail}"}]
    return []  # assertVisible, evalScript, hideKeyboard, runScript, ...: nothing on the screen of ours


def _shell(server: str, tool: str, given: dict) -> list[dict]:
    return [
        {
            "action": "shell",
            "command": f"{server}.{tool} {json.dumps(given, ensure_ascii=False, sort_keys=True)}",
        }
    ]


def _key(key: str) -> list[dict]:
    button = _KEYS.get(key.strip().lower().removeprefix("keycode_"))
    return [{"action": "system_button", "button": button}] if button else [{"action": "key", "keys": [key]}]


def _swipe(given: dict, screen: tuple[int, int] = SCREEN) -> list[dict]:
    """A stroke from its two ends, or from a start (the screen's centre by default) the way and distance named
    (the finger moves that way)."""
    start = given.get("from") or given.get("origin") or {}
    start = start if isinstance(start, dict) else {}
    end = given.get("to") if isinstance(given.get("to"), dict) else {}
    sx = _first_number(given.get("start_x"), given.get("startX"), start.get("x"), given.get("x"))
    sy = _first_number(given.get("start_y"), given.get("startY"), start.get("y"), given.get("y"))
    ex = _first_number(given.get("end_x"), given.get("endX"), end.get("x"))
    ey = _first_number(given.get("end_y"), given.get("endY"), end.get("y"))
    if ex is None or ey is None:
        direction = str(given.get("direction") or "").lower()
        if direction not in ("up", "down", "left", "right"):
            return []
        sx = screen[0] / 2 if sx is None else sx
        sy = screen[1] / 2 if sy is None else sy
        d = float(given["distance"]) if _first_number(given.get("distance")) is not None else screen[1] / 3
        dx, dy = {"up": (0, -d), "down": (0, d), "left": (-d, 0), "right": (d, 0)}[direction]
        ex, ey = sx + dx, sy + dy
    if sx is None or sy is None:
        return []
    (x, y), (x2, y2) = _xy(sx, sy, screen), _xy(ex, ey, screen)
    return [{"action": "swipe", "x": x, "y": y, "x2": x2, "y2": y2}]


def _first_number(*values: Any) -> float | None:
    for v in values:
        try:
            return float(v)
        except (TypeError, ValueError):
            continue
    return None


def _xy(x: Any, y: Any, screen: tuple[int, int] = SCREEN) -> tuple[int, int] | tuple[None, None]:
    fx, fy = _first_number(x), _first_number(y)
    if fx is None or fy is None:
        return None, None
    return _grid(fx, screen[0]), _grid(fy, screen[1])


def _point(text: str, screen: tuple[int, int] = SCREEN) -> tuple[int, int] | None:
    """A Maestro point: "50%,15%" of the screen, or "631,323" in pixels."""
    m = _PIXELS.match(text)
    if m:
        return _grid(float(m[1]), screen[0]), _grid(float(m[2]), screen[1])
    return _percent(text)


def _percent(text: str) -> tuple[int, int] | None:
    m = _PERCENT.match(text)
    if not m:
        return None
    return max(0, min(999, int(float(m[1]) * 10))), max(0, min(999, int(float(m[2]) * 10)))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _grid(v: float, size: int) -> int:
    return max(0, min(999, int(v * 1000 / size)))
