"""The gate's batches as Prefect tasks on a real local Dask cluster (2 worker processes, each with its own
browser): a worker killed mid-run loses nothing and writes nothing twice."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

pytest.importorskip("prefect_dask", reason="the Dask task runner is in the test extras: ./bootstrap --test")


@pytest.mark.slow
@pytest.mark.browser
def test_a_worker_killed_mid_run_loses_no_gate_batch_and_lands_none_twice(prefect_harness, tmp_path, monkeypatch):
    from distributed import Client, LocalCluster
    from prefect_dask import DaskTaskRunner

    from flows.task_synthesis import flow as synth_flow
    from lake import Lake

    monkeypatch.setattr(synth_flow, "GATE_BATCH", 2)
    lake = Lake(tmp_path / "lake")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    outcome: dict = {}
    try:
        flow = synth_flow.synthesize_tasks.with_options(task_runner=DaskTaskRunner(address=cluster.scheduler_address))
        runner = threading.Thread(target=lambda: outcome.update(
            result=flow(sandboxes=["shop"], count=6, seed=11, lake_root=str(lake.root))))
        runner.start()
        killed_at = None
        deadline = time.monotonic() + 1200
        while runner.is_alive() and time.monotonic() < deadline:
            landed = lake.query("SELECT count(*) AS n FROM tasks")[0]["n"] if lake.files("tasks") else 0
            busy = [addr for addr, keys in client.processing().items() if any("gate" in str(k) for k in keys)]
            if landed >= 2 and busy:  # one batch has landed and another is being gated: kill its worker
                pids = client.run(os.getpid)
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed_at = landed
                break
            time.sleep(0.5)
        runner.join(timeout=1200)
    finally:
        client.close()
        cluster.close()
    assert killed_at is not None and killed_at < 6, "the worker was killed while gate batches were still running"
    summary = outcome["result"]["sandboxes"][0]
    assert summary["error"] is None, summary
    gated = summary["candidates"] - summary["already_known"]
    rows = lake.query("SELECT count(*) AS n, count(DISTINCT task_id) AS ids FROM tasks_history")[0]
    assert rows == {"n": gated, "ids": gated}, rows  # every candidate gated once: none lost, none twice
    assert summary["verified"] + sum(summary["rejected"].values()) == gated
    stages = lake.query("SELECT count(*) AS n FROM validation_runs WHERE stage = 'gate'")[0]["n"]
    assert stages == gated
