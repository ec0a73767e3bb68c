"""TEST DOUBLE, not a model: a tiny OpenAI-compatible chat-completions server on 127.0.0.1.

It plays back scripted assistant messages (tool calls included) in order, records every request it
receives (so tests can check what was really sent over HTTP), and can be told to answer HTTP 500, to
stall past the client's timeout, or to send a body that is not JSON for the next N requests. Tests use
it to drive the real litellm HTTP path without a model.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]  # an assistant message, or request -> one


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str = "call_0") -> dict[str, Any]:
    """One OpenAI tool call; `arguments` may be a (possibly broken) JSON string, as a model sends it."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


class FakeOpenAIServer:
    """Test double for an OpenAI-compatible endpoint: scripted replies, recorded requests, injected faults."""

    def __init__(self, replies: list[Reply] | None = None) -> None:
        self.replies: list[Reply] = list(replies or [])
        self.requests: list[dict[str, Any]] = []  # every POST body, in arrival order, faults included
        self.headers: list[dict[str, str]] = []
        self.in_flight = self.max_in_flight = 0  # requests being answered now / at most at once
        self._faults: list[tuple[str, float]] = []  # ("status", code) | ("sleep", seconds) | ("garbage", 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None

    # ---- scripting ------------------------------------------------------------------------------
    def reply(self, *messages: Reply) -> FakeOpenAIServer:
        with self._lock:
            self.replies.extend(messages)
        return self

    def fail(self, n: int, status: int = 500) -> FakeOpenAIServer:
        """Answer the next n requests with this HTTP status."""
        with self._lock:
            self._faults.extend([("status", status)] * n)
        return self

    def stall(self, n: int, seconds: float) -> FakeOpenAIServer:
        """Sleep this long before answering the next n requests (then answer from the script)."""
        with self._lock:
            self._faults.extend([("sleep", seconds)] * n)
        return self

    def garble(self, n: int) -> FakeOpenAIServer:
        """Answer the next n requests with HTTP 200 and a body that is not JSON."""
        with self._lock:
            self._faults.extend([("garbage", 0)] * n)
        return self

    @property
    def url(self) -> str:
        assert self._httpd, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        self._stop.set()  # wakes stalled handlers
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- serving --------------------------------------------------------------------------------
    def _next(self, body: dict[str, Any]) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append(body)
            fault = self._faults.pop(0) if self._faults else None
            reply = None
            if fault is None or fault[0] == "sleep":
                reply = self.replies.pop(0) if self.replies else None
        if fault and fault[0] == "status":
            return int(fault[1]), json.dumps({"error": {"message": "test double: injected failure"}}).encode()
        if fault and fault[0] == "garbage":
            return 200, b"<html>this is not json"
        if fault and fault[0] == "sleep":
            self._stop.wait(fault[1])
        if reply is None:
            error = {"error": {"message": "test double: no scripted reply left", "type": "invalid_request_error"}}
            return 400, json.dumps(error).encode()
        message = reply(body) if callable(reply) else reply
        return 200, json.dumps(_completion(body, message)).encode()


def _completion(request: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, **message}
    prompt_tokens = max(1, len(json.dumps(request.get("messages", []))) // 4)  # a stable stand-in count
    completion_tokens = max(1, len(json.dumps(message)) // 4)
    return {
        "id": f"chatcmpl-double-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "double"),
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, b'{"error": {"message": "test double: only /v1/chat/completions"}}')
                return
            body = json.loads(self.rfile.read(length) or b"{}")
            with server._lock:
                server.headers.append(dict(self.headers))
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                status, payload = server._next(body)
            finally:
                with server._lock:
                    server.in_flight -= 1  # before replying, so the client's next request never overlaps
            self._send(status, payload)

        def _send(self, status: int, payload: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

    return Handler
