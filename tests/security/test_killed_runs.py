"""SIGKILL of a real CLI run at a random moment, then the same command again: nothing lost, nothing
doubled, nothing left running (bench/kill_runs.py). Two trials for each of the flows that only work on the
lake; rollout and synthesize-tasks (minutes per run: apps, Chromium, the gate) get their ten in the bench."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_killed_mine_failures_and_export_lose_and_leave_nothing(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "kill_runs.py"), "--trials", "2", "--seed", "7",
                           "--flows", "mine-failures", "export-sft", "--trajectories", "48", "--keep", str(tmp_path)],
                          capture_output=True, text=True, timeout=3600)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    trials = [r for r in lines if "trial" in r]
    assert sorted(r["flow"] for r in trials) == ["export-sft"] * 2 + ["mine-failures"] * 2, done.stdout + done.stderr
    assert all(r["problems"] == [] for r in trials), trials
    assert all(r["left_after_next_command"] == 0 for r in trials)
    assert done.returncode == 0, done.stderr[-2000:]


class Killed(BaseException):
    """A SIGKILL at the worst moment, as an exception nothing in the writer catches."""


def test_mining_killed_between_a_batch_s_commits_lands_each_reward_once(tmp_path, monkeypatch):
    """mine-failures commits failures, step_rewards, failure_seeds, then `mined`; a run killed after
    step_rewards leaves the batch pending, and the re-run must replace those rows, not add to them."""
    from flows.failure_mining import mining
    from lake import Lake
    from tests.flows.export_data import DONE, add_task, add_trajectory, click

    lake = Lake(tmp_path / "lake")
    add_task(lake, "task-a")
    for i in range(6):
        add_trajectory(lake, f"t{i}", turns=[[click("A")], [click("A")], [click("A")], [DONE]], rewards=False,
                       verdict="failed")
    write_frame = mining.write_frame

    def killed_before_mined(lake_, table, *args, **kwargs):
        if table == "mined":
            raise Killed
        return write_frame(lake_, table, *args, **kwargs)

    monkeypatch.setattr(mining, "write_frame", killed_before_mined)
    with pytest.raises(Killed):
        mining.mine(lake, "mine-killed", write_report=False)
    monkeypatch.setattr(mining, "write_frame", write_frame)
    # the killed run's rows landed (written: the steps with a finding; unmined, so the view adds no clean ones)
    landed = lake.query("SELECT count(*) AS n FROM step_rewards_sparse")[0]["n"]
    assert landed > 0 and lake.query("SELECT count(*) AS n FROM step_rewards")[0]["n"] == landed
    mining.mine(lake, "mine-rerun", write_report=False)
    assert lake.query("SELECT count(*) AS n FROM step_rewards_sparse")[0]["n"] == landed
    keys = lake.query("SELECT trajectory_id, step_index, count(*) AS n FROM step_rewards GROUP BY ALL")
    assert len(keys) == 24 and {r["n"] for r in keys} == {1}
    failures = lake.query("SELECT failure_id, count(*) AS n FROM failures GROUP BY ALL")
    assert failures and {r["n"] for r in failures} == {1}
    assert mining.pending_trajectories(lake).is_empty()


def test_a_killed_rollout_s_rerun_runs_only_the_episodes_it_had_not_landed(tmp_path):
    """The rerun of a killed rollout takes over its plan (the pools would choose differently now) under its run id,
    leaves out the batches whose trajectories landed, and reruns a half-landed batch under its own label; a
    plan whose run is still alive is never taken."""
    import json

    from flows.rollout.rollout import plan_or_resume
    from lake import Lake, resume
    from tests.flows.export_data import T0, add_task

    lake = Lake(tmp_path / "lake")
    for family in ("create", "edit", "delete"):  # a task's id is a hash of its family, params, …
        add_task(lake, family, family=family)
    args = (None, None, 2, "replay", None, False, None, 2)
    first = plan_or_resume(lake, *args, batch_size=2)
    labelled = [b for bs in first.batches.values() for b in bs]
    assert [len(items) for _, items in labelled] == [2, 2, 2] and not first.claim.resumed
    assert plan_or_resume(lake, *args, batch_size=2).run_id != first.run_id  # the first is alive: not taken over
    label, items = labelled[0]
    lake.write("trajectories", [{
        "trajectory_id": f"{first.run_id}-{t.task_id}-{e}", "task_id": t.task_id, "task_version": t.version,
        "sandbox": "shop", "source_commit": "c", "policy": "replay", "model": None, "episode": e, "num_steps": 0,
        "ended": "terminated", "end_detail": None, "final_answer": None, "evidence_json": None,
        "injected_faults_json": "[]", "started_at": T0, "finished_at": T0, "duration_s": 1.0, "run_id": first.run_id,
        "recorded_at": T0} for t, e in items], first.run_id, f"shop-{label}")
    state = json.loads(first.claim.path.read_text())
    first.claim.path.write_text(json.dumps(state | {"owner": state["owner"] | {"started": "0"}}))  # as if SIGKILLed
    for c in (tmp_path / "lake" / "resume" / "rollout").glob("*.json"):  # the second plan's owner lives on: untouched
        assert c == first.claim.path or json.loads(c.read_text())["owner"]["started"] != "0"

    rerun = plan_or_resume(lake, *args, batch_size=5)  # a different batch size now: the kept plan's labels win
    assert rerun.run_id == first.run_id and rerun.claim.resumed and rerun.landed_before == 2
    assert [b for bs in rerun.batches.values() for b in bs] == labelled[1:]
    resume.finish(rerun.claim)
    assert plan_or_resume(lake, *args, batch_size=2).run_id not in {first.run_id}  # finished: the next run plans anew


def test_a_gate_batch_killed_between_its_checks_and_its_pairs_is_checked_once_after_the_rerun(tmp_path, monkeypatch):
    """synthesis lands a gate batch's checks (validation_runs) before its pairs (tasks); a run killed between the
    two leaves the pairs unknown, the rerun gates them again, and its checks must replace the killed run's."""
    from flows.task_synthesis import synthesis
    from flows.task_synthesis.gate import Check, GateResult
    from flows.task_synthesis.task_spec import TaskSpec
    from lake import Lake
    from tests.flows.export_data import add_task

    source = Lake(tmp_path / "source")
    for family in ("create", "edit"):
        add_task(source, family, family=family)
    specs = [TaskSpec.from_row(r) for r in source.query("SELECT * FROM tasks ORDER BY task_id")]
    results = [(s, GateResult(s.task_id, "verified", None, None, [Check("initial", False, False, "absent"),
                                                                  Check("reference", True, True, "present")]))
               for s in specs]
    lake = Lake(tmp_path / "lake")
    write = Lake.write

    def killed_at(killed_table):
        def killed_write(self, table, *args, **kwargs):
            if table == killed_table:
                raise Killed
            return write(self, table, *args, **kwargs)
        return killed_write

    for table in ("validation_runs", "tasks"):  # checks first: a pair never lands without them
        monkeypatch.setattr(Lake, "write", killed_at(table))
        with pytest.raises(Killed):
            synthesis.land(lake, "synth-killed", "shop", "static", [], results, **synthesis.gate_key("shop", specs))
        monkeypatch.setattr(Lake, "write", write)
        assert not lake.files("tasks")
    assert lake.query("SELECT count(*) AS n FROM validation_runs")[0]["n"] == 6 and not lake.files("tasks")
    synthesis.land(lake, "synth-rerun", "shop", "static", [], results, **synthesis.gate_key("shop", specs))
    rows = lake.query("SELECT run_id, count(*) AS n FROM validation_runs GROUP BY 1")
    assert rows == [{"run_id": "synth-rerun", "n": 6}]  # the rerun's checks only, not the killed run's beside them
    assert lake.query("SELECT count(*) AS n FROM tasks_history")[0]["n"] == 2


def test_the_bench_compares_a_rerun_with_a_reference_read_back_from_its_folder():
    """A reference kept in DIR is JSON: its (trajectory, step) pairs come back as lists, and a resumed call must
    not report an equal lake as differing (every such trial did, before the comparison normalised both sides)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import kill_runs

    fresh = {"done": ["t0", "t1"], "duplicates": 0, "same": {"step_rewards": [("t0", 0), ("t1", 0)],
                                                             "mined": ["t0", "t1"], "failures": [], "failure_seeds": 0}}
    kept = json.loads(json.dumps(fresh))
    kill_runs.TRAJECTORIES = 2
    assert kill_runs.check("mine-failures", fresh, fresh, kept) == []  # a resumed call: the reference read back
    assert kill_runs.check("mine-failures", fresh, fresh, fresh) == []  # the reference made in the same call
    other = fresh | {"same": fresh["same"] | {"step_rewards": [("t0", 0), ("t1", 1)]}}
    assert kill_runs.check("mine-failures", fresh, other, kept) == ["step_rewards differs from an unkilled run's: 2 vs 2"]
