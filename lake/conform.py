"""Fit a whole Arrow table to a lake schema at once: column casts are vectorised, and only the rows a cast
refuses are set aside (with the reason), found by halving the failing chunk instead of trying every row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_CHUNK = 8192  # rows cast together when a column's cast fails somewhere: the search for bad rows starts here
_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, ValueError)


def conform_table(table: pa.Table, schema: pa.Schema) -> tuple[pa.Table, list[tuple[dict[str, Any], str]]]:
    """(rows that fit `schema`, cast to it; [(bad row, reason), ...]).

    Columns the schema lacks make every row bad (like `Lake.write`, which refuses such rows); columns the
    table lacks are nulls. Timestamps may lose sub-microsecond digits (the lake keeps microseconds); any
    other lossy cast (overflow, a fraction into an integer, text that is not a number) refuses the row.
    """
    unknown = sorted(set(table.column_names) - set(schema.names))
    if unknown:
        reason = f"schema_mismatch: unknown columns {unknown}"
        return schema.empty_table(), [(row, reason) for row in table.to_pylist()]
    n = table.num_rows
    bad_reason: dict[int, str] = {}
    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(n, field.type))
            continue
        column = table[field.name]
        try:
            columns.append(_cast(column, field.type))
        except _CAST_ERRORS as exc:
            if not _castable(column.type, field.type):
                reason = (
                    f"schema_mismatch: column {field.name}: cannot cast {column.type} to {field.type} ({exc})"
                )
                return schema.empty_table(), [(row, reason) for row in table.to_pylist()]
            for row, err in _bad_rows(column, field.type, 0):
                bad_reason.setdefault(row, f"schema_mismatch: column {field.name}: {err}")
            columns.append(None)  # cast again once the bad rows are gone
    if not bad_reason:
        return pa.Table.from_arrays(columns, schema=schema), []
    bad_rows = sorted(bad_reason)
    mask = np.ones(n, dtype=bool)
    mask[bad_rows] = False
    keep = pa.array(mask)
    good = table.filter(keep)
    fitted = [
        col.filter(keep) if col is not None else _cast(good[field.name], field.type)
        for col, field in zip(columns, schema)
    ]
    rejected = table.take(pa.array(bad_rows)).to_pylist()
    return pa.Table.from_arrays(fitted, schema=schema), [
        (row, bad_reason[i]) for i, row in zip(bad_rows, rejected)
    ]


def _cast(column: pa.ChunkedArray | pa.Array, target: pa.DataType) -> pa.ChunkedArray | pa.Array:
    if column.type == target:
        return column
    truncate = pa.types.is_timestamp(column.type) and pa.types.is_timestamp(target)
    return pc.cast(column, options=pc.CastOptions(target, allow_time_truncate=truncate))


def _castable(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether Arrow casts this type pair at all (an empty column tells without touching data)."""
    try:
        _cast(pa.array([], type=source), target)
        return True
    except _CAST_ERRORS:
        return False


def _bad_rows(column: pa.ChunkedArray | pa.Array, target: pa.DataType, offset: int) -> list[tuple[int, str]]:
    """Indexes (from `offset`) of the rows whose cast fails, with the error: chunks that cast are skipped
    whole, failing ones are halved until single rows remain."""
    n = len(column)
    if n > _CHUNK:
        out = []
        for start in range(0, n, _CHUNK):
            out += _bad_rows(column.slice(start, _CHUNK), target, offset + start)
        return out
    try:
        _cast(column, target)
        return []
    except _CAST_ERRORS as exc:
        if n == 1:
            return [(offset, str(exc))]
    half = n // 2
    return _bad_rows(column.slice(0, half), target, offset) + _bad_rows(
        column.slice(half), target, offset + half
    )
