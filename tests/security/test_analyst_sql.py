"""Attacks through `flywheel lake sql`: an analyst's SQL reads the views and cannot write the lake or
read any other file."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flywheel.cli import main
from lake import Lake
from lake.store import utcnow


@pytest.fixture
def filled_lake(tmp_path, monkeypatch):
    lake = Lake(tmp_path / "lake")
    monkeypatch.setenv("FLYWHEEL_LAKE", str(lake.root))
    lake.write("runs", [{"run_id": "r1", "flow": "synthesize-tasks", "started_at": utcnow()}],
               run_id="r1", batch=0)
    lake.refresh_catalog()
    return lake


def table_files(lake: Lake) -> dict[str, int]:
    return {str(p.relative_to(lake.root)): p.stat().st_size for p in lake.tables_dir.rglob("*") if p.is_file()}


@pytest.mark.parametrize("sql", [
    "COPY (SELECT * FROM runs WHERE false) TO '{target}' (FORMAT parquet)",
    "COPY runs TO '{target}' (FORMAT parquet)",
    "EXPORT DATABASE '{lake}/tables/runs'",
    "SELECT 1; COPY (SELECT 1 WHERE false) TO '{target}' (FORMAT parquet)",
    "ATTACH '{lake}/other.duckdb' AS other",
    "SET enable_external_access = true",
    "PRAGMA enable_profiling = 'json'",
    "CALL pragma_version()",
    "EXPLAIN ANALYZE COPY (SELECT 1 WHERE false) TO '{target}' (FORMAT parquet)",
])
def test_analyst_sql_cannot_write_the_lake(filled_lake, capsys, sql):
    before = table_files(filled_lake)
    target = next(iter(filled_lake.tables_dir.glob("runs/*.parquet")))
    assert main(["lake", "sql", sql.format(target=target, lake=filled_lake.root)]) == 2
    assert "error:" in capsys.readouterr().err
    assert table_files(filled_lake) == before
    assert main(["lake", "sql", "SELECT run_id FROM runs", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "r1" in out and "\r" not in out  # lines end in \n, as a shell reads them (`| tail -1` gives the id)


@pytest.mark.parametrize("reader", ["read_csv('/etc/passwd')", "read_text('/etc/hostname')",
                                    "read_parquet('{outside}')", "glob('/root/*')"])
def test_analyst_sql_reads_no_file_outside_the_lake_tables(filled_lake, tmp_path, capsys, reader):
    outside = tmp_path / "elsewhere.parquet"
    pq.write_table(pa.table({"secret": ["s3cret"]}), outside)
    assert main(["lake", "sql", f"SELECT * FROM {reader.format(outside=outside)}"]) == 2
    err = capsys.readouterr().err
    assert "disabled by configuration" in err or "error:" in err
    assert "root:" not in err and "s3cret" not in err


def test_analyst_sql_still_reads_views_describes_and_summarises(filled_lake, capsys):
    for sql in ["SELECT flow FROM runs", "DESCRIBE runs", "SUMMARIZE runs", "SHOW TABLES",
                "WITH r AS (SELECT * FROM runs) SELECT count(*) AS n FROM r"]:
        assert main(["lake", "sql", sql]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "synthesize-tasks" in out and "run_id" in out
