"""A fifth labelled set: UI-TARS and Doubao on OSWorld's desktop as data.jsonl for `real_eval` (OSWORLD_VERIFIED.md).

The source (izaias-saturnino/PLN-Multimodal-LLM-OSWorld-Trail-Summary, `outputs/trajectory_texts/`) holds
OSWorld-Verified's published runs (xlangai/ubuntu_osworld_verified_trajs, MIT) as one text file per run,
`<model folder>__<task uuid>.txt`: a header (`Task:`, `Success Binary:`), then per step a `STEP n` banner,
the model's `Thought:` and its `Action:` - pyautogui code in screen pixels (1920 x 1080), `WAIT`, `DONE`,
`FAIL`, or a program. `build_osworld_verified_set` writes each run in our own JSONL schema: one step per
source step (step `i` is the text's `STEP i+1`), its code as our actions on the 0..999 grid and, as
`raw_output`, the thought and the code verbatim (the words the detectors read). The code is parsed with
`ast.parse` and never run: `pyperclip.copy(t)` then the paste hotkey is typing `t`; `moveTo` then `dragTo`
a drag; a step that is not pyautogui calls (a Python or Script-Fu program) a `shell` action holding it; a
call the harness could not run (only a comment is left) no action at all.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "izaias-saturnino/PLN-Multimodal-LLM-OSWorld-Trail-Summary"
TEXTS = "outputs/trajectory_texts"
LICENSE = "MIT"  # the runs' (xlangai/ubuntu_osworld_verified_trajs); the repository itself has no licence file
SCREEN = (1920, 1080)
SCROLL_PIXELS = 100  # per pyautogui wheel click
_FILE = re.compile(r"^(?P<model>[^/]+?)__(?P<task>[0-9a-f-]+)\.txt$")
_STEP = re.compile(r"\n=+\nSTEP \d+\n=+\n")
_KEYS = {
    "ctrl": "Control", "control": "Control", "alt": "Alt", "shift": "Shift", "enter": "Enter", "return": "Enter",
    "esc": "Escape", "escape": "Escape", "tab": "Tab", "backspace": "Backspace", "delete": "Delete", "del": "Delete",
    "pagedown": "PageDown", "pageup": "PageUp", "home": "Home", "end": "End", "up": "ArrowUp", "down": "ArrowDown",
    "left": "ArrowLeft", "right": "ArrowRight", "super": "Meta", "win": "Meta", "space": " ", "printscreen": "PrintScreen",
}  # fmt: skip
_CLICKS = {"click": "left_click", "doubleClick": "double_click", "tripleClick": "triple_click", "rightClick": "right_click"}
_BUTTONS = {"right": "right_click", "middle": "middle_click"}


def build_osworld_verified_set(git_dir: str | Path, out: str | Path, commit: str = "HEAD") -> int:
    """data.jsonl from a snapshot of the repository (every run text under TEXTS); returns the runs written.
    A file that is not a run (no task or no step) is left out."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        for name in sorted(snap.names(f"{TEXTS}/")):
            m = _FILE.match(name.removeprefix(f"{TEXTS}/"))
            text = snap.text(name) if m else None
            record = trajectory(f"{m['model']}/{m['task']}", m["model"], text) if text is not None else None
            if record is not None:
                record["source"] = snap.source(REPO, name, LICENSE)
                lines.append(record)
    return write_jsonl(out, lines)


def trajectory(task_id: str, model: str, text: str) -> dict | None:
    """One run's text as a data.jsonl record (see the module's doc); None when it holds no task or no step."""
    head, _, body = text.partition("TRAJECTORY\n")
    task = re.search(r"^Task:\n(.*?)\n\n", head, re.S | re.M)
    chunks = _STEP.split(body)[1:]
    if task is None or not chunks:
        return None
    steps = []
    for chunk in chunks:
        thought, code = split_step(chunk)
        steps.append(
            {
                "actions": actions_of(code),
                "raw_output": f"{thought}\n{code}" if thought else code,
                "screen_width": SCREEN[0],
                "screen_height": SCREEN[1],
            }
        )
    return {"task_id": task_id, "policy": model, "model": model, "instruction": task[1].strip(), "steps": steps}


def split_step(chunk: str) -> tuple[str, str]:
    """(the thought, the action code) of one step's text; a last step may trail an empty `STEP ?` banner."""
    chunk = re.sub(r"\n+=+\nSTEP \?\n=+\s*$", "", chunk)
    m = re.match(r"\s*(?:Thought:\n(?P<thought>.*?)\n\n)?Action:\n(?P<code>.*)$", chunk, re.S)
    if m:
        return (m["thought"] or "").strip(), m["code"].strip()
    thought = re.match(r"\s*Thought:\n(?P<thought>.*)$", chunk, re.S)  # no action written at all
    return (thought["thought"].strip(), "") if thought else ("", chunk.strip())


def actions_of(code: str) -> list[dict]:
    """Our action dicts for one step's code (parsed, never evaluated)."""
    word = code.strip()
    if not word:
        return []
    if word == "WAIT":
        return [{"action": "wait"}]
    if word in ("DONE", "FAIL"):
        return [{"action": "terminate", "status": "success" if word == "DONE" else "failure"}]
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        try:  # the extractor wrote a typed text's line breaks raw, inside its quotes
            body = ast.parse(_escape_breaks_in_strings(code)).body
        except (SyntaxError, ValueError):
            return [{"action": "shell", "command": code}]
    calls = [_call(node) for node in body]
    if any(c is None for c in calls):  # a program, not a sequence of pyautogui calls
        return [{"action": "shell", "command": code}]
    actions: list[dict] = []
    i = 0
    while i < len(calls):
        name, args, kwargs = calls[i]
        following = calls[i + 1] if i + 1 < len(calls) else None
        if name == "pyperclip.copy" and following and _is_paste(following):
            if args and isinstance(args[0], str):
                actions.append({"action": "type", "text": args[0]})
            i += 2
            continue
        if name == "pyautogui.moveTo" and following and following[0] == "pyautogui.dragTo":
            start, end = _point(args), _point(following[1])
            if start and end:
                actions.append({"action": "left_click_drag", "x": start[0], "y": start[1], "x2": end[0], "y2": end[1]})
                i += 2
                continue
        actions.extend(_pyautogui(name, args, kwargs))
        i += 1
    return actions


def _escape_breaks_in_strings(code: str) -> str:
    """`code` with each line break inside a one-line ('...' or "...") string literal written as \\n."""
    out, quote, i = [], None, 0
    while i < len(code):
        ch = code[i]
        if quote is None:
            if ch in "'\"" and code[i : i + 3] != ch * 3:
                quote = ch
            elif ch == "#":  # a comment runs to the end of its line, quotes and all
                end = code.find("\n", i)
                end = len(code) if end < 0 else end
                out.append(code[i:end])
                i = end
                continue
        elif ch == "\\":
            out.append(code[i : i + 2])
            i += 2
            continue
        elif ch == quote:
            quote = None
        elif ch == "\n":
            out.append("\\n")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _call(node: ast.stmt) -> tuple[str, list, dict] | None:
    """(dotted name, literal args, literal keyword args) of a bare call statement, else None."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    func = node.value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    try:
        args = [ast.literal_eval(a) for a in node.value.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords if k.arg}
    except (ValueError, SyntaxError, TypeError):
        return None
    return f"{func.value.id}.{func.attr}", args, kwargs


def _is_paste(call: tuple[str, list, dict]) -> bool:
    name, args, _ = call
    return name == "pyautogui.hotkey" and [str(a).lower() for a in args] == ["ctrl", "v"]


def _point(args: list) -> tuple[int, int] | None:
    if len(args) < 2 or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in args[:2]):
        return None
    return _grid(args[0], SCREEN[0]), _grid(args[1], SCREEN[1])


def _grid(v: float, size: int) -> int:
    return max(0, min(999, int(v * 1000 / size)))


def _pyautogui(name: str, args: list, kwargs: dict) -> list[dict]:
    fn = name.removeprefix("pyautogui.")
    if fn in _CLICKS and _point(args):
        x, y = _point(args)
        kind = _BUTTONS.get(kwargs.get("button"), _CLICKS[fn]) if fn == "click" else _CLICKS[fn]
        if fn == "click" and kwargs.get("clicks") == 2 and not isinstance(kwargs.get("clicks"), bool):
            kind = "double_click"
        return [{"action": kind, "x": x, "y": y}]
    if fn == "hotkey" and args and all(isinstance(a, str) for a in args):
        return [{"action": "key", "keys": [_KEYS.get(a.lower(), a) for a in args]}]
    if fn == "press" and args and isinstance(args[0], str):
        return [{"action": "key", "keys": [_KEYS.get(args[0].lower(), args[0])]}]
    if fn in ("write", "typewrite") and args and isinstance(args[0], str):
        return [{"action": "type", "text": args[0]}]
    if fn in ("scroll", "hscroll") and args and isinstance(args[0], int | float):
        wheel: dict[str, Any] = {"action": fn, "pixels": int(args[0] * SCROLL_PIXELS)}
        if _point([kwargs.get("x"), kwargs.get("y")]):
            wheel["x"], wheel["y"] = _point([kwargs["x"], kwargs["y"]])
        return [wheel]
    if fn in ("moveTo", "dragTo") and _point(args):  # a lone dragTo starts wherever the pointer is: only its end is known
        x, y = _point(args)
        return [{"action": "mouse_move", "x": x, "y": y}]
    return []  # a call of no effect here (pyperclip.copy with no paste) or one we do not map
