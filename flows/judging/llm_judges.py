"""LLM judges: N independent model votes on a trajectory, extra voters beside the task's verifier.

Each vote is its own call (the prompt carries a `judge_index`, so each has its own cache key) over the
instruction, the actions taken, how the episode ended and up to MAX_IMAGES screenshots. A vote is
{"voter": "llm:<model>#<i>", "vote": "pass" | "failed" | "env_error" | "abstain", "reason": ...};
an answer that cannot be read, or a failed call, is an abstain vote rather than an exception, and
abstains should not count when the votes are tallied.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flywheel.llm import LLMClient
from lake import Lake

MAX_IMAGES = 4
TREE_CHARS = 3000
VERDICTS = ("pass", "failed", "env_error")
_ALIASES = {"success": "pass", "passed": "pass", "fail": "failed", "failure": "failed", "env": "env_error"}
_OBJECT = re.compile(r"\{.*\}", re.S)

SYSTEM_PROMPT = """You judge whether a computer-use agent completed a task in a web application.
You get the task, every action the agent took (with errors the environment reported), how the episode
ended, the agent's final answer, the accessibility tree of the last page, and screenshots. Each
screenshot shows the screen before that step's actions ran.

Verdicts:
- "pass": the task's goal was achieved (and any answer it asks for is correct).
- "failed": the agent did not achieve the goal: wrong or missing changes, a wrong answer, gave up, or
  ran out of steps.
- "env_error": the environment, not the agent, prevented the task: a CAPTCHA, a login or session that
  expired, a network error or error page (e.g. "502 Bad Gateway", "connection refused", "site can't be
  reached"), a crashed or unresponsive application. Look for these in the page text, screenshots and
  step errors.

Answer with one JSON object and nothing else: {"verdict": "pass" | "failed" | "env_error", "reason": "<one sentence>"}"""

BlobReader = Callable[[str], bytes | None]


def lake_blob_reader(lake: Lake) -> BlobReader:
    """Read `blobs/sha256/..` written by `Lake.put_blob`; a missing blob reads as None."""
    def read(sha: str) -> bytes | None:
        return lake.read_blob(sha) if lake.has_blob(sha) else None

    return read


def llm_votes(client: LLMClient, trajectory_row: dict[str, Any], task_row: dict[str, Any],
              steps_rows: list[dict[str, Any]], blob_reader: BlobReader, n: int = 5) -> list[dict[str, Any]]:
    """N LLM votes on one trajectory; the calls run in parallel up to the client's concurrency limit."""
    steps = sorted(steps_rows, key=lambda s: s["step_index"])
    context = _context(trajectory_row, task_row, steps, blob_reader)

    def vote(i: int) -> dict[str, Any]:
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": [{"type": "text", "text": f"judge_index: {i}"}, *context]}]
        result = client.complete(messages, purpose="judge")
        voter = f"llm:{client.model}#{i}"
        if result.error:
            return {"voter": voter, "vote": "abstain", "reason": f"llm_error: {result.error}"}
        return {"voter": voter, **read_verdict(result.content or "")}

    with ThreadPoolExecutor(max_workers=max(1, n)) as pool:
        return list(pool.map(vote, range(n)))


def read_verdict(text: str) -> dict[str, str]:
    """The judge's JSON answer -> {"vote", "reason"}; anything unreadable is an abstain."""
    match = _OBJECT.search(text)
    try:
        answer = json.loads(match.group(0) if match else text)
        verdict = str(answer["verdict"]).strip().lower()
    except (ValueError, KeyError, TypeError):
        return {"vote": "abstain", "reason": f"unparseable judge answer: {text[:200]!r}"}
    verdict = _ALIASES.get(verdict, verdict)
    if verdict not in VERDICTS:
        return {"vote": "abstain", "reason": f"unknown verdict {verdict!r}"}
    return {"vote": verdict, "reason": str(answer.get("reason") or "")[:1000]}


def _context(trajectory: dict[str, Any], task: dict[str, Any], steps: list[dict[str, Any]],
             blob_reader: BlobReader) -> list[dict[str, Any]]:
    """The shared part of every judge's prompt: text about the episode, then the chosen screenshots."""
    lines = []
    for s in steps:
        line = f"{s['step_index']}. {s.get('actions_json') or '[]'}  (page: {s.get('url') or '?'})"
        if s.get("format_error"):
            line += f"  [unreadable output: {s['format_error']}]"
        if s.get("error"):
            line += f"  [error: {s['error']}]"
        lines.append(line)
    tree = _text_blob(blob_reader, steps[-1].get("ui_tree_sha")) if steps else None
    text = (
        f"Task: {task['instruction']}\n\nActions:\n" + ("\n".join(lines) or "(none)") + "\n\n"
        f"Episode ended: {trajectory.get('ended')}"
        + (f" ({trajectory['end_detail']})" if trajectory.get("end_detail") else "")
        + f"\nFinal answer: {trajectory.get('final_answer') or '(none)'}\n\n"
        f"Last page's accessibility tree:\n{(tree or '(unavailable)')[:TREE_CHARS]}"
    )
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for s in _pick(steps):
        data = blob_reader(s["screenshot_sha"])
        if data:
            parts.append({"type": "text", "text": f"Screenshot before step {s['step_index']}:"})
            url = "data:image/png;base64," + base64.b64encode(data).decode()
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _pick(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Up to MAX_IMAGES steps with screenshots: the first, the last and evenly spaced between."""
    shots = [s for s in steps if s.get("screenshot_sha")]
    if len(shots) <= MAX_IMAGES:
        return shots
    last = len(shots) - 1
    return [shots[round(i * last / (MAX_IMAGES - 1))] for i in range(MAX_IMAGES)]


def _text_blob(blob_reader: BlobReader, sha: str | None) -> str | None:
    data = blob_reader(sha) if sha else None
    return data.decode("utf-8", "replace") if data else None
