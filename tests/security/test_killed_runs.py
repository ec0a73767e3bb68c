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
                           "--flows", "mine-failures", "export-sft", "--keep", str(tmp_path)],
                          capture_output=True, text=True, timeout=3600)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    trials = [r for r in lines if "problems" in r]
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
    assert lake.query("SELECT count(*) AS n FROM step_rewards")[0]["n"] == 24  # the killed run's rows landed
    mining.mine(lake, "mine-rerun", write_report=False)
    keys = lake.query("SELECT trajectory_id, step_index, count(*) AS n FROM step_rewards GROUP BY ALL")
    assert len(keys) == 24 and {r["n"] for r in keys} == {1}
    failures = lake.query("SELECT failure_id, count(*) AS n FROM failures GROUP BY ALL")
    assert failures and {r["n"] for r in failures} == {1}
    assert mining.pending_trajectories(lake).is_empty()
