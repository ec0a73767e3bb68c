"""Atomic, idempotent Parquet writes and the DuckDB catalog of views over them."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from lake.schemas import LATEST_BY_KEY, TABLES, duckdb_type, json_columns, schema_for

_SAFE = re.compile(r"[^A-Za-z0-9_.=-]+")
CATALOG_STORAGE_VERSION = "v1.5.0"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def default_root() -> Path:
    return Path(os.environ.get("FLYWHEEL_LAKE", "lake")).resolve()


class Lake:
    """One lake root: `tables/<table>/<run>-<batch>.parquet`, `blobs/sha256/..`, `catalog.duckdb`."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).resolve() if root else default_root()
        self.tables_dir = self.root / "tables"
        self.catalog_path = self.root / "catalog.duckdb"

    # ---- writes -------------------------------------------------------------------------------
    def write(self, table: str, rows: Iterable[Mapping[str, Any]], run_id: str, batch: str | int) -> Path | None:
        """Write rows as one Parquet file named by (run, batch); a retry replaces it, never duplicates.

        Rows that do not fit the schema go to `quarantine` with the reason; the rest land once.
        """
        schema = schema_for(table)
        good, bad = [], []
        for row in rows:
            try:
                pa.Table.from_pylist([_conform(row, schema)], schema=schema)
                good.append(_conform(row, schema))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
                bad.append((row, f"schema_mismatch: {exc}"))
        if bad:
            self.quarantine(table, f"{run_id}/{batch}", bad, run_id, batch)
        if not good:
            return None
        path = self.tables_dir / table / f"{_SAFE.sub('_', run_id)}-{_SAFE.sub('_', str(batch))}.parquet"
        _atomic_write(pa.Table.from_pylist(good, schema=schema), path)
        return path

    def quarantine(self, table: str, source: str, bad: list[tuple[Any, str]], run_id: str, batch: str | int) -> None:
        now = utcnow()
        rows = [
            {
                "source_table": table,
                "source": source,
                "record_json": json.dumps(rec, default=str, sort_keys=True),
                "reason": reason,
                "run_id": run_id,
                "recorded_at": now,
            }
            for rec, reason in bad
        ]
        path = self.tables_dir / "quarantine" / f"{_SAFE.sub('_', run_id)}-{table}-{_SAFE.sub('_', str(batch))}.parquet"
        _atomic_write(pa.Table.from_pylist(rows, schema=TABLES["quarantine"]), path)

    def put_blob(self, data: bytes) -> str:
        """Store bytes content-addressed; returns the sha256 hex digest that rows reference."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / "blobs" / "sha256" / digest[:2] / digest[2:4] / digest
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        return digest

    def read_blob(self, digest: str) -> bytes:
        return (self.root / "blobs" / "sha256" / digest[:2] / digest[2:4] / digest).read_bytes()

    # ---- reads --------------------------------------------------------------------------------
    def files(self, table: str) -> list[Path]:
        return sorted((self.tables_dir / table).glob("*.parquet"))

    def connect(self) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with every table's views: for flows reading the lake."""
        con = duckdb.connect()
        for stmt in self._view_statements():
            con.execute(stmt)
        return con

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        con = self.connect()
        try:
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]
        finally:
            con.close()

    # ---- catalog ------------------------------------------------------------------------------
    def refresh_catalog(self) -> Path:
        """Rebuild catalog.duckdb beside the old one and rename it into place.

        Readers holding the old file open keep working (they see the views they opened); the write
        lock is only ever held on a private temporary file, so an analyst's read-only session never
        blocks a flow and a flow never blocks an analyst.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".catalog-", suffix=".duckdb")
        os.close(fd)
        os.unlink(tmp)  # duckdb wants to create the file itself
        # written in a storage format the DuckDB CLI that bootstrap installs (duckdb-cli 1.5) can open
        con = duckdb.connect(tmp, config={"storage_compatibility_version": CATALOG_STORAGE_VERSION})
        try:
            for stmt in self._view_statements():
                con.execute(stmt)
            from lake.dictionary import apply_comments  # (imported here: `python -m lake.dictionary` runs it)

            apply_comments(con)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, self.catalog_path)
        wal = Path(tmp + ".wal")
        if wal.exists():
            wal.unlink()
        return self.catalog_path

    def _view_statements(self) -> list[str]:
        stmts = []
        for table, schema in TABLES.items():
            files = self.files(table)
            raw = f"{table}_history" if table in LATEST_BY_KEY else table
            if files:
                glob = (self.tables_dir / table / "*.parquet").as_posix().replace("'", "''")
                typed = ", ".join(f"TRY_CAST({c} AS JSON) AS {c}" for c in json_columns(table))
                body = f"SELECT *{f' REPLACE ({typed})' if typed else ''} FROM read_parquet('{glob}', union_by_name = true)"
            else:
                cols = ", ".join(f"CAST(NULL AS {duckdb_type(table, f.name)}) AS {f.name}" for f in schema)
                body = f"SELECT {cols} WHERE false"
            stmts.append(f"CREATE OR REPLACE VIEW {raw} AS {body}")
            if table in LATEST_BY_KEY:
                key, order = LATEST_BY_KEY[table]
                stmts.append(
                    f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM {raw} "
                    f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {order} DESC) = 1"
                )
        return stmts


def _conform(row: Mapping[str, Any], schema: pa.Schema) -> dict[str, Any]:
    unknown = set(row) - set(schema.names)
    if unknown:
        raise ValueError(f"unknown columns {sorted(unknown)}")
    return {name: row.get(name) for name in schema.names}


def _atomic_write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".parquet.tmp")  # never matched by *.parquet readers
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
