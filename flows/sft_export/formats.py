"""Rows of the two export formats, built from a trajectory's steps (already read from the lake).

`messages` is the chat layout TRL and LLaMA-Factory train on: `messages` is a list of
{role, content: [{type: text|image, text}], tool_calls}, and `images` holds the pictures of the image
parts in order, in the Hugging Face `Image` layout {bytes, path} (schema metadata tells `datasets` to
decode them). By reference (`images="ref"`) bytes is null and path the blob's key relative to the lake's
root, `blobs/sha256/<ab>/<cd>/<sha256>`. A system prompt states the action protocol; a user turn carries the request, the history
and the screenshot; an assistant turn carries the action as Qwen `computer_use` XML tool calls
(`protocol="qwen-xml"`) or OpenAI `tool_calls` (`protocol="openai"`), written by
`sandboxes.action_parsing`. One row per step (the history is a text list of earlier actions) or one per
trajectory (the whole conversation).

The same rows carry the LLaMA-Factory layout beside TRL's: `conversations` is the sharegpt list of
{from: system|human|gpt|function_call, value} with an `<image>` placeholder where each image part is (so
the placeholders count the row's `images`), and `tools` the tool schemas as JSON; `dataset_info.json` (see
card.py) tells LLaMA-Factory which columns and tags to read. Placeholders that appear in text — a request or
typed text saying `<image>` — are written `[image]`, so the count always holds.

`action-rl` is one row per step: the state (request, URL, screenshot), the action (protocol text and
our typed JSON), whether it ran, and Ct, Qt, St, Lt and the combined reward from mine-failures.

Actions that name their target semantically are grounded to the point the driver reported hitting
(`steps.points_json`), so every exported action is a coordinate action: click -> click at (x, y); type
into a field -> a click there (triple click when it replaces the field's text), then type; select ->
click, type the option, Enter; check -> click; goto -> ctrl+L, type the URL, Enter. A step that cannot be
grounded (its target was never located) or did not parse (`format_error`) is never an assistant turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import pyarrow as pa

from flows.sft_export.config import ExportConfig
from lake.store import blob_key
from sandboxes.action_parsing import COMPUTER_USE_TOOL, SHELL_TOOL, to_openai_tool_calls, to_qwen_xml
from sandboxes.actions import Check, Click, Drag, Goto, Key, Select, Shell, Type, dump_actions, parse_actions

if TYPE_CHECKING:
    from lake import Lake

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
PART = pa.struct([("type", pa.string()), ("text", pa.string())])
TOOL_CALL = pa.struct(
    [
        ("id", pa.string()),
        ("type", pa.string()),
        ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
    ]
)
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.list_(PART)), ("tool_calls", pa.list_(TOOL_CALL))])
SHAREGPT_TURN = pa.struct([("from", pa.string()), ("value", pa.string())])  # LLaMA-Factory's sharegpt tags
_ROW_KEYS = [
    ("id", pa.string()),
    ("trajectory_id", pa.string()),
    ("step_index", pa.int32()),  # null in a per-trajectory row
    ("task_id", pa.string()),
    ("sandbox", pa.string()),
    ("family", pa.string()),
    ("difficulty", pa.string()),
    ("policy", pa.string()),
    ("verdict", pa.string()),  # pass, or failed for negatives
]


def _hf(features: dict[str, Any]) -> dict[bytes, bytes]:
    """Schema metadata that makes Hugging Face `datasets` decode these columns as images."""
    return {b"huggingface": json.dumps({"info": {"features": features}}).encode()}


SCHEMAS: dict[str, pa.Schema] = {
    "messages": pa.schema(
        [
            *_ROW_KEYS,
            ("messages", pa.list_(MESSAGE)),
            ("images", pa.list_(IMAGE)),
            ("image_shas", pa.list_(pa.string())),
            ("conversations", pa.list_(SHAREGPT_TURN)),  # the same turns for LLaMA-Factory (sharegpt)
            ("tools", pa.string()),  # the tool schemas offered (JSON list)
        ],
        metadata=_hf({"images": {"feature": {"_type": "Image"}, "_type": "List"}}),
    ),
    "action-rl": pa.schema(
        [
            *_ROW_KEYS,
            ("instruction", pa.string()),
            ("url", pa.string()),
            ("screen_width", pa.int32()),
            ("screen_height", pa.int32()),
            ("screenshot", IMAGE),
            ("screenshot_sha", pa.string()),
            ("ui_tree_sha", pa.string()),
            ("action", pa.string()),  # the grounded action in the chosen protocol
            ("actions_json", pa.string()),  # the action as recorded (typed JSON, scrubbed)
            ("ok", pa.bool_()),
            ("error", pa.string()),
            ("sensitive", pa.string()),
            ("done", pa.bool_()),  # the trajectory's last step
            ("ct", pa.float64()),
            ("qt", pa.float64()),
            ("st", pa.float64()),
            ("lt", pa.float64()),
            ("reward", pa.float64()),
        ],
        metadata=_hf({"screenshot": {"_type": "Image"}}),
    ),
}
ROW_FACTS = ("trajectory_id", "task_id", "sandbox", "family", "difficulty", "policy", "verdict", "instruction")
STEP_COLUMNS = (
    "trajectory_id", "step_index", "screenshot_sha", "screen_width", "screen_height", "ui_tree_sha", "url",
    "actions_json", "format_error", "ok", "error", "points_json", "sensitive",
)
REWARD_COLUMNS = ("ct", "qt", "st", "lt", "reward")
# Per-step drops inside a kept trajectory, with why.
FORMAT_ERROR_STEP, UNGROUNDED_STEP = "format_error_step", "ungrounded_step"

_PROTOCOL = """You are a computer-use agent operating an application to complete the user's task. Each turn
you see the task, the actions you took so far, the current URL and a screenshot of the screen.

Act by calling the `computer_use` function{shell}; several calls in one turn run in order as a batch.
Coordinates are [x, y] on a 0..999 grid over the screenshot: [0, 0] is the top-left corner and [999, 999]
the bottom-right, whatever the real screen size. Click a text field before typing into it. When the task
is done, call computer_use with action="terminate" and status="success" (put the answer in `answer` when
the task asks a question); if it cannot be done, terminate with status="failure"."""


@lru_cache(maxsize=4)
def system_prompt(protocol: str, with_shell: bool) -> str:
    tools = [COMPUTER_USE_TOOL, SHELL_TOOL] if with_shell else [COMPUTER_USE_TOOL]
    text = _PROTOCOL.format(shell=" (and `shell` for commands)" if with_shell else "")
    if protocol == "openai":
        return text
    listed = "\n".join(json.dumps(t["function"], ensure_ascii=False) for t in tools)
    return (
        f"{text}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        f"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{listed}\n"
        "</tools>\n\nFor each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags."
    )


SHAREGPT_FROM = {"system": "system", "user": "human", "assistant": "gpt"}
PLACEHOLDERS = ("<image>", "<video>", "<audio>")  # what LLaMA-Factory counts against the media columns


def literal(text: str) -> str:
    """Text with LLaMA-Factory's media placeholders spelled `[image]`, so only image parts count as images."""
    for token in PLACEHOLDERS:
        if token in text:
            text = text.replace(token, f"[{token[1:-1]}]")
    return text


def sharegpt(messages: list[dict]) -> list[dict]:
    """Our chat messages as LLaMA-Factory sharegpt turns: `<image>` for an image part, an assistant turn with
    OpenAI tool calls as a `function_call` turn ([{name, arguments}])."""
    turns = []
    for m in messages:
        if m["tool_calls"]:
            calls = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
                     for c in m["tool_calls"]]
            turns.append({"from": "function_call", "value": literal(json.dumps(calls, ensure_ascii=False))})
            continue
        value = "".join("<image>" if p["type"] == "image" else literal(p["text"] or "") for p in m["content"])
        turns.append({"from": SHAREGPT_FROM[m["role"]], "value": value})
    return turns


@lru_cache(maxsize=2)
def tool_schemas(with_shell: bool) -> str:
    return json.dumps([t["function"] for t in ([COMPUTER_USE_TOOL, SHELL_TOOL] if with_shell else [COMPUTER_USE_TOOL])],
                      ensure_ascii=False, sort_keys=True)


def ground(actions_json: str, points_json: str | None, page_url: str | None) -> list | None:
    """Our recorded actions -> coordinate actions (see the module docstring); None if one cannot be."""
    try:
        actions = parse_actions(json.loads(actions_json))
        points = json.loads(points_json) if points_json else []
    except ValueError:  # not JSON, or not our action space (pydantic's ValidationError is a ValueError)
        return None
    points += [None] * (len(actions) - len(points))
    out: list = []
    for action, point in zip(actions, points):
        target = getattr(action, "target", None)
        if isinstance(action, Goto):
            out += [Key(keys=["ctrl", "l"]), Type(text=urljoin(page_url or "", action.url)), Key(keys=["Enter"])]
            continue
        if target is None:
            out.append(action)
            continue
        if not point:
            return None
        x, y = point[:2]
        if isinstance(action, Drag) and len(point) == 4:  # a semantic drag: where it started and ended
            out.append(Drag(x=x, y=y, x2=point[2], y2=point[3]))
        elif isinstance(action, Click):
            out.append(Click(action=action.action, x=x, y=y))
        elif isinstance(action, Type):
            out += [Click(action="triple_click" if action.clear else "left_click", x=x, y=y), Type(text=action.text)]
        elif isinstance(action, Select):
            out += [Click(x=x, y=y), Type(text=action.option or action.value or ""), Key(keys=["Enter"])]
        elif isinstance(action, Check):
            out.append(Click(x=x, y=y))
        else:
            return None
    return out


@lru_cache(maxsize=16384)
def assistant_turn(actions_json: str, points_json: str | None, origin: str, protocol: str) -> tuple | None:
    """(content text, tool_calls, uses shell, history line) of one step's action; None if it cannot be grounded."""
    try:
        grounded = ground(actions_json, points_json, origin)
    except (TypeError, ValueError):  # a recorded point of an odd shape: not a training target
        grounded = None
    if not grounded:
        return None
    shell = any(isinstance(a, Shell) for a in grounded)
    history = json.dumps(dump_actions(grounded), ensure_ascii=False)
    if protocol == "openai":
        return "", tuple(json.dumps(c, sort_keys=True) for c in to_openai_tool_calls(grounded)), shell, history
    return to_qwen_xml(grounded), (), shell, history


def _origin(url: str | None) -> str:
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme else ""


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def _assistant(turn: tuple) -> dict:
    content, calls, *_ = turn
    return {
        "role": "assistant",
        "content": [_text(content)],
        "tool_calls": [json.loads(c) for c in calls] or None,
    }


ImageReader = Callable[[str], dict]  # blob sha -> {bytes, path}


def image_reader(lake: Lake, mode: str) -> ImageReader:
    """Embed the blob's bytes, or reference it by its key, its path relative to the lake's root
    (`blobs/sha256/<ab>/<cd>/<sha256>`): the same wherever the lake sits, so two lakes with the same
    content export the same bytes. The manifest's `lineage.lake` names the lake the keys are in."""

    def read(sha: str) -> dict:
        if mode == "ref":
            return {"bytes": None, "path": blob_key(sha)}
        data = lake.read_blob(sha)
        ext = "jpg" if data[:3] == b"\xff\xd8\xff" else "webp" if data[8:12] == b"WEBP" else "png"
        return {"bytes": data, "path": f"{sha}.{ext}"}

    return read


class RowBuilder:
    """Turns one trajectory (its curation row and its steps in order) into export rows."""

    def __init__(self, config: ExportConfig, scrub: Callable[[str | None, str], str | None], images: ImageReader):
        self.config, self.scrub, self.images = config, scrub, images
        self.step_drops: dict[str, int] = {FORMAT_ERROR_STEP: 0, UNGROUNDED_STEP: 0}
        self.steps_out = 0

    def rows(self, traj: dict, steps: list[dict]) -> Iterator[dict]:
        instruction = self.scrub(traj["instruction"], "request")
        keys = {k: traj.get(k) for k, _ in _ROW_KEYS if k not in ("id", "step_index")}
        turns = []
        for s in steps:
            if s["format_error"] or not s["actions_json"] or s["actions_json"] == "[]":
                self.step_drops[FORMAT_ERROR_STEP] += 1
                continue
            url = self.scrub(s["url"], "url")
            actions_json = self.scrub(s["actions_json"], "typed_text")
            turn = assistant_turn(actions_json, s["points_json"], _origin(url), self.config.protocol)
            if turn is None:
                self.step_drops[UNGROUNDED_STEP] += 1
                continue
            turns.append((s, url, actions_json, turn))
        if self.config.format == "action-rl":
            yield from self._action_rl(keys, instruction, turns, steps[-1]["step_index"] if steps else None)
        elif self.config.per == "trajectory":
            if turns:
                self.steps_out += len(turns)
                yield self._conversation(keys, instruction, turns)
        else:
            yield from self._per_step(keys, instruction, turns)

    def _user(self, text: str, sha: str | None, images: list, shas: list) -> dict:
        content = [_text(text)]
        if sha:
            content.append({"type": "image", "text": None})
            images.append(self.images(sha))
            shas.append(sha)
        return {"role": "user", "content": content, "tool_calls": None}

    def _system(self, turns: list) -> dict:
        shell = any(t[3][2] for t in turns)
        return {"role": "system", "content": [_text(system_prompt(self.config.protocol, shell))], "tool_calls": None}

    def _per_step(self, keys: dict, instruction: str, turns: list) -> Iterator[dict]:
        history: list[str] = []
        for s, url, actions_json, turn in turns:
            shown = history[-self.config.history :] if self.config.history else []
            first = len(history) - len(shown) + 1
            listed = "\n".join(f"{first + i}. {h}" for i, h in enumerate(shown)) or "(none yet)"
            images: list = []
            shas: list = []
            user = self._user(f"Task: {instruction}\n\nActions so far:\n{listed}\n\nCurrent page: {url}", s["screenshot_sha"], images, shas)
            self.steps_out += 1
            messages = [self._system([(s, url, actions_json, turn)]), user, _assistant(turn)]
            yield {
                **keys, "id": f"{keys['trajectory_id']}:{s['step_index']}", "step_index": s["step_index"],
                "messages": messages, "images": images, "image_shas": shas,
                "conversations": sharegpt(messages), "tools": tool_schemas(turn[2]),
            }
            history.append(turn[3])

    def _conversation(self, keys: dict, instruction: str, turns: list) -> dict:
        messages = [self._system(turns)]
        images: list = []
        shas: list = []
        for i, (s, url, _, turn) in enumerate(turns):
            text = f"Task: {instruction}\n\nCurrent page: {url}" if i == 0 else f"Current page: {url}"
            messages += [self._user(text, s["screenshot_sha"], images, shas), _assistant(turn)]
        return {**keys, "id": keys["trajectory_id"], "step_index": None, "messages": messages, "images": images,
                "image_shas": shas, "conversations": sharegpt(messages), "tools": tool_schemas(any(t[3][2] for t in turns))}

    def _action_rl(self, keys: dict, instruction: str, turns: list, last_index: int | None) -> Iterator[dict]:
        for s, url, actions_json, turn in turns:
            content, calls, *_ = turn
            sha = s["screenshot_sha"]
            self.steps_out += 1
            yield {
                **keys, "id": f"{keys['trajectory_id']}:{s['step_index']}", "step_index": s["step_index"],
                "instruction": instruction, "url": url, "screen_width": s["screen_width"],
                "screen_height": s["screen_height"], "screenshot": self.images(sha) if sha else None,
                "screenshot_sha": sha, "ui_tree_sha": s["ui_tree_sha"],
                "action": content if self.config.protocol == "qwen-xml" else "[" + ", ".join(calls) + "]",
                "actions_json": actions_json, "ok": s["ok"], "error": self.scrub(s["error"], "error"),
                "sensitive": s["sensitive"], "done": s["step_index"] == last_index,
                **{k: s.get(k) for k in REWARD_COLUMNS},
            }
