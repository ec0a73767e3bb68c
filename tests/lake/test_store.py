import subprocess
import sys
import textwrap
import time

import duckdb
import pytest

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


def test_each_write_is_a_snapshot_and_old_snapshots_stay_readable(lake):
    """A commit is atomic: a reader pinned to a version sees exactly its rows (time travel for lineage)."""
    lake.write("runs", [_run_row("a")], "run1", 0)
    first = lake.version("runs")
    lake.write("runs", [_run_row("b")], "run1", 1)
    lake.write("runs", [_run_row("a2")], "run1", 0)  # replaces batch 0
    con = duckdb.connect()
    then = con.execute("SELECT run_id FROM read_parquet($f)", {"f": [p.as_posix() for p in lake.files("runs", first)]})
    assert then.fetchall() == [("a",)]
    assert sorted(r["run_id"] for r in lake.query("SELECT run_id FROM runs")) == ["a2", "b"]
    assert lake.version("runs") == first + 2


def test_compaction_merges_files_and_keeps_rows_and_idempotency(lake):
    for i in range(6):
        lake.write("runs", [_run_row(f"r{i}")], "run1", i)
    assert len(lake.files("runs")) == 6
    assert lake.compact()["runs"] == 6
    assert len(lake.files("runs")) == 1
    lake.write("runs", [_run_row("r3-again")], "run1", 3)  # a retried batch still replaces its rows
    assert sorted(r["run_id"] for r in lake.query("SELECT run_id FROM runs")) == ["r0", "r1", "r2", "r3-again", "r4", "r5"]


def test_vacuum_deletes_only_files_no_recent_snapshot_reads(lake):
    for i in range(4):
        lake.write("runs", [_run_row(f"r{i}")], "run1", i)
    lake.compact()
    on_disk = lambda: sorted((lake.tables_dir / "runs").glob("*.parquet"))  # noqa: E731
    assert len(on_disk()) == 5  # four written, one merged
    assert lake.vacuum() == {}, "the default keeps a week of snapshots: nothing is old enough"
    assert lake.vacuum(0, dry_run=True) == {"runs": 4} and len(on_disk()) == 5
    assert lake.vacuum(0) == {"runs": 4}
    assert [p.name for p in on_disk()] == [p.name for p in lake.files("runs")]
    assert lake.query("SELECT count(*) AS n FROM runs") == [{"n": 4}]
    with pytest.raises(ValueError, match="0 or more"):
        lake.vacuum(-1)


def test_compaction_runs_by_itself_every_n_commits(lake, monkeypatch):
    import lake.store as store

    monkeypatch.setattr(store, "COMPACT_EVERY", 4)
    for i in range(9):
        lake.write("runs", [_run_row(f"r{i}")], "run1", i)
    assert len(lake.files("runs")) < 9
    assert lake.query("SELECT count(*) AS n FROM runs") == [{"n": 9}]


def test_the_catalog_names_no_hidden_column_and_survives_a_move(lake, tmp_path):
    lake.write("runs", [_run_row("a")], "run1", 0)
    moved = tmp_path / "moved"
    lake.root.rename(moved)
    from lake import Lake

    there = Lake(moved)
    there.refresh_catalog()
    con = duckdb.connect(str(there.catalog_path), read_only=True)
    assert "_batch_key" not in [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
    assert con.execute("SELECT run_id FROM runs").fetchall() == [("a",)]


def test_two_processes_writing_one_lake_at_once_lose_nothing(lake):
    """Separate processes commit 40 batches each into the same tables at the same time."""
    script = textwrap.dedent(f"""
        import sys
        from lake import Lake, utcnow
        lake, who = Lake({str(lake.root)!r}), sys.argv[1]
        for i in range(40):
            row = {{"run_id": f"{{who}}-{{i}}", "flow": "f", "parameters_json": "{{}}", "counts_json": "{{}}", "invocation_id": f"{{who}}-{{i}}",
                   "started_at": utcnow(), "finished_at": utcnow()}}
            lake.write("runs", [row, dict(row, run_id=row["run_id"] + "-b", invocation_id=row["run_id"] + "-b")], who, i)
            if i % 10 == 0:
                lake.write("runs", [row, dict(row, run_id=row["run_id"] + "-b", invocation_id=row["run_id"] + "-b")], who, i)  # a retry
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, who]) for who in ("p1", "p2")]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    counts = lake.query("SELECT split_part(run_id, '-', 1) AS who, count(*) AS n, count(DISTINCT run_id) AS ids "
                        "FROM runs GROUP BY 1 ORDER BY 1")
    assert counts == [{"who": "p1", "n": 80, "ids": 80}, {"who": "p2", "n": 80, "ids": 80}]


def test_two_processes_and_a_dask_cluster_writing_one_lake_at_once_lose_nothing(lake):
    """While two processes commit, a real Dask LocalCluster (2 worker processes) commits batches into the same
    table, some of them twice (a rerun task); every row lands exactly once."""
    pytest.importorskip("distributed", reason="the Dask task runner is in the test extras: ./bootstrap --test")
    from distributed import Client, LocalCluster

    script = textwrap.dedent(f"""
        import sys
        from lake import Lake, utcnow
        lake, who = Lake({str(lake.root)!r}), sys.argv[1]
        for i in range(12):
            row = {{"run_id": f"{{who}}-{{i}}", "flow": "f", "parameters_json": "{{}}", "counts_json": "{{}}", "invocation_id": f"{{who}}-{{i}}",
                   "started_at": utcnow(), "finished_at": utcnow()}}
            lake.write("runs", [row], who, i)
    """)
    root = str(lake.root)

    def dask_batch(i: int) -> int:  # runs in a worker process (cloudpickled by value)
        from lake import Lake, utcnow

        row = {"run_id": f"dask-{i}", "flow": "f", "parameters_json": "{}", "counts_json": "{}", "invocation_id": f"dask-{i}",
               "started_at": utcnow(), "finished_at": utcnow()}
        Lake(root).write("runs", [row], "dask", i)
        return i

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        procs = [subprocess.Popen([sys.executable, "-c", script, who]) for who in ("p1", "p2")]
        while lake.version("runs") is None and all(p.poll() is None for p in procs):
            time.sleep(0.05)  # the processes are committing: now the cluster joins in
        futures = client.map(dask_batch, list(range(12)) + [0, 5], pure=False)  # two batches written twice
        assert sorted(client.gather(futures)) == sorted(list(range(12)) + [0, 5])
        assert [p.wait(timeout=600) for p in procs] == [0, 0]
        assert len(client.scheduler_info()["workers"]) == 2
    counts = lake.query("SELECT split_part(run_id, '-', 1) AS who, count(*) AS n, count(DISTINCT run_id) AS ids "
                        "FROM runs GROUP BY 1 ORDER BY 1")
    assert counts == [{"who": w, "n": 12, "ids": 12} for w in ("dask", "p1", "p2")]


def test_an_old_layout_lake_says_to_migrate_and_migrate_keeps_every_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytest

    from lake import TABLES, Lake
    from lake.migrate import migrate
    from lake.store import LegacyLakeError

    root = tmp_path / "old"
    (root / "tables" / "runs").mkdir(parents=True)
    for name, ids in (("run1-0", ["a", "b"]), ("run1-1", ["c"])):
        rows = [_run_row(i) for i in ids]
        pq.write_table(pa.Table.from_pylist(rows, schema=TABLES["runs"]), root / "tables" / "runs" / f"{name}.parquet")
    old = Lake(root)
    with pytest.raises(LegacyLakeError, match="flywheel lake migrate"):
        old.query("SELECT * FROM runs")
    assert migrate(old) == {"runs": 3}
    lake = Lake(root)
    assert sorted(r["run_id"] for r in lake.query("SELECT run_id FROM runs")) == ["a", "b", "c"]
    assert (root / "legacy" / "runs" / "run1-0.parquet").exists()
    lake.write("runs", [_run_row("c2")], "run1", 1)  # the old (run, batch) is still replaced, not duplicated
    assert sorted(r["run_id"] for r in lake.query("SELECT run_id FROM runs")) == ["a", "b", "c2"]
    assert migrate(lake) == {}


def test_a_first_commit_under_way_in_another_process_is_not_taken_for_the_old_layout(lake, tmp_path):
    """Another writer's first commit to a table puts its Delta data file down before the log: a writer that
    looks then (a race CI met with two processes and a Dask cluster) commits beside it, it is not told to
    migrate; a file named as the old layout named them still is."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytest

    from lake import TABLES, Lake
    from lake.store import LegacyLakeError

    folder = lake.root / "tables" / "runs"
    folder.mkdir(parents=True)
    under_way = folder / "part-00000-a3f73025-c11e-4df3-bd1a-3e7c2546de45-c000.snappy.parquet"
    pq.write_table(pa.Table.from_pylist([_run_row("theirs")], schema=TABLES["runs"]), under_way)
    lake.write("runs", [_run_row("mine")], "run1", 0)
    assert [r["run_id"] for r in lake.query("SELECT run_id FROM runs")] == ["mine"]  # the stray file is no row

    old = tmp_path / "old" / "tables" / "runs"
    old.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([_run_row("old")], schema=TABLES["runs"]), old / "run1-0.parquet")
    with pytest.raises(LegacyLakeError, match="flywheel lake migrate"):
        Lake(tmp_path / "old").write("runs", [_run_row("new")], "run1", 1)


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
