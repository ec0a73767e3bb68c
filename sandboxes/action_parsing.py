"""Model output <-> actions: read what a policy said into typed actions, and write actions back out.

Read: an OpenAI chat-completions assistant message (or its `tool_calls`), Qwen `<tool_call>` blocks
(JSON inside, or the `<function=..><parameter=..>` form), or plain JSON (an object, a list, a ```json
block). Qwen argument names map to our fields: `coordinate` -> x, y; `coordinate2` (or
`start_coordinate` + `coordinate`) -> the two ends of a drag or swipe; `time` -> seconds / duration;
`text` -> the app of open_app, the reason of call_user; a `mobile_use` call's `click` / `open` are
tap / open_app. Any other argument must already be one of our field names.

Output that does not parse never raises: it gives a `ParsedTurn` with no actions and a `format_error`
"<code>: <message>", code one of `no_tool_call`, `unparseable_json`, `unknown_action`,
`invalid_arguments`. A batch is all or nothing: one bad call makes the whole turn a format error, so a
half-understood turn is never executed.

Write: `to_qwen_xml` and `to_openai_tool_calls`, for exporting training data; parsing their output
gives back equal actions. Shell commands go to a `shell` function, every other action to `computer_use`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from sandboxes.actions import ACTION_NAMES, Action, Shell, Turn

NO_TOOL_CALL, UNPARSEABLE_JSON = "no_tool_call", "unparseable_json"
UNKNOWN_ACTION, INVALID_ARGUMENTS = "unknown_action", "invalid_arguments"

_ACTION: TypeAdapter[Action] = TypeAdapter(Action)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=|</function>)|\Z)", re.S)
_FENCE = re.compile(r"```(?:json)?[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_GUI_TOOLS = ("computer_use", "mobile_use")  # functions whose `action` argument names the action
_MOBILE_NAMES = {"click": "tap", "open": "open_app"}  # Qwen mobile_use names of our actions
_TEXT_FIELD = {"open_app": "app", "call_user": "reason", "key": "keys"}  # where Qwen's generic `text` goes
_TIME_FIELD = {"wait": "seconds", "long_press": "duration"}
_STRINGS = {  # XML parameters kept as written, never read as JSON (the text "123" stays text)
    "action", "text", "reason", "answer", "app", "command", "cwd", "url", "status", "button", "option",
    "value",
}
_REQUIRED_BY_QWEN = ("pixels", "seconds", "duration", "status")  # written out even when they are our default


@dataclass
class ParsedTurn:
    """What a policy said, as actions, or why it could not be read (so the step can be stored anyway)."""

    actions: list[Action] = field(default_factory=list)
    thought: str | None = None
    format_error: str | None = None  # "<code>: <message>"; set iff actions is empty
    raw: str = ""

    @property
    def error_code(self) -> str | None:
        return self.format_error.split(":", 1)[0] if self.format_error else None

    @property
    def turn(self) -> Turn | None:
        return Turn(actions=self.actions, thought=self.thought) if self.actions else None


class _FormatError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def parse_model_output(output: str | dict | list) -> ParsedTurn:
    """Read one model turn in any supported format; never raises, so a bad turn still becomes a step."""
    raw = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    thought = None
    try:
        thought, items = _split(output)
        calls = [call for item in items for call in _decode(item)]
        if not calls:
            raise _FormatError(NO_TOOL_CALL, "no tool call, JSON action or ```json block in the output")
        actions = [_action(tool, args) for tool, args in calls]
    except _FormatError as exc:
        return ParsedTurn([], thought, f"{exc.code}: {exc}", raw)
    except Exception as exc:  # e.g. RecursionError on absurdly nested JSON: still a format error, not a crash
        return ParsedTurn([], thought, f"{INVALID_ARGUMENTS}: {type(exc).__name__}: {exc}", raw)
    return ParsedTurn(actions, thought, None, raw)


def _split(output: Any) -> tuple[str | None, list]:
    """Separate the free text (the thought) from the tool calls, which stay undecoded."""
    if isinstance(output, str):
        start = output.find("<tool_call>")
        start = output.find("<function=") if start < 0 else start  # the XML form without its wrapper
        if start >= 0:
            return _thought(output[:start]), _TOOL_CALL.findall(output) or [output[start:]]
        if fence := _FENCE.search(output):
            return _thought(output[: fence.start()]), [fence.group(1)]
        if output.lstrip().startswith(("{", "[")):
            return None, [output]
        return _thought(output), []
    if isinstance(output, dict) and ("tool_calls" in output or "content" in output):
        text = _text(output.get("content")) or _text(output.get("reasoning_content"))
        if output.get("tool_calls"):
            return _thought(text), [output["tool_calls"]]
        return _split(text)  # no server-side tool parser: the calls are still in the text
    if isinstance(output, dict | list):
        return None, [output]
    raise _FormatError(NO_TOOL_CALL, f"cannot read a {type(output).__name__}")


def _text(content: Any) -> str:
    """The text of a message's content, which may be a string or a list of parts."""
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _thought(text: str) -> str | None:
    return re.sub(r"</?think>", "", text).strip() or None


def _decode(item: Any) -> list[tuple[str | None, dict]]:
    """One undecoded item -> (function name, arguments) pairs."""
    if isinstance(item, str) and "<function=" in item:
        return [(name, _xml_params(body)) for name, body in _FUNCTION.findall(item)]
    return _calls(_loads(item) if isinstance(item, str) else item)


def _xml_params(body: str) -> dict:
    """`<parameter>` values: text as written (one wrapping newline dropped), anything else as JSON."""
    params = {}
    for name, value in _PARAMETER.findall(body):
        value = value.removeprefix("\n").removesuffix("\n")
        try:
            params[name] = value if name in _STRINGS else json.loads(value)
        except ValueError:
            params[name] = value.strip()
    return params


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _FormatError(UNPARSEABLE_JSON, f"{exc.msg} at char {exc.pos} of {text[:80]!r}") from None
    except RecursionError:
        raise _FormatError(UNPARSEABLE_JSON, "JSON nested too deeply") from None


def _calls(data: Any) -> list[tuple[str | None, dict]]:
    """Decoded JSON (a tool call, a {name, arguments} object, a bare action, or a list) -> pairs."""
    if isinstance(data, list):
        return [call for item in data for call in _calls(item)]
    if not isinstance(data, dict):
        raise _FormatError(INVALID_ARGUMENTS, f"expected an object, got {type(data).__name__}")
    data = data.get("function", data)  # an OpenAI tool call wraps {name, arguments}
    if not isinstance(data, dict):
        raise _FormatError(INVALID_ARGUMENTS, f"expected a function object, got {data!r}")
    if "name" not in data:
        return [(None, data)]  # a bare action object
    args = data.get("arguments", data.get("parameters", {}))
    args = _loads(args) if isinstance(args, str) else args
    if not isinstance(args, dict):
        raise _FormatError(INVALID_ARGUMENTS, f"arguments of {data['name']!r} are not an object")
    return [(data["name"], args)]


def _action(tool: str | None, args: dict) -> Action:
    """Qwen arguments -> our fields -> a validated action."""
    fields = dict(args)
    action = fields.pop("action", None)
    if action is None and tool not in _GUI_TOOLS:
        action = tool  # a function per action, e.g. `shell`
    if action is None:
        raise _FormatError(INVALID_ARGUMENTS, "missing argument 'action'")
    if not isinstance(action, str):
        raise _FormatError(UNKNOWN_ACTION, f"action is not a name: {action!r}")
    action = _MOBILE_NAMES.get(action, action) if tool == "mobile_use" else action
    if action not in ACTION_NAMES:
        raise _FormatError(UNKNOWN_ACTION, f"{action!r} is not one of {', '.join(sorted(ACTION_NAMES))}")
    start, end = fields.pop("coordinate", None), fields.pop("coordinate2", None)
    if "start_coordinate" in fields:  # Anthropic style: from start_coordinate to coordinate
        start, end = fields.pop("start_coordinate"), start
    for (kx, ky), point in ((("x", "y"), start), (("x2", "y2"), end)):
        if point is not None:
            fields[kx], fields[ky] = _point(point)
    if "text" in fields and action in _TEXT_FIELD:
        fields[_TEXT_FIELD[action]] = fields.pop("text")
    if "time" in fields and action in _TIME_FIELD:
        fields[_TIME_FIELD[action]] = fields.pop("time")
    if action == "key" and isinstance(fields.get("keys"), str):
        fields["keys"] = [fields["keys"]]
    if action == "system_button" and isinstance(fields.get("button"), str):
        fields["button"] = fields["button"].lower()  # Qwen writes Back, Home, ...
    try:
        return _ACTION.validate_python({"action": action, **fields})
    except ValidationError as exc:
        where = lambda e: ".".join(map(str, e["loc"][1:])) or "arguments"
        problems = "; ".join(f"{where(e)}: {e['msg']}" for e in exc.errors())
        raise _FormatError(INVALID_ARGUMENTS, f"{action}: {problems}") from None


def _point(value: Any) -> tuple[Any, Any]:
    """[x, y] (or a string holding two numbers) -> x, y; pydantic checks the 0..999 range."""
    if isinstance(value, str):
        value = _NUMBER.findall(value)
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise _FormatError(INVALID_ARGUMENTS, f"a coordinate must be [x, y], got {value!r}")
    return value[0], value[1]


# ---- writing ------------------------------------------------------------------------------------------


def _function(action: Action) -> tuple[str, dict]:
    """An action as (function name, Qwen-style arguments): defaults left out, except those Qwen requires."""
    fields = action.model_dump(mode="json", exclude_defaults=True, exclude={"action"})
    fields |= {k: getattr(action, k) for k in _REQUIRED_BY_QWEN if k in type(action).model_fields}
    if isinstance(action, Shell):
        return "shell", fields
    args: dict[str, Any] = {"action": action.action}
    if "x" in fields:
        args["coordinate"] = [fields.pop("x"), fields.pop("y")]
    if "x2" in fields:
        args["coordinate2"] = [fields.pop("x2"), fields.pop("y2")]
    args |= {("time" if k in ("seconds", "duration") else k): v for k, v in fields.items()}
    return "computer_use", args


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def to_qwen_xml(
    actions: list[Action], thought: str | None = None, style: Literal["json", "xml"] = "json"
) -> str:
    """Actions as a Qwen assistant turn: `<tool_call>` blocks with JSON inside, or the <function=> form."""
    blocks = []
    for name, args in map(_function, actions):
        if style == "json":
            body = _json({"name": name, "arguments": args})
        else:
            values = {k: v if isinstance(v, str) else _json(v) for k, v in args.items()}
            params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in values.items())
            body = f"<function={name}>\n{params}</function>"
        blocks.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(([thought] if thought else []) + blocks)


def to_openai_tool_calls(actions: list[Action]) -> list[dict]:
    """Actions as the `tool_calls` of an OpenAI assistant message (arguments are JSON strings)."""
    return [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": _json(args)}}
        for i, (name, args) in enumerate(map(_function, actions))
    ]


# ---- tool definitions for an LLM policy --------------------------------------------------------------

COMPUTER_ACTIONS = (
    "key", "type", "mouse_move", "left_click", "left_click_drag", "right_click", "middle_click",
    "double_click", "triple_click", "scroll", "hscroll", "wait", "screenshot", "call_user", "terminate",
)


def _param(type_: str, description: str, **schema: Any) -> dict:
    return {"type": type_, **schema, "description": description}


_XY = {"items": {"type": "integer", "minimum": 0, "maximum": 999}, "minItems": 2, "maxItems": 2}

COMPUTER_USE_TOOL = {
    "type": "function",
    "function": {
        "name": "computer_use",
        "description": (
            "Use a mouse and keyboard to interact with the screen shown in the screenshot. Coordinates are "
            "[x, y] on a 0..999 grid over the screenshot, [0, 0] the top left. Several calls in one turn run "
            "in order as a batch."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "action": _param("string", "What to do.", enum=list(COMPUTER_ACTIONS)),
                "coordinate": _param("array", "Where to click, move to, scroll, or start a drag.", **_XY),
                "coordinate2": _param("array", "Where a left_click_drag ends.", **_XY),
                "keys": _param("array", 'Keys pressed together: ["ctrl", "c"].', items={"type": "string"}),
                "text": _param("string", "Text to type. For action=type."),
                "pixels": _param("integer", "Positive scrolls up (scroll) or right (hscroll)."),
                "time": _param("number", "Seconds to wait. For action=wait."),
                "reason": _param("string", "What you need from the user. For action=call_user."),
                "status": _param("string", "For action=terminate.", enum=["success", "failure"]),
                "answer": _param("string", "For action=terminate: the answer, if the task asks a question."),
            },
            "required": ["action"],
        },
    },
}

SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "shell",
        "description": "Run a shell command and see its output.",
        "parameters": {
            "type": "object",
            "properties": {
                "command": _param("string", "The command line."),
                "cwd": _param("string", "Working directory; the session's if left out."),
                "timeout": _param("number", "Seconds before the command is killed (default 60)."),
            },
            "required": ["command"],
        },
    },
}
