"""synthesize-tasks end to end: a real Prefect flow, a live shop, a lake on disk, the CLI on top."""

import json

import duckdb
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def synthesized(prefect_harness, tmp_path_factory):
    from flows.task_synthesis.flow import synthesize_tasks

    root = tmp_path_factory.mktemp("flow")
    broken = root / "broken"
    broken.mkdir()
    (broken / "sandbox.toml").write_text("[sandbox]\nname = 'broken'\n")  # missing kind, start, state
    lake_root = root / "lake"
    first = synthesize_tasks(sandboxes=["shop", str(broken)], count=12, seed=3, lake_root=str(lake_root))
    second = synthesize_tasks(sandboxes=["shop"], count=12, seed=3, lake_root=str(lake_root))
    return lake_root, first, second


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


def test_cli_sql_and_revalidation(synthesized, capsys):
    from flywheel.cli import main

    lake_root, _, _ = synthesized
    assert main(["--lake", str(lake_root), "lake", "sql", "SELECT task_id FROM tasks WHERE status = 'verified' AND family = 'create' ORDER BY 1 LIMIT 1", "--format", "json"]) == 0
    task_id = json.loads(capsys.readouterr().out)[0]["task_id"]

    assert main(["--lake", str(lake_root), "tasks", "validate", task_id]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "verified"

    assert main(["--lake", str(lake_root), "tasks", "validate", task_id, "--truncate", "1"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["status"] == "rejected" and verdict["reason"] == "fails_after_reference"

    assert main(["--lake", str(lake_root), "lake", "sql", "SELECT family, count(*) n FROM tasks GROUP BY 1", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("family,n")
