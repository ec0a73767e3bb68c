"""flywheel.llm over the real litellm HTTP path, against a scripted OpenAI-compatible test double."""

from __future__ import annotations

import json
import threading

import pytest

from flywheel.llm import LLMClient, LLMNotConfigured, LLMSettings, configured
from sandboxes.action_parsing import COMPUTER_USE_TOOL, parse_model_output
from sandboxes.actions import Click, Type
from tests.doubles.openai_server import FakeOpenAIServer, tool_call

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # opaque bytes stand in for a screenshot


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def settings(srv: FakeOpenAIServer, tmp_path, **overrides) -> LLMSettings:
    base = dict(model="tiny", api_base=srv.url, cache_dir=tmp_path / "cache", timeout=5.0)
    return LLMSettings(**(base | overrides))


def ask(text: str = "click the button", image: bool = False) -> list[dict]:
    content: list[dict] = [{"type": "text", "text": text}]
    if image:
        import base64

        url = "data:image/png;base64," + base64.b64encode(PNG).decode()
        content.append({"type": "image_url", "image_url": {"url": url}})
    return [{"role": "user", "content": content}]


def test_tool_calls_parse_and_the_ledger_lands_in_the_lake(server, lake, tmp_path):
    server.reply({"content": "I will click.", "tool_calls": [
        tool_call("computer_use", {"action": "left_click", "coordinate": [500, 250]}, "call_a"),
        tool_call("computer_use", {"action": "type", "text": "hello"}, "call_b"),
    ]})
    client = LLMClient(settings(server, tmp_path), lake=lake, run_id="r1")
    result = client.complete(ask(image=True), tools=[COMPUTER_USE_TOOL], purpose="policy", temperature=0)

    assert result.ok and not result.cache_hit
    assert [c["function"]["name"] for c in result.tool_calls] == ["computer_use", "computer_use"]
    parsed = parse_model_output(result.message)
    assert parsed.actions == [Click(x=500, y=250), Type(text="hello")]
    assert parsed.thought == "I will click."

    (sent,) = server.requests
    assert sent["model"] == "tiny"  # FLYWHEEL_MODEL without a provider behind a base URL means openai/<model>
    assert sent["tools"][0]["function"]["name"] == "computer_use"
    assert sent["temperature"] == 0
    assert sent["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert server.headers[0].get("Authorization", server.headers[0].get("authorization")) == "Bearer sk-none"

    rows = client.flush()
    assert len(rows) == 1 and client.flush() == []  # flushing drains the buffer
    (row,) = lake.query("SELECT * FROM llm_calls")
    expected_prompt_tokens = len(json.dumps(sent["messages"])) // 4  # what the double reports
    assert row["prompt_tokens"] == expected_prompt_tokens and row["completion_tokens"] > 0
    assert row["latency_s"] > 0 and row["cache_hit"] is False and row["error"] is None
    assert row["purpose"] == "policy" and row["model"] == "tiny" and row["api_base"] == server.url
    assert row["run_id"] == "r1" and row["request_hash"] == result.request_hash
    assert json.loads(row["response_json"])["choices"][0]["message"]["tool_calls"][0]["id"] == "call_a"
    # the screenshot is stored once as a lake blob and referenced, not inlined as base64
    assert "base64" not in row["request_json"]
    digest = json.loads(row["request_json"])["messages"][0]["content"][1]["image_url"]["url"].split(":")[-1]
    assert (lake.root / "blobs" / "sha256" / digest[:2] / digest[2:4] / digest).read_bytes() == PNG


def test_an_identical_call_is_a_cache_hit_with_no_http_request(server, lake, tmp_path):
    server.reply({"content": "first answer"}, {"content": "second answer"}, {"content": "third answer"})
    client = LLMClient(settings(server, tmp_path), lake=lake, run_id="r1")
    first = client.complete(ask(), purpose="judge")
    again = client.complete(ask(), purpose="judge")
    assert len(server.requests) == 1
    assert again.cache_hit and again.content == "first answer" and again.cost == 0
    assert again.request_hash == first.request_hash

    # persistent: a new client (a re-run) on the same cache directory makes zero HTTP calls too
    rerun = LLMClient(settings(server, tmp_path), lake=lake, run_id="r2").complete(ask(), purpose="judge")
    assert rerun.cache_hit and rerun.content == "first answer" and len(server.requests) == 1

    # anything in the request changes the key; a salt does too, without being sent
    assert client.complete(ask(), purpose="judge", temperature=0.7).content == "second answer"
    salted = client.complete(ask(), purpose="judge", salt="episode-1")
    assert salted.content == "third answer" and not salted.cache_hit
    assert len(server.requests) == 3 and "salt" not in server.requests[-1]

    client.flush()
    rows = lake.query("SELECT cache_hit, cost_usd, request_hash FROM llm_calls ORDER BY recorded_at")
    assert [r["cache_hit"] for r in rows] == [False, True, False, False]
    assert rows[1]["cost_usd"] == 0 and rows[1]["request_hash"] == first.request_hash


def test_http_500_then_success_is_retried(server, tmp_path):
    server.fail(2, status=500).reply({"content": "recovered"})
    result = LLMClient(settings(server, tmp_path)).complete(ask())
    assert result.ok and result.content == "recovered"
    assert len(server.requests) == 3  # two failures, then the retry that worked


def test_persistent_500_is_an_error_result_and_a_ledger_row(server, lake, tmp_path):
    server.fail(10, status=500)
    client = LLMClient(settings(server, tmp_path), lake=lake, run_id="r1")
    result = client.complete(ask(), purpose="judge")  # must not raise
    assert not result.ok and "InternalServerError" in result.error
    assert result.content is None and result.tool_calls == []
    assert len(server.requests) == 3  # one call and num_retries=2

    client.flush()
    (row,) = lake.query("SELECT * FROM llm_calls")
    assert "InternalServerError" in row["error"] and row["cache_hit"] is False and row["response_json"] is None

    # errors are not cached: once the server recovers the same request goes out again
    server._faults.clear()
    server.reply({"content": "back"})
    assert client.complete(ask(), purpose="judge").content == "back"
    assert len(server.requests) == 4


def test_a_timeout_is_an_error_result(server, tmp_path):
    server.stall(5, seconds=30)
    client = LLMClient(settings(server, tmp_path, timeout=0.5, num_retries=1))
    result = client.complete(ask())
    assert not result.ok and "Timeout" in result.error
    assert len(server.requests) == 2 and result.latency < 10  # gave up long before the server answered


def test_a_body_that_is_not_json_is_an_error_result(server, tmp_path):
    server.garble(5)
    result = LLMClient(settings(server, tmp_path, num_retries=0)).complete(ask())
    assert not result.ok and result.error
    assert len(server.requests) == 1


def test_concurrency_is_limited_per_endpoint(server, tmp_path):
    n = 6
    server.stall(n, seconds=0.3).reply(*[{"content": f"answer {i}"} for i in range(n)])
    clients = [LLMClient(settings(server, tmp_path, concurrency=2)) for _ in range(2)]  # the limit is shared
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(clients[i % 2].complete(ask(f"q{i}"))))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.ok for r in results) and len(server.requests) == n
    assert server.max_in_flight == 2


def test_custom_token_prices_give_a_cost(server, tmp_path):
    server.reply({"content": "priced"}, {"content": "unpriced"})
    priced = LLMClient(settings(server, tmp_path, input_cost_per_token=1e-6, output_cost_per_token=2e-6))
    result = priced.complete(ask())
    expected = result.usage["prompt_tokens"] * 1e-6 + result.usage["completion_tokens"] * 2e-6
    assert result.cost == pytest.approx(expected)
    unpriced = LLMClient(settings(server, tmp_path, model="tiny-2")).complete(ask())
    assert unpriced.ok and not unpriced.cost  # an unmapped model has no known price


def test_configuration_comes_from_the_environment(monkeypatch, tmp_path):
    for name in ("FLYWHEEL_MODEL", "FLYWHEEL_API_BASE", "FLYWHEEL_API_KEY", "FLYWHEEL_LLM_CACHE"):
        monkeypatch.delenv(name, raising=False)
    assert not configured()
    with pytest.raises(LLMNotConfigured, match="FLYWHEEL_MODEL"):
        LLMClient()
    monkeypatch.setenv("FLYWHEEL_MODEL", "qwen2.5-vl")
    monkeypatch.setenv("FLYWHEEL_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("FLYWHEEL_LLM_CONCURRENCY", "7")
    monkeypatch.setenv("FLYWHEEL_LAKE", str(tmp_path / "lk"))
    assert configured()
    client = LLMClient()
    assert client.settings.api_key == "sk-none" and client.settings.concurrency == 7
    assert client.cache_dir == (tmp_path / "lk" / "llm_cache").resolve()
    monkeypatch.setenv("FLYWHEEL_LLM_CACHE", str(tmp_path / "c"))
    assert LLMClient().cache_dir == tmp_path / "c"


def test_a_failing_model_falls_back_to_the_next_one(tmp_path):
    class PrimaryDown(FakeOpenAIServer):
        def _next(self, body):
            if body["model"] == "primary":
                with self._lock:
                    self.requests.append(body)
                return 500, b'{"error": {"message": "test double: primary is down"}}'
            return super()._next(body)

    with PrimaryDown() as srv:
        srv.reply({"content": "from the fallback"})
        s = LLMSettings(model="primary", api_base=srv.url, cache_dir=tmp_path / "c", timeout=5.0, num_retries=1,
                        fallback_models=("secondary",))
        result = LLMClient(s).complete(ask())
    assert result.ok and result.content == "from the fallback"
    assert [r["model"] for r in srv.requests][-1] == "secondary" and "primary" in [r["model"] for r in srv.requests]


def test_a_rate_limit_spaces_calls_to_one_endpoint(tmp_path):
    import time

    class Clocked(FakeOpenAIServer):
        arrivals: list[float] = []

        def _next(self, body):
            self.arrivals.append(time.monotonic())
            return super()._next(body)

    with Clocked() as srv:
        srv.reply(*[{"content": f"answer {i}"} for i in range(3)])
        s = LLMSettings(model="paced", api_base=srv.url, cache_dir=tmp_path / "c", timeout=5.0, requests_per_minute=120)
        clients = [LLMClient(s), LLMClient(s)]  # the limit is per endpoint, shared by clients
        started = time.monotonic()
        for i in range(3):
            assert clients[i % 2].complete(ask(f"q{i}")).ok
    # 120 per minute: the third call may not start before two 0.5 s slots have passed (a lower bound only)
    assert len(srv.arrivals) == 3 and srv.arrivals[2] - started >= 1.0
