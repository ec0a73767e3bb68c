"""How a person reaches a page: from the home page, following links the templates render.

Reference solutions should move through the UI as a person would (a click on "Addresses", then on the
address's name, then on "Edit address"), not type a deep URL; `goto` stays for what a person would
type (the app's address). Links are read from the Jinja templates (`<a href="{{ url_for('view', id=x.id) }}">`),
with the pages a template extends; a link whose text is a record's field (`{{ a.label }}`) is followed
for a known record only, and never from a paginated list (the record may be on another page).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from flows.task_synthesis.app_model import AppModel, Route

_LINK = re.compile(
    r"""<a\s[^>]*href="\{\{\s*url_for\(\s*['"](\w+)['"]\s*(?:,\s*(\w+)\s*=\s*([\w.]+)\s*)?\)\s*\}\}"[^>]*>([^<]*)</a>""", re.S
)
_EXTENDS = re.compile(r"""\{%-?\s*extends\s+["']([^"']+)["']""")
_INCLUDE = re.compile(r"""\{%-?\s*include\s+["']([^"']+)["'][^%]*%\}""")
_EXPR = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")
_PAGED = re.compile(r"""href="\{\{[^}]*\bpage\b[^}]*\}\}""")
_IF_TAG = re.compile(r"\{%-?\s*(if|endif)\b")


@dataclass(frozen=True)
class Link:
    endpoint: str
    arg_expr: str | None  # the expression passed as the route's parameter, e.g. "a.id"
    text: str  # as written: literal, or with {{ expr }} parts
    conditional: bool = False  # inside an {% if %} block: the page may not show it


class Navigator:
    def __init__(self, files: dict[str, str], model: AppModel, home_path: str = "/") -> None:
        self.model = model
        self.templates = {p.split("/")[-1]: t for p, t in files.items() if p.endswith((".html", ".jinja", ".j2"))}
        self.by_function = {r.function: r for r in model.routes if "GET" in r.methods}
        self.home = next((r for r in self.by_function.values() if r.path == home_path), None)

    def _text(self, name: str, seen: tuple[str, ...] = ()) -> str:
        """A template with what it extends and includes."""
        text = self.templates.get(name, "")
        if name in seen:
            return ""
        parts = [text]
        for other in _EXTENDS.findall(text) + _INCLUDE.findall(text):
            parts.append(self._text(other.split("/")[-1], (*seen, name)))
        return "\n".join(parts)

    def links_on(self, route: Route) -> tuple[list[Link], bool]:
        """The links a page shows, and whether it is paginated. A page that renders no template of its own
        (a home route that redirects) shows what every page shows: the layouts the templates extend."""
        names = route.templates or sorted({x.split("/")[-1] for t in self.templates.values() for x in _EXTENDS.findall(t)})
        text = "\n".join(self._text(t) for t in names)
        tags = [(m.start(), m.group(1)) for m in _IF_TAG.finditer(text)]
        links = []
        for m in _LINK.finditer(text):
            depth = sum(1 if tag == "if" else -1 for at, tag in tags if at < m.start())
            ep, _param, expr, label = m.groups()
            links.append(Link(ep, expr, " ".join(label.split()), depth > 0))
        return links, bool(_PAGED.search(text))

    def home_link(self) -> dict[str, Any] | None:
        """A click back to the home page from any page (a literal link to it in the shared layout)."""
        if self.home is None:
            return None
        links, _ = self.links_on(self.home)
        name = next((lk.text for lk in links if lk.endpoint == self.home.function and lk.text and not _EXPR.search(lk.text)), None)
        return {"action": "left_click", "target": {"role": "link", "name": name}} if name else None

    def path_to(self, url: str, row: dict[str, Any] | None = None, table: str | None = None) -> list[dict[str, Any]] | None:
        """Clicks from the home page to `url` (a route path with at most one id, of `row` in `table`), or None.
        Only links the templates show unconditionally are followed: one inside an {% if %} block (a banner
        while a setting is on) may not be on the page, and a typed URL is better than a click on nothing."""
        self._row_table = table
        target = self._route_of(url)
        if target is None or self.home is None:
            return None
        if target is self.home:
            return []
        start = (self.home.function, None)
        queue: deque[tuple[tuple[str, Any], list[dict[str, Any]]]] = deque([(start, [])])
        seen = {start}
        while queue:
            (function, rid), clicks = queue.popleft()
            if len(clicks) >= 4:
                continue
            route = self.by_function[function]
            links, paged = self.links_on(route)
            for link in links:
                nxt = self.by_function.get(link.endpoint)
                if nxt is None or len(nxt.params) > 1 or link.conditional:
                    continue
                name, next_id = self._follow(link, nxt, rid, row, paged)
                if name is None:
                    continue
                state = (nxt.function, next_id)
                if state in seen:
                    continue
                seen.add(state)
                step = [*clicks, {"action": "left_click", "target": {"role": "link", "name": name}}]
                if nxt is target and self._fill(nxt, next_id) == url.split("?")[0]:
                    return step
                queue.append((state, step))
        return None

    def _follow(self, link: Link, nxt: Route, rid: Any, row: dict[str, Any] | None, paged: bool) -> tuple[str | None, Any]:
        """The link's visible name and the record the next page shows (None for a page of no record)."""
        if not nxt.params:
            return (None, None) if _EXPR.search(link.text) or not link.text else (link.text, None)
        if link.arg_expr is None or not link.arg_expr.endswith(".id"):
            return None, None
        var = link.arg_expr[: -len(".id")]
        exprs = _EXPR.findall(link.text)
        if not exprs:  # a literal link on a record's page, to another page of the same record ("Edit address")
            return (link.text, rid) if rid is not None and link.text else (None, None)
        if row is None or paged or _first_segment(nxt.path) != self._row_table or any(e.split(".")[0] != var or e.split(".")[-1] not in row for e in exprs):
            return None, None
        name = _EXPR.sub(lambda m: str(row[m.group(1).split(".")[-1]]), link.text)
        return name, row.get("id")

    def _route_of(self, url: str) -> Route | None:
        path = url.split("?")[0]
        for r in sorted(self.by_function.values(), key=lambda r: len(r.params)):  # /addresses/new before /addresses/<id>
            if re.fullmatch(re.sub(r"<(?:[a-z]+:)?\w+>", r"[^/]+", r.path), path):
                return r
        return None

    @staticmethod
    def _fill(route: Route, rid: Any) -> str:
        return re.sub(r"<(?:[a-z]+:)?\w+>", str(rid), route.path, count=1) if route.params else route.path


def _first_segment(path: str) -> str | None:
    """The table a record page belongs to, by its first path segment (/addresses/<id> -> addresses)."""
    parts = [p for p in path.strip("/").split("/") if p and not p.startswith("<")]
    return parts[0].replace("-", "_") if parts else None
