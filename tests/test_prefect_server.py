"""`flywheel server start|stop|status`: one long-lived Prefect server that runs reuse; bad command lines fail
before Prefect is imported."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request

import pytest

from flywheel import prefect_server
from flywheel.serve import REPO


def _flywheel(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flywheel.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_LOGGING_LEVEL")}
    return env | {"PREFECT_HOME": str(tmp_path / "prefect"), "FLYWHEEL_LAKE": str(tmp_path / "lake"),
                  "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("argv, message", [
    (["run", "rollout", "--policy", "replay", "--sandbox", "shopp"], "no sandbox named 'shopp'; did you mean shop?"),
    (["run", "synthesize-tasks", "--count", "0"], "--count"),
    (["run", "mine-failures", "--since", "yesterday"], "is not an ISO 8601 time"),
    (["run", "rollout", "--policy", "scripted-noisy", "--noise", "loops=0.1"], "unknown noise kind"),
])
def test_a_bad_command_line_fails_before_prefect_is_imported(argv, message):
    probe = ("import sys\nfrom flywheel.cli import main\ntry:\n    rc = main(sys.argv[1:])\nexcept SystemExit as exc:\n"
             "    rc = exc.code\nprint('prefect imported' if 'prefect' in sys.modules else 'prefect not imported')\nsys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", probe, *argv], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env=os.environ | {"PYTHONPATH": str(REPO)})
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert "prefect not imported" in out.stdout


def test_a_pidfile_whose_process_is_not_a_prefect_server_is_not_ours(tmp_path):
    (tmp_path / "server.pid").write_text(json.dumps({"pid": os.getpid(), "port": 1, "api_url": "http://127.0.0.1:1/api"}))
    assert prefect_server.read_state(tmp_path) is None  # this pytest process is no server: a reused pid
    assert prefect_server.stop(tmp_path) is None and not (tmp_path / "server.pid").exists()
    (tmp_path / "server.pid").write_text("not json")
    assert prefect_server.read_state(tmp_path) is None


def _post(port: int, path: str) -> list[dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/{path}", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as resp:
        return json.load(resp)


def _land_one_trajectory(root) -> None:
    from lake import Lake, utcnow

    lake = Lake(root)
    lake.write("trajectories", [{"trajectory_id": "t1", "task_id": "task-1", "sandbox": "shop", "policy": "replay",
                                 "num_steps": 3, "ended": "terminated", "run_id": "r", "recorded_at": utcnow()}], "r", 0)
    lake.write("steps", [{"trajectory_id": "t1", "step_index": i, "run_id": "r",
                          "actions_json": '[{"action": "terminate", "status": "success"}]' if i == 2 else
                          '[{"action": "left_click", "x": 5, "y": 5}]'} for i in range(3)], "r", 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_runs_reuse_the_started_server_and_stop_ends_it(tmp_path):
    env, port = _env(tmp_path), _free_port()
    assert _flywheel("server", "status", env=env).returncode == 1
    started = _flywheel("server", "start", "--port", str(port), env=env)
    try:
        assert started.returncode == 0 and f"127.0.0.1:{port}/api" in started.stdout, started.stdout + started.stderr
        again = _flywheel("server", "start", "--port", str(port), env=env)
        assert "already running" in again.stdout
        status = _flywheel("server", "status", env=env)
        assert status.returncode == 0 and "running" in status.stdout
        judged = _flywheel("run", "judge", env=env)
        assert judged.returncode == 0 and f"Prefect server http://127.0.0.1:{port}/api" in judged.stdout, judged.stdout + judged.stderr
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/flow_runs/filter", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            runs = json.load(resp)
        assert [(r["name"] and r["state_type"]) for r in runs] == ["COMPLETED"], runs  # the run is on our server

        _land_one_trajectory(tmp_path / "lake")
        mined = _flywheel("run", "mine-failures", env=env)
        assert mined.returncode == 0, mined.stdout + mined.stderr
        task_runs = _post(port, "task_runs/filter")
        assert [t["name"] for t in task_runs] == ["steps-0"] and task_runs[0]["state_type"] == "COMPLETED"
        logs = [entry["message"] for entry in _post(port, "logs/filter")]
        assert any(m.startswith("steps shard 0: 1 trajectories, 3 steps") for m in logs), logs  # task logs reach the API

        exported = _flywheel("run", "export-sft", "--name", "served", env=env)  # every stage is a task with logs
        assert exported.returncode == 1 and "nothing to export" in exported.stdout, exported.stdout + exported.stderr  # ran
        pools = subprocess.run([sys.executable, "-c", "from flows.curriculum.flow import curriculum; curriculum()"], cwd=REPO,
                               env=env | {"PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}, capture_output=True, text=True,
                               timeout=600)
        assert pools.returncode == 0, pools.stderr
        task_runs = {t["name"]: t for t in _post(port, "task_runs/filter")}
        assert "served" in task_runs and any(n.startswith("update-pools") for n in task_runs), sorted(task_runs)
        export_run = task_runs["served"]["flow_run_id"]
        shown = subprocess.run([sys.executable, "-m", "prefect", "flow-run", "logs", export_run], env=env | {
            "PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}, capture_output=True, text=True, timeout=300)
        assert shown.returncode == 0 and "served: empty -, 0 rows from 0 trajectories" in shown.stdout, shown.stdout + shown.stderr
    finally:
        stopped = _flywheel("server", "stop", env=env)
    assert "stopped the server" in stopped.stdout
    assert not prefect_server.api_answers(f"http://127.0.0.1:{port}/api")
    assert _flywheel("server", "status", env=env).returncode == 1


@pytest.mark.slow
def test_a_run_on_an_ephemeral_server_ends_without_a_log_error(tmp_path):
    """The ephemeral server stops at exit; the run's last logs must reach it first (they did not: every run ended
    on "--- Error logging to API --- All connection attempts failed")."""
    env = _env(tmp_path)
    _land_one_trajectory(tmp_path / "lake")
    mined = _flywheel("run", "mine-failures", env=env)
    assert mined.returncode == 0 and "ephemeral Prefect server" in mined.stdout, mined.stdout + mined.stderr
    assert "1 trajectory (3 steps) mined" in " ".join(mined.stdout.split()), mined.stdout
    assert "run export-sft --name NAME" in mined.stdout and "FROM failures GROUP BY ALL" in mined.stdout  # what next
    assert "Error logging to API" not in mined.stdout + mined.stderr, mined.stderr


def _land_verdicts(root, passes: dict[str, list[bool]]) -> None:
    from lake import Lake, utcnow

    lake = Lake(root)
    lake.write("tasks", [{"task_id": t, "sandbox": "shop", "family": "cart", "status": "verified", "run_id": "s",
                          "recorded_at": utcnow()} for t in passes], "s", 0)
    lake.write("verdicts", [{"trajectory_id": f"{t}-{i}", "task_id": t, "sandbox": "shop", "policy": "p",
                             "verdict": "pass" if ok else "failed", "run_id": "j", "recorded_at": utcnow()}
                            for t, oks in passes.items() for i, ok in enumerate(oks)], "j", 0)


@pytest.mark.slow
def test_curriculum_update_puts_each_task_in_the_pool_its_success_rate_says(tmp_path):
    env = _env(tmp_path)
    empty = _flywheel("curriculum", "show", env=env)
    assert empty.returncode == 1 and "curriculum update" in empty.stdout, empty.stdout  # says how pools come about
    bad = _flywheel("curriculum", "update", "--low", "0.9", "--high", "0.1", env=env)
    assert bad.returncode == 2 and "--low < --high" in bad.stderr and "prefect" not in bad.stdout.lower()
    _land_verdicts(tmp_path / "lake", {"easy": [True, True], "hard": [False, False], "half": [True, False]})
    updated = _flywheel("curriculum", "update", env=env)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "tasks moved: 1 into active, 1 into mastered, 1 into monitoring" in updated.stdout, updated.stdout
    rows = [line.split() for line in updated.stdout.splitlines() if line.startswith("p ")]
    assert [(r[3], r[4]) for r in rows] == [("active", "1"), ("mastered", "1"), ("monitoring", "1")], updated.stdout
    again = _flywheel("curriculum", "update", "--low", "0.6", env=env)  # half now falls below the band
    assert "tasks moved: 1 into monitoring" in again.stdout, again.stdout


@pytest.mark.slow
def test_a_rollout_that_cannot_run_says_why_once_and_suggests_no_next_step(tmp_path):
    out = _flywheel("run", "rollout", "--policy", "replay", "--sandbox", "todomvc", env=_env(tmp_path))  # nothing verified
    text = " ".join((out.stdout + out.stderr).split())
    assert out.returncode == 1, text
    assert text.count("no verified tasks in the lake for this selection") == 1, text
    assert "Next:" not in text, text
    assert f"`{sys.executable} -m flywheel.cli server start`" in text, text  # how to call it, as it was called
