"""Reads a UI tree (Playwright's ARIA snapshot, the shape every driver's observation uses) into nodes,
and derives what the explorer needs from it: an abstract state id and the page's affordances (links,
forms with their fields and buttons)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

_LINE = re.compile(r"^(\s*)- (.*)$")
_NUMBER = re.compile(r"\d+")
_ROLE = re.compile(r"[A-Za-z/][\w/-]*")
# Roles whose accessible name is part of a page's structure (a control's label), not its data.
NAMED_ROLES = frozenset({"button", "textbox", "searchbox", "combobox", "checkbox", "radio", "spinbutton", "switch", "slider", "tab"})
FIELD_ROLES = frozenset({"textbox", "searchbox", "combobox", "checkbox", "radio", "spinbutton"})
FORM_ROLES = frozenset({"form", "search"})


@dataclass
class UiNode:
    role: str
    name: str = ""
    attrs: list[str] = field(default_factory=list)
    value: str = ""  # inline text after the colon (a field's current value, a text node's content)
    children: list[UiNode] = field(default_factory=list)

    @property
    def url(self) -> str | None:
        for c in self.children:
            if c.role == "/url":
                return c.value
        return None

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def parse_ui_tree(text: str) -> UiNode:
    """The ARIA snapshot's YAML-like lines as a tree under a synthetic root."""
    root = UiNode("root")
    stack: list[tuple[int, UiNode]] = [(-1, root)]
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        indent, rest = len(m.group(1)), m.group(2)
        node = _parse_entry(rest)
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root


def _parse_entry(rest: str) -> UiNode:
    if rest[:1] in ("'", '"') and rest.count(rest[0]) >= 2:  # YAML-quoted key: 'link "a: b"': value
        q = rest[0]
        end = 1
        while end < len(rest):
            if rest[end] == q and rest[end + 1: end + 2] == q:
                end += 2
                continue
            if rest[end] == q:
                break
            end += 1
        key, tail = rest[1:end].replace(q * 2, q), rest[end + 1:]
    else:
        key, tail = rest, ""
    m = _ROLE.match(key)
    if not m:
        return UiNode("text", value=rest)
    role, pos = m.group(0), m.end()
    name = ""
    if key[pos: pos + 2] == ' "':
        try:
            name, used = json.JSONDecoder().raw_decode(key[pos + 1:])
            pos += 1 + used
        except ValueError:
            pass
    attrs = []
    while True:
        a = re.match(r"\s*\[([^\]]*)\]", key[pos:])
        if not a:
            break
        attrs.append(a.group(1))
        pos += a.end()
    remainder = key[pos:] + tail
    value = _scalar(remainder[1:].strip()) if remainder.startswith(":") else ""
    return UiNode(role, str(name), attrs, value)


def _scalar(text: str) -> str:
    """A YAML scalar as its text: the snapshot quotes values with special characters (`/url: "#/"`)."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            return str(json.loads(text))
        except ValueError:
            return text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


# ---- abstract states ------------------------------------------------------------------------------
def url_pattern(url: str) -> str:
    """The path with numeric segments as <> and the query's keys without values: lists of different
    data, pages of different rows, share one pattern."""
    parts = urlsplit(url)
    path = "/".join("<>" if seg.isdigit() else seg for seg in parts.path.split("/")) or "/"
    keys = sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)})
    route = "#" + parts.fragment if parts.fragment.startswith("/") else ""  # script routing (#/active)
    return path + ("?" + "&".join(keys) if keys else "") + route


def _structure(node: UiNode) -> str:
    """Roles and control labels, never data: text, numbers and link names are dropped and repeated
    sibling structures (rows of a list, options of a select) count once."""
    label = ""
    if node.role in NAMED_ROLES and node.name:
        label = "=" + _NUMBER.sub("#", node.name.strip().casefold())
    kids: list[str] = []
    for c in node.children:
        if c.role in ("/url", "option"):
            continue
        s = _structure(c)
        if s not in kids:
            kids.append(s)
    return f"{node.role}{label}({','.join(kids)})" if kids else f"{node.role}{label}"


def abstract_state(url: str, tree: UiNode | str) -> str:
    root = parse_ui_tree(tree) if isinstance(tree, str) else tree
    key = url_pattern(url) + "\n" + _structure(root)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


# ---- affordances --------------------------------------------------------------------------------
@dataclass
class FormField:
    role: str
    label: str
    value: str  # current value ("" when empty)
    options: list[str] = field(default_factory=list)  # combobox options
    selected: str | None = None
    checked: bool = False
    nth: int = 0  # its place among the page's fields of its role (how a field without a label is found)


@dataclass
class FormAffordance:
    label: str  # the form's accessible name ("" for a control outside any named form)
    fields: list[FormField]
    buttons: list[str]
    label_unique: bool = True  # no other form on the page has this name
    submit: str = "button"  # button: press one of `buttons` | enter: press Enter in the field | check: toggle it

    def signature(self, button: str) -> str:
        return f"{_NUMBER.sub('#', self.label)}|{_NUMBER.sub('#', button)}"


@dataclass
class Affordances:
    links: list[tuple[str, str]]  # (name, href)
    forms: list[FormAffordance]


def affordances(tree: UiNode | str) -> Affordances:
    root = parse_ui_tree(tree) if isinstance(tree, str) else tree
    links: list[tuple[str, str]] = []
    forms: list[FormAffordance] = []
    loose: list[str] = []
    loose_fields: list[FormField] = []
    per_role: dict[str, int] = {}  # fields of each role so far, in page order
    unlabelled: dict[int, tuple[UiNode, list[FormField]]] = {}  # parent -> its text fields without a label

    def visit(node: UiNode, form: FormAffordance | None, parent: UiNode | None) -> None:
        if node.role in FORM_ROLES:
            form = FormAffordance(node.name, [], [])
            forms.append(form)
        elif node.role == "link" and node.url:
            links.append((node.name, node.url))
        elif node.role == "button" and node.name:
            (form.buttons if form is not None else loose).append(node.name)
        elif node.role in FIELD_ROLES:
            nth = per_role[node.role] = per_role.get(node.role, -1) + 1
            options = [c.name for c in node.children if c.role == "option"]
            selected = next((c.name for c in node.children if c.role == "option" and "selected" in c.attrs), None)
            found = FormField(node.role, node.name, node.value, options, selected, "checked" in node.attrs, nth)
            if node.name:
                (form.fields if form is not None else loose_fields).append(found)
            elif form is None and parent is not None and node.role in ("textbox", "searchbox"):
                unlabelled.setdefault(id(parent), (parent, []))[1].append(found)
        for c in node.children:
            visit(c, form, node)

    visit(root, None, None)
    names = [f.label for f in forms]
    for f in forms:
        f.label_unique = bool(f.label) and names.count(f.label) == 1
    # a script-built form without a name (its <form> has no role then): text fields without a label and
    # the buttons beside them (e.g. a textarea with Submit and Cancel) are one form
    claimed: set[str] = set()
    for parent, fields in unlabelled.values():
        beside = [c.name for c in parent.children if c.role == "button" and c.name]
        if beside:
            forms.append(FormAffordance("", fields, beside, label_unique=False))
            claimed.update(beside)
    for name in dict.fromkeys(loose):  # buttons outside any named form: each is its own affordance
        if name not in claimed:
            forms.append(FormAffordance("", [], [name], label_unique=False))
    # fields outside any form (script-driven pages): a text field submits with Enter, a checkbox toggles
    for f in loose_fields:
        if f.role in ("textbox", "searchbox") and not loose:
            forms.append(FormAffordance("", [f], [f.label], label_unique=False, submit="enter"))
        elif f.role == "checkbox":
            forms.append(FormAffordance("", [], [f.label], label_unique=False, submit="check"))
    return Affordances(links, [f for f in forms if f.buttons])
