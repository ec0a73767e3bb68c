"""Data-injection skills: named, parameterised changes that put an app into a known state."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Skill:
    """A skill the coding agent wrote. `sql` skills run statements with named parameters on the app DB."""

    name: str
    sandbox: str
    kind: str  # sql
    description: str
    spec: dict[str, Any] = field(hash=False)

    @property
    def skill_id(self) -> str:
        body = json.dumps([self.sandbox, self.name, self.kind, self.spec], sort_keys=True)
        return f"{self.sandbox}.{self.name}.{hashlib.sha256(body.encode()).hexdigest()[:10]}"


class InjectionError(Exception):
    """A skill could not be applied; the candidate is rejected with `inject_error`."""


def run_sql_skill(db_path: Path, skill: Skill, args: dict[str, Any]) -> None:
    statements = skill.spec.get("statements", [])
    con = sqlite3.connect(db_path, timeout=10)
    try:
        with con:
            for stmt in statements:
                con.execute(stmt, args)
    except sqlite3.Error as exc:
        raise InjectionError(f"skill {skill.name} failed on the app DB: {exc}") from None
    finally:
        con.close()
