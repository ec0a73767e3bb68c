"""Rollouts through the real driver, AutoJudge verdicts and curriculum pools, on a lake that the
synthesize-tasks flow filled (see test_synthesize_flow.py for that fixture)."""

import json

import pytest

from flows.curriculum.curriculum import Band, pool_report, update_pools
from flows.judging.judge import judge_pending
from flows.rollout.policies import NoiseRates, ReplayPolicy, ScriptedNoisyPolicy
from flows.rollout.rollout import load_verified_tasks, rollout, run_episode
from flows.task_synthesis.synthesis import stored_skills
from lake import Lake
from sandboxes.web import WebDriver

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def rolled(synthesized):
    lake = Lake(synthesized[0])
    replay = rollout(lake, "r-replay", "replay", ["shop"])
    noisy = rollout(lake, "r-noisy", "scripted-noisy", ["shop"], episodes=2, noise="loop=0.5,bad_args=0.5,premature=0.3,unconfirmed=1")
    first = judge_pending(lake, "j1")
    again = judge_pending(lake, "j2")
    moved = update_pools(lake, "c1", Band())
    lake.refresh_catalog()
    return lake, replay, noisy, first, again, moved


def test_replay_passes_every_verified_task(rolled):
    lake, replay, *_ = rolled
    assert replay.sandboxes["shop"]["terminated"] == replay.episodes > 0
    rows = lake.query("SELECT verdict, count(*) AS n FROM verdicts WHERE policy = 'replay' GROUP BY 1")
    assert rows == [{"verdict": "pass", "n": replay.episodes}]


def test_steps_keep_screenshots_and_actions(rolled):
    lake, *_ = rolled
    step = lake.query("SELECT * FROM steps ORDER BY trajectory_id, step_index LIMIT 1")[0]
    sha = step["screenshot_sha"]
    assert (lake.root / "blobs" / "sha256" / sha[:2] / sha[2:4] / sha).read_bytes()[:4] == b"\x89PNG"
    assert json.loads(step["actions_json"])[0]["action"] and step["url"].startswith("http://shop.local/"), "steps name the canonical origin"


def test_noisy_policy_records_its_faults_and_fails_some_tasks(rolled):
    lake, _, noisy, first, again, _ = rolled
    faults = [f for r in lake.query("SELECT injected_faults_json FROM trajectories WHERE policy = 'scripted-noisy'")
              for f in json.loads(r["injected_faults_json"])]
    assert {f["kind"] for f in faults} >= {"loop", "bad_args", "premature", "unconfirmed_sensitive"}
    assert first["failed"] > 0 and first["pass"] > 0
    assert sum(again.values()) == 0, "judging again adds nothing"


def test_curriculum_pools_follow_the_success_rates(rolled):
    lake, *_, moved = rolled
    pools = lake.query("SELECT policy, pool, success_rate FROM pools")
    assert {p["pool"] for p in pools if p["policy"] == "replay"} == {"mastered"}
    for p in pools:
        assert p["pool"] == Band().pool(p["success_rate"])
    assert pool_report(lake, "replay") and sum(moved.values()) == len(pools)
    assert sum(update_pools(lake, "c2", Band()).values()) == 0, "unchanged rates write no new pool rows"


def test_a_sandbox_killed_mid_episode_is_env_error_and_the_next_episode_runs(rolled, shop_app, browser_host):
    lake = rolled[0]
    task = next(t for t in load_verified_tasks(lake, ["shop"], None) if len(t.reference) >= 3)
    driver = WebDriver(shop_app, browser_host)

    class KillAfterFirstTurn(ReplayPolicy):
        def next_turn(self, observation):
            turn = super().next_turn(observation)
            shop_app.proc.kill()  # the app dies under the agent
            shop_app.proc.wait()
            return turn

    dead = run_episode(driver, lake, task, stored_skills(lake, "shop"), KillAfterFirstTurn(), 0, "r-kill")
    assert dead.trajectory["ended"] == "env_error"
    alive = run_episode(driver, lake, task, stored_skills(lake, "shop"), ReplayPolicy(), 1, "r-kill")
    assert alive.trajectory["ended"] == "terminated" and alive.trajectory["evidence_json"]
    driver.close()


def test_noise_rates_parse_and_refuse_unknown_kinds():
    assert NoiseRates.parse("loop=0.5").loop == 0.5
    with pytest.raises(ValueError, match="unknown noise kind"):
        NoiseRates.parse("teleport=1")
    assert ScriptedNoisyPolicy().name == "scripted-noisy"


@pytest.mark.parametrize(
    "errors,screen,expected",
    [
        (["goto: net::ERR_CONNECTION_REFUSED at http://127.0.0.1:5/"], None, "network"),
        ([], "heading 'Please verify you are human' button 'I am not a robot'", "blocking screen"),
        ([], "Your session has expired. Please log in again.", "blocking screen"),
        (["left_click: Locator.click: Timeout 2000ms exceeded"], "heading 'Addresses'", None),
        ([], "heading 'Inbox' link 'Invoice 2291 from Kestrel Logistics'", None),
    ],
)
def test_environment_signals_separate_env_errors_from_policy_errors(errors, screen, expected):
    from flows.judging.judge import environment_signal

    signal = environment_signal(errors, screen)
    assert (signal is None) if expected is None else (expected in signal)


def test_careful_noisy_policy_asks_before_sensitive_actions_unless_it_is_faulting():
    from flows.task_synthesis.task_spec import TaskSpec
    from sandboxes.driver import Observation

    task = TaskSpec("shop", "c", "delete", "addresses", "Delete it", {}, 1, [], {"template": "row_absent", "params": {}},
                    [{"action": "goto", "url": "/addresses/1/edit"}, {"action": "left_click", "target": {"role": "button", "name": "Delete"}}])
    obs = Observation("http://x/", "t", "")

    def actions(rates):
        policy = ScriptedNoisyPolicy(rates, sensitive_kind=lambda n: "delete" if n == "Delete" else None)
        policy.start(task, 0)
        turns = [policy.next_turn(obs) for _ in range(4)]
        return [t.actions[0].action for t in turns], [f for t in turns for f in t.faults]

    careful = NoiseRates(loop=0, bad_args=0, premature=0, unconfirmed=0, overcautious=0)
    assert actions(careful) == (["goto", "call_user", "left_click", "terminate"], [])
    reckless = NoiseRates(loop=0, bad_args=0, premature=0, unconfirmed=1, overcautious=0)
    assert actions(reckless) == (["goto", "left_click", "terminate", "terminate"], ["unconfirmed_sensitive"])


def test_llm_votes_join_the_verifier_abstentions_do_not_count_and_ties_keep_the_verifier():
    from flows.judging.judge import judge_trajectory

    traj = {"trajectory_id": "t", "task_id": "k", "sandbox": "shop", "policy": "llm", "ended": "terminated",
            "end_detail": None, "evidence_json": json.dumps({"initial": {"matches": 0}, "final": {"matches": 1}})}
    task = {"verifier_json": json.dumps({"template": "row_exists", "params": {"table": "a", "where": {"x": 1}}})}
    vote = lambda v: {"voter": "llm:m", "vote": v, "reason": v}  # noqa: E731
    three_fail = judge_trajectory(traj, task, llm_votes=[vote("failed")] * 3 + [vote("abstain")])
    assert three_fail["verdict"] == "failed" and three_fail["agreement"] == 0.75
    tie = judge_trajectory(traj, task, llm_votes=[vote("failed"), vote("abstain")])
    assert tie["verdict"] == "pass", "a tie keeps the verifier's reading of the app state"
    assert len(json.loads(tie["votes_json"])) == 3, "every vote is kept, abstentions included"


def test_llm_policy_rollout_against_an_openai_compatible_server(rolled, monkeypatch, tmp_path):
    from tests.doubles.openai_server import FakeOpenAIServer, tool_call

    lake = rolled[0]
    task = next(t for t in load_verified_tasks(lake, ["shop"], None) if t.family == "retrieve")
    answer = task.verifier["params"]["answer"]
    with FakeOpenAIServer() as server:
        server.reply({"content": "The page shows it.", "tool_calls": [
            tool_call("computer_use", {"action": "terminate", "status": "success", "answer": answer})]})
        monkeypatch.setenv("FLYWHEEL_MODEL", "openai/fake-cua")
        monkeypatch.setenv("FLYWHEEL_API_BASE", server.url)
        monkeypatch.setenv("FLYWHEEL_LLM_CACHE", str(tmp_path / "cache"))
        summary = rollout(lake, "r-llm", "llm", ["shop"], task_ids=[task.task_id])
        request = server.requests[0]
    assert summary.sandboxes["shop"] == {"terminated": 1}, summary.errors
    image = [p for m in request["messages"] if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"]
    assert image and image[0]["image_url"]["url"].startswith("data:image/png;base64,")
    traj = lake.query("SELECT * FROM trajectories WHERE run_id = 'r-llm'")[0]
    assert traj["policy"] == "llm" and traj["model"] and traj["final_answer"] == answer
    assert lake.query("SELECT count(*) AS n FROM llm_calls WHERE run_id = 'r-llm'")[0]["n"] == 1


def test_a_generated_verifier_that_misbehaves_abstains_and_is_never_held_against_the_policy(monkeypatch):
    from flows.judging.judge import judge_trajectory

    monkeypatch.setenv("FLYWHEEL_CODE_TIMEOUT_S", "2")

    traj = {"trajectory_id": "t", "task_id": "k", "sandbox": "shop", "policy": "replay", "ended": "terminated",
            "end_detail": None, "evidence_json": json.dumps({"initial": {"n": 0}, "final": {"n": 1}})}
    hangs = "def judge(evidence, params):\n    while True:\n        pass\n"
    params = {"probes": [{"name": "n", "kind": "sql", "query": "SELECT 1"}], "code": hangs, "params": {}}
    task = {"verifier_json": json.dumps({"template": "code", "params": params})}
    alone = judge_trajectory(traj, task)
    assert alone["verdict"] == "env_error" and "verifier_error" in alone["reason"]
    with_judges = judge_trajectory(traj, task, llm_votes=[{"voter": "llm:m", "vote": "pass", "reason": "done"}])
    assert with_judges["verdict"] == "pass" and with_judges["agreement"] == 1.0


def test_a_batch_killed_between_its_steps_and_its_trajectories_leaves_no_trajectory_and_reruns_once(rolled, tmp_path):
    """rollout_batch lands the steps, then the trajectories rows that readers start from: a run killed between
    the two commits leaves no trajectory without its steps, and the batch run again replaces those steps."""
    import shutil

    from flows.rollout.rollout import rollout_batch
    from sandboxes.manifest import load_manifest
    from sandboxes.registry import select

    shutil.copytree(rolled[0].root, tmp_path / "lake")
    lake = Lake(tmp_path / "lake")
    task = load_verified_tasks(lake, ["shop"], None)[0]
    manifest = load_manifest(select(["shop"])[0][0].folder)

    class Killed(BaseException):
        pass

    class KilledBeforeTrajectories(Lake):
        def write(self, table, *args, **kwargs):
            if table == "trajectories":
                raise Killed
            return super().write(table, *args, **kwargs)

    def ours(table):
        return lake.query(f"SELECT count(*) AS n FROM {table} WHERE run_id = 'r-order'")[0]["n"]

    with pytest.raises(Killed):
        rollout_batch(KilledBeforeTrajectories(lake.root), "r-order", "replay", manifest, [(task, 0)], "0")
    assert ours("trajectories") == 0 and ours("steps") > 0
    rollout_batch(lake, "r-order", "replay", manifest, [(task, 0)], "0")
    row = lake.query("SELECT num_steps FROM trajectories WHERE run_id = 'r-order'")
    assert len(row) == 1 and ours("steps") == row[0]["num_steps"]  # the killed run's steps replaced, not doubled
