"""The lake: one Delta table per lake table (atomic commits from many writers, snapshots, compaction),
content-addressed blobs, and the DuckDB catalog of views over each table's current files.

A write is one Delta commit that replaces the rows of its (run, batch) — a predicate overwrite on the
hidden `_batch_key` column — so a retried batch replaces its own rows and never duplicates them, and
concurrent writers (threads, processes, machines) each commit without losing the others' rows (delta-rs
retries a conflicting commit; we retry the few it gives up on). The Delta log stores paths relative to
the table, so a lake folder can move; the catalog is rebuilt from the log (`refresh_catalog`).

The root is a folder, or `s3://bucket/prefix` (storage options from the usual AWS_* variables; delta-rs
1.x commits there with conditional puts, so no lock table is needed).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, TableNotFoundError

from lake.conform import conform_table
from lake.schemas import (
    DENSE_VIEW_NEEDS,
    DENSE_VIEW_SQL,
    DENSE_VIEWS,
    LATEST_BY_KEY,
    RENAMED_JSON_KEYS,
    TABLES,
    duckdb_type,
    json_columns,
    schema_for,
)

_SAFE = re.compile(r"[^A-Za-z0-9_.=-]+")
BATCH_KEY = "_batch_key"  # hidden column: the (run, batch) a row was written by
# Commits between automatic compactions: a query over 10 small files + the merged ones costs about what it
# costs compacted (bench/scale.py lake; 50 small files cost ~6x). Files reaching the target size are left alone,
# so a compaction rewrites at most one target's worth of rows, however big the table grows.
COMPACT_EVERY = int(os.environ.get("FLYWHEEL_LAKE_COMPACT_EVERY", "10"))
COMPACT_TARGET_BYTES = int(os.environ.get("FLYWHEEL_LAKE_COMPACT_MB", "16")) * 1024 * 1024
_COMMIT_ATTEMPTS = 40  # with jittered backoff capped at 2 s: about a minute of retrying before giving up
CATALOG_STORAGE_VERSION = "v1.5.0"


class LegacyLakeError(RuntimeError):
    """The lake still has the file-per-batch layout of flywheel before Delta tables."""


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def default_root() -> Path:
    return Path(os.environ.get("FLYWHEEL_LAKE", "lake")).resolve()


def is_remote(root: str | Path) -> bool:
    return "://" in str(root)


def storage_options(uri: str) -> dict[str, str]:
    """delta-rs storage options for an object-store URI, from AWS_* variables (and FLYWHEEL_LAKE_STORAGE_OPTIONS
    as JSON for anything else)."""
    opts = {k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                       "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ALLOW_HTTP") if os.environ.get(k)}
    if "AWS_REGION" not in opts and os.environ.get("AWS_DEFAULT_REGION"):
        opts["AWS_REGION"] = os.environ["AWS_DEFAULT_REGION"]
    if opts.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        opts.setdefault("AWS_ALLOW_HTTP", "true")
    opts |= json.loads(os.environ.get("FLYWHEEL_LAKE_STORAGE_OPTIONS") or "{}")
    return opts if uri.startswith("s3://") else {}


class Lake:
    """One lake root: `tables/<table>/` Delta tables, `blobs/sha256/..`, `catalog.duckdb`."""

    def __init__(self, root: str | Path | None = None) -> None:
        root = root if root else os.environ.get("FLYWHEEL_LAKE", "lake")
        self.remote = is_remote(root)
        if self.remote:
            self.uri = str(root).rstrip("/")
            # Reports and the catalog are local files, so they live in a local folder named after the URI.
            local = os.environ.get("FLYWHEEL_LAKE_LOCAL") or Path(".flywheel") / _SAFE.sub("_", self.uri)
            self.root = Path(local).resolve()
            self.options = storage_options(self.uri)
        else:
            self.root = Path(root).resolve()
            self.uri = self.root.as_posix()
            self.options = {}
        self.tables_dir = self.root / "tables"
        self.catalog_path = self.root / "catalog.duckdb"
        self._tables: dict[str, DeltaTable] = {}
        self._lock = threading.Lock()
        self._query_db: duckdb.DuckDBPyConnection | None = None  # query()'s own database: a new one costs ~0.1 s

    def table_uri(self, table: str) -> str:
        return f"{self.uri}/tables/{table}"

    # ---- writes -------------------------------------------------------------------------------
    def write(self, table: str, rows: Iterable[Mapping[str, Any]], run_id: str, batch: str | int) -> str | None:
        """Commit rows as the (run, batch)'s rows of `table`; a retry replaces them, never duplicates.

        Rows that do not fit the schema go to `quarantine` with the reason; the rest land once. Returns
        the table's URI, or None when nothing landed.
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
        return self._commit(table, pa.Table.from_pylist(good, schema=schema), _batch_key(run_id, batch))

    def write_arrow(self, table: str, arrow_table: pa.Table, run_id: str, batch: str | int) -> str | None:
        """`write` for a whole Arrow table (or anything Arrow reads, e.g. a polars frame): validated and cast
        to the schema column by column, not row by row; rows a cast refuses go to `quarantine`."""
        good, bad = conform_table(pa.table(arrow_table), schema_for(table))
        if bad:
            self.quarantine(table, f"{run_id}/{batch}", bad, run_id, batch)
        if not good.num_rows:
            return None
        return self._commit(table, good, _batch_key(run_id, batch))

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
        key = f"{_SAFE.sub('_', run_id)}-{table}-{_SAFE.sub('_', str(batch))}"
        self._commit("quarantine", pa.Table.from_pylist(rows, schema=TABLES["quarantine"]), key)

    def _commit(self, table: str, data: pa.Table, key: str) -> str:
        """One Delta commit replacing the rows of `key`; retried on a conflict with another writer."""
        self._refuse_legacy(table)
        data = data.append_column(BATCH_KEY, pa.repeat(pa.scalar(key, pa.string()), data.num_rows))  # not a list: 1M rows 0.3 s
        uri = self.table_uri(table)
        predicate = f"{BATCH_KEY} = '{key.replace(chr(39), chr(39) * 2)}'"
        for attempt in range(_COMMIT_ATTEMPTS):
            try:
                write_deltalake(uri, data, mode="overwrite", predicate=predicate, schema_mode="merge",
                                storage_options=self.options or None)
                break
            except CommitFailedError:  # a concurrent commit delta-rs could not reconcile: ours is idempotent
                if attempt == _COMMIT_ATTEMPTS - 1:
                    raise
                time.sleep(min(0.05 * 2**attempt, 2.0) * (0.5 + random.random()))  # writers that collided spread out
        self._maybe_compact(table)
        return uri

    def _maybe_compact(self, table: str) -> None:
        current = self._delta(table)
        if current is not None and COMPACT_EVERY > 0 and current.version() % COMPACT_EVERY == 0 and current.version():
            self._compact_one(table)  # one writer sees each version number, so one writer compacts

    # ---- blobs --------------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        """Store bytes content-addressed; returns the sha256 hex digest that rows reference."""
        digest = hashlib.sha256(data).hexdigest()
        if self.remote:
            fs, path = self._blob_fs(digest)
            if not self.has_blob(digest):
                with fs.open_output_stream(path) as out:  # an object PUT is atomic: readers never see half of it
                    out.write(data)
            return digest
        path = self.root / blob_key(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        return digest

    def has_blob(self, digest: str) -> bool:
        if self.remote:
            fs, path = self._blob_fs(digest)
            return fs.get_file_info(path).type.name == "File"
        return (self.root / blob_key(digest)).is_file()

    def read_blob(self, digest: str) -> bytes:
        if self.remote:
            fs, path = self._blob_fs(digest)
            with fs.open_input_stream(path) as src:
                return src.read()
        return (self.root / blob_key(digest)).read_bytes()

    def blob_location(self, digest: str) -> str:
        """Where a blob lives: a local path, or its object-store URI."""
        if self.remote:
            return f"{self.uri}/{blob_key(digest)}"
        return str(self.root / blob_key(digest))

    def _blob_fs(self, digest: str):
        return self._object_store(), self.blob_location(digest).split("://", 1)[1]

    def _object_store(self):
        """pyarrow's S3 filesystem for this lake's bucket (paths are `bucket/key`, no scheme)."""
        from pyarrow import fs

        o = self.options
        return fs.S3FileSystem(
            access_key=o.get("AWS_ACCESS_KEY_ID"), secret_key=o.get("AWS_SECRET_ACCESS_KEY"),
            session_token=o.get("AWS_SESSION_TOKEN"), region=o.get("AWS_REGION", "us-east-1"),
            endpoint_override=o.get("AWS_ENDPOINT_URL"),
            scheme="http" if o.get("AWS_ENDPOINT_URL", "").startswith("http://") else "https",
        )

    # ---- reads --------------------------------------------------------------------------------
    def _delta(self, table: str, version: int | None = None) -> DeltaTable | None:
        """The table at its latest (or a given) version; None before its first commit."""
        if version is not None:
            return DeltaTable(self.table_uri(table), version=version, storage_options=self.options or None)
        with self._lock:
            cached = self._tables.get(table)
            try:
                if cached is None:
                    self._refuse_legacy(table)
                    cached = self._tables[table] = DeltaTable(self.table_uri(table), storage_options=self.options or None)
                else:
                    cached.update_incremental()
            except TableNotFoundError:
                return None
            return cached

    def version(self, table: str) -> int | None:
        """The table's current snapshot (for lineage: `files(table, version)` reads it again later)."""
        current = self._delta(table)
        return None if current is None else current.version()

    def files(self, table: str, version: int | None = None) -> list[Path] | list[str]:
        """The Parquet files of the table's current (or a given) snapshot: paths, or URIs on object storage."""
        current = self._delta(table, version)
        if current is None:
            return []
        uris = current.file_uris()
        return uris if self.remote else [Path(u) for u in uris]

    def connect(self) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection with every table's views: for flows reading the lake.

        `read_parquet` over `files(...)` works on it wherever the lake is: on object storage (DuckDB here has
        no httpfs) the connection reads `s3://` through pyarrow's S3 filesystem, registered with DuckDB, and the
        views read each table as an Arrow dataset (so they keep working with file access switched off)."""
        con = self.raw_connection()
        self._add_views(con, TABLES)
        return con

    def _add_views(self, con: duckdb.DuckDBPyConnection, tables: Iterable[str], temp: bool = False) -> None:
        if self.remote:
            for table in tables:
                current = self._delta(table)
                if current is not None:
                    con.register(f"_delta_{table}", current.to_pyarrow_dataset())
        for stmt in self._view_statements(tables=tables, temp=temp):
            con.execute(stmt)

    def raw_connection(self) -> duckdb.DuckDBPyConnection:
        """An in-memory DuckDB connection that reads this lake's files (no views): `read_parquet($files)`."""
        con = duckdb.connect()
        if self.remote:
            con.register_filesystem(_s3_for_duckdb(self._object_store()))
        return con

    def read_files(self, table: str, files: list[Path] | list[str], columns: list[str] | tuple[str, ...]) -> pa.Table:
        """These files of `table` (from `files(table)`), only `columns`, cast to the lake's schema; a file
        written before a column existed gives nulls there. Works on object storage too."""
        import pyarrow.dataset as ds

        schema = schema_for(table)
        fields = pa.schema([schema.field(c) for c in columns])
        if self.remote:
            paths, filesystem = [str(f).split("://", 1)[1] for f in files], self._object_store()
        else:
            paths, filesystem = [str(f) for f in files], None
        return ds.dataset(paths, schema=fields, format="parquet", filesystem=filesystem).to_table()

    def file_rows(self, table: str) -> dict[str, int]:
        """Rows per current file of `table` (keys as `files(table)` names them), from the Delta log's stats."""
        current = self._delta(table)
        if current is None:
            return {}
        actions = pa.table(current.get_add_actions(flatten=True))
        rows = dict(zip(actions.column("path").to_pylist(), actions.column("num_records").to_pylist()))
        prefix = len(self.table_uri(table)) + 1
        return {str(f): int(rows.get(str(f)[prefix:], 0)) for f in self.files(table)}

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        """Rows of `sql` over the views it names (only those are built: each costs a look at the table's log)."""
        with self._lock:
            if self._query_db is None:
                self._query_db = self.raw_connection()
            con = self._query_db.cursor()  # a connection of its own: its temporary views are its own
        try:
            named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql.lower()))
            wanted = {t for t in TABLES if t in named or f"{t}_history" in named or DENSE_VIEWS.get(t) in named}
            wanted |= {n for t in wanted for n in DENSE_VIEW_NEEDS.get(t, ())}
            self._add_views(con, [t for t in TABLES if t in wanted], temp=True)
            cur = con.execute(sql, params or [])
            cols = [d[0] for d in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]
        finally:
            con.close()

    # ---- maintenance --------------------------------------------------------------------------
    def compact(self) -> dict[str, int]:
        """Merge each table's small files into few (a new snapshot; old ones stay readable); files removed per table."""
        return {table: n for table in TABLES if (n := self._compact_one(table))}

    def vacuum(self, older_than_hours: int = 168, dry_run: bool = False) -> dict[str, int]:
        """Delete the files no snapshot newer than `older_than_hours` reads (what overwritten batches and
        compactions left); files deleted (or, dry, that would be) per table. Readers of an older catalog or
        snapshot than that lose their files: keep the hours above the longest query or export you run."""
        if older_than_hours < 0:
            raise ValueError(f"older_than_hours must be 0 or more, not {older_than_hours}")
        out = {}
        for table in TABLES:
            current = self._delta(table)
            if current is None:
                continue
            gone = current.vacuum(retention_hours=older_than_hours, dry_run=dry_run, enforce_retention_duration=False)
            if gone:
                out[table] = len(gone)
        return out

    def _compact_one(self, table: str) -> int:
        current = self._delta(table)
        if current is None:
            return 0
        try:
            metrics = current.optimize.compact(target_size=COMPACT_TARGET_BYTES)
            current.create_checkpoint()
        except CommitFailedError:  # a concurrent writer replaced a batch we were merging: the next trigger retries
            return 0
        return int(metrics.get("numFilesRemoved", 0))

    def _refuse_legacy(self, table: str) -> None:
        if self.remote:
            return
        folder = self.tables_dir / table
        # (Delta's own data files, before the first commit's log lands, are another writer's first commit under way)
        if not (folder / "_delta_log").is_dir() and any(
            not _DELTA_DATA_FILE.fullmatch(p.name) for p in folder.glob("*.parquet")
        ):
            raise LegacyLakeError(f"{self.root} holds tables in the old file-per-batch layout ({folder}): "
                                  "run `flywheel lake migrate` once to turn them into Delta tables")

    # ---- catalog ------------------------------------------------------------------------------
    def refresh_catalog(self) -> Path:
        """Rebuild catalog.duckdb beside the old one and rename it into place.

        Readers holding the old file open keep working (they see the views they opened); the write
        lock is only ever held on a private temporary file, so an analyst's read-only session never
        blocks a flow and a flow never blocks an analyst. On object storage the views need this process's
        Arrow datasets, so there the catalog holds typed empty views and `connect()` is the way in.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".catalog-", suffix=".duckdb")
        os.close(fd)
        os.unlink(tmp)  # duckdb wants to create the file itself
        # written in a storage format the DuckDB CLI that bootstrap installs (duckdb-cli 1.5) can open
        con = duckdb.connect(tmp, config={"storage_compatibility_version": CATALOG_STORAGE_VERSION})
        try:
            for stmt in self._view_statements(persistent=True):
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

    def _view_statements(self, persistent: bool = False, tables: Iterable[str] = TABLES, temp: bool = False) -> list[str]:
        stmts, create = [], "CREATE OR REPLACE TEMP VIEW" if temp else "CREATE OR REPLACE VIEW"
        tables = list(tables)
        for table in tables:
            schema = TABLES[table]
            raw = f"{table}_history" if table in LATEST_BY_KEY else DENSE_VIEWS.get(table, table)
            files = self.files(table)
            # columns added to the schema after every file of the table was written: typed nulls
            written = {f.name for f in self._delta(table).schema().fields} if files else set()
            added = "".join(f", CAST(NULL AS {duckdb_type(table, f.name)}) AS {f.name}" for f in schema if f.name not in written)
            typed = ", ".join(f"TRY_CAST({_renamed_keys(table, c)} AS JSON) AS {c}" for c in json_columns(table) if c in written)
            replace = f" REPLACE ({typed})" if typed else ""
            if files and not self.remote:
                listed = ", ".join("'" + f.as_posix().replace("'", "''") + "'" for f in files)
                body = f"SELECT * EXCLUDE ({BATCH_KEY}){replace}{added} FROM read_parquet([{listed}], union_by_name = true)"
            elif files and not persistent:
                body = f"SELECT * EXCLUDE ({BATCH_KEY}){replace}{added} FROM _delta_{table}"
            else:
                cols = ", ".join(f"CAST(NULL AS {duckdb_type(table, f.name)}) AS {f.name}" for f in schema)
                body = f"SELECT {cols} WHERE false"
            stmts.append(f"{create} {raw} AS {body}")
            if table in LATEST_BY_KEY:
                key, order = LATEST_BY_KEY[table]
                stmts.append(
                    f"{create} {table} AS SELECT * FROM {raw} "
                    f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {order} DESC) = 1"
                )
        # views over several tables (DENSE_VIEWS) come last: they read the views above
        stmts += [f"{create} {table} AS {DENSE_VIEW_SQL[table]}" for table in tables if table in DENSE_VIEWS]
        return stmts


def blob_key(digest: str) -> str:
    """A blob's path inside any lake, local or remote: the same wherever the lake sits."""
    return f"blobs/sha256/{digest[:2]}/{digest[2:4]}/{digest}"


def blob_digest(key: str) -> str:
    """The digest a blob key names; ValueError for anything that is not one (a path elsewhere, `..`)."""
    match = _BLOB_KEY.fullmatch(key or "")
    if not match or match["digest"][:2] != match["a"] or match["digest"][2:4] != match["b"]:
        raise ValueError(f"{key!r} is not a lake blob key (blobs/sha256/<ab>/<cd>/<sha256>)")
    return match["digest"]


_BLOB_KEY = re.compile(r"blobs/sha256/(?P<a>[0-9a-f]{2})/(?P<b>[0-9a-f]{2})/(?P<digest>[0-9a-f]{64})")


def _renamed_keys(table: str, column: str) -> str:
    """The column with its renamed JSON keys (lake.schemas.RENAMED_JSON_KEYS) spelt the new way; JSON text escapes
    quotes inside strings, so `"old":` matches only a key."""
    expr = column
    for old, new in RENAMED_JSON_KEYS.get((table, column), {}).items():
        expr = f"replace({expr}, '\"{old}\":', '\"{new}\":')"
    return expr


# how delta-rs names a table's data files (part-00000-<uuid>-c000.snappy.parquet); the old layout named them by batch
_DELTA_DATA_FILE = re.compile(r"part-\d+-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}-c\d+(?:\.\w+)?\.parquet")


def _batch_key(run_id: str, batch: str | int) -> str:
    """The old layout's file stem, so migrated rows and new writes of the same (run, batch) agree."""
    return f"{_SAFE.sub('_', run_id)}-{_SAFE.sub('_', str(batch))}"


def _s3_for_duckdb(store):
    """pyarrow's S3 filesystem as the fsspec filesystem DuckDB's `register_filesystem` takes, for `s3://`."""
    from fsspec.implementations.arrow import ArrowFSWrapper

    class S3ForDuckDB(ArrowFSWrapper):
        protocol = ("s3",)

    return S3ForDuckDB(store)


def _conform(row: Mapping[str, Any], schema: pa.Schema) -> dict[str, Any]:
    unknown = set(row) - set(schema.names)
    if unknown:
        raise ValueError(f"unknown columns {sorted(unknown)}")
    return {name: row.get(name) for name in schema.names}


def _atomic_write(table: pa.Table, path: Path) -> None:
    """A Parquet file written under a temporary name and renamed into place (exports and reports use it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".parquet.tmp")  # never matched by *.parquet readers
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
