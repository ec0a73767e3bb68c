"""Steps of other agents' logs as our actions: BrowserGym / AgentLab action strings, Mind2Web operations,
AITW / AndroidControl episodes, OpenAI and Anthropic computer-use tool calls, plain action-history text
("Click at (600, 475)"), and MiniWoB++ demonstrations (a person's DOM events with a DOM snapshot per event). Each `*_step` turns one source step into (actions, raw_output, fields); anything
it cannot read raises `ForeignStepError(code, detail)`, which the importer turns into a quarantine reason.

Pixel coordinates become our 0..999 grid through the screen size (`Screen`); a source that gives pixels
and no size cannot be placed and is refused (`missing_field:screen_size`). BrowserGym names elements by
`bid`: with the step's AXTree text (`[a12] button 'Delete'`) a bid becomes the element's role and name and
its rank among the page's elements so named (`nth`), else `{"role": "element", "name": "bid:a12"}`. An
action of theirs that has no counterpart in our space (hover, tab switching, ...) is kept as a step with
`format_error` = `unmapped_action: ...`: the mining detectors count that as our gap, not the agent's
error. Nothing here runs the source's code: BrowserGym
calls are read with `ast.parse`, never evaluated.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from sandboxes.actions import (
    Action,
    Check,
    Click,
    Drag,
    Goto,
    HScroll,
    Key,
    LongPress,
    MouseMove,
    OpenApp,
    Screenshot,
    Scroll,
    Select,
    Swipe,
    SystemButton,
    Tap,
    Target,
    Terminate,
    Type,
    Wait,
)

UNMAPPED = "unmapped_action"


class ForeignStepError(Exception):
    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code, self.detail = code, detail


@dataclass(frozen=True)
class Screen:
    width: int | None = None
    height: int | None = None

    def grid(self, x: Any, y: Any) -> tuple[int, int]:
        """A pixel point on the 0..999 grid (clamped: a click on the last pixel row stays on screen)."""
        if not self.width or not self.height:
            raise ForeignStepError(
                "missing_field:screen_size", "pixel coordinates need the screen's width and height"
            )
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y)):
            raise ForeignStepError("wrong_type:coordinate", f"expected numbers, got {x!r}, {y!r}")
        return _clamp(x * 1000 / self.width), _clamp(y * 1000 / self.height)


@dataclass
class ForeignStep:
    actions: list[Action]
    raw_output: str
    format_error: str | None = None
    fields: dict[str, Any] | None = None  # steps columns the source gave (url, error)


def _clamp(v: float) -> int:
    return max(0, min(999, int(v)))


def kind_of(step: dict) -> str | None:
    """Which foreign format a step record is in, from its keys (None: ours)."""
    if any(k in step for k in ("actions", "actions_json")):
        return None
    if isinstance(step.get("action"), str):
        return "browsergym" if _CALL.match(step["action"].strip()) else "action_text"
    if "operation" in step or "action_repr" in step:
        return "mind2web"
    if "action_type" in step:
        return "android"
    if step.get("type") in ("computer_call", "tool_use") or "computer_call" in step or "tool_use" in step:
        return "computer_use"
    return None


def convert(kind: str, step: dict, screen: Screen) -> ForeignStep:
    converter = {
        "browsergym": browsergym_step,
        "action_text": action_text_step,
        "mind2web": mind2web_step,
        "android": android_step,
        "computer_use": computer_use_step,
    }[kind]
    try:
        return converter(step, screen)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ForeignStepError(
            "invalid_action", f"{'.'.join(map(str, error['loc']))}: {error['msg']}"
        ) from None


def _fields(step: dict) -> dict[str, Any]:
    out = {}
    for ours, theirs in (("url", ("url", "page_url")), ("error", ("error", "last_action_error"))):
        value = next((step[k] for k in theirs if step.get(k) not in (None, "")), None)
        if value is not None and not isinstance(value, str):
            raise ForeignStepError(f"wrong_type:{theirs[0]}", f"expected text, got {type(value).__name__}")
        out[ours] = value
    return out


def _reasoning(step: dict, *keys: str) -> str | None:
    for key in keys:
        if isinstance(step.get(key), str) and step[key].strip():
            return step[key]
    return None


def _raw(thought: str | None, action: str) -> str:
    """The model's words and its action, as the raw output (detectors read a coordinate click's target here)."""
    return f"{thought}\n{action}" if thought else action


UNMAPPED_CALL_CHARS = 160  # of an unmapped call kept in format_error; a longer one is cut, its end marked "…)"


def _as_called(line: str) -> str:
    """An unmapped call as its log wrote it (`take_note('page 2: ...')`), at most UNMAPPED_CALL_CHARS long."""
    return line if len(line) <= UNMAPPED_CALL_CHARS else line[: UNMAPPED_CALL_CHARS - 2] + "…)"


def _unmapped(raw: str, what: str, fields: dict) -> ForeignStep:
    return ForeignStep([], raw, f"{UNMAPPED}: {what}", fields)


# ---- BrowserGym / AgentLab ---------------------------------------------------------------------------

_CALL = re.compile(r"^[a-z_][a-z0-9_]*\(")  # click(...): lower case, no space before the parenthesis
_AXTREE_LINE = re.compile(r"^\s*\[([^\]]+)\]\s+([A-Za-z]+)\s+(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\")?")
_BUTTONS = {"left": "left_click", "right": "right_click", "middle": "middle_click"}
_KEYS = {"Enter": "Enter", "Backspace": "Backspace", "Tab": "Tab", "Escape": "Escape"}


def _bid_targets(axtree: Any) -> dict[str, Target]:
    """bid -> role, name and rank, from BrowserGym's flattened AXTree text (`[a12] button 'Delete'`).

    `nth` is the element's rank among the page's elements of the same role and name, in tree order (what a
    role-and-name locator counts): each post's "Upvote" is another control, while one control whose bid
    changed as the page re-rendered (bids are not stable across renders) keeps its role, name and rank."""
    if not isinstance(axtree, str):
        return {}
    out: dict[str, Target] = {}
    seen: dict[tuple[str, str | None], int] = {}
    for line in axtree.splitlines():
        m = _AXTREE_LINE.match(line)
        if m:
            key = (m[2], (m[3] if m[3] is not None else m[4]) or None)
            out[m[1]] = Target(role=key[0], name=key[1], nth=seen.get(key, 0))
            seen[key] = seen.get(key, 0) + 1
    return out


def browsergym_step(step: dict, screen: Screen) -> ForeignStep:
    """`action`: one or more BrowserGym calls, one per line (`click('a12')`, `fill('b5', 'text')`)."""
    text = step["action"].strip()
    thought = _reasoning(step, "think", "thought", "reasoning")
    fields = _fields(step)
    raw = _raw(thought, text)
    targets = _bid_targets(step.get("axtree_txt") or step.get("axtree"))
    actions = []
    for line in (ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")):
        try:
            call = ast.parse(line.strip(), mode="eval").body
        except SyntaxError as exc:
            return ForeignStep([], raw, f"unparseable_json: {line.strip()[:80]}: {exc.msg}", fields)
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            return ForeignStep([], raw, f"unknown_action: {line.strip()[:80]}", fields)
        try:
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except ValueError:
            return ForeignStep([], raw, f"invalid_arguments: {line.strip()[:80]}", fields)
        action = _browsergym_action(call.func.id, args, kwargs, targets, screen)
        if action is None:  # kept as called: two notes, two tab switches are two turns, not one repeated
            return _unmapped(raw, _as_called(line.strip()), fields)
        actions.append(action)
    return ForeignStep(actions, raw, None, fields)


def _browsergym_action(name: str, args: list, kwargs: dict, targets: dict[str, Target], screen: Screen):
    def arg(i: int, key: str, default: Any = None) -> Any:
        return args[i] if len(args) > i else kwargs.get(key, default)

    def target() -> Target:
        bid = str(arg(0, "bid"))
        return targets.get(bid) or Target(role="element", name=f"bid:{bid}")

    if name in ("click", "dblclick"):
        button = arg(1, "button", "left")
        return Click(
            action="double_click" if name == "dblclick" else _BUTTONS.get(button, "left_click"),
            target=target(),
        )
    if name in ("fill", "clear"):
        return Type(text="" if name == "clear" else str(arg(1, "value", "")), target=target())
    if name == "select_option":
        options = arg(1, "options")
        return Select(
            target=target(), option=str(options[0] if isinstance(options, list | tuple) else options)
        )
    if name in ("check", "uncheck"):
        return Check(target=target(), checked=name == "check")
    if name in ("press", "keyboard_press"):
        key = str(arg(1, "key_comb") if name == "press" else arg(0, "key"))
        return Key(keys=key.split("+"))
    if name in ("keyboard_type", "keyboard_insert_text"):
        return Type(text=str(arg(0, "text")))
    if name == "scroll":
        dx, dy = arg(0, "delta_x", 0), arg(1, "delta_y", 0)
        return HScroll(pixels=int(dx)) if dx and not dy else Scroll(pixels=-int(dy))  # theirs: +dy is down
    if name in ("mouse_click", "mouse_dblclick"):
        x, y = screen.grid(arg(0, "x"), arg(1, "y"))
        return Click(
            action="double_click"
            if name == "mouse_dblclick"
            else _BUTTONS.get(arg(2, "button", "left"), "left_click"),
            x=x,
            y=y,
        )
    if name == "mouse_move":
        x, y = screen.grid(arg(0, "x"), arg(1, "y"))
        return MouseMove(x=x, y=y)
    if name == "mouse_drag_and_drop":
        (x, y), (x2, y2) = (
            screen.grid(arg(0, "from_x"), arg(1, "from_y")),
            screen.grid(arg(2, "to_x"), arg(3, "to_y")),
        )
        return Drag(x=x, y=y, x2=x2, y2=y2)
    if name == "drag_and_drop":
        return Drag(
            target=target(),
            to=targets.get(str(arg(1, "to_bid"))) or Target(role="element", name=f"bid:{arg(1, 'to_bid')}"),
        )
    if name == "goto":
        return Goto(url=str(arg(0, "url")))
    if name == "go_back":
        return Key(keys=["Alt", "ArrowLeft"])
    if name == "go_forward":
        return Key(keys=["Alt", "ArrowRight"])
    if name == "noop":
        return Wait(seconds=min(60.0, float(arg(0, "wait_ms", 1000)) / 1000))
    if name == "send_msg_to_user":
        return Terminate(status="success", answer=str(arg(0, "text")))
    if name == "report_infeasible":
        return Terminate(status="failure", answer=str(arg(0, "reason")))
    if name == "focus":
        return Click(target=target())
    return None  # hover, tab_focus, new_tab, tab_close, upload_file, ...: not in our space


# ---- plain action-history text ---------------------------------------------------------------------

_TEXT_ACTIONS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"^(?:Left )?Click at \(\s*(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)\s*\)$", re.I), "click"),
    (re.compile(r"^Double[- ]?click at \(\s*(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)\s*\)$", re.I), "double"),
    (re.compile(r"^Right[- ]?click at \(\s*(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)\s*\)$", re.I), "right"),
    (re.compile(r"^Hover at \(\s*(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)\s*\)$", re.I), "hover"),
    (re.compile(r'^Type "(.*)"$', re.S), "type"),
    (re.compile(r"^Press (.+)$", re.I), "press"),
    (re.compile(r"^Scroll \(delta_x=(-?\d+), delta_y=(-?\d+)\)$", re.I), "scroll"),
    (re.compile(r"^Navigate to (\S+)$", re.I), "goto"),
    (re.compile(r"^Navigate back$", re.I), "back"),
    (re.compile(r"^Navigate forward$", re.I), "forward"),
    (re.compile(r"^Navigate reload$", re.I), "reload"),
    (re.compile(r"^Drag from \((\d+), (\d+)\) to \((\d+), (\d+)\)$", re.I), "drag"),
]
_KEY_NAMES = {
    "ENTER": "Enter",
    "ESCAPE": "Escape",
    "TAB": "Tab",
    "BACKSPACE": "Backspace",
    "CONTROL": "Control",
    "SHIFT": "Shift",
    "ALT": "Alt",
    "HOME": "Home",
    "END": "End",
    "PAGEDOWN": "PageDown",
    "PAGEUP": "PageUp",
}


def action_text_step(step: dict, screen: Screen) -> ForeignStep:
    """`action`: one action described in words, as browser-agent harnesses log them ("Click at (600, 475)",
    'Type "support services"', "Press ENTER", "Scroll (delta_x=0, delta_y=400)", "Navigate to URL")."""
    text = step["action"].strip()
    thought = _reasoning(step, "thought", "think", "reasoning")
    fields, raw = _fields(step), _raw(thought, text)
    for pattern, what in _TEXT_ACTIONS:
        m = pattern.match(text)
        if not m:
            continue
        if what in ("click", "double", "right"):
            x, y = screen.grid(float(m[1]), float(m[2]))
            name = {"click": "left_click", "double": "double_click", "right": "right_click"}[what]
            return ForeignStep([Click(action=name, x=x, y=y)], raw, None, fields)
        if what == "hover":
            x, y = screen.grid(float(m[1]), float(m[2]))
            return ForeignStep([MouseMove(x=x, y=y)], raw, None, fields)
        if what == "type":
            return ForeignStep([Type(text=m[1])], raw, None, fields)
        if what == "press":
            keys = [_KEY_NAMES.get(k.upper(), k) for k in m[1].split("+")]
            return ForeignStep([Key(keys=keys)], raw, None, fields)
        if what == "scroll":
            dx, dy = int(m[1]), int(m[2])
            action = HScroll(pixels=dx) if dx and not dy else Scroll(pixels=-dy)
            return ForeignStep([action], raw, None, fields)
        if what == "goto":
            return ForeignStep([Goto(url=m[1])], raw, None, fields | {"url": fields["url"]})
        if what in ("back", "forward"):
            return ForeignStep(
                [Key(keys=["Alt", "ArrowLeft" if what == "back" else "ArrowRight"])], raw, None, fields
            )
        if what == "reload":
            return ForeignStep([Key(keys=["F5"])], raw, None, fields)
        if what == "drag":
            (x, y), (x2, y2) = screen.grid(float(m[1]), float(m[2])), screen.grid(float(m[3]), float(m[4]))
            return ForeignStep([Drag(x=x, y=y, x2=x2, y2=y2)], raw, None, fields)
    return _unmapped(raw, text[:80], fields)


# ---- Mind2Web ----------------------------------------------------------------------------------------

_REPR = re.compile(
    r"^\s*\[(?P<tag>[^\]]*)\]\s*(?P<text>.*?)\s*->\s*(?P<op>CLICK|TYPE|SELECT|HOVER|ENTER)(?::\s*(?P<value>.*))?$",
    re.S,
)
_TAG_ROLES = {
    "button": "button",
    "a": "link",
    "link": "link",
    "input": "textbox",
    "textbox": "textbox",
    "select": "combobox",
    "combobox": "combobox",
    "checkbox": "checkbox",
    "radio": "radio",
    "option": "option",
    "img": "img",
    "svg": "img",
    "span": "generic",
    "div": "generic",
    "li": "listitem",
    "label": "label",
    "searchbox": "searchbox",
    "textarea": "textbox",
    "menuitem": "menuitem",
    "tab": "tab",
    "heading": "heading",
    "switch": "switch",
}


def mind2web_step(step: dict, screen: Screen) -> ForeignStep:
    """`operation` ({"op": CLICK|TYPE|SELECT, "value"} or the op as text) on an element, given as
    `element` ({"tag", "text"}) or by its `action_repr` ("[button] Search -> CLICK"); the model's words for
    it, when the log has them, in `think`, `thought` or `reasoning`."""
    fields = _fields(step)
    repr_ = step.get("action_repr")
    m = _REPR.match(repr_) if isinstance(repr_, str) else None
    op = step.get("operation")
    if isinstance(op, dict):
        name, value = op.get("op") or op.get("original_op"), op.get("value")
    else:
        name, value = op, None
    if m:
        name, value = name or m["op"], value if value not in (None, "") else m["value"]
    element = step.get("element") if isinstance(step.get("element"), dict) else {}
    tag = str(element.get("tag") or (m["tag"] if m else "") or "").strip().lower()
    text = str(element.get("text") or element.get("name") or (m["text"] if m else "") or "").strip()
    if not isinstance(name, str):
        raise ForeignStepError(
            "missing_field:operation", "a Mind2Web step needs an operation (CLICK, TYPE, SELECT)"
        )
    raw = _raw(
        _reasoning(step, "think", "thought", "reasoning"),
        repr_ if isinstance(repr_, str) else json.dumps({"operation": op, "element": element}, ensure_ascii=False),
    )
    target = Target(role=_TAG_ROLES.get(tag, tag or "generic"), name=text or None)
    name = name.upper()
    if name in ("CLICK", "ENTER"):
        return ForeignStep([Click(target=target)], raw, None, fields)
    if name == "TYPE":
        return ForeignStep([Type(text=str(value or ""), target=target)], raw, None, fields)
    if name == "SELECT":
        return ForeignStep([Select(target=target, option=str(value or ""))], raw, None, fields)
    return _unmapped(raw, name, fields)


# ---- AITW / AndroidControl -------------------------------------------------------------------------

_AITW_BUTTONS = {
    "PRESS_BACK": "back",
    "PRESS_HOME": "home",
    "PRESS_ENTER": "enter",
    "navigate_back": "back",
    "navigate_home": "home",
}


def android_step(step: dict, screen: Screen) -> ForeignStep:
    """AITW (`action_type` DUAL_POINT / TYPE / PRESS_BACK / ... with touch and lift points in 0..1, y first)
    and AndroidControl (`action_type` click / long_press / scroll / input_text / open_app / navigate_back /
    wait with pixel x, y)."""
    kind = step["action_type"]
    fields = _fields(step)
    raw = json.dumps(
        {k: v for k, v in step.items() if k not in ("screenshot_path", "screenshot_b64")}, ensure_ascii=False
    )
    raw = _raw(_reasoning(step, "thought", "reasoning", "step_instruction"), raw)
    if isinstance(kind, int):  # AITW's numeric codes
        kind = {
            4: "DUAL_POINT",
            3: "TYPE",
            5: "PRESS_BACK",
            6: "PRESS_HOME",
            7: "PRESS_ENTER",
            10: "STATUS_TASK_COMPLETE",
            11: "STATUS_TASK_IMPOSSIBLE",
        }.get(kind, str(kind))
    if not isinstance(kind, str):
        raise ForeignStepError("wrong_type:action_type", f"expected text, got {type(kind).__name__}")
    if kind in _AITW_BUTTONS:
        return ForeignStep([SystemButton(button=_AITW_BUTTONS[kind])], raw, None, fields)
    if kind == "DUAL_POINT":
        touch, lift = (
            step.get("touch_yx") or step.get("touch_point"),
            step.get("lift_yx") or step.get("lift_point"),
        )
        if not (isinstance(touch, list) and isinstance(lift, list) and len(touch) == 2 and len(lift) == 2):
            raise ForeignStepError("missing_field:touch_yx", "a DUAL_POINT needs touch_yx and lift_yx")
        (ty, tx), (ly, lx) = touch, lift
        t, lt = (_clamp(tx * 1000), _clamp(ty * 1000)), (_clamp(lx * 1000), _clamp(ly * 1000))
        if (
            abs(t[0] - lt[0]) <= 40 and abs(t[1] - lt[1]) <= 40
        ):  # AITW's own tap threshold (0.04 of the screen)
            return ForeignStep([Tap(x=t[0], y=t[1])], raw, None, fields)
        return ForeignStep([Swipe(x=t[0], y=t[1], x2=lt[0], y2=lt[1])], raw, None, fields)
    if kind in ("TYPE", "input_text"):
        return ForeignStep([Type(text=str(step.get("type_text", step.get("text", ""))))], raw, None, fields)
    if kind in ("STATUS_TASK_COMPLETE", "STATUS_TASK_IMPOSSIBLE", "status"):
        ok = kind == "STATUS_TASK_COMPLETE" or step.get("goal_status") == "successful"
        return ForeignStep([Terminate(status="success" if ok else "failure")], raw, None, fields)
    if kind in ("click", "long_press"):
        x, y = screen.grid(step.get("x"), step.get("y"))
        return ForeignStep([Tap(x=x, y=y) if kind == "click" else LongPress(x=x, y=y)], raw, None, fields)
    if kind == "scroll":
        direction = str(step.get("direction", "down")).lower()
        start, end = {
            "down": ((500, 700), (500, 300)),
            "up": ((500, 300), (500, 700)),
            "left": ((300, 500), (700, 500)),
            "right": ((700, 500), (300, 500)),
        }.get(direction, ((500, 700), (500, 300)))
        return ForeignStep([Swipe(x=start[0], y=start[1], x2=end[0], y2=end[1])], raw, None, fields)
    if kind == "open_app":
        return ForeignStep(
            [OpenApp(app=str(step.get("app_name") or step.get("app") or ""))], raw, None, fields
        )
    if kind == "wait":
        return ForeignStep([Wait(seconds=1.0)], raw, None, fields)
    return _unmapped(raw, str(kind), fields)


# ---- OpenAI / Anthropic computer use ---------------------------------------------------------------

_CU_KEYS = {
    "ENTER": "Enter",
    "RETURN": "Enter",
    "ESC": "Escape",
    "ESCAPE": "Escape",
    "TAB": "Tab",
    "BACKSPACE": "Backspace",
    "CTRL": "Control",
    "CONTROL": "Control",
    "CMD": "Meta",
    "SHIFT": "Shift",
    "ALT": "Alt",
    "SPACE": "Space",
}


def computer_use_step(step: dict, screen: Screen) -> ForeignStep:
    """An OpenAI `computer_call` item (`action`: {type: click|double_click|type|keypress|scroll|move|drag|
    wait|screenshot, ...}) or an Anthropic `tool_use` block of the computer tool (`input`: {action:
    left_click|type|key|scroll|mouse_move|left_click_drag|wait|screenshot, coordinate: [x, y], ...})."""
    item = step.get("computer_call") or step.get("tool_use") or step
    fields = _fields(step)
    thought = _reasoning(step, "reasoning", "thought", "text")
    if "input" in item:  # Anthropic
        args = item.get("input") or {}
        raw = _raw(thought, json.dumps(args, ensure_ascii=False))
        return ForeignStep(_anthropic_action(args, screen), raw, None, fields)
    args = item.get("action") or {}
    raw = _raw(thought, json.dumps(args, ensure_ascii=False))
    return ForeignStep(_openai_action(args, screen), raw, None, fields)


def _anthropic_action(args: dict, screen: Screen) -> list[Action]:
    name = args.get("action")
    point = args.get("coordinate")
    xy = screen.grid(*point) if isinstance(point, list) and len(point) == 2 else None
    clicks = {
        "left_click": "left_click",
        "right_click": "right_click",
        "middle_click": "middle_click",
        "double_click": "double_click",
        "triple_click": "triple_click",
    }
    if name in clicks:
        if xy is None:
            raise ForeignStepError("missing_field:coordinate", f"{name} without a coordinate")
        return [Click(action=clicks[name], x=xy[0], y=xy[1])]
    if name == "type":
        return [Type(text=str(args.get("text", "")))]
    if name == "key":
        return [Key(keys=[_CU_KEYS.get(k.upper(), k) for k in str(args.get("text", "")).split("+")])]
    if name == "mouse_move" and xy:
        return [MouseMove(x=xy[0], y=xy[1])]
    if name == "left_click_drag":
        start = args.get("start_coordinate")
        if not (isinstance(start, list) and xy):
            raise ForeignStepError("missing_field:start_coordinate", "a drag needs both ends")
        x, y = screen.grid(*start)
        return [Drag(x=x, y=y, x2=xy[0], y2=xy[1])]
    if name == "scroll":
        amount = int(args.get("scroll_amount", 3)) * 100
        direction = args.get("scroll_direction", "down")
        kw = {"x": xy[0], "y": xy[1]} if xy else {}
        if direction in ("left", "right"):
            return [HScroll(pixels=amount if direction == "right" else -amount, **kw)]
        return [Scroll(pixels=amount if direction == "up" else -amount, **kw)]
    if name == "wait":
        return [Wait(seconds=min(60.0, float(args.get("duration", 1))))]
    if name == "screenshot":
        return [Screenshot()]
    raise ForeignStepError("unknown_action", f"computer tool action {name!r}")


def _openai_action(args: dict, screen: Screen) -> list[Action]:
    name = args.get("type")
    has_xy = "x" in args and "y" in args
    xy = screen.grid(args["x"], args["y"]) if has_xy else None
    if name in ("click", "double_click"):
        if xy is None:
            raise ForeignStepError("missing_field:x", f"{name} without x, y")
        button = {"left": "left_click", "right": "right_click", "middle": "middle_click"}.get(
            args.get("button", "left"), "left_click"
        )
        return [Click(action="double_click" if name == "double_click" else button, x=xy[0], y=xy[1])]
    if name == "type":
        return [Type(text=str(args.get("text", "")))]
    if name == "keypress":
        return [Key(keys=[_CU_KEYS.get(str(k).upper(), str(k)) for k in args.get("keys") or []] or ["Enter"])]
    if name == "scroll":
        dx, dy = int(args.get("scroll_x", 0)), int(args.get("scroll_y", 0))
        kw = {"x": xy[0], "y": xy[1]} if xy else {}
        return [HScroll(pixels=dx, **kw)] if dx and not dy else [Scroll(pixels=-dy, **kw)]
    if name == "move" and xy:
        return [MouseMove(x=xy[0], y=xy[1])]
    if name == "drag":
        path = args.get("path") or []
        if len(path) < 2:
            raise ForeignStepError("missing_field:path", "a drag needs a path of at least two points")
        x, y = screen.grid(path[0].get("x"), path[0].get("y"))
        x2, y2 = screen.grid(path[-1].get("x"), path[-1].get("y"))
        return [Drag(x=x, y=y, x2=x2, y2=y2)]
    if name == "wait":
        return [Wait(seconds=1.0)]
    if name == "screenshot":
        return [Screenshot()]
    raise ForeignStepError("unknown_action", f"computer_call action {name!r}")


# ---- whole transcripts -------------------------------------------------------------------------------


def transcript_steps(record: dict) -> tuple[list[dict], str | None]:
    """An OpenAI Responses `output`/`items` list or an Anthropic `messages` list as step records (one per
    computer call, with the assistant's text before it as its reasoning) and the first user text as the
    instruction. `call_user`-like questions are not invented: a transcript says nothing of them. A MiniWoB++
    demo goes to `miniwob_demo_steps`."""
    if is_miniwob_demo(record):
        return miniwob_demo_steps(record)
    items = record.get("items") or record.get("output") or record.get("messages") or []
    if not isinstance(items, list):
        raise ForeignStepError("wrong_type:messages", "a transcript is a list of messages or items")
    steps, instruction, thought = [], None, None
    for item in (i for i in items if isinstance(i, dict)):
        role, kind = item.get("role"), item.get("type")
        content = item.get("content")
        blocks = (
            content
            if isinstance(content, list)
            else [{"type": "text", "text": content}]
            if isinstance(content, str)
            else []
        )
        if role == "user" and instruction is None:
            instruction = next(
                (
                    b.get("text")
                    for b in blocks
                    if isinstance(b, dict) and b.get("type") in ("text", "input_text")
                ),
                None,
            )
            continue
        if kind == "computer_call":
            steps.append({"computer_call": item, "reasoning": thought})
            thought = None
            continue
        if kind == "reasoning":
            summary = item.get("summary") or []
            thought = " ".join(s.get("text", "") for s in summary if isinstance(s, dict)) or thought
            continue
        for block in (b for b in blocks if isinstance(b, dict)):
            if block.get("type") in ("text", "output_text") and role == "assistant":
                thought = block.get("text") or thought
            elif block.get("type") == "tool_use" and block.get("name") == "computer":
                steps.append({"tool_use": block, "reasoning": thought})
                thought = None
    if not steps:
        raise ForeignStepError("missing_field:steps", "the transcript has no computer tool calls")
    return steps, instruction


def is_transcript(record: dict) -> bool:
    """A whole-episode record whose steps we derive: a computer-use transcript or a MiniWoB++ demo."""
    items = record.get("items") or record.get("output") or record.get("messages")
    return "steps" not in record and (isinstance(items, list) or is_miniwob_demo(record))


# ---- MiniWoB++ demonstrations ---------------------------------------------------------------------------
# stanfordnlp/miniwob-plusplus-demos: {"utterance", "states": [{"time", "action", "dom"}], "reward",
# "rawReward"}. Every DOM event is recorded twice (`timing` 1 before the page handled it, 3 after) with the
# DOM at that moment: nodes {tag (INPUT_<type> for inputs), left, top, width, height, children, id, classes,
# text, value, focused, recordingTarget (the event's target)}.

MINIWOB_AREA = (160, 210)  # the task area every MiniWoB++ page draws in (its #wrap), in CSS pixels
_MINIWOB_KEYS = {8: "Backspace", 9: "Tab", 13: "Enter", 27: "Escape", 33: "PageUp", 34: "PageDown",
                 35: "End", 36: "Home", 37: "ArrowLeft", 38: "ArrowUp", 39: "ArrowRight", 40: "ArrowDown",
                 46: "Delete"}
_VOLATILE = ("recordingTarget",)  # marks the event's target, not a property of the page


def is_miniwob_demo(record: dict) -> bool:
    return isinstance(record.get("states"), list) and "utterance" in record and "steps" not in record


def _dom_sha(dom: Any) -> str | None:
    """The DOM snapshot as a UI-tree hash: canonical JSON without the recorder's own marks."""
    if not isinstance(dom, dict):
        return None

    def clean(node: dict) -> dict:
        out = {k: v for k, v in node.items() if k not in _VOLATILE and k != "children"}
        out["children"] = [clean(c) for c in node.get("children") or [] if isinstance(c, dict)]
        return out

    return hashlib.sha256(json.dumps(clean(dom), sort_keys=True).encode()).hexdigest()


def _node_at(dom: Any, x: float, y: float) -> dict | None:
    """The event's target (`recordingTarget`), else the deepest node whose box holds the point."""
    found: list[dict] = []

    def walk(node: dict) -> dict | None:
        if node.get("recordingTarget"):
            return node
        box = [node.get(k) for k in ("left", "top", "width", "height")]
        if all(isinstance(v, int | float) for v in box) and box[0] <= x <= box[0] + box[2] and box[1] <= y <= box[1] + box[3]:
            found.append(node)
        for child in node.get("children") or []:
            if isinstance(child, dict) and (hit := walk(child)):
                return hit
        return None

    return (walk(dom) if isinstance(dom, dict) else None) or (found[-1] if found else None)


def _describe(node: dict | None) -> str:
    if not node:
        return "nothing"
    ident = f"#{node['id']}" if node.get("id") else ""
    text = str(node.get("text") or "")[:40]
    return f"{node.get('tag', '?')}{ident}" + (f" text={text}" if text else "")


def miniwob_demo_steps(record: dict) -> tuple[list[dict], str | None]:
    try:
        return _miniwob_demo_steps(record)
    except RecursionError:
        raise ForeignStepError("invalid_value:dom", "a DOM snapshot nested too deeply to read") from None


def _miniwob_demo_steps(record: dict) -> tuple[list[dict], str | None]:
    """A person's DOM events as our steps: a press of the mouse (mousedown .. the clicks it caused: a click
    on a label also clicks its input) is one left_click, a dblclick turns the clicks before it into one
    double_click, keypresses in a row are one targetless type, Enter / Tab / arrows / Backspace are keys; a
    scroll (the recorder keeps no delta) is kept as an unmapped action. Each step's `ui_tree_sha` is the DOM
    when its first event began; a closing terminate (success when the task's raw reward is positive)
    carries the last DOM, so the last action's effect is observed too. Points are CSS pixels of the
    160 x 210 task area, scaled to our grid."""
    states = [s for s in record["states"] if isinstance(s, dict)]
    screen = Screen(*MINIWOB_AREA)
    steps: list[dict] = []
    pressed = False  # the last step is a mouse press whose click events are still coming

    def add(actions: list[dict], raw: str, dom: Any, error: str | None = None) -> None:
        steps.append({"actions": actions, "raw_output": f"human: {raw}", "ui_tree_sha": _dom_sha(dom),
                      **({"format_error": error} if error else {})})

    for state in states:
        event = state.get("action")
        if not isinstance(event, dict) or event.get("timing") != 1:
            continue
        kind, dom = event.get("type"), state.get("dom")
        if kind == "mousedown":
            x, y = screen.grid(event.get("x"), event.get("y"))
            add([{"action": "left_click", "x": x, "y": y}],
                f"click at ({event['x']}, {event['y']}) on {_describe(_node_at(dom, event['x'], event['y']))}", dom)
            pressed = True
        elif kind == "click" and not pressed:  # a click with no press of its own (keyboard, script)
            x, y = screen.grid(event.get("x"), event.get("y"))
            add([{"action": "left_click", "x": x, "y": y}], f"click at ({event['x']}, {event['y']})", dom)
        elif kind == "dblclick":
            clicks = [s for s in steps[-2:] if s["actions"] and s["actions"][0]["action"] == "left_click"]
            del steps[len(steps) - len(clicks):]
            x, y = screen.grid(event.get("x"), event.get("y"))
            add([{"action": "double_click", "x": x, "y": y}], f"double click at ({event['x']}, {event['y']})",
                dom if not clicks else None)
            if clicks:
                steps[-1]["ui_tree_sha"] = clicks[0]["ui_tree_sha"]
        elif kind == "keypress" and event.get("charCode"):
            code = event["charCode"]
            if not isinstance(code, int) or isinstance(code, bool) or not 0 < code < 0x110000:
                raise ForeignStepError("wrong_type:charCode", f"expected a character code, got {code!r}")
            char = chr(code) if code != 13 else None
            last = steps[-1]["actions"][0] if steps and steps[-1]["actions"] else {}
            if char is None:
                continue  # Enter: its keydown is the key step
            if last.get("action") == "type" and not pressed:
                last["text"] += char
                steps[-1]["raw_output"] = f"human: type {last['text']!r}"
            else:
                add([{"action": "type", "text": char}], f"type {char!r}", dom)
            pressed = False
            continue
        elif kind == "keydown" and event.get("keyCode") in _MINIWOB_KEYS:
            name = _MINIWOB_KEYS[event["keyCode"]]
            add([{"action": "key", "keys": [name]}], f"press {name}", dom)
        elif kind == "scroll":
            if steps and steps[-1].get("format_error", "").startswith(UNMAPPED):
                continue  # one scroll gesture fires many events
            add([], "scroll", dom, f"{UNMAPPED}: scroll (the recorder keeps no delta)")
        else:
            continue
        pressed = kind == "mousedown" or (pressed and kind in ("mouseup", "click"))
    last_dom = next((s.get("dom") for s in reversed(states) if s.get("dom") is not None), None)
    status = "success" if (record.get("rawReward") or 0) > 0 else "failure"
    add([{"action": "terminate", "status": status}], f"episode ended (raw reward {record.get('rawReward')})", last_dom)
    utterance = record.get("utterance")
    return steps, utterance if isinstance(utterance, str) else None
