"""A labelled set (issue 15, a helper): Claude Code (claude-opus-4-6) driving a real Android phone through one MCP
server on AndroidWorld's tasks, as data.jsonl for `real_eval` (ANDROID_WORLD_MCP.md).

The source (MetaFlowCodeRepo/android_world_test, no licence stated) holds one folder per run,
`androidworld_mcp/run_results/<task>/<run>/`: `stream.jsonl`, Claude Code's stream-json log of the session (the
model's text blocks, its `tool_use` calls - the "wimb-device" MCP server's tools and Claude Code's own - and each
`tool_result`, `is_error` when it failed; partial `stream_event`s, which are not read), `spec.json` (the task's
AndroidWorld `goal`), `prompt.txt` (the harness's full Chinese prompt around the goal) and `summary.json` (the
`stop_reason`, e.g. `error_max_turns` at the 50-turn limit, and the model's `self_eval`). The task id is
`<task>/<run>`. `build_android_world_mcp_set` writes each run in our JSONL schema with the transcript reading of
`mobile_agent_bench_set` (one step per `tool_use` block in order; `raw_output` the model's text since its previous
call, then `<tool> <input JSON>`; `error` a result with `is_error` or `"success": false`; a last `terminate` step
carrying the text after the last call), the calls mapped so:

- `click` {x, y} -> `tap` on the 0..999 grid: values up to 1 are fractions of the screen, larger ones pixels of
  the phone's 1080 x 2392 (the server's echo: x 0.5 -> 540, y 0.88 -> 2104; `device_info` 1080 x 2392);
- `ai_click` {text | icon} -> `left_click` on `{"text": ...}` (the server's own lookup, by a visible text or an
  icon's description); `ai_seq_click` -> one `left_click` per text it lists;
- `swipe` {from_x, from_y, to_x, to_y} -> `swipe`; `input_text` {innerid, text} -> `type`; `ai_set_text`
  {element, text} -> `type` into `{"text": element}`; `press_back` / `press_home` -> `system_button`;
  `open_app` {package_name} -> `open_app`;
- `get_screenshot` -> `screenshot`; `wait_stable_screen` / `wait_screen_update` -> `wait` (its timeout, at most 60 s);
- every other call of the server (`get_screen_xml`, `device_info`, `list_devices`, `lock_screen`, ...) -> a `shell`
  action whose command is the call itself, `wimb-device.<tool> <input JSON>`, as mobile_agent_bench's UI dumps;
- Claude Code's `Bash` -> a `shell` action with the command the agent wrote (the harness refused many: the step's
  error); `Write` -> `shell` `claude-code.Write {"file_path": ...}` (it writes a file on the host); its other own
  tools (ToolSearch, Read, Glob, TodoWrite, WebFetch, AskUserQuestion, Agent) map to nothing (the step keeps its
  place, `format_error` `unmapped_action: <tool>`).

`ended` is `max_steps` when the run stopped at the turn limit (`summary.json` `stop_reason` or the stream's
`result` subtype `error_max_turns`), else `terminated` when a final answer follows the last call, else `env_error`.
Files are parsed with `json` only and never run. A run whose `stream.jsonl` the snapshot lacks (the store drops
the largest blobs) or that has no tool call is left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flows.failure_mining.mobile_agent_bench_set import _first_number, transcript_steps
from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "MetaFlowCodeRepo/android_world_test"
COMMIT = "8ca970b85ab6141fb6edd715a2f91a7ad2ab93e1"
LICENSE = "none stated"
ROOT = "androidworld_mcp/run_results/"
SCREEN = (1080, 2392)  # the phone's pixels (device_info; the server's echo of fractional clicks)
_UNMAPPED = ("ToolSearch", "Read", "Glob", "Grep", "TodoWrite", "WebFetch", "WebSearch", "AskUserQuestion", "Agent",
             "Task")  # fmt: skip


def build_android_world_mcp_set(git_dir: str | Path, out: str | Path, commit: str = COMMIT) -> int:
    """data.jsonl from a snapshot of the repository (every run under androidworld_mcp/run_results/); returns the
    runs written."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        for name in sorted(n for n in snap.names(ROOT) if n.endswith("/stream.jsonl")):
            run_dir = name.removesuffix("/stream.jsonl")
            parts = run_dir.removeprefix(ROOT).split("/")
            if len(parts) != 2:
                continue
            transcript = snap.text(name)
            if transcript is None:
                continue
            spec = snap.json(f"{run_dir}/spec.json")
            summary = snap.json(f"{run_dir}/summary.json")
            goal = spec.get("goal") if isinstance(spec, dict) else None
            if not isinstance(goal, str) or not goal.strip():
                goal = snap.text(f"{run_dir}/prompt.txt")
            record = trajectory(
                "/".join(parts), transcript, summary if isinstance(summary, dict) else {}, goal
            )
            if record is not None:
                record["source"] = snap.source(REPO, name, LICENSE)
                lines.append(record)
    return write_jsonl(out, lines)


def trajectory(task_id: str, transcript: str, summary: dict, goal: Any) -> dict | None:
    """One run's stream.jsonl as a data.jsonl record; None when it has no tool call."""
    steps, answer, model, result = transcript_steps(transcript, actions_of, SCREEN)
    if not steps:
        return None
    stop = summary.get("stop_reason") or result
    verdict = summary.get("self_eval") if isinstance(summary.get("self_eval"), dict) else {}
    return {
        "task_id": task_id,
        "policy": "claude-code+wimb-device",
        "model": model or "unknown",
        "instruction": goal.strip() if isinstance(goal, str) else None,
        "ended": "max_steps" if stop == "error_max_turns" else "terminated" if answer else "env_error",
        "end_detail": f"self_eval success {verdict['success']}" if "success" in verdict else None,
        "final_answer": answer[:4000] or None,
        "steps": steps,
    }


def actions_of(name: str, given: dict) -> list[dict]:
    """Our action dicts for one tool call (none for Claude Code's own reading and planning tools)."""
    if name == "Bash":
        command = given.get("command")
        return (
            [{"action": "shell", "command": command}] if isinstance(command, str) and command.strip() else []
        )
    if name == "Write":
        return [
            {"action": "shell", "command": _call("claude-code", name, {"file_path": given.get("file_path")})}
        ]
    if name in _UNMAPPED or not name.startswith("mcp__"):
        return []
    server, _, tool = name.removeprefix("mcp__").partition("__")
    if not tool:
        return []
    return device_actions(tool, given) or [{"action": "shell", "command": _call(server, tool, given)}]


def device_actions(tool: str, given: dict) -> list[dict]:
    """Touch, text, keys, launches, captures and waits of the wimb-device server; [] for anything else."""
    if tool == "click":
        x, y = _point(given.get("x"), SCREEN[0]), _point(given.get("y"), SCREEN[1])
        return [{"action": "tap", "x": x, "y": y}] if x is not None and y is not None else []
    if tool == "ai_click":
        label = given.get("text") or given.get("icon")
        return [{"action": "left_click", "target": {"text": str(label)}}] if label else []
    if tool == "ai_seq_click":
        items = next((v for v in given.values() if isinstance(v, list)), [])
        labels = [
            i if isinstance(i, str) else (i.get("text") or i.get("icon"))
            for i in items
            if isinstance(i, (str, dict))
        ]
        return [{"action": "left_click", "target": {"text": str(label)}} for label in labels if label]
    if tool == "swipe":
        ends = [
            _point(given.get(k), SCREEN[i % 2]) for i, k in enumerate(("from_x", "from_y", "to_x", "to_y"))
        ]
        return (
            []
            if None in ends
            else [{"action": "swipe", "x": ends[0], "y": ends[1], "x2": ends[2], "y2": ends[3]}]
        )
    if tool in ("input_text", "ai_set_text") and isinstance(given.get("text"), str):
        typed: dict[str, Any] = {"action": "type", "text": given["text"]}
        if tool == "ai_set_text" and given.get("element"):
            typed["target"] = {"text": str(given["element"])}
        return [typed]
    if tool in ("press_back", "press_home"):
        return [{"action": "system_button", "button": tool.removeprefix("press_")}]
    if tool == "open_app" and given.get("package_name"):
        return [{"action": "open_app", "app": str(given["package_name"])}]
    if tool == "get_screenshot":
        return [{"action": "screenshot"}]
    if tool in ("wait_stable_screen", "wait_screen_update"):
        seconds = _first_number(given.get("timeout"), given.get("stable_duration"))
        return [{"action": "wait", "seconds": min(60.0, max(0.0, seconds if seconds is not None else 1.0))}]
    return []


def _call(server: str, tool: str, given: dict) -> str:
    return f"{server}.{tool} {json.dumps(given, ensure_ascii=False, sort_keys=True)}"


def _point(value: Any, size: int) -> int | None:
    """One coordinate on the 0..999 grid: a fraction of the screen (0..1) or a pixel."""
    v = _first_number(value)
    if v is None:
        return None
    return max(0, min(999, int(v * 1000 if 0 <= v <= 1 else v * 1000 / size)))
