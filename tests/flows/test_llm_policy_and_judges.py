"""The `llm` policy and the LLM judges over the real litellm HTTP path, against the OpenAI-server test double."""

from __future__ import annotations

import base64
import json

import pytest

from flows.judging.llm_judges import lake_blob_reader, llm_votes, read_verdict
from flows.rollout.llm_policy import MAX_FORMAT_ERRORS, LLMPolicy, LLMUnavailable
from flows.task_synthesis.task_spec import TaskSpec
from flywheel.llm import LLMClient, LLMSettings
from sandboxes.actions import Click, Terminate, Type
from sandboxes.driver import Observation
from tests.doubles.openai_server import FakeOpenAIServer, tool_call

SCREEN = b"\x89PNG\r\n\x1a\n" + b"screen-0" * 50
BROKEN_ARGS = '{"action": "left_click", "coordinate": [10,'  # a tool call cut off mid-JSON


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def client(server, lake, tmp_path):
    settings = LLMSettings(model="tiny-vl", api_base=server.url, cache_dir=tmp_path / "cache", timeout=5.0)
    return LLMClient(settings, lake=lake, run_id="run-1")


def task() -> TaskSpec:
    return TaskSpec(sandbox="shop", source_commit="abc", family="create", app_area="cart",
                    instruction="Add the red mug to the cart", params={}, seed=1, injection=[],
                    verifier={"template": "t", "params": {}}, reference=[])


def observation(screen: bytes = SCREEN) -> Observation:
    return Observation(url="http://127.0.0.1:5000/shop", title="Shop", ui_tree="- button \"Add to cart\"",
                       screenshot=screen, screen_size=(1280, 800))


def click(x: int, y: int) -> dict:
    return {"content": None, "tool_calls": [tool_call("computer_use", {"action": "left_click", "coordinate": [x, y]})]}


def broken() -> dict:
    return {"content": None, "tool_calls": [tool_call("computer_use", BROKEN_ARGS)]}


# ---- policy ---------------------------------------------------------------------------------------


def test_policy_turn_from_a_tool_call_sends_the_screenshot_and_the_tool(server, client, lake):
    server.reply({"content": "The mug is listed.", "tool_calls": [
        tool_call("computer_use", {"action": "left_click", "coordinate": [412, 230]}, "c0"),
        tool_call("computer_use", {"action": "type", "text": "2"}, "c1"),
    ]}, click(5, 5))
    policy = LLMPolicy(client)
    assert (policy.name, policy.model) == ("llm", "tiny-vl")
    policy.start(task(), episode=0)
    turn = policy.next_turn(observation())

    assert turn.actions == [Click(x=412, y=230), Type(text="2")]
    assert turn.format_error is None and turn.faults == []
    assert "left_click" in turn.raw_output and "The mug is listed." in turn.raw_output

    (sent,) = server.requests
    assert [t["function"]["name"] for t in sent["tools"]] == ["computer_use"]
    system, user = sent["messages"]
    assert system["role"] == "system" and "0..999" in system["content"]
    text, image = user["content"]
    assert "Add the red mug to the cart" in text["text"] and "http://127.0.0.1:5000/shop" in text["text"]
    assert 'button "Add to cart"' in text["text"] and "(none yet)" in text["text"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(SCREEN).decode()

    policy.next_turn(observation(b"\x89PNG other screen"))
    history_text = server.requests[1]["messages"][1]["content"][0]["text"]
    assert '1. [{"action": "left_click", "x": 412, "y": 230}, {"action": "type", "text": "2"' in history_text

    client.flush()
    rows = lake.query("SELECT purpose, cache_hit FROM llm_calls")
    assert [r["purpose"] for r in rows] == ["policy", "policy"] and not any(r["cache_hit"] for r in rows)


def test_malformed_tool_call_json_is_a_format_error_and_three_in_a_row_give_up(server, client):
    server.reply(broken(), click(1, 1), broken(), broken(), broken())
    policy = LLMPolicy(client)
    policy.start(task(), episode=0)

    bad = policy.next_turn(observation(b"s1"))
    assert bad.actions == [] and bad.format_error.startswith("unparseable_json")
    assert BROKEN_ARGS in json.loads(bad.raw_output)["tool_calls"][0]["function"]["arguments"]
    assert policy.next_turn(observation(b"s2")).actions == [Click(x=1, y=1)]  # a good turn resets the count
    assert "could not be read" in server.requests[1]["messages"][1]["content"][0]["text"]

    turns = [policy.next_turn(observation(f"s{i}".encode())) for i in range(3, 3 + MAX_FORMAT_ERRORS)]
    assert [t.actions for t in turns[:-1]] == [[]] * (MAX_FORMAT_ERRORS - 1)
    assert turns[-1].actions == [Terminate(status="failure")] and turns[-1].format_error


def test_episodes_get_their_own_answers_and_a_rerun_hits_the_cache(server, client, lake, tmp_path):
    server.reply(click(10, 10), click(20, 20))
    policy = LLMPolicy(client)
    first = []
    for episode in (0, 1):
        policy.start(task(), episode)
        first.append(policy.next_turn(observation()).actions)
    assert first == [[Click(x=10, y=10)], [Click(x=20, y=20)]] and len(server.requests) == 2

    rerun = LLMPolicy(LLMClient(client.settings, lake=lake, run_id="run-2"))
    rerun.start(task(), 1)
    assert rerun.next_turn(observation()).actions == [Click(x=20, y=20)]
    assert len(server.requests) == 2  # zero HTTP on a re-run


def test_an_unreachable_model_raises_llm_unavailable(server, lake, tmp_path):
    server.fail(5, status=500)
    settings = LLMSettings(model="tiny-vl", api_base=server.url, cache_dir=tmp_path / "c", num_retries=0)
    policy = LLMPolicy(LLMClient(settings, lake=lake))
    policy.start(task(), 0)
    with pytest.raises(LLMUnavailable, match="InternalServerError"):
        policy.next_turn(observation())


# ---- judges ---------------------------------------------------------------------------------------


def judged_episode(lake):
    """Six steps with distinct screenshots; the last page's tree says the session expired."""
    shots = [lake.put_blob(f"png-{i}".encode()) for i in range(6)]
    tree = lake.put_blob(b'- heading "Your session has expired, please log in again"')
    steps = [
        {"trajectory_id": "t1", "step_index": i, "screenshot_sha": shots[i], "ui_tree_sha": tree,
         "url": f"http://shop/{i}", "actions_json": json.dumps([{"action": "left_click", "x": i, "y": i}]),
         "format_error": None, "ok": i != 4, "error": "element not found" if i == 4 else None}
        for i in reversed(range(6))  # out of order on purpose
    ]
    trajectory = {"trajectory_id": "t1", "ended": "terminated", "end_detail": None, "final_answer": None}
    return trajectory, {"instruction": "Add the red mug to the cart"}, steps, shots


def _by_index(answers: dict[int, str]):
    def reply(request: dict) -> dict:
        index = int(request["messages"][1]["content"][0]["text"].split(":")[1])
        return {"content": answers[index]}

    return reply


def test_llm_votes_are_n_separate_calls_with_first_last_and_spaced_screenshots(server, client, lake):
    trajectory, task_row, steps, shots = judged_episode(lake)
    answers = {
        0: '{"verdict": "pass", "reason": "mug in cart"}',
        1: '```json\n{"verdict": "failed", "reason": "wrong item"}\n```',
        2: 'Looking at it... {"verdict": "env_error", "reason": "session expired"}',
        3: '{"verdict": "fail", "reason": "alias"}',
        4: "I think it went fine!",
    }
    server.reply(*[_by_index(answers)] * 5)
    votes = llm_votes(client, trajectory, task_row, steps, lake_blob_reader(lake), n=5)

    assert [v["voter"] for v in votes] == [f"llm:tiny-vl#{i}" for i in range(5)]
    assert [v["vote"] for v in votes] == ["pass", "failed", "env_error", "failed", "abstain"]
    assert votes[0]["reason"] == "mug in cart" and "unparseable" in votes[4]["reason"]

    assert len(server.requests) == 5
    indices = sorted(r["messages"][1]["content"][0]["text"] for r in server.requests)
    assert indices == [f"judge_index: {i}" for i in range(5)]
    request = server.requests[0]
    assert "CAPTCHA" in request["messages"][0]["content"] and "expired" in request["messages"][0]["content"]
    parts = request["messages"][1]["content"]
    text = parts[1]["text"]
    assert "Add the red mug to the cart" in text and "[error: element not found]" in text
    assert "session has expired" in text and text.index("0. ") < text.index("5. ")
    images = [base64.b64decode(p["image_url"]["url"].split(",", 1)[1]) for p in parts if p["type"] == "image_url"]
    assert images == [b"png-0", b"png-2", b"png-3", b"png-5"]  # first, evenly spaced, last

    # a re-run of the judge costs nothing: every vote comes from the cache
    again = llm_votes(client, trajectory, task_row, steps, lake_blob_reader(lake), n=5)
    assert again == votes and len(server.requests) == 5
    client.flush()
    hits = [r["cache_hit"] for r in lake.query("SELECT cache_hit FROM llm_calls WHERE purpose = 'judge'")]
    assert sorted(hits) == [False] * 5 + [True] * 5


def test_a_failed_judge_call_is_an_abstain_vote(server, lake, tmp_path):
    trajectory, task_row, steps, _ = judged_episode(lake)
    server.fail(10, status=500)
    settings = LLMSettings(model="tiny-vl", api_base=server.url, cache_dir=tmp_path / "c", num_retries=0)
    votes = llm_votes(LLMClient(settings, lake=lake), trajectory, task_row, steps, lake_blob_reader(lake), n=2)
    assert [v["vote"] for v in votes] == ["abstain", "abstain"]
    assert all(v["reason"].startswith("llm_error:") for v in votes)


@pytest.mark.parametrize("answer, vote", [
    ('{"verdict": "PASS", "reason": "ok"}', "pass"),
    ('{"verdict": "maybe"}', "abstain"),
    ('{"reason": "no verdict"}', "abstain"),
    ("[1, 2]", "abstain"),
    ("", "abstain"),
])
def test_read_verdict(answer, vote):
    assert read_verdict(answer)["vote"] == vote


def test_in_a_sandbox_with_a_command_line_the_policy_gets_the_shell_and_reads_its_output(server, client):
    from sandboxes.actions import Shell
    from sandboxes.driver import ActionResult

    server.reply({"content": None, "tool_calls": [tool_call("shell", {"command": "wc -l notes/todo.md"})]}, click(1, 1))
    policy = LLMPolicy(client, shell=True)
    policy.start(task(), episode=0)
    turn = policy.next_turn(observation())
    assert turn.actions == [Shell(command="wc -l notes/todo.md")]
    policy.observe_results(turn.actions, [ActionResult(ok=True, details={"exit_code": 0, "stdout": "7 notes/todo.md\n", "stderr": ""})])
    policy.next_turn(observation(b"\x89PNG next"))

    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["computer_use", "shell"]
    assert "command line" in first["messages"][0]["content"]
    assert "(shell `wc -l notes/todo.md` exit 0: 7 notes/todo.md)" in second["messages"][1]["content"][0]["text"]


def test_a_web_sandbox_policy_is_offered_no_shell(server, client):
    server.reply(click(1, 1))
    policy = LLMPolicy(client)
    policy.start(task(), episode=0)
    policy.next_turn(observation())
    (sent,) = server.requests
    assert [t["function"]["name"] for t in sent["tools"]] == ["computer_use"]
    assert "command line" not in sent["messages"][0]["content"]
