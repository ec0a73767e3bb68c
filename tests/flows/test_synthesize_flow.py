"""synthesize-tasks end to end: a real Prefect flow, a live shop, a lake on disk, the CLI on top."""

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_verified_pairs_land_in_the_catalog(synthesized):
    lake_root, first, _ = synthesized
    (shop,) = first["sandboxes"]
    assert shop["error"] is None
    con = duckdb.connect(str(lake_root / "catalog.duckdb"), read_only=True)
    rows = con.execute("SELECT family, status, reason FROM tasks WHERE sandbox = 'shop'").fetchall()
    assert len(rows) == shop["candidates"] == 12
    verified = [r for r in rows if r[1] == "verified"]
    assert len(verified) == shop["verified"] >= 6
    assert len({r[0] for r in verified}) >= 4, "verified pairs span several families"
    assert all(r[2] for r in rows if r[1] == "rejected"), "every rejection has a reason code"
    checks = con.execute("SELECT DISTINCT stage FROM validation_runs").fetchall()
    assert {c[0] for c in checks} >= {"initial", "reference", "repeat", "truncated", "gate"}
    assert "| shop |" in first["markdown"]


def test_a_broken_manifest_is_reported_and_the_run_goes_on(synthesized):
    _, first, _ = synthesized
    assert len(first["problems"]) == 1 and "sandbox.kind" in first["problems"][0]
    assert first["sandboxes"][0]["verified"] > 0


def test_a_second_run_on_the_same_commit_adds_nothing(synthesized):
    lake_root, _, second = synthesized
    (shop,) = second["sandboxes"]
    assert shop["already_known"] == shop["candidates"] == 12 and shop["verified"] == 0
    con = duckdb.connect(str(lake_root / "catalog.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM tasks_history").fetchone()[0] == 12


def flywheel(*args):
    """The installed console command, in its own process, as a user runs it."""
    exe = Path(sys.executable).with_name("flywheel")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300)


def test_cli_sql_and_revalidation(synthesized):
    lake_root, _, _ = synthesized
    lake = ["--lake", str(lake_root)]
    out = flywheel(*lake, "lake", "sql", "SELECT task_id FROM tasks WHERE status = 'verified' AND family = 'create' ORDER BY 1 LIMIT 1", "--format", "json")
    assert out.returncode == 0, out.stderr
    task_id = json.loads(out.stdout)[0]["task_id"]

    out = flywheel(*lake, "tasks", "validate", task_id)
    assert out.returncode == 0 and json.loads(out.stdout)["status"] == "verified", out.stdout + out.stderr

    out = flywheel(*lake, "tasks", "validate", task_id, "--truncate", "1")
    verdict = json.loads(out.stdout)
    assert out.returncode == 1 and verdict["status"] == "rejected" and verdict["reason"] == "fails_after_reference"

    out = flywheel(*lake, "lake", "sql", "SELECT family, count(*) n FROM tasks GROUP BY 1", "--format", "csv")
    assert out.returncode == 0 and out.stdout.startswith("family,n")

    out = flywheel(*lake, "lake", "sql", "SELECT nope FROM tasks")
    assert out.returncode == 2 and "views:" in out.stderr and "tasks" in out.stderr


def test_each_flow_run_is_a_runs_row(synthesized):
    from lake import Lake

    lake_root, first, second = synthesized
    runs = Lake(lake_root).query("SELECT * FROM runs WHERE flow = 'synthesize-tasks' ORDER BY started_at")
    assert [r["run_id"] for r in runs] == [first["run_id"], second["run_id"]]
    assert all(r["status"] == "completed" and r["started_at"] <= r["finished_at"] for r in runs)
    assert json.loads(runs[0]["parameters_json"])["count"] == 12
    assert json.loads(runs[0]["counts_json"]) == {"sandboxes": 1, "problems": 1}
