import subprocess
import sys
import textwrap

import duckdb

from lake import utcnow


def _run_row(run_id="r1", flow="synthesize-tasks"):
    return {"invocation_id": run_id, "run_id": run_id, "flow": flow, "status": "completed", "parameters_json": "{}",
            "counts_json": "{}", "started_at": utcnow(), "finished_at": utcnow(), "recorded_at": utcnow()}


def test_write_is_idempotent_per_run_and_batch(lake):
    lake.write("runs", [_run_row("a"), _run_row("b")], "run1", 0)
    lake.write("runs", [_run_row("a"), _run_row("b")], "run1", 0)  # a retried batch replaces its file
    lake.write("runs", [_run_row("c")], "run1", 1)
    assert [r["run_id"] for r in lake.query("SELECT run_id FROM runs ORDER BY 1")] == ["a", "b", "c"]
    assert not list((lake.tables_dir / "runs").glob(".tmp-*")), "no temporary file may be left behind"


def test_readers_never_see_a_file_being_written(lake, monkeypatch):
    """While a write's temporary file sits beside the table (before its rename), queries still work."""
    import lake.store as store

    lake.write("runs", [_run_row("a")], "run1", 0)
    seen = []
    real_replace = store.os.replace

    def query_mid_write(src, dst):
        seen.append(sorted(r["run_id"] for r in lake.query("SELECT run_id FROM runs")))
        real_replace(src, dst)

    monkeypatch.setattr(store.os, "replace", query_mid_write)
    lake.write("runs", [_run_row("b")], "run1", 1)
    assert seen == [["a"]]
    assert sorted(r["run_id"] for r in lake.query("SELECT run_id FROM runs")) == ["a", "b"]


def test_bad_rows_go_to_quarantine_and_the_rest_lands_once(lake):
    rows = [_run_row("good"), {"run_id": "bad", "flow": "x", "no_such_column": 1}, {"run_id": "bad2", "started_at": "not a time"}]
    lake.write("runs", rows, "run1", 0)
    assert [r["run_id"] for r in lake.query("SELECT run_id FROM runs")] == ["good"]
    reasons = [r["reason"] for r in lake.query("SELECT reason FROM quarantine ORDER BY reason")]
    assert len(reasons) == 2 and all(r.startswith("schema_mismatch") for r in reasons)
    assert any("no_such_column" in r for r in reasons)


def test_empty_tables_have_typed_views(lake):
    lake.refresh_catalog()
    con = duckdb.connect(str(lake.catalog_path), read_only=True)
    cols = {r[0]: r[1] for r in con.execute("DESCRIBE tasks").fetchall()}
    assert cols["task_id"] == "VARCHAR" and cols["version"] == "INTEGER"
    assert con.execute("SELECT count(*) FROM tasks").fetchone()[0] == 0


def test_tasks_view_keeps_the_latest_event_per_task(lake):
    from flows.task_synthesis.task_spec import TaskSpec

    spec = TaskSpec("shop", "c1", "create", "cart", "Add it", {"a": 1}, 7, [], {"template": "row_exists", "params": {}}, [])
    lake.write("tasks", [spec.to_row("candidate", None, None, "r1", utcnow())], "r1", "shop")
    lake.write("tasks", [spec.to_row("verified", None, None, "r2", utcnow())], "r2", "shop")
    lake.refresh_catalog()
    con = duckdb.connect(str(lake.catalog_path), read_only=True)
    assert con.execute("SELECT status FROM tasks").fetchall() == [("verified",)]
    assert con.execute("SELECT count(*) FROM tasks_history").fetchone()[0] == 2


def test_analyst_holding_the_catalog_read_only_does_not_block_a_refresh(lake, tmp_path):
    lake.write("runs", [_run_row("first")], "r1", 0)
    lake.refresh_catalog()
    ready = tmp_path / "ready"
    # Another process opens the catalog read-only and keeps it open, like `duckdb -readonly`.
    analyst = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import duckdb, pathlib, time
            con = duckdb.connect({str(lake.catalog_path)!r}, read_only=True)
            print(con.execute("SELECT count(*) FROM runs").fetchone()[0], flush=True)
            pathlib.Path({str(ready)!r}).touch()
            time.sleep(30)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert analyst.stdout.readline().strip() == "1"
        lake.write("runs", [_run_row("second")], "r2", 0)
        lake.refresh_catalog()  # must not fail on the analyst's lock
        con = duckdb.connect(str(lake.catalog_path), read_only=True)
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
        assert analyst.poll() is None, "the analyst's session is still alive"
    finally:
        analyst.kill()


def test_blobs_are_content_addressed(lake):
    a = lake.put_blob(b"png bytes")
    assert a == lake.put_blob(b"png bytes")
    assert (lake.root / "blobs" / "sha256" / a[:2] / a[2:4] / a).read_bytes() == b"png bytes"
