"""A valid value for a form field, chosen the way a person would: by its type, its constraints
(required, pattern, min/max, length) and the options it offers; seeded, so a task replays."""

from __future__ import annotations

import random
import re
from typing import Any

from flows.task_synthesis.discovery.page_scan import FieldInfo
from flows.task_synthesis.values import _ascii, person, value_for

_PLACEHOLDER_OPTION = re.compile(r"^\s*(?:[-—–]+|choose|select|pick|please|none)\b", re.I)


def column_of(field: FieldInfo) -> str:
    """The field as a column-like name (`Email address` -> `email_address`), for value_for's vocabulary."""
    words = field.name or field.label
    return re.sub(r"\W+", "_", re.sub(r"([a-z])([A-Z])", r"\1_\2", words).casefold()).strip("_")


def real_options(field: FieldInfo) -> list[dict[str, str]]:
    return [o for o in field.options if (o.get("value") or "").strip() and not _PLACEHOLDER_OPTION.match(o.get("label", ""))]


def value_for_field(field: FieldInfo, rng: random.Random, app_values: list[str] | None = None) -> str | None:
    """Text to type (or the option label to pick) for a text-like field or a select; None when no
    valid value is known (the caller leaves the field alone)."""
    if field.role in ("combobox", "listbox") and field.type == "select":
        options = real_options(field)
        return rng.choice(options)["label"] if options else None
    if field.options:  # a text field with a datalist: the app's own values
        options = real_options(field)
        if options:
            return rng.choice(options)["value"]
    ty, col = field.type, column_of(field)
    shaped = _like_current(field.value, rng) if ty in ("text", "search", "textarea", "") and not field.pattern else None
    if shaped is not None:  # a filled field's value says what the app takes there (a colour, a number, a date)
        return shaped
    if ty in ("date", "datetime-local", "month", "week", "time"):
        return _temporal(ty, field, rng)
    if ty in ("number", "range"):
        return _number(field, rng)
    if ty == "email":
        text = str(value_for("email", "", "email", rng))
    elif ty == "tel":
        text = f"555{rng.randint(1000000, 9999999)}"
    elif ty == "url":
        text = f"https://example.com/{rng.choice(['notes', 'plans', 'team', 'docs'])}{rng.randint(10, 99)}"
    elif ty == "password":
        text = f"Tr0ub4dor-{rng.randint(1000, 9999)}"
    elif app_values:  # a search: for something the page lists
        text = rng.choice(app_values)
    elif _ACCOUNT_NAME.search(col):  # a user name is one word (apps refuse spaces there)
        first, last = person(rng)
        text = re.sub(r"[^a-z0-9]", "", _ascii(f"{first}{last}").casefold()) + str(rng.randint(10, 99))
    else:
        text = str(value_for(col, "", "text", rng))
    if field.pattern:
        text = _matching(field.pattern, text, rng)
    if field.maxlength and len(text) > field.maxlength:
        text = text[: field.maxlength].rstrip()
    if field.minlength and len(text) < field.minlength:
        text = (text + " " + "x" * field.minlength)[: max(field.minlength, len(text))]
    return text


_ACCOUNT_NAME = re.compile(r"(^|_)(user_?name|login|handle|nickname|slug)($|_)")
_HEX = re.compile(r"(#?)([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})")
_INT = re.compile(r"-?\d{1,6}")
_DECIMAL = re.compile(r"-?\d{1,6}\.(\d{1,4})")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _like_current(value: str, rng: random.Random) -> str | None:
    """Another value of the shape the field holds now, or None when its value has no recognisable shape
    (empty, or words: those get words). A hex colour stays a hex colour of the same width and case, a
    whole number stays a whole number of about its size, a decimal keeps its places, a date stays a date."""
    v = value.strip()
    if not v:
        return None
    if _INT.fullmatch(v):
        n = int(v)
        hi = 255 if 0 <= n <= 255 else 100 if 0 <= n <= 100 else max(abs(n) * 2, 10)
        lo = 0 if n >= 0 else -hi
        return str(rng.choice([k for k in range(lo, hi + 1) if k != n] or [n + 1]))
    if m := _DECIMAL.fullmatch(v):
        places, n = len(m.group(1)), float(v)
        hi = 1.0 if 0 <= n <= 1 else abs(n) * 2 or 1.0
        return f"{rng.uniform(0, hi):.{places}f}"
    if (m := _HEX.fullmatch(v)) and (m.group(1) or any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        digits = "".join(rng.choice("0123456789ABCDEF") for _ in m.group(2))
        return m.group(1) + (digits.lower() if m.group(2).islower() else digits)
    if _ISO_DATE.fullmatch(v):
        return f"{v[:4]}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return None


def _number(field: FieldInfo, rng: random.Random) -> str:
    lo = _float(field.min, 1.0)
    hi = _float(field.max, max(lo + 1, 40.0 if lo < 40 else lo + 40))
    step = _float(field.step, 1.0) if field.step not in ("", "any") else 1.0
    count = max(0, int((hi - lo) // step))
    value = lo + step * rng.randint(min(1, count), count) if count else lo
    return str(int(value)) if value == int(value) else f"{value:g}"


def _float(text: str, default: float) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return default


def _temporal(ty: str, field: FieldInfo, rng: random.Random) -> str:
    lo, hi = field.min, field.max
    year = 2026
    if lo[:4].isdigit():
        year = max(year, int(lo[:4]))
    if hi[:4].isdigit():
        year = min(year, int(hi[:4]))
    month, day = rng.randint(1, 12), rng.randint(1, 28)
    date = f"{year}-{month:02d}-{day:02d}"
    if lo and ty == "date" and date < lo:
        date = lo
    if hi and ty == "date" and date > hi:
        date = hi
    hour, minute = rng.randint(9, 17), rng.choice([0, 15, 30, 45])
    if ty == "time":
        return f"{hour:02d}:{minute:02d}"
    if ty == "datetime-local":
        return f"{date}T{hour:02d}:{minute:02d}"
    if ty == "month":
        return date[:7]
    if ty == "week":
        return f"{year}-W{rng.randint(10, 50):02d}"
    return date


def _matching(pattern: str, text: str, rng: random.Random) -> str:
    """A value the field's HTML pattern accepts: the plausible text when it already matches, else a
    value built from the pattern's simple shapes (digits, letters, fixed characters, counts)."""
    try:
        if re.fullmatch(pattern, text):
            return text
    except re.error:
        return text
    built = _from_pattern(pattern, rng)
    try:
        return built if built is not None and re.fullmatch(pattern, built) else text
    except re.error:
        return text


_CLASS = {r"\d": "0123456789", "[0-9]": "0123456789", "[A-Z]": "ABCDEFGHJKLMNPRSTUVWXYZ", "[a-z]": "abcdefghijkmnprstuvwxyz",
          "[A-Za-z]": "ABCDEFGHabcdefgh", "[a-zA-Z]": "ABCDEFGHabcdefgh", r"\w": "abcdefgh", ".": "abcdefgh"}
_ATOM = re.compile(r"(\\d|\\w|\[[^\]]+\]|\.|\\.|[^\\\[\](){}?*+|^$])(\{(\d+)(?:,(\d*))?\}|[+*?])?")


def _from_pattern(pattern: str, rng: random.Random) -> str | None:
    p = pattern.strip("^$")
    if any(c in p for c in "|()"):
        return None
    out, pos = [], 0
    while pos < len(p):
        m = _ATOM.match(p, pos)
        if not m:
            return None
        atom, quant, lo, hi = m.group(1), m.group(2), m.group(3), m.group(4)
        if atom in _CLASS:
            chars = _CLASS[atom]
        elif atom.startswith("["):
            chars = _expand(atom[1:-1])
            if not chars:
                return None
        else:
            chars = atom[-1]
        n = int(lo) if lo else {"+": 3, "*": 2, "?": 1}.get(quant or "", 1)
        if hi:
            n = max(n, min(int(hi), n + 2))
        out.append("".join(rng.choice(chars) for _ in range(n)))
        pos = m.end()
    return "".join(out)


def _expand(body: str) -> str:
    if body.startswith("^"):
        return ""
    chars, i = [], 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            chars += [chr(c) for c in range(ord(body[i]), ord(body[i + 2]) + 1)]
            i += 3
        else:
            chars.append(body[i])
            i += 1
    return "".join(chars)


def fill_action(field: FieldInfo, rng: random.Random, app_values: list[str] | None = None) -> tuple[dict[str, Any], str] | None:
    """(the action that fills the field, the value as a person says it), or None to leave it."""
    if field.type == "checkbox" or field.role in ("checkbox", "switch"):
        return {"action": "check", "target": field.target, "checked": True}, "yes"
    if field.type == "radio":
        return {"action": "check", "target": field.target, "checked": True}, field.label
    value = value_for_field(field, rng, app_values)
    if value is None:
        return None
    if field.type == "select":
        return {"action": "select", "target": field.target, "option": value}, value
    return {"action": "type", "target": field.target, "text": value, "clear": True}, value
