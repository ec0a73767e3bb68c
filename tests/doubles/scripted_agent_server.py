"""TEST DOUBLE, not a model: an OpenAI-compatible server on 127.0.0.1 that plays back a recorded coding-agent
conversation with tool calls.

Unlike FakeOpenAIServer's queue of replies, the answer is chosen by the conversation's position: the
number of assistant messages already in the request. A retried request (after an HTTP 500 or a
timeout) therefore gets the same answer as the first attempt would have, as from a real model at
temperature 0. Faults are planned per position and fire once (or always), so tests can put an HTTP
500, a stall past the client's timeout or a body that is not JSON at a chosen step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.doubles.openai_server import FakeOpenAIServer, _completion, tool_call

Step = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]  # an assistant message, or request -> one


def calls(*pairs: tuple[str, dict[str, Any] | str]) -> dict[str, Any]:
    """An assistant turn with these (tool name, arguments) calls; a str argument is sent as is (maybe broken)."""
    return {"content": "", "tool_calls": [tool_call(name, args, f"call_{i}") for i, (name, args) in enumerate(pairs)]}


class ScriptedAgentServer(FakeOpenAIServer):
    def __init__(self, script: list[Step]) -> None:
        super().__init__()
        self.script = list(script)
        self.plan: dict[int, tuple[str, float, bool]] = {}  # step -> (fault, seconds, every time)

    def fault_at(self, step: int, fault: str, seconds: float = 0.0, always: bool = False) -> ScriptedAgentServer:
        """fault: 'status' (HTTP 500), 'sleep' (stall `seconds`, then answer), 'garbage' (200, not JSON)."""
        self.plan[step] = (fault, seconds, always)
        return self

    @staticmethod
    def position(body: dict[str, Any]) -> int:
        return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")

    def _next(self, body: dict[str, Any]) -> tuple[int, bytes]:
        step = self.position(body)
        with self._lock:
            self.requests.append(body)
            fault = self.plan.get(step)
            if fault and not fault[2]:
                del self.plan[step]
        if fault and fault[0] == "status":
            return 500, json.dumps({"error": {"message": "test double: injected failure"}}).encode()
        if fault and fault[0] == "garbage":
            return 200, b"<html>this is not json"
        if fault and fault[0] == "sleep":
            self._stop.wait(fault[1])
        entry = self.script[step] if step < len(self.script) else {"content": "I am done."}
        message = entry(body) if callable(entry) else entry
        return 200, json.dumps(_completion(body, message)).encode()
