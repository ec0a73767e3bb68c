"""An eighth labelled set: Claude Code driving a browser through the GBOX MCP on WebArena (babelcloud/webarena), as data.jsonl (GBOX_WEBARENA.md).

The repository (a fork of WebArena, Apache-2.0; nothing of it is committed here) keeps one log per WebArena
task under `gbox/trajectories/log_files/task_<n>_<date>.log`: Claude Sonnet 4.5 in Claude Code, acting on
WebArena's sites through GBOX's browser tools, which take a *description* of the element (`click(target=
"Go button next to the search box")`, grounded by a vision model) instead of an element id or a point. Each
log line is `<time> - <level> - <text>`, continued on the lines after it: `[Intent]: <instruction>`, `💬
<the model's words>`, `🔧 [+Ns think] <tool>({...})` (a call, its arguments a Python literal), `📥 ... Tool
result: ...` or `❌ ... <error>` (its result), and the harness's own notes (sessions resumed, a page
refreshed). `build_gbox_webarena_set` writes each log as BrowserGym steps the importer reads, one step per
call that acts:

- `click(target, button, double)` -> `click('g3')` (`click('g3', button='right')`, `dblclick('g3')`),
  `double_click` -> `dblclick`, `hover` -> `hover('g3')`, `triple_click` -> `triple_click('g3')`,
  `drag(target, destination)` -> `drag_and_drop('g3', 'g4')`; the element id `g<n>` numbers the distinct
  descriptions of the run, and the step's `axtree_txt` is one line naming it by the description: `[g3] button
  'Go button next to the search box'` (the role is the first of checkbox, radio, menu item, option / suggestion,
  button, link, tab, dropdown -> combobox, field / search box / input -> textbox, ... that the description
  names, else element);
- `type(content, pressEnterAfterType)` -> `keyboard_type('text')`, then `keyboard_press('Enter')` if asked;
  `press_key(keys)` -> `keyboard_press('Control+a')`; `scroll(direction, distance)` -> `scroll(0, 500)`
  (tiny 100, short 250, medium 500, long 1000 pixels; up negative, left / right on x); `wait(duration)` ->
  `noop(ms)`; `open_tab(url)` -> `goto(url)`; `switch_tab`, `close_tab` -> `tab_focus(n)`, `tab_close(n)`;
- Claude Code's own `Bash` and `Task` (a sub-agent) -> `bash('<command>')`, `task('<description>')`; the
  harness's `complete_task(finalAnswer)` -> `send_msg_to_user('<answer>')`. The importer keeps the
  calls outside its space (`hover`, `tab_focus`, `bash`, ...) as unmapped steps, so indices stay ours.
- Not steps: calls that only look (`screenshot`, `list_tabs`) or keep notes (`TodoWrite`, `Read`, `Grep`,
  `Write`, ...) and the box's `start_browser_box`. Their words are not lost: `think` is every `💬` of the
  model since the last step, in order, joined by newlines.
- `last_action_error` is the call's `❌` result (the harness reports success for nearly every click: the
  evidence of failure is the model's next words).

The run's `ended` is `terminated` when it called `complete_task`, `env_error` when the harness logged a
session or browser error and it never did, else `max_steps`. Logs are read as text and the arguments parsed
with `ast.literal_eval`; nothing is run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "babelcloud/webarena"
LICENSE = "Apache-2.0"
COMMIT = "9db019624119d72e0056292c6587d919e6837885"  # 2025-11-04, the newest snapshot
LOGS = "gbox/trajectories/log_files/"
POLICY = "gbox_claude_code"
_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - ([A-Z]+) - ")
_CALL = re.compile(r"^🔧 \[[^\]]*\] ([A-Za-z0-9_-]+)\((.*)\)\s*$", re.S)
_FILE = re.compile(r"task_(\d+)_")
_BROWSER = "mcp__gbox-browser__"
_SCROLL = {"tiny": 100, "short": 250, "medium": 500, "long": 1000}
_KEYS = {
    "control": "Control", "ctrl": "Control", "shift": "Shift", "alt": "Alt", "meta": "Meta", "cmd": "Meta",
    "command": "Meta", "enter": "Enter", "return": "Enter", "escape": "Escape", "esc": "Escape",
    "tab": "Tab", "backspace": "Backspace", "delete": "Delete", "space": "Space", "home": "Home", "end": "End",
    "pageup": "PageUp", "pagedown": "PageDown", "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft",
    "right": "ArrowRight", "arrowup": "ArrowUp", "arrowdown": "ArrowDown", "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
}  # fmt: skip
_ROLES = (  # the first of these role words that the description uses (in this order) names the element's role
    (r"check ?box", "checkbox"), (r"radio", "radio"), (r"menu ?item", "menuitem"), (r"option|suggestion", "option"),
    (r"button", "button"), (r"link", "link"), (r"tab", "tab"), (r"drop-?down|combo ?box|select(?:or| box| menu)", "combobox"),
    (r"text ?box|text ?area|text field|input|search box|search bar|field", "textbox"), (r"icon|image|logo", "img"),
    (r"menu", "menu"), (r"row", "row"), (r"heading|title", "heading"),
)  # fmt: skip
_ROLE_WORDS = [(re.compile(f"\\b(?:{p})", re.I), r) for p, r in _ROLES]
_ARGUMENT = re.compile(
    r"'(?P<key>\w+)':\s*(?:(?P<quote>['\"])(?P<body>(?:\\.|(?!(?P=quote)).)*)(?:(?P=quote)|\.\.\.\)?\s*$)|(?P<scalar>True|False|None|\d+))",
    re.S,
)
ENV_ERRORS = ("[Unhandled Error]", "🚨 Session error")


def build_gbox_webarena_set(git_dir: str | Path, out: str | Path, commit: str = COMMIT) -> int:
    """data.jsonl from a snapshot of babelcloud/webarena (every log of gbox/trajectories/log_files/); returns the count."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        for name in sorted(n for n in snap.names(LOGS) if n.endswith(".log")):
            text = snap.text(name)
            record = trajectory(name, text) if text is not None else None
            if record is not None:
                record["source"] = snap.source(REPO, name, LICENSE)
                lines.append(record)
    return write_jsonl(out, lines)


def entries(text: str) -> list[tuple[str, str]]:
    """(level, message) per log entry; lines that do not open with a time continue the entry before."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            out.append((m[1], [line[m.end() :]]))
        elif out:
            out[-1][1].append(line)
    return [(level, "\n".join(parts)) for level, parts in out]


def trajectory(path: str, text: str) -> dict | None:
    """One log as a data.jsonl record; None when it has no step. The task id is `task_<n>` (WebArena's config)."""
    m = _FILE.search(path.rsplit("/", 1)[-1])
    task_id = f"task_{m[1]}" if m else path.rsplit("/", 1)[-1].removesuffix(".log")
    instruction, words, steps, bids = None, [], [], {}
    finished = env_error = False
    acted = False  # whether the last call became a step (a dropped call's result is not that step's)
    for level, message in entries(text):
        if message.startswith("[Intent]:") and instruction is None:
            instruction = message.removeprefix("[Intent]:").strip()
        elif message.startswith("💬"):
            said = message.removeprefix("💬").strip()
            if said:
                words.append(said)
        elif message.startswith("🔧"):
            call = _CALL.match(message)
            action, axtree = browsergym_call(call[1], _arguments(call[2]), bids) if call else (None, None)
            acted = action is not None
            if action is None:
                continue
            finished = finished or action.startswith("send_msg_to_user(")
            steps.append({"action": action, "think": "\n".join(words) or None, "axtree_txt": axtree})
            words = []
        elif message.startswith("❌") and steps and acted and level == "ERROR":
            steps[-1]["last_action_error"] = re.sub(r"^❌\s*(\[[^\]]*\]\s*)?", "", message).strip() or "error"
        elif any(message.startswith(e) for e in ENV_ERRORS):
            env_error = True
    if not steps:
        return None
    return {
        "task_id": task_id,
        "policy": POLICY,
        "instruction": instruction,
        "ended": "terminated" if finished else "env_error" if env_error else "max_steps",
        "steps": steps,
    }


def _arguments(text: str) -> dict:
    """The call's arguments. The log cuts long ones (`...'content': "# Title\\n...`), so a dict that does not
    parse is read key by key: whole strings, the cut string's head, numbers and booleans."""
    try:
        value = ast.literal_eval(text.strip() or "{}")
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for m in _ARGUMENT.finditer(text):
        key, quote, body, scalar = m["key"], m["quote"], m["body"], m["scalar"]
        if scalar is not None:
            out[key] = {"True": True, "False": False, "None": None}.get(
                scalar, int(scalar) if scalar.isdigit() else scalar
            )
            continue
        try:
            out[key] = ast.literal_eval(quote + body + quote)
        except (ValueError, SyntaxError):
            out[key] = body
    return out


def browsergym_call(tool: str, args: dict, bids: dict[str, str]) -> tuple[str | None, str | None]:
    """(BrowserGym call text, the axtree lines naming its elements) for one GBOX / Claude Code call; (None,
    None) for a call that does not act (a screenshot, a note)."""
    name = tool.removeprefix(_BROWSER) if tool.startswith(_BROWSER) else tool

    def element(description: Any) -> tuple[str, str]:
        described = str(description or "").strip() or "(no description)"
        bid = bids.setdefault(described, f"g{len(bids) + 1}")
        return bid, f"[{bid}] {role(described)} {_quoted(described)}"

    if name in ("click", "double_click", "hover", "triple_click", "long_press"):
        bid, tree = element(args.get("target"))
        if name == "click":
            if args.get("double"):
                return f"dblclick({bid!r})", tree
            button = args.get("button")
            return (
                f"click({bid!r}, button={button!r})" if button in ("right", "middle") else f"click({bid!r})"
            ), tree
        return f"{'dblclick' if name == 'double_click' else name}({bid!r})", tree
    if name == "drag":
        (a, tree_a), (b, tree_b) = element(args.get("target")), element(args.get("destination"))
        return f"drag_and_drop({a!r}, {b!r})", f"{tree_a}\n{tree_b}"
    if name == "type":
        typed = f"keyboard_type({str(args.get('content', ''))!r})"
        return (f"{typed}\nkeyboard_press('Enter')" if args.get("pressEnterAfterType") else typed), None
    if name == "press_key":
        keys = args.get("keys")
        keys = keys if isinstance(keys, list) else [keys]
        combo = "+".join(_KEYS.get(str(k).lower(), str(k)) for k in keys if k is not None)
        return f"keyboard_press({combo!r})", None
    if name == "scroll":
        pixels = _SCROLL.get(str(args.get("distance", "medium")).lower(), _SCROLL["medium"])
        direction = str(args.get("direction", "down")).lower()
        dx, dy = {"up": (0, -pixels), "left": (-pixels, 0), "right": (pixels, 0)}.get(direction, (0, pixels))
        return f"scroll({dx}, {dy})", None
    if name == "wait":
        return f"noop({int(args.get('duration') or 1000)})", None
    if name == "open_tab":
        return (f"goto({str(args['url'])!r})" if args.get("url") else "new_tab()"), None
    if name in ("switch_tab", "close_tab"):
        return f"{'tab_focus' if name == 'switch_tab' else 'tab_close'}({str(args.get('tabId', ''))!r})", None
    if name == "Bash":
        return f"bash({str(args.get('command', ''))!r})", None
    if name == "Task":
        return f"task({str(args.get('description') or args.get('prompt') or '')!r})", None
    if name == "mcp__task-completion__complete_task":
        return f"send_msg_to_user({str(args.get('finalAnswer', ''))!r})", None
    return None, None  # screenshot, list_tabs, TodoWrite, Read, Grep, Write, start_browser_box, ...


def role(description: str) -> str:
    return next((r for pattern, r in _ROLE_WORDS if pattern.search(description)), "element")


def _quoted(text: str) -> str:
    flat = " ".join(text.split())
    return "'" + flat.replace("\\", "\\\\").replace("'", "\\'") + "'"
