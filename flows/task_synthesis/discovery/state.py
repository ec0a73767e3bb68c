"""Where the live app keeps its data, found at run time: the SQLite file the manifest names, the
browser's storage (localStorage, sessionStorage, IndexedDB, cookies), a JS expression the manifest
gives, and as a last resort the rendered page (lists, tables and cards read as records). Each source
is read as JSON-like values, so one diff says which source an action changed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.exploration.state_diff import SqliteState, diff_snapshots
from sandboxes.manifest import SandboxManifest
from verifier_templates.base import Probe

# The records a person reads on the page: items of lists, rows of tables, cards of boards, each with
# the list's title, its text (controls left out) and its checkbox state when it has one.
RECORDS_JS = r"""(() => {
  const squash = t => (t || '').replace(/\s+/g, ' ').trim();
  const vis = el => { const s = getComputedStyle(el); const r = el.getBoundingClientRect();
    return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 0 && r.height > 0; };
  const textOf = el => { const c = el.cloneNode(true); c.querySelectorAll('button, input, select, textarea, script, style, [role=button]').forEach(x => x.remove()); return squash(c.textContent).slice(0, 120); };
  const heading = el => {
    if (el.id && /^[A-Za-z][\w-]*$/.test(el.id) && el.id.length < 40 && /^(UL|OL|DIV|SECTION|MAIN|TBODY)$/.test(el.tagName)) return el.id.replace(/[-_]+/g, ' ').trim();
    for (let up = el, k = 0; up && up !== document.body && k < 4; up = up.parentElement, k++) {
      const lab = up.getAttribute('aria-label'); if (lab && up !== el) return squash(lab);
      let sib = up.previousElementSibling;
      for (let j = 0; sib && j < 3; sib = sib.previousElementSibling, j++)
        if (/^H[1-6]$/.test(sib.tagName) || sib.tagName === 'HEADER' || /title|header|heading/i.test(typeof sib.className === 'string' ? sib.className : '')) { const t = squash(sib.textContent); if (t && t.length < 60) return t; }
    }
    return el.id ? el.id.replace(/[-_]+/g, ' ').trim() : '';
  };
  const like = el => el.tagName + '.' + [...el.classList].sort().join('.');
  const kidsOf = el => [...el.children].filter(c => !['SCRIPT', 'STYLE', 'TEMPLATE', 'FORM'].includes(c.tagName));
  const containers = new Map();  // container -> which children are its records (null: all of them)
  [...document.querySelectorAll('ul, ol, tbody, table, [role=list], [role=grid], [role=table]')].forEach(el => containers.set(el, null));
  const shapes = new Set();
  [...document.querySelectorAll('body *')].forEach(el => {
    if (containers.has(el)) return;
    const named = el.id || el.classList.length;  // a list of plain children counts when the list itself is named
    const counts = {}; kidsOf(el).forEach(c => { if (c.classList.length || (named && c.children.length <= 3)) counts[like(c)] = (counts[like(c)] || 0) + 1; });
    const best = Object.entries(counts).sort((a, b) => b[1] - a[1])[0];
    if (best && best[1] >= 2) { containers.set(el, best[0]); shapes.add(like(el) + '>' + best[0]); }
  });
  // containers shaped like one found (another board's list with one card or none) are lists too
  [...document.querySelectorAll('body *')].forEach(el => {
    if (containers.has(el)) return;
    for (const sh of shapes) { const [outer, inner] = sh.split('>'); if (like(el) === outer) { containers.set(el, inner); break; } }
  });
  const out = [];
  for (const [c, only] of containers) {
    if (!vis(c) || c.closest('nav, header, footer, select, datalist')) continue;
    const items = c.tagName === 'TABLE' ? [...c.querySelectorAll(':scope > tr, :scope > tbody > tr')] : kidsOf(c).filter(x => !only || like(x) === only);
    if (c.tagName === 'TABLE' && c.querySelector('tbody')) continue;
    const list = heading(c);
    for (const it of items) {
      if (!vis(it) || [...containers.keys()].some(o => o !== c && it.contains(o))) continue;
      if (it.querySelector('a[href]') && !it.querySelector('input, button') && it.querySelectorAll('a[href]').length === 1 && squash(it.textContent) === squash(it.querySelector('a').textContent)) continue;
      const text = textOf(it); if (!text) continue;
      const rec = {list, text};
      const box = it.querySelector('input[type=checkbox], [role=checkbox]');
      if (box) rec.checked = box.checked !== undefined ? !!box.checked : box.getAttribute('aria-checked') === 'true';
      out.push(rec);
    }
  }
  return out;
})()"""

STORAGE_JS = r"""(async () => {
  const parse = v => { try { return JSON.parse(v); } catch (e) { return v; } };
  const out = {};
  for (const [name, store] of [['localStorage', localStorage], ['sessionStorage', sessionStorage]])
    for (let i = 0; i < store.length; i++) { const k = store.key(i); out[name + ':' + k] = parse(store.getItem(k)); }
  if (document.cookie) for (const part of document.cookie.split(';')) { const [k, ...v] = part.trim().split('='); out['cookie:' + k] = decodeURIComponent(v.join('=')); }
  try {
    const dbs = indexedDB.databases ? await Promise.race([indexedDB.databases(), new Promise(r => setTimeout(() => r([]), 500))]) : [];
    for (const d of dbs.slice(0, 5)) {
      const db = await new Promise((res, rej) => { const q = indexedDB.open(d.name); q.onsuccess = () => res(q.result); q.onerror = () => rej(q.error); });
      for (const s of [...db.objectStoreNames].slice(0, 10)) {
        out['indexedDB:' + d.name + '/' + s] = await new Promise(res => { const q = db.transaction(s).objectStore(s).getAll(); q.onsuccess = () => res(q.result.slice(0, 200)); q.onerror = () => res(null); });
      }
      db.close();
    }
  } catch (e) {}
  return out;
})()"""


def items_expression(expression: str) -> str:
    """The state an expression returns, read as items of lists: every array of plain values (card
    texts, option lists) inside it gives one {list, text, at} per value, its list named by the path to
    it, with an enclosing record's id, name or title standing for its index. A board or sortable whose
    state is lists of strings has no record to name, but each card has a list and a place in it."""
    return (
        "(() => { const out = []; const squash = v => String(v).replace(/\\s+/g, ' ').trim();"
        " const nameOf = (x, i) => { for (const k of ['id', 'name', 'title', 'key']) if (x && typeof x[k] === 'string' && x[k].trim()) return x[k].trim(); return String(i); };"
        " const walk = (v, path) => {"
        "  if (Array.isArray(v)) {"
        "   if (v.length && v.every(x => x === null || typeof x !== 'object')) v.forEach((x, i) => out.push({list: path.join('/') || 'list', text: squash(x), at: i}));"
        "   else v.forEach((x, i) => walk(x, [...path, nameOf(x, i)]));"
        "  } else if (v && typeof v === 'object') for (const k of Object.keys(v).slice(0, 200)) walk(v[k], [...path, k]); };"
        f" try {{ walk(({expression}), []); }} catch (e) {{ return null; }} return out; }})()"
    )


def storage_expression(key: str, path: list[Any]) -> str:
    """A JS expression that reads one storage entry (and the records list inside it at `path`)."""
    where, name = key.split(":", 1)
    if where in ("localStorage", "sessionStorage"):
        read = f"JSON.parse({where}.getItem({json.dumps(name)}) || 'null')"
    else:
        return ""  # IndexedDB and cookies are read for discovery; verifiers use the page's records
    steps = "".join(f"?.[{json.dumps(p)}]" for p in path)
    return f"(() => {{ try {{ return ({read}){steps} ?? null; }} catch (e) {{ return null; }} }})()"


def records_path(value: Any, path: list[Any] | None = None) -> list[Any] | None:
    """The path to the first list of records (objects) inside a stored JSON value."""
    path = path or []
    if isinstance(value, list) and (not value or any(isinstance(v, dict) for v in value)):
        return path
    if isinstance(value, dict):
        for k, v in value.items():
            found = records_path(v, [*path, k])
            if found is not None:
                return found
    return None


@dataclass
class Observed:
    """One reading of every source: db (SQLite tables), storage (key -> JSON), manifest (the
    manifest's expression), records (the page's lists)."""

    db: dict[str, Any] | None = None
    storage: dict[str, Any] = field(default_factory=dict)
    manifest: Any = None
    records: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] | None = None  # the manifest's state as items of lists (items_expression)


@dataclass
class StateDiff:
    db: dict[str, Any] = field(default_factory=dict)
    storage: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # key -> (before, after)
    manifest: tuple[Any, Any] | None = None
    records: tuple[list, list] | None = None
    items: tuple[list, list] | None = None

    def __bool__(self) -> bool:
        return bool(self.db or self.storage or self.manifest or self.records)

    def sources(self) -> list[str]:
        return [n for n, v in (("sqlite", self.db), ("storage", self.storage), ("manifest expression", self.manifest),
                               ("page records", self.records)) if v]


class DiscoveredState:
    """Reads every source the app may keep data in, through the driver (SQL file, JS probes)."""

    def __init__(self, manifest: SandboxManifest, driver: Any) -> None:
        self.driver = driver
        self.expression = manifest.state.page_expression()
        self.items_expression = items_expression(self.expression) if self.expression else ""
        path = getattr(getattr(driver, "app", None), "state_path", None) if manifest.state.kind == "sqlite" else None
        self.sqlite = SqliteState(Path(path)) if path else None
        self.found: dict[str, set[str]] = {}  # source -> what in it changed (tables, keys)

    def read(self) -> Observed:
        obs = Observed()
        if self.sqlite is not None:
            obs.db = self.sqlite.read()
        obs.storage = self._js(STORAGE_JS) or {}
        if self.expression:
            obs.manifest = self._js(self.expression)
            obs.items = self._js(self.items_expression)
        obs.records = self._js(RECORDS_JS) or []
        return obs

    def _js(self, expression: str) -> Any:
        try:
            return self.driver.probe(Probe("state", "js", expression))
        except Exception:  # a page without the state (an error page) reads as nothing
            return None

    def diff(self, before: Observed, after: Observed) -> StateDiff:
        d = StateDiff()
        if before.db is not None and after.db is not None:
            d.db = diff_snapshots(before.db, after.db)
            self.found.setdefault("sqlite", set()).update(d.db)
        for k in set(before.storage) | set(after.storage):
            if before.storage.get(k) != after.storage.get(k):
                d.storage[k] = (before.storage.get(k), after.storage.get(k))
                self.found.setdefault("storage", set()).add(k)
        if before.manifest != after.manifest:
            d.manifest = (before.manifest, after.manifest)
            if before.items and after.items and before.items != after.items:
                d.items = (before.items, after.items)
            self.found.setdefault("manifest expression", set()).add("value")
        if before.records != after.records:
            d.records = (before.records, after.records)
            self.found.setdefault("page records", set()).update({r.get("list") or "(untitled list)" for r in after.records + before.records
                                                                 if r not in before.records or r not in after.records})
        return d

    def describe(self) -> str:
        if not self.found:
            return "no state change seen in the SQLite file, browser storage, the manifest's expression or the page's lists"
        return "; ".join(f"{src}: {', '.join(sorted(v)[:6])}" for src, v in self.found.items())
