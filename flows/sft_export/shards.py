"""Streaming, size-capped zstd Parquet shards: rows go in one at a time, at most one row group is held.

A shard closes after the row group that takes it (with its footer) to `max_bytes` or past it, so a shard is
at most one row group over the cap. Row groups close at `row_group_rows` rows or `row_group_bytes` (the caller's
estimate of a row's size, dominated by embedded images). Nothing here depends on time or randomness: the
same rows in the same order give byte-identical files. Shards are written as `part-N.parquet` and renamed
at the end to the Hugging Face convention `train-00000-of-00003.parquet`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 1000
ROW_GROUP_BYTES = 32 * 1024 * 1024
FOOTER_BYTES_PER_CHUNK = 130  # footer metadata per column chunk, so the cap holds for the whole file


def _leaves(t: pa.Schema | pa.DataType) -> int:
    if isinstance(t, pa.Schema):
        return sum(_leaves(f.type) for f in t)
    if pa.types.is_struct(t):
        return sum(_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaves(t.value_type)
    return 1


@dataclass(frozen=True)
class Shard:
    path: str  # relative to the export's folder
    rows: int
    bytes: int
    sha256: str


class ShardWriter:
    def __init__(
        self,
        folder: Path,
        schema: pa.Schema,
        max_bytes: int,
        row_group_rows: int = ROW_GROUP_ROWS,
        row_group_bytes: int = ROW_GROUP_BYTES,
    ) -> None:
        self.folder, self.schema, self.max_bytes = folder, schema, max_bytes
        self.row_group_rows, self.row_group_bytes = row_group_rows, row_group_bytes
        self.folder.mkdir(parents=True, exist_ok=True)
        self._rows: list[dict[str, Any]] = []
        self._buffered = 0
        self._parts: list[tuple[Path, int]] = []
        self._sink: pa.NativeFile | None = None
        self._writer: pq.ParquetWriter | None = None
        self._shard_rows = 0
        self._groups = 0
        self._footer_per_group = FOOTER_BYTES_PER_CHUNK * _leaves(schema)
        self.rows = 0

    def add(self, row: dict[str, Any], approx_bytes: int = 1024) -> None:
        self._rows.append(row)
        self._buffered += approx_bytes
        if len(self._rows) >= self.row_group_rows or self._buffered >= self.row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        if self._writer is None:
            path = self.folder / f"part-{len(self._parts):05d}.parquet"
            self._sink = pa.OSFile(str(path), "wb")
            self._writer = _parquet_writer(self._sink, self.schema)
            self._parts.append((path, 0))
        table = pa.Table.from_pylist(self._rows, schema=self.schema)
        self._writer.write_table(table)
        self._shard_rows += table.num_rows
        self._groups += 1
        self.rows += table.num_rows
        self._rows, self._buffered = [], 0
        if self._sink.tell() + self._groups * self._footer_per_group >= self.max_bytes:
            self._close_shard()

    def _close_shard(self) -> None:
        self._writer.close()
        self._sink.close()
        self._parts[-1] = (self._parts[-1][0], self._shard_rows)
        self._writer, self._sink, self._shard_rows, self._groups = None, None, 0, 0

    def close(self) -> list[Shard]:
        """Flush, close, rename to train-i-of-n and hash every shard. An empty export has one empty shard."""
        self._flush()
        if self._writer is None and not self._parts:
            self._writer = _parquet_writer(str(self.folder / "part-00000.parquet"), self.schema)
            self._parts.append((self.folder / "part-00000.parquet", 0))
            self._writer.close()
            self._writer = None
        if self._writer is not None:
            self._close_shard()
        n = len(self._parts)
        shards = []
        for i, (part, rows) in enumerate(self._parts):
            final = self.folder / f"train-{i:05d}-of-{n:05d}.parquet"
            part.rename(final)
            shards.append(Shard(f"{self.folder.name}/{final.name}", rows, final.stat().st_size, file_sha256(final)))
        return shards


def _parquet_writer(where, schema: pa.Schema) -> pq.ParquetWriter:
    """zstd; min/max statistics only on numbers, booleans and short key strings (the min/max of long texts
    would be copied into the footer once per row group)."""
    keys = {"id", "trajectory_id", "task_id", "sandbox", "family", "difficulty", "policy", "verdict"}
    stats = [f.name for f in schema if (pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
                                        or pa.types.is_boolean(f.type) or f.name in keys)]
    return pq.ParquetWriter(where, schema, compression="zstd", write_statistics=stats)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
