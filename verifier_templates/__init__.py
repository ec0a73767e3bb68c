"""Verifier templates: an explicit registry; each template ships pass and fail fixtures."""

from __future__ import annotations

import difflib
from types import ModuleType

from verifier_templates import (
    all_of,
    answer_equals,
    code,
    count_changed,
    csv_cell_equals,
    field_equals,
    file_absent,
    file_contains,
    js_state_matches,
    json_field_equals,
    page_contains,
    row_absent,
    row_exists,
    url_matches,
)
from verifier_templates.base import Evidence, Probe, Verdict

TEMPLATES: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        row_exists, row_absent, field_equals, count_changed, url_matches, page_contains, answer_equals,
        all_of, js_state_matches, code, file_contains, file_absent, csv_cell_equals, json_field_equals,
    )
}


def get_template(name: str) -> ModuleType:
    try:
        return TEMPLATES[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(TEMPLATES), n=3)
        raise KeyError(f"unknown verifier template {name!r}; close: {close or sorted(TEMPLATES)}") from None


__all__ = ["TEMPLATES", "Evidence", "Probe", "Verdict", "get_template"]
