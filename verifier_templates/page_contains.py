"""The final page shows a text (case-insensitive, whitespace-normalised)."""

from __future__ import annotations

import re
from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict

NAME = "page_contains"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    return [Probe("text", "page_text")]


def _squash(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip().casefold()


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    text = evidence.final.get("text")
    if not isinstance(text, str):
        return Verdict(False, f"no page text observed (got {type(text).__name__})")
    if _squash(params["text"]) in _squash(text):
        return Verdict(True, f"page shows {params['text']!r}")
    return Verdict(False, f"page does not show {params['text']!r}")
