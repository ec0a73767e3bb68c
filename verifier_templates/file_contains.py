"""A workspace file exists and contains every expected text (a file written, converted or appended to)."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict

NAME = "file_contains"
HOLDS_INITIALLY = False


def _expected(params: dict[str, Any]) -> list[str]:
    texts = params.get("texts") or [params["text"]]
    return [t.replace("\r\n", "\n") for t in texts]


def probes(params: dict[str, Any]) -> list[Probe]:
    _expected(params)
    return [Probe("file", "file", params["path"])]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    seen = evidence.final.get("file")
    if not isinstance(seen, dict) or not seen.get("exists") or seen.get("is_dir"):
        return Verdict(False, f"{params['path']} does not exist")
    text = seen.get("text")
    if not isinstance(text, str):
        return Verdict(False, f"{params['path']} is not a text file")
    text = text.replace("\r\n", "\n")
    missing = [t for t in _expected(params) if t not in text]
    if missing:
        return Verdict(False, f"{params['path']} lacks {missing[0]!r}" + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""))
    return Verdict(True, f"{params['path']} contains the {len(_expected(params))} expected text(s)")
