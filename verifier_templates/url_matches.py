"""The browser ends on a URL matching a regex (navigation and search tasks)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote_plus

from verifier_templates.base import Evidence, Probe, Verdict

NAME = "url_matches"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    re.compile(params["pattern"])
    return [Probe("url", "url")]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    url = evidence.final.get("url")
    if not isinstance(url, str):
        return Verdict(False, f"no URL observed (got {url!r})")
    if re.search(params["pattern"], unquote_plus(url), flags=re.IGNORECASE):
        return Verdict(True, f"URL {url} matches {params['pattern']}")
    return Verdict(False, f"URL {url} does not match {params['pattern']}")
