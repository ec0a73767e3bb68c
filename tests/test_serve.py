"""prefect.yaml's deployments and `flywheel serve`: entrypoints import, parameters fit, a served run completes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flywheel.serve import (
    REPO,
    build_deployments,
    load_flow,
    load_specs,
    missing_parameters,
    unknown_parameters,
)

PREFECT_YAML = REPO / "prefect.yaml"
FLOWS = {"synthesize-tasks", "rollout", "judge", "mine-failures", "explore", "export-sft", "cycle"}


def test_every_flow_has_a_deployment_whose_entrypoint_imports_and_parameters_fit():
    specs = load_specs(PREFECT_YAML)
    names = set()
    for spec in specs:
        flow = load_flow(spec)
        names.add(flow.name)
        assert unknown_parameters(spec, flow) == [] and missing_parameters(spec, flow) == [], spec.entrypoint
        flow.validate_parameters(spec.parameters)  # types fit the signature too
        deployment = flow.to_deployment(name=spec.name, cron=spec.crons or None, parameters=spec.parameters, _sync=True)
        assert len(deployment.schedules or []) == len(spec.crons)
    assert names == FLOWS
    crons = {s.entrypoint.rsplit(":", 1)[1]: s.crons for s in specs}
    assert crons["cycle"] and crons["mine_failures"] and crons["judge"]  # nightly cycle, hourly judge and mining


def test_a_broken_prefect_yaml_is_one_clear_error(tmp_path):
    bad = tmp_path / "prefect.yaml"
    bad.write_text("deployments:\n  - name: x\n")
    with pytest.raises(ValueError, match="needs a name and an entrypoint"):
        load_specs(bad)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = path.read_text() if path.exists() else ""
        if text in out:
            return out
        assert proc.poll() is None, f"flywheel serve exited early:\n{out}"
        time.sleep(0.5)
    raise AssertionError(f"no {text!r} from flywheel serve within {timeout_s} s:\n{path.read_text()}")


@pytest.mark.slow
@pytest.mark.browser
def test_served_deployment_runs_and_lands_in_the_lake(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_URL")}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "FLYWHEEL_LAKE": str(tmp_path / "lake")}
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        serve = subprocess.Popen([sys.executable, "-m", "flywheel.cli", "serve", "--port", str(port)], cwd=REPO,
                                 env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        printed = _wait_for(log, "serving ", serve, timeout_s=240)
        assert "synthesize-tasks/on-demand" in printed and "cycle/nightly" in printed
        run = subprocess.run(
            [sys.executable, "-m", "prefect", "deployment", "run", "synthesize-tasks/on-demand", "-p", "count=2",
             "-p", 'sandboxes=["shop"]', "--watch", "--watch-timeout", "900"],
            env=env | {"PREFECT_API_URL": f"http://127.0.0.1:{port}/api"}, capture_output=True, text=True, timeout=1000,
        )
        assert run.returncode == 0 and "Completed" in run.stdout, run.stdout + run.stderr
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
    from lake import Lake

    rows = Lake(tmp_path / "lake").query("SELECT sandbox, status FROM tasks")
    assert len(rows) == 2 and {r["sandbox"] for r in rows} == {"shop"}


def test_entrypoints_that_do_not_load_are_skipped_with_a_note(tmp_path):
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "ok.py").write_text(
        "from prefect import flow\n\n@flow(name='ok')\ndef ok(n: int = 1) -> int:\n    return n\n\n"
        "@flow(name='needs')\ndef needs(name: str) -> str:\n    return name\n")
    yaml_file = tmp_path / "prefect.yaml"
    yaml_file.write_text(
        "deployments:\n"
        "  - {name: a, entrypoint: 'flows/ok.py:ok', parameters: {n: 2}, schedules: [{cron: '0 * * * *'}]}\n"
        "  - {name: b, entrypoint: 'flows/later.py:later'}\n"
        "  - {name: c, entrypoint: 'flows/ok.py:missing'}\n"
        "  - {name: d, entrypoint: 'flows/ok.py:ok', parameters: {count: 3}}\n"
        "  - {name: e, entrypoint: 'flows/ok.py:needs'}\n")
    deployments, names, skipped = build_deployments(load_specs(yaml_file), tmp_path)
    assert names == ["ok/a"] and deployments[0].parameters == {"n": 2} and len(deployments[0].schedules) == 1
    assert len(skipped) == 4
    assert "flows/later.py:later" in skipped[0] and "no file" in skipped[0]
    assert "flows/ok.py:missing" in skipped[1]
    assert "ok/d" in skipped[2] and "count" in skipped[2]
    assert "needs/e" in skipped[3] and "required parameters not given: name" in skipped[3]
