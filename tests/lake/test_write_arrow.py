import datetime as dt

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from lake import schema_for, utcnow
from lake.store import BATCH_KEY


def _runs(n, **overrides):
    now = utcnow()
    cols = {
        "run_id": [f"r{i}" for i in range(n)],
        "flow": ["mine-failures"] * n,
        "parameters_json": ["{}"] * n,
        "counts_json": ["{}"] * n,
        "invocation_id": [f"r{i}" for i in range(n)],
        "started_at": [now] * n,
        "finished_at": [now] * n,
    }
    cols.update(overrides)
    return pa.table(cols)


def _landed(lake, table):
    """The table as its committed files hold it, without the lake's hidden (run, batch) key column."""
    data = pa.concat_tables(pq.read_table(f) for f in lake.files(table))
    return data.drop_columns([BATCH_KEY])


def test_a_table_lands_in_the_lake_schema_and_a_retry_replaces_it(lake):
    lake.write_arrow("runs", _runs(3), "run1", 0)
    lake.write_arrow("runs", _runs(3), "run1", 0)
    assert _landed(lake, "runs").schema.equals(schema_for("runs"))
    assert lake.query("SELECT count(*) AS n FROM runs")[0]["n"] == 3
    assert lake.query("SELECT count(*) AS n FROM quarantine")[0]["n"] == 0


def test_columns_are_cast_to_the_schema_and_missing_ones_are_null(lake):
    """A polars frame with int64 where the lake keeps int32, naive nanosecond times and a column left out."""
    naive = dt.datetime(2026, 1, 2, 3, 4, 5, 123456)
    frame = pl.DataFrame(
        {
            "trajectory_id": ["t1", "t2"],
            "step_index": [0, 1],  # Int64 in polars
            "ok": [True, None],
            "started_at": pl.Series([naive, naive]).cast(pl.Datetime("ns")),
        }
    )
    lake.write_arrow("steps", frame, "run1", "b")
    assert _landed(lake, "steps").schema.equals(schema_for("steps"))
    rows = lake.query("SELECT step_index, url, started_at FROM steps ORDER BY step_index")
    assert [r["step_index"] for r in rows] == [0, 1] and rows[0]["url"] is None
    assert rows[0]["started_at"].replace(tzinfo=None) == naive


def test_rows_a_cast_refuses_go_to_quarantine_with_their_column_and_the_rest_lands_once(lake):
    n = 50_000
    index = list(range(n))
    index[7] = 2**40  # does not fit int32
    index[31_000] = -(2**35)
    times = [utcnow().isoformat()] * n
    times[12] = "not a time"
    table = pa.table({"trajectory_id": [f"t{i}" for i in range(n)], "step_index": index, "started_at": times})
    lake.write_arrow("steps", table, "run1", 0)
    assert lake.query("SELECT count(*) AS n FROM steps")[0]["n"] == n - 3
    bad = lake.query("SELECT record_json, reason FROM quarantine ORDER BY record_json")
    assert len(bad) == 3
    assert sorted(r["reason"].split(":")[1].strip() for r in bad) == [
        "column started_at",
        "column step_index",
        "column step_index",
    ]
    assert {
        '"t7"' in r["record_json"] or '"t12"' in r["record_json"] or '"t31000"' in r["record_json"]
        for r in bad
    } == {True}
    landed = {
        r["trajectory_id"]
        for r in lake.query("SELECT trajectory_id FROM steps WHERE trajectory_id IN ('t6','t7','t8','t12')")
    }
    assert landed == {"t6", "t8"}


def test_unknown_columns_and_uncastable_types_refuse_every_row_with_one_clear_reason(lake):
    assert lake.write_arrow("runs", _runs(2).append_column("secret", pa.array([1, 2])), "run1", 0) is None
    nested = _runs(2).set_column(2, "parameters_json", pa.array([{"a": 1}, {"a": 2}]))
    assert lake.write_arrow("runs", nested, "run1", 1) is None
    reasons = sorted(r["reason"] for r in lake.query("SELECT reason FROM quarantine"))
    assert len(reasons) == 4
    assert reasons[0].startswith("schema_mismatch: column parameters_json: cannot cast struct")
    assert reasons[-1] == "schema_mismatch: unknown columns ['secret']"
    assert lake.query("SELECT count(*) AS n FROM runs")[0]["n"] == 0
