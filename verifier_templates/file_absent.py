"""A workspace path no longer exists (a file deleted, or moved away under a new name)."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict

NAME = "file_absent"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    return [Probe("file", "file", params["path"])]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    seen = evidence.final.get("file")
    if not isinstance(seen, dict):
        return Verdict(False, f"no observation of {params['path']} (got {seen!r})")
    if seen.get("exists"):
        return Verdict(False, f"{params['path']} still exists")
    return Verdict(True, f"{params['path']} is gone")
