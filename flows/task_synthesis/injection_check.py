"""Did an injection take effect? Probes for what a skill claims to have put into the app, and a pure judge.

A skill's claim is read from the skill itself, never from the app: the rows its SQL inserts or updates
(the column each named parameter goes to, or its declared `table` and the arguments that are columns
of it), the records a page-state skill stores, the files a files skill writes. After injection the gate
probes the live app for each claim; a claim the app does not show is `inject_no_effect` (a skill that
writes to the wrong table, a page that overwrites what was stored, a python skill that does nothing).
A skill whose claim cannot be read (a python skill without a declared table) is reported as unchecked.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandboxes.skills import Skill
from verifier_templates.base import Probe, ident, where_clause

_INSERT = re.compile(r"^\s*(?:INSERT|REPLACE)(?:\s+OR\s+\w+)?\s+INTO\s+(\w+)\s*\(([^)]*)\)\s*VALUES\s*\(([^)]*)\)", re.I | re.S)
_UPDATE = re.compile(r"^\s*UPDATE\s+(\w+)\s+SET\s+(.*?)\s+WHERE\s+(.*)$", re.I | re.S)
_ASSIGN = re.compile(r"(\w+)\s*=\s*:(\w+)")


@dataclass(frozen=True)
class Claim:
    """One thing an injection says the app now holds, and the probe that shows it."""

    describe: str
    probe: Probe
    expect: Any  # sql: a count >= 1; page: a list of records that must each appear; file: content sha256


def claims(skill: Skill, args: dict[str, Any], page_expression: str | None, index: int,
           columns_of: Callable[[str], set[str]]) -> list[Claim]:
    """What `skill` run with `args` claims; empty when the claim cannot be read from the skill.
    `columns_of(table)` lists a table's columns in the live app (for skills that only declare a table)."""
    name = f"injected.{index}"
    if skill.kind in ("sql", "python"):
        return _row_claims(skill, args, name, columns_of)
    if skill.kind == "local_storage" and page_expression:
        value = args.get("value")
        records = value if isinstance(value, list) else [value]
        return [Claim(f"{len(records)} record(s) stored by {skill.name}", Probe(name, "js", page_expression), records)]
    if skill.kind == "files":
        out = []
        for i, (path, content) in enumerate(_rendered_files(skill, args).items()):
            out.append(Claim(f"file {path}", Probe(f"{name}.{i}", "file", path), hashlib.sha256(content).hexdigest()))
        return out
    return []


def _row_claims(skill: Skill, args: dict[str, Any], name: str, columns_of: Callable[[str], set[str]]) -> list[Claim]:
    out: list[Claim] = []
    for i, stmt in enumerate(skill.spec.get("statements", []) if skill.kind == "sql" else []):
        where = _statement_where(stmt, args)
        if where is not None:
            out.append(_count_claim(f"{name}.{i}", where[0], where[1]))
    if out:
        return out
    table = skill.spec.get("table")
    if isinstance(table, str) and re.fullmatch(r"\w+", table) and args:  # a declared table: its columns among the args
        columns = columns_of(table)
        cols = {k: v for k, v in args.items() if k in columns}
        return [_count_claim(name, table, cols)] if cols else [_count_claim(name, table, {}, absent_table=not columns)]
    return []


def _statement_where(stmt: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    m = _INSERT.match(stmt)
    if m:
        cols = [c.strip() for c in m.group(2).split(",")]
        vals = [v.strip() for v in m.group(3).split(",")]
        if len(cols) != len(vals):
            return None
        where = {c: args[v[1:]] for c, v in zip(cols, vals) if v.startswith(":") and v[1:] in args}
        return (m.group(1), where) if where else None
    m = _UPDATE.match(stmt)
    if m:
        where = {c: args[p] for c, p in _ASSIGN.findall(m.group(2) + " " + m.group(3)) if p in args}
        return (m.group(1), where) if where else None
    return None


def _count_claim(name: str, table: str, where: dict[str, Any], absent_table: bool = False) -> Claim:
    ident(table)
    if absent_table:  # the app has no such table: nothing injected there can be shown
        return Claim(f"rows in {table} (no such table in the app)", Probe(name, "sql", "SELECT 0"), 1)
    clause, qargs = where_clause(where)
    described = ", ".join(f"{k}={v!r}" for k, v in sorted(where.items()))
    return Claim(f"a row in {table} with {described}", Probe(name, "sql", f"SELECT count(*) FROM {table} WHERE {clause}", qargs), 1)


def _rendered_files(skill: Skill, args: dict[str, Any]) -> dict[str, bytes]:
    from string import Template

    files = skill.spec.get("files") or {}
    try:
        return {Template(p).substitute(args): Template(c).substitute(args).encode() for p, c in files.items()}
    except (KeyError, ValueError):
        return {}


def unmet(claim: Claim, observed: Any) -> str | None:
    """None when the app shows the claim, else what is missing (pure)."""
    if claim.probe.kind == "sql":
        return None if isinstance(observed, int) and observed >= claim.expect else f"{claim.describe}: not in the app ({observed!r} rows)"
    if claim.probe.kind == "file":
        ok = isinstance(observed, dict) and observed.get("exists") and observed.get("sha256") in (None, claim.expect)
        return None if ok else f"{claim.describe}: not in the workspace as written"
    state = observed if isinstance(observed, list) else [observed]
    missing = [r for r in claim.expect if not any(_same_record(r, s) for s in state)]
    if missing:
        return f"{claim.describe}: {len(missing)} not in the app's state, e.g. {json.dumps(missing[0], default=str)[:120]}"
    return None


def _same_record(injected: Any, shown: Any) -> bool:
    if isinstance(injected, dict) and isinstance(shown, dict):
        shared = set(injected) & set(shown)
        return bool(shared) and all(injected[k] == shown[k] for k in shared)
    return injected == shown
