"""The catalog explains itself: every view and column carries a comment, docs/lake.md is generated from the
same text (and is not stale), JSON columns are typed JSON, the DuckDB CLI that bootstrap installs opens the
catalog, and every flow run leaves a `runs` row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from lake import TABLES, Lake
from lake.dictionary import render_markdown, views
from lake.runs import recorded_run
from tests.flows.export_data import add_task, add_trajectory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_catalog(lake: Lake) -> Lake:
    add_task(lake, "task-a")
    add_trajectory(lake, "t1")
    lake.refresh_catalog()
    return lake


def test_docs_lake_md_is_generated_from_the_schemas_and_not_stale():
    assert (ROOT / "docs" / "lake.md").read_text() == render_markdown(), (
        "docs/lake.md is stale: run `python -m lake.dictionary > docs/lake.md`")


def test_every_view_and_column_of_the_catalog_has_its_comment(small_catalog):
    con = duckdb.connect(str(small_catalog.catalog_path), read_only=True)
    try:
        commented = dict(con.sql("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
        columns = con.sql("SELECT table_name, column_name, comment FROM duckdb_columns() WHERE NOT internal").fetchall()
    finally:
        con.close()
    assert set(commented) == {v for v, _ in views()}
    assert all(commented.values())
    missing = [(t, c) for t, c, comment in columns if not comment]
    assert missing == []
    assert {(t, c) for t, c, _ in columns} >= {(v, f.name) for v, table in views() for f in TABLES[table]}
    # the markdown says the same as the catalog
    doc = render_markdown()
    step_url = next(comment for t, c, comment in columns if (t, c) == ("steps", "url"))
    assert f"| `url` | VARCHAR | {step_url} |" in doc


def test_json_columns_are_typed_json_and_old_readers_still_get_text(small_catalog):
    con = duckdb.connect(str(small_catalog.catalog_path), read_only=True)
    try:
        types = dict(con.sql("SELECT table_name || '.' || column_name, data_type FROM duckdb_columns() "
                             "WHERE NOT internal").fetchall())
        agent = con.sql("SELECT provenance_json->>'agent' FROM tasks").fetchall()
    finally:
        con.close()
    assert types["tasks.provenance_json"] == "JSON" and types["steps.actions_json"] == "JSON"
    assert types["runs.counts_json"] == "JSON"  # an empty table's view is typed too
    assert types["tasks.instruction"] == "VARCHAR"
    assert agent == [("static",)]
    rows = small_catalog.query("SELECT actions_json, points_json FROM steps ORDER BY step_index")
    assert isinstance(rows[0]["actions_json"], str) and json.loads(rows[0]["actions_json"])[0]["action"] == "goto"


def test_text_that_is_not_json_reads_as_null_and_breaks_no_query(lake: Lake):
    add_task(lake, "task-a")
    lake.write("tasks", [{"task_id": "odd", "version": 1, "params_json": "not json {", "status": "candidate"}], "x", "odd")
    rows = {r["task_id"]: r["params_json"] for r in lake.query("SELECT task_id, params_json FROM tasks")}
    assert rows == {"task-a": "{}", "odd": None}


def test_the_duckdb_cli_opens_the_catalog_and_reads_every_view(small_catalog):
    cli = Path(sys.executable).parent / "duckdb"
    assert cli.exists(), f"no DuckDB CLI at {cli}: ./bootstrap installs duckdb-cli (pyproject.toml)"
    sql = " UNION ALL ".join(f"SELECT '{v}' AS view, count(*) AS n FROM {v}" for v, _ in views())
    done = subprocess.run([str(cli), "-readonly", str(small_catalog.catalog_path), "-json", "-c", sql],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    counts = {r["view"]: r["n"] for r in json.loads(done.stdout)}
    assert counts["steps"] == 4 and counts["tasks"] == 1 and counts["runs"] == 0
    assert set(counts) == {v for v, _ in views()}


# ---- runs ----------------------------------------------------------------------------------------------


def test_a_failed_run_says_failed_with_the_error_and_nested_runs_name_their_caller(lake: Lake):
    @recorded_run("inner")
    def inner(lake_root: str | None = None, n: int = 1) -> dict:
        return {"run_id": "inner-1", "episodes": n, "verdicts": {"pass": 2, "failed": 1}, "problems": ["x"],
                "markdown": "# not a count"}

    @recorded_run("outer")
    def outer(lake_root: str | None = None) -> dict:
        inner(lake_root, n=3)
        raise RuntimeError("the sandbox fell over")

    with pytest.raises(RuntimeError):
        outer(str(lake.root))
    runs = {r["flow"]: r for r in lake.query("SELECT * FROM runs")}
    assert runs["outer"]["status"] == "failed"
    assert runs["outer"]["error"] == "RuntimeError: the sandbox fell over"
    assert runs["inner"]["parent_invocation_id"] == runs["outer"]["invocation_id"]
    assert runs["inner"]["run_id"] == "inner-1"
    assert json.loads(runs["inner"]["counts_json"]) == {"episodes": 3, "verdicts": {"pass": 2, "failed": 1}, "problems": 1}
    assert json.loads(runs["inner"]["parameters_json"]) == {"lake_root": str(lake.root), "n": 3}


def test_every_flow_is_recorded():
    import importlib

    for folder in sorted((ROOT / "flows").glob("*/flow.py")):
        module = importlib.import_module(f"flows.{folder.parent.name}.flow")
        flows = [v for v in vars(module).values() if type(v).__name__ == "Flow" and v.__module__ == module.__name__]
        assert flows, folder
        for f in flows:
            assert getattr(f.fn, "__wrapped__", None) is not None, f"{folder}: {f.name} has no @recorded_run"
