"""Plausible field values a person would type, chosen by column name and type, seeded."""

from __future__ import annotations

import random
import re
import unicodedata


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()

FIRST = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kemi", "Lars", "Mia", "Noah", "Priya", "Rafael", "Sofia", "Tomás", "Yuki", "Zara"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Patel", "Nakamura", "García", "Novak", "Schmidt", "Haddad", "O'Brien", "Rossi", "Kowalski", "Jensen", "Silva", "Kim"]
STREETS = ["Elm Street", "Harbour Road", "Maple Avenue", "Station Lane", "Quarry Hill", "Birch Way", "Canal Walk", "Orchard Close"]
CITIES = ["Portland", "Leeds", "Lyon", "Porto", "Graz", "Ghent", "Bergen", "Malmö", "Tartu", "Valencia"]
COUNTRIES = ["United States", "United Kingdom", "France", "Portugal", "Austria", "Belgium", "Norway", "Sweden"]
COMPANIES = ["Northwind Traders", "Bluefin Labs", "Copperleaf Design", "Kestrel Logistics", "Atlas Bakery", "Ridgeway Legal"]
LABELS = ["Lake house", "Studio", "Mum's place", "Office", "Cabin", "Weekend flat", "Workshop"]
WORDS = ["quarterly", "invoice", "garden", "project", "trip", "budget", "dinner", "renewal", "workshop", "kickoff", "delivery", "reunion"]
COLOURS = ["teal", "orange", "purple", "green", "red", "blue"]
SENTENCES = [
    "Let's move the review to Thursday afternoon.",
    "Please find the updated figures attached.",
    "Comfortable from day one and true to size.",
    "The parcel should arrive before the weekend.",
    "Can we keep the budget under last year's?",
    "Thanks again for organising everything.",
]


def person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST), rng.choice(LAST)


PERSON_TABLES = ("contacts", "users", "people", "customers", "members", "employees", "authors", "accounts")


def value_for(
    column: str, sql_type: str, input_type: str, rng: random.Random,
    table: str | None = None, who: tuple[str, str] | None = None,
) -> str | int:
    """A value for a field or column; text stays short and distinctive so a verifier can find it.
    `who` keeps the name, email and phone of one made-up person consistent within a task."""
    c = column.lower()
    first, last = who or person(rng)
    tag = rng.randint(10, 99)
    if input_type == "email" or "email" in c or c in ("to_addr", "to", "cc", "recipient"):
        return _ascii(f"{first.lower()}.{last.lower().replace(chr(39), '')}{tag}@example.com")
    if "phone" in c:
        return f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
    if c in ("rating", "stars"):
        return rng.randint(1, 5)
    if c in ("quantity", "qty"):
        return rng.randint(2, 4)
    if input_type == "number" or sql_type in ("INTEGER", "REAL", "NUMERIC"):
        return rng.randint(2, 40)
    if input_type == "date" or c.endswith(("_date", "_on", "_at")):
        return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if input_type == "password" or "password" in c:
        return f"Tr0ub4dor-{rng.randint(1000, 9999)}"
    if c in ("full_name", "display_name", "author_name", "holder_name", "from_name", "ship_name"):
        return f"{first} {last}"
    if c == "name":
        if table is None or table in PERSON_TABLES:
            return f"{first} {last}"
        return f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {tag}"
    if c in ("first_name",):
        return first
    if c in ("last_name",):
        return last
    if "street" in c or c in ("address", "line1"):
        return f"{rng.randint(2, 240)} {rng.choice(STREETS)}"
    if "city" in c or c == "town":
        return rng.choice(CITIES)
    if "country" in c:
        return rng.choice(COUNTRIES)
    if "postcode" in c or "zip" in c or "postal" in c:
        return f"{rng.randint(10000, 99999)}"
    if "region" in c or "state" in c:
        return rng.choice(REGIONS)
    if "company" in c:
        return rng.choice(COMPANIES)
    if c == "label":
        return f"{rng.choice(LABELS)} {tag}"
    if "colour" in c or "color" in c:
        return rng.choice(COLOURS)
    if c in ("code", "coupon", "coupon_code"):
        return f"SAVE{tag}"
    if c in ("subject", "title"):
        return f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {tag}"
    if c in ("body", "notes", "note", "description", "message", "signature", "reason", "comment", "text", "content"):
        return f"{rng.choice(SENTENCES)} ({first}, ref {tag})"
    return f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {tag}"


REGIONS = ["Oregon", "Yorkshire", "Rhône", "Norte", "Styria"]
_POOLS = (FIRST, LAST, STREETS, CITIES, COUNTRIES, COMPANIES, REGIONS, COLOURS, WORDS)
_VOWELS = "aeiou"


def another_like(value: str) -> str:
    """Another plausible value of the same type, deterministically: the next entry of the pool the value
    (or one of its words) comes from; else the last number in it moved by one at the same width (a date
    stays a date, a postcode a postcode, an email an email); else its last vowel changed."""
    for pool in _POOLS:
        if value in pool:
            return pool[(pool.index(value) + 1) % len(pool)]
    digits = list(re.finditer(r"\d+", value))
    if digits:
        m = digits[-1]
        n = int(m.group())
        moved = str(n - 1 if n > 1 else n + 1).zfill(len(m.group()))
        return value[: m.start()] + moved + value[m.end():]
    words = value.split(" ")
    for i, word in enumerate(words):
        for pool in _POOLS:
            if word in pool:
                words[i] = pool[(pool.index(word) + 1) % len(pool)]
                return " ".join(words)
    for i in range(len(value) - 1, -1, -1):
        ch = value[i]
        if ch.lower() in _VOWELS:
            nxt = _VOWELS[(_VOWELS.index(ch.lower()) + 1) % len(_VOWELS)]
            return value[:i] + (nxt.upper() if ch.isupper() else nxt) + value[i + 1:]
    return value + "s" if value else "x"
