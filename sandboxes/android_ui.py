"""The UI hierarchy of an Android screen: a `uiautomator dump` parsed into nodes with a role and an
accessible name, rendered in the web driver's ARIA-snapshot shape (`- button "Save note" [ref=n7]`),
and semantic targets (role + name, a field's label, a text) resolved to the node a finger would touch."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from xml.etree import ElementTree

from sandboxes.actions import Target
from sandboxes.app_process import SandboxError

TEXTBOX = ("EditText", "AutoCompleteTextView", "SearchView$SearchAutoComplete")
LISTS = ("RecyclerView", "ListView", "GridView", "ScrollView")

@dataclass
class UINode:
    """One node of a `uiautomator dump`, with the role and accessible name the UI tree shows."""

    ref: int
    cls: str
    text: str
    desc: str
    resource_id: str
    bounds: tuple[int, int, int, int]
    clickable: bool
    checkable: bool
    checked: bool
    focused: bool
    password: bool
    scrollable: bool
    hint: str = ""
    role: str = "group"
    name: str = ""
    parent: UINode | None = None
    children: list[UINode] = field(default_factory=list)

    @property
    def center(self) -> tuple[int, int]:
        x1, y1, x2, y2 = self.bounds
        return (x1 + x2) // 2, (y1 + y2) // 2

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def texts(self) -> list[str]:
        return [n.text or n.desc for n in self.walk() if n.text or n.desc]


def parse_hierarchy(xml: str) -> UINode:
    """The root of a `uiautomator dump`, every node given a role and a name (ref = document order)."""
    start = xml.find("<?xml")
    end = xml.rfind("</hierarchy>")
    if start < 0 or end < 0:
        raise SandboxError(f"uiautomator dump returned no hierarchy: {xml[:160]!r}")
    root_el = ElementTree.fromstring(xml[start:end + len("</hierarchy>")])
    counter = iter(range(1, 1_000_000))

    def build(el: ElementTree.Element, parent: UINode | None) -> UINode:
        a = el.attrib
        nums = [int(v) for v in re.findall(r"-?\d+", a.get("bounds", "[0,0][0,0]"))]
        node = UINode(
            ref=next(counter), cls=a.get("class", ""), text=a.get("text", ""), desc=a.get("content-desc", ""),
            resource_id=a.get("resource-id", ""), bounds=tuple(nums[:4]) if len(nums) >= 4 else (0, 0, 0, 0),
            clickable=a.get("clickable") == "true", checkable=a.get("checkable") == "true",
            checked=a.get("checked") == "true", focused=a.get("focused") == "true",
            password=a.get("password") == "true", scrollable=a.get("scrollable") == "true",
            hint=a.get("hint", ""), parent=parent,
        )
        node.children = [build(c, node) for c in el.findall("node")]
        return node

    root = UINode(0, "hierarchy", "", "", "", (0, 0, 0, 0), False, False, False, False, False, False)
    root.children = [build(el, root) for el in root_el.findall("node")]
    for node in root.walk():
        _name(node)
    return root


def _name(node: UINode) -> None:
    cls = node.cls.rsplit(".", 1)[-1]
    if cls.endswith(TEXTBOX):
        node.role = "textbox"
        node.name = node.hint or node.desc or _label_before(node)
    elif cls in ("CheckBox", "CheckedTextView") or (node.checkable and cls not in ("Switch", "SwitchCompat", "RadioButton", "ToggleButton")):
        node.role, node.name = "checkbox", node.text or node.desc
    elif cls in ("Switch", "SwitchCompat", "SwitchMaterial", "ToggleButton"):
        node.role, node.name = "switch", node.text or node.desc
    elif cls == "RadioButton":
        node.role, node.name = "radio", node.text or node.desc
    elif cls.endswith(LISTS) or node.scrollable:
        node.role, node.name = "list", node.desc
    elif node.clickable and node.parent is not None and node.parent.role == "list":
        node.role, node.name = "listitem", node.desc or next(iter(node.texts()), "")
    elif "Button" in cls or (node.clickable and (node.text or node.desc)):
        node.role, node.name = "button", node.text or node.desc
    elif node.clickable and node.children:
        node.role, node.name = "button", node.desc or " ".join(node.texts()[:2])
    elif cls == "ImageView" and node.desc:
        node.role, node.name = "img", node.desc
    elif node.text:
        node.role, node.name = "text", node.text
    else:
        node.role, node.name = "group", node.desc


def _label_before(node: UINode) -> str:
    """A field's label: the static text right before it among its siblings (Android's labelFor is not in dumps)."""
    if node.parent is None:
        return ""
    siblings = node.parent.children
    i = siblings.index(node)
    for prev in reversed(siblings[:i]):
        if prev.cls.endswith("TextView") and not prev.clickable and prev.text:
            return prev.text
        if prev.role != "group":
            break
    return ""


def ui_tree(root: UINode) -> str:
    """The hierarchy in the web driver's ARIA-snapshot shape: `- button "Save note" [ref=n7]` lines."""
    lines: list[str] = []

    def emit(node: UINode, depth: int) -> None:
        shown = node.role != "group" or bool(node.name)
        if shown:
            pad = "  " * depth
            label = f' "{node.name}"' if node.name else ""
            flags = "".join(f" [{f}]" for f, on in (("checked", node.checked), ("focused", node.focused), ("password", node.password)) if on)
            head = f"{pad}- {node.role}{label}{flags} [ref=n{node.ref}]"
            if node.role == "textbox":
                value = "•" * len(node.text) if node.password else node.text
                lines.append(head + (f": {value}" if value and value != node.name else ""))
            elif node.role in ("text", "img", "button", "checkbox", "switch", "radio"):
                lines.append(head)
            else:
                lines.append(head + (":" if node.children else ""))
        if node.role in ("text", "button", "checkbox", "switch", "radio", "textbox") and not node.children:
            return
        for c in node.children:
            if node.role == "button" and c.role == "text":
                continue  # a row's texts are its name
            emit(c, depth + 1 if shown else depth)

    for top in root.children:
        emit(top, 0)
    return "\n".join(lines)


def find_target(root: UINode, target: Target) -> UINode:
    """The node a semantic target names, as the web driver's get_by_role/get_by_label/get_by_text would."""
    scope = [root]
    if target.within:
        scope = [n for n in root.walk() if target.within in (n.name, n.desc, n.text)] or scope
    found: list[UINode] = []
    for s in scope:
        for n in s.walk():
            if target.label and n.role in ("textbox", "checkbox", "switch", "radio") and _same(n.name, target.label):
                found.append(n)
            elif not target.label and target.role and _role_matches(n.role, target.role) and (target.name is None or _same(n.name, target.name)):
                found.append(n)
            elif not target.label and not target.role and target.text and _same(n.text or n.desc, target.text):
                found.append(n)
    if len(found) <= target.nth:
        visible = sorted({f"{n.role} {n.name!r}" for n in root.walk() if n.name and n.role != "group"})[:12]
        raise LookupError(f"no {target.describe()} on the screen; visible: {', '.join(visible)}")
    return found[target.nth]


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def _role_matches(role: str, wanted: str) -> bool:
    return role == wanted or (wanted == "link" and role in ("button", "listitem"))


def node_at(root: UINode, x: int, y: int) -> UINode | None:
    """The deepest clickable node under a pixel (what a tap there would hit)."""
    hit = None
    for n in root.walk():
        x1, y1, x2, y2 = n.bounds
        if x1 <= x < x2 and y1 <= y < y2 and (n.clickable or n.checkable):
            hit = n
    return hit
