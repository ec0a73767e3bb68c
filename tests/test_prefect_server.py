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
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    return env | {"PREFECT_HOME": str(tmp_path / "prefect"), "FLYWHEEL_LAKE": str(tmp_path / "lake"),
                  "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("argv, message", [
    (["run", "rollout", "--policy", "replay", "--sandbox", "shopp"], "no sandbox named 'shopp'; did you mean shop?"),
    (["run", "synthesize-tasks", "--count", "0"], "--count must be at least 1"),
    (["run", "mine-failures", "--since", "yesterday"], "is not an ISO 8601 time"),
    (["run", "rollout", "--policy", "scripted-noisy", "--noise", "loops=0.1"], "unknown noise kind"),
])
def test_a_bad_command_line_fails_before_prefect_is_imported(argv, message):
    probe = ("import sys; from flywheel.cli import main; rc = main(sys.argv[1:]); "
             "print('prefect imported' if 'prefect' in sys.modules else 'prefect not imported'); sys.exit(rc)")
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
    finally:
        stopped = _flywheel("server", "stop", env=env)
    assert "stopped the server" in stopped.stdout
    assert not prefect_server.api_answers(f"http://127.0.0.1:{port}/api")
    assert _flywheel("server", "status", env=env).returncode == 1
