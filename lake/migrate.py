"""`flywheel lake migrate`: turn a lake of the old file-per-batch layout (`tables/<table>/<run>-<batch>.parquet`)
into Delta tables, in one command, without losing a row.

Each table is built beside the old folder (`tables/.<table>.migrating/`, one commit holding every old file's
rows, each keyed by its old file stem, so a later retry of the same (run, batch) still replaces them), then
swapped in by two renames; the old files are kept under `legacy/<table>/` until the user deletes them. A
migration killed half-way is finished by running it again. Run it while no flow writes to the lake.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import write_deltalake

from lake.schemas import TABLES
from lake.store import BATCH_KEY, Lake


def legacy_tables(lake: Lake) -> list[str]:
    return sorted(t for t in TABLES if _legacy_files(lake.tables_dir / t) or _half_done(lake, t))


def migrate(lake: Lake) -> dict[str, int]:
    """Rows migrated per table that had the old layout."""
    if lake.remote:
        raise ValueError("lake migrate works on a local lake folder; migrate it there, then copy the folder to object storage")
    done = {}
    for table in legacy_tables(lake):
        done[table] = _migrate_table(lake, table)
    return done


def _legacy_files(folder: Path) -> list[Path]:
    return [] if (folder / "_delta_log").is_dir() else sorted(folder.glob("*.parquet"))


def _half_done(lake: Lake, table: str) -> bool:
    return (lake.tables_dir / f".{table}.migrating" / "_delta_log").is_dir() and not (lake.tables_dir / table).exists()


def _migrate_table(lake: Lake, table: str) -> int:
    folder, building = lake.tables_dir / table, lake.tables_dir / f".{table}.migrating"
    legacy = lake.root / "legacy" / table
    if _half_done(lake, table):  # killed between the two renames: the Delta table is complete
        building.rename(folder)
        return 0
    files = _legacy_files(folder)
    schema = TABLES[table]
    parts = [_conform(pq.read_table(f), schema).append_column(BATCH_KEY, pa.array([f.stem] * pq.read_metadata(f).num_rows, pa.string()))
             for f in files]
    shutil.rmtree(building, ignore_errors=True)  # a build a killed run left
    rows = pa.concat_tables(parts)
    write_deltalake(building.as_posix(), rows, mode="append")
    if legacy.exists():
        shutil.rmtree(legacy)
    legacy.parent.mkdir(parents=True, exist_ok=True)
    folder.rename(legacy)
    building.rename(folder)
    return rows.num_rows


def _conform(old: pa.Table, schema: pa.Schema) -> pa.Table:
    """An old file in today's schema: columns it lacks are nulls; a column the schema dropped is refused."""
    unknown = sorted(set(old.column_names) - set(schema.names))
    if unknown:
        raise ValueError(f"old file has columns {unknown} that lake.schemas no longer has; add them back or drop them first")
    n = old.num_rows
    return pa.Table.from_arrays(
        [old[f.name].cast(f.type) if f.name in old.column_names else pa.nulls(n, f.type) for f in schema], schema=schema)
