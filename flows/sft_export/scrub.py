"""Secrets and PII out of exported text: API keys, card numbers, emails, phone numbers, each replaced by a
typed placeholder ([SECRET], [CARD], [EMAIL], [PHONE]) and counted per kind and per field.

Placeholders keep a trajectory consistent: the request and the text typed for it get the same token.
Screenshots are not scrubbed (no OCR); the dataset card says so. The same patterns are the quality gate's
"no PII left" expectations (lake/quality.py), so whatever slips past the scrubber fails the gate.
"""

from __future__ import annotations

import re
from collections import Counter

# Order matters: a secret or a card number is not read as a phone number. No look-behind: the gate runs the
# same patterns through pandas, which hands RE2-compatible ones to Arrow's fast regex engine.
PII_PATTERNS: dict[str, str] = {
    "secret": (
        r"(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
        r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
        r"|[Bb]earer\s+[A-Za-z0-9._~+/-]{20,})"
    ),
    "card": r"\b(?:\d[ -]?){12,18}\d\b",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    "phone": r"(?:\+\d{1,3}(?:[ .-]?\d{2,5}){2,5}|\(\d{3}\)[ .-]?\d{3}[ .-]?\d{4}|\b\d{3}[ .-]?\d{3}[ .-]?\d{4})\b",
}
PLACEHOLDERS = {kind: f"[{kind.upper()}]" for kind in PII_PATTERNS}
_COMPILED = [(kind, re.compile(p)) for kind, p in PII_PATTERNS.items()]


class Scrubber:
    """Replaces PII in strings and counts what it replaced, as {(kind, field): n}."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def __call__(self, text: str | None, field: str) -> str | None:
        if not text:
            return text
        for kind, pattern in _COMPILED:
            text, n = pattern.subn(PLACEHOLDERS[kind], text)
            if n:
                self.counts[(kind, field)] += n
        return text

    def report(self) -> dict[str, dict[str, int]]:
        """{kind: {field: n}} for the card and the summary, every kind listed (zeros too)."""
        out: dict[str, dict[str, int]] = {kind: {} for kind in PII_PATTERNS}
        for (kind, field), n in sorted(self.counts.items()):
            out[kind][field] = n
        return out
