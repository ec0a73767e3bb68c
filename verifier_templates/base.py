"""The verifier contract: probes say what to observe, a pure judge decides and says why."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

# file: a workspace file's content and hash (container sandboxes) or an app file (Android);
# content: an Android content provider query; prefs: an Android app's shared preferences
ProbeKind = Literal["sql", "url", "page_text", "js", "answer", "file", "content", "prefs"]
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Probe:
    """One observation: SQL on the app DB, the URL, the page text, a JS expression, or the final answer."""

    name: str
    kind: ProbeKind
    query: str = ""  # SQL text or JS expression
    args: tuple[Any, ...] = ()
    shape: Literal["scalar", "rows"] = "scalar"  # SQL: first cell, or every row as a list


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str


@dataclass
class Evidence:
    """Probe values after injection (`initial`) and at the end of the episode (`final`)."""

    initial: dict[str, Any] = field(default_factory=dict)
    final: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"initial": self.initial, "final": self.final}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(initial=dict(data.get("initial", {})), final=dict(data.get("final", {})))


class VerifierTemplate(Protocol):
    NAME: str
    HOLDS_INITIALLY: bool  # True when the goal may already hold after injection (rare)

    def probes(self, params: dict[str, Any]) -> list[Probe]: ...

    def judge(self, evidence: Evidence, params: dict[str, Any]) -> Verdict: ...


def ident(name: str) -> str:
    """A SQL identifier taken from params, refused unless it is a plain name (no injection)."""
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return name


def where_clause(where: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    """`col = ?` conditions; text compares trimmed and case-insensitively, None as IS NULL."""
    parts, args = [], []
    for col, value in sorted(where.items()):
        c = ident(col)
        if value is None:
            parts.append(f"{c} IS NULL")
        elif isinstance(value, str):
            parts.append(f"lower(trim(CAST({c} AS TEXT))) = lower(trim(?))")
            args.append(value)
        else:
            parts.append(f"{c} = ?")
            args.append(value)
    return (" AND ".join(parts) or "1 = 1"), tuple(args)


def normalise(value: Any) -> str:
    """Comparable text: trimmed, case-folded, numbers without currency, separators or trailing zeros."""
    text = str(value).strip().casefold()
    number = re.fullmatch(r"[$€£]?\s*(-?[\d,]*\.?\d+)\s*%?", text)
    if number:
        try:
            f = float(number.group(1).replace(",", ""))
            return str(int(f)) if f == int(f) else repr(f)
        except ValueError:
            pass
    return re.sub(r"\s+", " ", text)
