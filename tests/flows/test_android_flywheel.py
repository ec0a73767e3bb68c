"""synthesize-tasks, replay and noisy rollouts, judging and mining on the notes-android sandbox, with two
fake devices behind the fake adb server (a test double: real devices are the production path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.failure_mining.mining import mine
from flows.judging.judge import judge_pending
from flows.rollout.rollout import rollout
from lake import Lake
from tests.doubles.fake_adb import FakeAdbServer, FakeDevice

pytestmark = pytest.mark.slow
NOTES = Path(__file__).resolve().parents[2] / "sandboxes" / "notes-android"


@pytest.fixture(scope="module")
def flywheel(prefect_harness, tmp_path_factory):
    from flows.task_synthesis.flow import synthesize_tasks

    devices = [FakeDevice("emulator-5554", app_source=NOTES), FakeDevice("emulator-5556", app_source=NOTES)]
    with FakeAdbServer(devices) as adb, pytest.MonkeyPatch.context() as env:
        env.setenv("FLYWHEEL_ADB_PORT", str(adb.port))  # the manifest's adb server, overridden
        env.delenv("FLYWHEEL_ADB_SERIALS", raising=False)
        root = tmp_path_factory.mktemp("android") / "lake"
        synth = synthesize_tasks(sandboxes=["notes-android"], count=10, seed=1, lake_root=str(root), workers=2)
        lake = Lake(root)
        replay = rollout(lake, "r-replay", "replay", ["notes-android"])
        noisy = rollout(lake, "r-noisy", "scripted-noisy", ["notes-android"], noise="loop=0.4,bad_args=0.4,unconfirmed=1")
        verdicts = judge_pending(lake, "j1")
        mined = mine(lake, "m1", write_report=False)
        lake.refresh_catalog()
        yield lake, synth, replay, noisy, verdicts, mined, adb


def test_synthesis_yields_verified_pairs_through_the_gate_on_both_devices(flywheel):
    lake, synth, *_, adb = flywheel
    (summary,) = synth["sandboxes"]
    assert summary["error"] is None and summary["verified"] == summary["candidates"] == 10
    assert set(summary["verified_by_family"]) == {"create", "update", "delete", "retrieve", "multi_step"}
    taps = {s for s, r in adb.requests if r.startswith("shell,v2:input tap")}
    assert taps == {"emulator-5554", "emulator-5556"}, "two gate workers, one device each"
    stages = lake.query("SELECT stage, count(*) AS n FROM validation_runs GROUP BY 1 ORDER BY 1")
    ran = {r["stage"] for r in stages}
    assert {"gate", "initial", "injected", "reference", "repeat", "truncated", "counterfactual"} <= ran, ran
    assert ran <= {"gate", "initial", "injected", "reference", "repeat", "truncated", "counterfactual", "other_record",
                   "unrelated_navigation"}, ran
    deletes = lake.query("SELECT reference_json FROM tasks WHERE family = 'delete'")
    steps = json.loads(deletes[0]["reference_json"])
    assert [a["action"] for a in steps] == ["left_click", "call_user", "left_click"]  # Delete note is sensitive


def test_replay_passes_every_task_with_mobile_observations(flywheel):
    lake, _, replay, *_ = flywheel
    assert replay.sandboxes["notes-android"]["terminated"] == replay.episodes == 10
    assert lake.query("SELECT verdict, count(*) AS n FROM verdicts WHERE policy = 'replay@touch' GROUP BY 1") == [{"verdict": "pass", "n": 10}]
    steps = lake.query("SELECT url, screen_width, screen_height, points_json, actions_json FROM steps WHERE run_id = 'r-replay'")
    assert {s["url"].split("/.")[0] for s in steps} == {"android-app://org.flywheel.notes"}
    assert {(s["screen_width"], s["screen_height"]) for s in steps} == {(1080, 2340)}
    kinds = {a["action"] for s in steps for a in json.loads(s["actions_json"])}
    assert "tap" in kinds and "left_click" not in kinds, "a phone is driven by touch: the reference's clicks replay as taps"
    clicks = [s for s in steps if json.loads(s["actions_json"])[0]["action"] in ("tap", "type")]
    assert clicks and all(json.loads(s["points_json"])[0] is not None for s in clicks), "every touch reports its grid point"


def test_mining_finds_the_noisy_policys_faults_on_android(flywheel):
    lake, *_, noisy, verdicts, mined, _ = flywheel
    assert sum(noisy.sandboxes["notes-android"].values()) == 10
    assert verdicts["pass"] >= 10 and sum(verdicts.values()) == 20
    reasons = {r["reason"] for r in lake.query("SELECT DISTINCT reason FROM failures")}
    # Delete note (sensitive in the manifest) is a state-changing action wherever it is tapped; tapped without a
    # call_user it is unconfirmed only where the instruction did not ask for a deletion (consent, issue 15)
    assert "state_change" in reasons
    unconfirmed = lake.query("SELECT t.instruction FROM failures f JOIN trajectories t USING (trajectory_id) "
                             "WHERE f.reason = 'unconfirmed_sensitive'")
    assert all("delete" not in (r["instruction"] or "").lower() for r in unconfirmed), unconfirmed
    assert "exact_repeat" in reasons and "click_hit_nothing" in reasons  # loops; taps where nothing is
    assert lake.query("SELECT count(*) AS n FROM step_rewards")[0]["n"] > 0
