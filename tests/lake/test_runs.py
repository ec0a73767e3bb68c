"""A run whose process is SIGKILLed never writes its end: the next flow run on the host writes it as `killed`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from flywheel.orphans import owner_tag
from lake import Lake
from lake.runs import close_killed_runs, recorded_run
from lake.schemas import schema_for
from lake.store import utcnow

REPO = Path(__file__).resolve().parents[2]
DIES = """
import os, signal, sys
from lake.runs import recorded_run

@recorded_run("doomed")
def doomed(lake_root=None):
    os.kill(os.getpid(), signal.SIGKILL)

doomed(lake_root=sys.argv[1])
"""


@recorded_run("next")
def next_run(lake_root: str | None = None) -> dict:
    return {"rows": 1}


def _runs(lake: Lake) -> dict[str, dict]:
    return {r["flow"]: r for r in lake.query("SELECT * FROM runs")}


def test_a_killed_runs_row_is_closed_by_the_next_run_and_a_live_or_foreign_one_is_not(tmp_path):
    lake_root = tmp_path / "lake"
    done = subprocess.run([sys.executable, "-c", DIES, str(lake_root)], cwd=REPO, capture_output=True, text=True,
                          env=os.environ | {"PYTHONPATH": str(REPO)})
    assert done.returncode == -9, done.stderr
    lake = Lake(lake_root)
    before = _runs(lake)["doomed"]
    assert before["status"] == "running" and before["owner"].startswith(socket.gethostname() + ":")
    now = utcnow()
    alive = {"invocation_id": "alive-1", "parent_invocation_id": None, "run_id": None, "flow": "alive",
             "status": "running", "parameters_json": "{}", "counts_json": None, "error": None, "started_at": now,
             "finished_at": None, "recorded_at": now, "owner": f"{socket.gethostname()}:{owner_tag()}"}
    elsewhere = alive | {"invocation_id": "far-1", "flow": "far", "owner": "another-host:1:1"}
    lake.write("runs", [alive, elsewhere], "test", "start")

    next_run(lake_root=str(lake_root))

    runs = _runs(Lake(lake_root))
    assert runs["doomed"]["status"] == "killed" and runs["doomed"]["finished_at"] is None
    assert f"pid {before['owner'].split(':')[1]}" in runs["doomed"]["error"]
    assert json.loads(runs["doomed"]["parameters_json"]) == json.loads(before["parameters_json"])
    assert runs["alive"]["status"] == "running", "a run whose process lives is left alone"
    assert runs["far"]["status"] == "running", "another host's process cannot be checked from here"
    assert runs["next"]["status"] == "completed"
    assert close_killed_runs(Lake(lake_root)) == [], "closing is done once"


def test_a_lake_whose_runs_were_written_before_owner_was_kept_still_takes_runs(tmp_path):
    lake = Lake(tmp_path / "lake")
    old_schema = pa.schema([f for f in schema_for("runs") if f.name != "owner"] + [pa.field("_batch_key", pa.string())])
    now = utcnow()
    old = {"invocation_id": "old-1", "parent_invocation_id": None, "run_id": None, "flow": "old", "status": "running",
           "parameters_json": "{}", "counts_json": None, "error": None, "started_at": now, "finished_at": None,
           "recorded_at": now, "_batch_key": "old/start"}
    write_deltalake(lake.table_uri("runs"), pa.Table.from_pylist([old], schema=old_schema))

    next_run(lake_root=str(tmp_path / "lake"))

    runs = _runs(Lake(tmp_path / "lake"))
    assert runs["old"]["status"] == "running" and runs["old"]["owner"] is None  # no process named: left as it was
    assert runs["next"]["status"] == "completed" and runs["next"]["owner"]
