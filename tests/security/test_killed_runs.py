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
