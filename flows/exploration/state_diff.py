"""What an action changed in the app's state: DB rows for sandboxes whose state is a SQLite file, the
page's own state (a JS expression, localStorage, else the page text) for the rest."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Protocol

from sandboxes.driver import Driver
from sandboxes.manifest import SandboxManifest
from verifier_templates.base import Probe

MAX_ROWS_KEPT = 20  # per table and change kind; counts are always complete


class StateReader(Protocol):
    kind: str

    def read(self) -> Any: ...

    def diff(self, before: Any, after: Any) -> dict[str, Any]: ...


def state_reader(manifest: SandboxManifest, driver: Driver) -> StateReader:
    if manifest.state.kind == "sqlite":
        path = getattr(getattr(driver, "app", None), "state_path", None)
        return SqliteState(Path(path)) if path else SqliteProbeState(driver)
    return PageState(manifest, driver)


# ---- SQLite ----------------------------------------------------------------------------------------
Snapshot = dict[str, dict[str, Any]]  # table -> {"columns": [...], "rows": {rowid: tuple}}


class SqliteState:
    """Reads the app's DB file; the header's change counter (bytes 24..28, bumped by every write
    transaction in rollback-journal mode) lets a read with no write in between cost one 100-byte read."""

    kind = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._key: tuple | None = None
        self._snapshot: Snapshot = {}

    def _change_key(self) -> tuple:
        st = self.path.stat()
        with open(self.path, "rb") as fh:
            header = fh.read(100)
        return header[24:28], st.st_size, st.st_mtime_ns

    def read(self) -> Snapshot:
        key = self._change_key()
        if key != self._key:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
            try:
                self._snapshot = _read_tables(lambda sql: con.execute(sql).fetchall())
            finally:
                con.close()
            self._key = key  # taken before the read: a write during it shows as a change next time
        return self._snapshot

    def diff(self, before: Snapshot, after: Snapshot) -> dict[str, Any]:
        return diff_snapshots(before, after)


class SqliteProbeState(SqliteState):
    """The same rows through the driver's SQL probes, for drivers that do not expose the file."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver

    def read(self) -> Snapshot:
        return _read_tables(lambda sql: self.driver.probe(Probe("rows", "sql", sql, shape="rows")))


def _read_tables(fetch) -> Snapshot:
    out: Snapshot = {}
    tables = [r[0] for r in fetch("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    for t in tables:
        cols = [r[1] for r in fetch(f"PRAGMA table_info('{t}')")]
        rows = fetch(f'SELECT rowid, * FROM "{t}"')
        out[t] = {"columns": cols, "rows": {r[0]: tuple(r[1:]) for r in rows}}
    return out


def diff_snapshots(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    """{table: {inserted, deleted, updated, counts}}; only tables that changed."""
    out: dict[str, Any] = {}
    for table, now in after.items():
        was = before.get(table, {"rows": {}})
        cols = now["columns"]
        old, new = was["rows"], now["rows"]
        if old is new or old == new:
            continue
        inserted = [dict(zip(cols, new[k])) for k in new.keys() - old.keys()]
        deleted = [dict(zip(cols, old[k])) for k in old.keys() - new.keys()]
        updated = []
        for k in new.keys() & old.keys():
            if new[k] != old[k]:
                changes = {c: [a, b] for c, a, b in zip(cols, old[k], new[k]) if a != b}
                updated.append({"row": dict(zip(cols, new[k])), "changes": changes})
        out[table] = {
            "counts": {"inserted": len(inserted), "deleted": len(deleted), "updated": len(updated)},
            "inserted": sorted(inserted, key=_row_key)[:MAX_ROWS_KEPT],
            "deleted": sorted(deleted, key=_row_key)[:MAX_ROWS_KEPT],
            "updated": sorted(updated, key=lambda u: _row_key(u["row"]))[:MAX_ROWS_KEPT],
        }
    return out


def _row_key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


# ---- page state ------------------------------------------------------------------------------------
class PageState:
    """The state a static web app keeps in the page: the manifest's page expression (a JS expression,
    or the localStorage key it names), else the page's visible text."""

    kind = "page"

    def __init__(self, manifest: SandboxManifest, driver: Driver) -> None:
        self.driver = driver
        self.expression = manifest.state.page_expression()
        self.probe = Probe("state", "js", self.expression) if self.expression else Probe("state", "page_text")

    def read(self) -> Any:
        try:
            value = self.driver.probe(self.probe)
        except Exception as exc:  # a page without the state (an error page) is an observation too
            return {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
        return value

    def diff(self, before: Any, after: Any) -> dict[str, Any]:
        if before == after:
            return {}
        if self.probe.kind == "page_text":
            old, new = set(str(before).splitlines()), set(str(after).splitlines())
            return {"page_text": {"added": sorted(new - old)[:MAX_ROWS_KEPT], "removed": sorted(old - new)[:MAX_ROWS_KEPT]}}
        return {"page_state": {"before": before, "after": after, "changes": _json_changes(before, after)}}


def _json_changes(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """Leaf-level changes between two JSON values, as (path, before, after)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for k in sorted(set(before) | set(after), key=str):
            out += _json_changes(before.get(k), after.get(k), f"{path}.{k}" if path else str(k))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for i, (a, b) in enumerate(zip(before, after)):
            out += _json_changes(a, b, f"{path}[{i}]")
        return out
    return [] if before == after else [{"path": path, "before": before, "after": after}]
