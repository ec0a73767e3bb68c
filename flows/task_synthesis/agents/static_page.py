"""The offline agent for static web apps whose state lives in the page (sandbox state kind `js` or
`local_storage`): reads the app's HTML and JavaScript — its entry field, named checkboxes, filter
links, the record it creates — and composes list tasks with injections into localStorage and
verifiers over the page state. No model, no network; deterministic for a given seed and source.

Honest limits: it understands todo-like apps (a list of records, each with a text field and a
boolean flag, added through one text field + Enter and toggled through a per-record checkbox).
Anything else gets a note saying what it did not find, and no candidates.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.task_spec import SYNTHESISER_VERSION, TaskSpec
from sandboxes.skills import Skill

AGENT = "static-page"
VENDOR_DIRS = ("bower_components", "node_modules", "vendor", "test", "tests", "spec")
TEXT_INPUT_TYPES = ("", "text", "search")
CHORES = [
    "Buy oat milk", "Call the plumber", "Book a dentist visit", "Return the library books", "Renew my passport",
    "Email Grandma", "Pick up the dry cleaning", "Fix the bike light", "Water the basil", "Pay the gas bill",
    "Buy concert tickets", "Replace the printer ink", "Walk the dog", "Defrost the freezer", "Send the invoice",
    "Order a birthday cake", "Clean the gutters", "Back up the laptop", "Cancel the gym trial", "Plan the team lunch",
    "Vacuum the car", "Post the parcel", "Sort the recycling", "Read chapter four", "Change the bed sheets",
]


@dataclass
class _Control:
    tag: str
    attrs: dict[str, str]
    text: str = ""


@dataclass
class PageModel:
    """What the agent read: the controls of the page and the record the app stores."""

    entry: str | None = None  # accessible name of the text field that adds a record
    named_checkboxes: list[str] = field(default_factory=list)  # e.g. "Mark all as complete", in page order
    checkboxes_before_list: int = 0  # static checkboxes that precede the (empty) list container
    filters: list[tuple[str, str]] = field(default_factory=list)  # (link text, "#/hash")
    text_field: str | None = None  # the record's text field, e.g. "title"
    flag_field: str | None = None  # the record's boolean field, e.g. "completed"
    has_ids: bool = False  # records carry an `id`
    item_checkbox: bool = False  # each rendered record has a checkbox
    edits_on_dblclick: bool = False
    appends: bool = False  # new records go to the end of the list
    remove_button: str | None = None  # a record's own delete button, by its accessible name (e.g. "✖")


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.controls: list[_Control] = []
        self.labels: dict[str, str] = {}  # for= -> text
        self._open: list[_Control] = []
        self._script = False
        self.list_at: int | None = None  # index in controls where the first empty list container sits
        self._last_ul: int | None = None
        self.list_template_checkbox = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "script":
            self._script = True
        elif tag in ("input", "button", "a", "label"):
            c = _Control(tag, a)
            self.controls.append(c)
            if tag != "input":
                self._open.append(c)
        elif tag in ("ul", "ol") and self.list_at is None:
            self._last_ul = len(self.controls)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = False
        elif tag in ("ul", "ol") and self._last_ul is not None and self.list_at is None:
            inside = self.controls[self._last_ul:]
            # empty (the app renders the records here) or a record template with a checkbox
            if not inside or any(c.attrs.get("type", "").lower() == "checkbox" for c in inside):
                self.list_at = self._last_ul
                self.list_template_checkbox = bool(inside)
            self._last_ul = None
        elif self._open and self._open[-1].tag == tag:
            c = self._open.pop()
            if tag == "label" and c.attrs.get("for"):
                self.labels[c.attrs["for"]] = c.text.strip()

    def handle_data(self, data: str) -> None:
        if not self._script:
            for c in self._open:
                c.text += data


def read_page(files: dict[str, str]) -> PageModel:
    html = {p: t for p, t in files.items() if p.endswith((".html", ".htm")) and not _vendor(p)}
    page = html.get("index.html") or next(iter(sorted(html.items())), ("", ""))[1]
    scripts = "\n".join(t for p, t in sorted(files.items()) if p.endswith(".js") and not _vendor(p))
    scripts += "\n" + "\n".join(re.findall(r"<script[^>]*>(.*?)</script>", page, flags=re.S))
    parser = _PageParser()
    parser.feed(page)
    model = PageModel()
    for i, c in enumerate(parser.controls):
        name = (parser.labels.get(c.attrs.get("id", "")) or c.attrs.get("aria-label") or "").strip()
        kind = c.attrs.get("type", "").lower()
        if c.tag == "input" and kind in TEXT_INPUT_TYPES and model.entry is None:
            model.entry = name or c.attrs.get("placeholder") or None
        elif c.tag == "input" and kind == "checkbox":
            if name:
                model.named_checkboxes.append(name)
            if parser.list_at is None or i < parser.list_at:
                model.checkboxes_before_list += 1
        elif c.tag == "a" and c.attrs.get("href", "").startswith("#/") and c.text.strip():
            model.filters.append((c.text.strip(), c.attrs["href"]))
    model.text_field, model.flag_field = _record_fields(scripts)
    model.has_ids = bool(re.search(r"\.id\b|\bid\s*:|data-id", scripts))
    model.item_checkbox = parser.list_template_checkbox or bool(re.search(r"""type=\\?["']?checkbox""", scripts))
    model.edits_on_dblclick = "dblclick" in scripts or "dblclick" in page
    model.appends = ".push(" in scripts
    model.remove_button = _remove_button(scripts + page, "\n".join(t for p, t in files.items() if p.endswith(".css")))
    return model


def _vendor(path: str) -> bool:
    return any(part in VENDOR_DIRS for part in path.split("/")[:-1])


def _remove_button(scripts: str, css: str) -> str | None:
    """A record template's empty button whose class says it removes the record (destroy, delete,
    remove); its visible name comes from the stylesheet (`.destroy:after { content: '✖' }`)."""
    for cls in re.findall(r"""<button\s+class=\\?["']([\w-]+)\\?["'][^>]*>\s*</button>""", scripts):
        if not re.search(r"destroy|delete|remove", cls, flags=re.I):
            continue
        rule = rf"""\.{re.escape(cls)}:{{1,2}}(?:after|before)\s*\{{[^}}]*content:\s*['"]([^'"]+)['"]"""
        named = re.search(rule, css)
        if named:
            return named.group(1)
    return None


def _record_fields(scripts: str) -> tuple[str | None, str | None]:
    """The record the app creates: an object literal with a key set to `false` (the flag) beside a
    key set from elsewhere (the text), e.g. `{ title: title.trim(), completed: false }`."""
    for body in re.findall(r"\{([^{}]{3,200})\}", scripts):
        pairs = re.findall(r"(\w+)\s*:\s*([^,]+)", body)
        flags = [k for k, v in pairs if v.strip() == "false"]
        texts = [k for k, v in pairs if v.strip() not in ("true", "false") and k != "id" and not v.strip()[:1].isdigit()]
        if flags and texts and len(pairs) <= 4:
            return texts[0], flags[0]
    return None, None


def draw_distinct(recipes: list, seed: int, count: int, key=lambda spec: spec.task_id) -> list[TaskSpec]:
    """Round-robin over the recipes (each `recipe(rng, seed) -> TaskSpec | None`), a few seeded tries
    each, until `count` candidates distinct by `key`."""
    rng = random.Random(seed)
    found: dict[str, TaskSpec] = {}
    for turn in range(count * 4):
        if len(found) >= count:
            break
        for _ in range(6):
            seed = rng.randrange(2**31)
            spec = recipes[turn % len(recipes)](random.Random(seed), seed)
            if spec is not None and key(spec) not in found:
                found[key(spec)] = spec
                break
    return list(found.values())


class StaticPageAgent:
    name = AGENT

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        out = AgentOutput()
        state = request.manifest.state
        expression = state.page_expression()
        model = read_page(request.source.files)
        missing = [what for what, ok in (
            ("a text field to add records", model.entry),
            ("the record's text and flag fields (an object literal with a `false` field)", model.text_field),
            ("a localStorage key in sandbox.toml (state.key) to inject records", state.key),
        ) if not ok]
        if missing or expression is None:
            out.notes.append(
                f"{request.manifest.name}: the static-page agent (for todo-like apps; discovery covers the rest) did not find "
                + "; nor ".join(missing or ["a state expression"])
            )
            return out
        if state.key and state.key not in "\n".join(request.source.files.values()):
            out.notes.append(f"{request.manifest.name}: state.key {state.key!r} does not appear in the source; check it")
        composer = _Composer(request, model, expression)
        out.candidates = composer.draw()
        out.skills = [composer.skill] if any(c.injection for c in out.candidates) else []
        return out


class _Composer:
    def __init__(self, request: SynthesisRequest, model: PageModel, expression: str) -> None:
        self.req, self.m, self.expression = request, model, expression
        state = request.manifest.state
        self.noun = _singular((state.items or state.key or "item").split(".")[-1].split("-")[0]) or "item"
        self.skill = Skill(
            f"set_{self.noun}s", request.manifest.name, "local_storage",
            f"Replace the app's {self.noun}s in localStorage[{state.key!r}] and reload the page",
            {"key": state.key, "items": state.items},
        )

    def recipes(self) -> list:
        """The recipes the page supports; each makes one kind of task."""
        m = self.m
        out = [self.add]
        if m.item_checkbox and m.flag_field:
            out += [self.complete, self.add_and_complete] if m.appends else [self.complete]
        if m.remove_button:
            out.append(self.remove)
        if m.edits_on_dblclick:
            out.append(self.rename)
        if m.named_checkboxes and m.flag_field:
            out.append(self.complete_all)
        if m.filters and m.flag_field:
            out.append(self.filter)
        return out

    def draw(self) -> list[TaskSpec]:
        return draw_distinct(self.recipes(), self.req.seed, self.req.count)

    # ---- recipes --------------------------------------------------------------------------------
    def add(self, rng: random.Random, seed: int) -> TaskSpec:
        existing = self._records(rng, rng.randint(0, 2), done_share=0.5)
        title = self._new_title(rng, existing)
        return self._spec(
            "create", f"Add “{title}” to my {self.noun}s.", {"title": title, "existing": existing}, seed, existing,
            self._where({self.m.text_field: title}, 1),
            [self._type_entry(title), {"action": "key", "keys": ["Enter"]}],
        )

    def complete(self, rng: random.Random, seed: int) -> TaskSpec:
        records = self._records(rng, rng.randint(2, 4), done_share=0.0)
        k = rng.randrange(len(records))
        title = records[k][self.m.text_field]
        return self._spec(
            "update", f"Mark “{title}” as done.", {"complete": title, "existing": records}, seed, records,
            self._where({self.m.text_field: title, self.m.flag_field: True}, 1),
            [self._item_checkbox(k)],
        )

    def rename(self, rng: random.Random, seed: int) -> TaskSpec:
        records = self._records(rng, rng.randint(1, 3), done_share=0.3)
        k = rng.randrange(len(records))
        old = records[k][self.m.text_field]
        new = self._new_title(rng, records)
        verifier = {"template": "all_of", "params": {"checks": [
            self._where({self.m.text_field: new}, 1), self._where({self.m.text_field: old}, 0)]}}
        return self._spec(
            "update", f"Rename the {self.noun} “{old}” to “{new}”.", {"rename": old, "to": new, "existing": records},
            seed, records, verifier,
            [{"action": "double_click", "target": {"text": old}}, {"action": "key", "keys": ["Control", "a"]},
             {"action": "type", "text": new, "clear": False}, {"action": "key", "keys": ["Enter"]}],
        )

    def remove(self, rng: random.Random, seed: int) -> TaskSpec:
        records = self._records(rng, rng.randint(2, 4), done_share=0.3)
        title = records[rng.randrange(len(records))][self.m.text_field]
        return self._spec(
            "delete", f"Delete “{title}” from my {self.noun}s.", {"remove": title, "existing": records}, seed, records,
            self._where({self.m.text_field: title}, 0),
            # pointing at the record first: its delete button shows on hover
            [{"action": "left_click", "target": {"text": title}},
             {"action": "left_click", "target": {"role": "button", "name": self.m.remove_button}}],
        )

    def complete_all(self, rng: random.Random, seed: int) -> TaskSpec:
        records = self._records(rng, rng.randint(2, 4), done_share=0.3)
        if all(r[self.m.flag_field] for r in records):
            records[0][self.m.flag_field] = False
        name = self.m.named_checkboxes[0]
        return self._spec(
            "update", f"{name}: every {self.noun} on my list.", {"all": name, "existing": records}, seed, records,
            self._where({self.m.flag_field: False}, 0),
            [{"action": "left_click", "target": {"role": "checkbox", "name": name}}],
        )

    def filter(self, rng: random.Random, seed: int) -> TaskSpec | None:
        choices = [(t, h) for t, h in self.m.filters if h.strip("#/")]
        if not choices:
            return None
        text, href = rng.choice(choices)
        records = self._records(rng, rng.randint(2, 4), done_share=0.5)
        return self._spec(
            "search", f"Switch my {self.noun} list to the “{text}” view.", {"filter": text, "existing": records}, seed,
            records, {"template": "url_matches", "params": {"pattern": re.escape(href) + "$"}},
            [{"action": "left_click", "target": {"role": "link", "name": text}}], area="filters",
        )

    def add_and_complete(self, rng: random.Random, seed: int) -> TaskSpec:
        existing = self._records(rng, rng.randint(1, 3), done_share=0.0)
        title = self._new_title(rng, existing)
        return self._spec(
            "multi_step", f"Add “{title}” to my {self.noun}s and tick it off right away.",
            {"add_done": title, "existing": existing}, seed, existing,
            self._where({self.m.text_field: title, self.m.flag_field: True}, 1),
            [self._type_entry(title), {"action": "key", "keys": ["Enter"]}, self._item_checkbox(len(existing))],
        )

    # ---- pieces ---------------------------------------------------------------------------------
    def _records(self, rng: random.Random, n: int, done_share: float) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        for i in range(n):
            record: dict[str, Any] = {self.m.text_field: self._new_title(rng, records)}
            if self.m.flag_field:
                record[self.m.flag_field] = rng.random() < done_share
            if self.m.has_ids:
                record["id"] = 1_700_000_000_000 + i  # numeric: apps read ids back from data-* attributes
            records.append(record)
        return records

    def _new_title(self, rng: random.Random, taken: list[dict[str, Any]]) -> str:
        used = {r[self.m.text_field] for r in taken}
        while True:
            title = rng.choice(CHORES)
            if title not in used:
                return title

    def _type_entry(self, text: str) -> dict[str, Any]:
        return {"action": "type", "text": text, "target": {"role": "textbox", "name": self.m.entry}}

    def _item_checkbox(self, k: int) -> dict[str, Any]:
        """The k-th record's checkbox: records have no names of their own, so by position after the
        page's static checkboxes (read from the HTML)."""
        return {"action": "left_click", "target": {"role": "checkbox", "nth": self.m.checkboxes_before_list + k}}

    def _where(self, where: dict[str, Any], count: int) -> dict[str, Any]:
        return {"template": "js_state_matches", "params": {"expression": self.expression, "where": where, "count": count}}

    def _spec(self, family: str, instruction: str, params: dict, seed: int, records: list, verifier: dict,
              reference: list, area: str | None = None) -> TaskSpec:
        return TaskSpec(
            sandbox=self.req.manifest.name,
            source_commit=self.req.source.commit,
            family=family,
            app_area=area or f"{self.noun}s",
            instruction=instruction,
            params=params,
            seed=seed,
            injection=[{"skill": self.skill.name, "args": {"value": records}}] if records else [],
            verifier=verifier,
            reference=[{"action": "goto", "url": "/"}, *reference],  # the app's page: its screen in coverage
            provenance={"agent": AGENT, "model": None, "synthesiser_version": SYNTHESISER_VERSION},
        )


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word
