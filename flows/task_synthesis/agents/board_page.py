"""The offline agent for static kanban-style boards whose state lives in the page (sandbox state kind
`js`): reads the page's inline board configuration — boards with ids, titles, cards and the boards each
may drag to — and composes tasks: move a card to a board it may go to (a semantic drag), add a card
through a board's add form, and add-then-move (multi-step), verified over the page state. No model, no
network; deterministic for a given seed and source.

Honest limits: it understands pages configured like jKanban's (`boards: [{id, title, dragTo, item:
[{title}]}]` as an object literal in an inline script, one "add card" button per board that opens a
form with one text field and a submit button, each board's card list rendered as one landmark element
the board script creates, e.g. `<main>`). The state expression must give one record per card with two
text fields: the board's title (a key naming a board, column or list) and the card's title. Tasks start
from the page's own initial cards: nothing is injected (a page that keeps nothing has no storage to
inject into, and its board API is its own). Anything else gets a note saying what it did not find.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.agents.static_page import draw_distinct
from flows.task_synthesis.task_spec import SYNTHESISER_VERSION, TaskSpec

AGENT = "board-page"
VENDOR_DIRS = ("bower_components", "node_modules", "vendor", "test", "tests", "spec")
CARD_TITLES = [
    "Write the release notes", "Fix the login timeout", "Review the pull request", "Update the changelog",
    "Plan the sprint demo", "Call the supplier", "Draft the budget", "Book the meeting room", "Order new badges",
    "Test the checkout flow", "Renew the SSL certificate", "Clean up old branches", "Translate the help page",
    "Archive last year's tickets", "Prepare the onboarding pack", "Check the backups", "Reply to the auditor",
    "Migrate the wiki", "Design the new logo", "Measure page load time",
]
# the ARIA role of the element a board script creates for each board's card list (first found wins)
LIST_ROLES = {"main": "main", "ul": "list", "ol": "list", "section": "region", "aside": "complementary"}
BOARD_WORDS = ("board", "column", "list", "lane", "stage")


class _Function:
    """A function value in the literal: skipped, never run."""


@dataclass
class Board:
    id: str
    title: str
    cards: list[str]
    drag_to: list[str] | None  # ids of the boards its cards may go to; None: any board

    @property
    def short(self) -> str:
        """The title without a trailing remark: "To Do (Can drop item only in working)" -> "To Do"."""
        return re.sub(r"\s*\([^)]*\)\s*$", "", self.title).strip() or self.title

    def may_go_to(self, other: Board) -> bool:
        return other.id != self.id and (self.drag_to is None or other.id in self.drag_to)


@dataclass
class BoardPage:
    """What the agent read from the page and its scripts."""

    boards: list[Board] = field(default_factory=list)
    add_button: str | None = None  # each board's button that opens its add form, e.g. "+ Add New Card"
    submit_button: str | None = None  # the add form's submit button, e.g. "Submit"
    list_role: str | None = None  # the role of each board's card list, e.g. "main"
    lists_before: int = 0  # elements of that role the page itself has before the boards


# ---- reading a JavaScript object literal ------------------------------------------------------------
def _strip_comments(js: str) -> str:
    out, i, n = [], 0, len(js)
    while i < n:
        c = js[i]
        if c in "'\"`":
            j = _string_end(js, i)
            out.append(js[i:j])
            i = j
        elif js.startswith("//", i):
            i = js.find("\n", i) if "\n" in js[i:] else n
        elif js.startswith("/*", i):
            end = js.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _string_end(js: str, i: int) -> int:
    quote, j = js[i], i + 1
    while j < len(js) and js[j] != quote:
        j += 2 if js[j] == "\\" else 1
    return j + 1


class _Literal:
    """A small reader for JS object/array literals: strings, numbers, names, nested literals; functions
    (`function () {...}`, arrows) are skipped as opaque values."""

    def __init__(self, js: str, pos: int) -> None:
        self.js, self.i = js, pos

    def value(self) -> Any:
        self._space()
        js, i = self.js, self.i
        c = js[i] if i < len(js) else ""
        if c == "{":
            return self._object()
        if c == "[":
            return self._array()
        if c in "'\"`":
            self.i = _string_end(js, i)
            return re.sub(r"\\(.)", r"\1", js[i + 1: self.i - 1])
        if js.startswith("function", i):
            self.i = self._match(js.index("(", i))
            self._space()
            self.i = self._match(self.i)
            return _Function()
        if c == "(":  # an arrow function's parameters
            self.i = self._match(i)
            return self._arrow_body()
        m = re.compile(r"-?\d+(\.\d+)?|[A-Za-z_$][\w$.]*").match(js, i)
        if not m:
            raise ValueError(f"unexpected {js[i:i + 20]!r}")
        self.i = m.end()
        self._space()
        if js.startswith("=>", self.i):
            return self._arrow_body()
        word = m.group()
        return {"true": True, "false": False, "null": None, "undefined": None}.get(
            word, float(word) if word[0] in "-0123456789" else _Function())

    def _arrow_body(self) -> _Function:
        self._space()
        if self.js.startswith("=>", self.i):
            self.i += 2
            self._space()
        if self.js[self.i] == "{":
            self.i = self._match(self.i)
        else:
            depth = 0
            while self.i < len(self.js) and not (depth == 0 and self.js[self.i] in ",}]"):
                depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(self.js[self.i], 0)
                self.i += 1
        return _Function()

    def _object(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.i += 1
        while True:
            self._space()
            if self.js[self.i] == "}":
                self.i += 1
                return out
            if self.js[self.i] in "'\"":
                end = _string_end(self.js, self.i)
                key, self.i = self.js[self.i + 1: end - 1], end
            else:
                m = re.compile(r"[A-Za-z_$][\w$]*").match(self.js, self.i)
                if not m:
                    raise ValueError(f"unexpected key at {self.js[self.i:self.i + 20]!r}")
                key, self.i = m.group(), m.end()
            self._space()
            if self.js[self.i] == ":":
                self.i += 1
                out[key] = self.value()
            elif self.js[self.i] == "(":  # a method: name(...) {...}
                self.i = self._match(self.i)
                self._space()
                self.i = self._match(self.i)
                out[key] = _Function()
            else:
                out[key] = None  # shorthand property: a variable we do not follow
            self._space()
            if self.js[self.i] == ",":
                self.i += 1

    def _array(self) -> list[Any]:
        out: list[Any] = []
        self.i += 1
        while True:
            self._space()
            if self.js[self.i] == "]":
                self.i += 1
                return out
            out.append(self.value())
            self._space()
            if self.js[self.i] == ",":
                self.i += 1

    def _match(self, i: int) -> int:
        """The index after the bracket that closes the one at i (strings skipped)."""
        pairs = {"(": ")", "[": "]", "{": "}"}
        stack = [pairs[self.js[i]]]
        i += 1
        while stack:
            c = self.js[i]
            if c in "'\"`":
                i = _string_end(self.js, i)
                continue
            if c in pairs:
                stack.append(pairs[c])
            elif c == stack[-1]:
                stack.pop()
            i += 1
        return i

    def _space(self) -> None:
        while self.i < len(self.js) and self.js[self.i].isspace():
            self.i += 1


def _literal_after(js: str, key: str) -> Any:
    """The value of the first `key: <literal>` in the script, or None."""
    m = re.search(rf"\b{re.escape(key)}\s*:\s*(?=[\[{{'\"])", js)
    if not m:
        return None
    try:
        return _Literal(js, m.end()).value()
    except (ValueError, IndexError):
        return None


# ---- reading the page -------------------------------------------------------------------------------
def read_board_page(files: dict[str, str]) -> BoardPage:
    page = BoardPage()
    for path, text in sorted(files.items()):
        if not path.endswith((".html", ".htm")) or _vendor(path):
            continue
        scripts = _strip_comments("\n".join(re.findall(r"<script[^>]*>(.*?)</script>", text, flags=re.S)))
        boards = _literal_after(scripts, "boards")
        if not isinstance(boards, list):
            continue
        page.boards = [b for b in map(_board, boards) if b is not None]
        if not page.boards:
            continue
        add = _literal_after(scripts, "itemAddOptions")
        if isinstance(add, dict) and add.get("enabled") and isinstance(add.get("content"), str):
            page.add_button = add["content"].strip()
        submit = re.search(r"""<button[^>]*type=\\?["']submit\\?["'][^>]*>([^<]+)</button>""", scripts)
        page.submit_button = submit.group(1).strip() if submit else None
        body = re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S)
        library = "\n".join(t for p, t in files.items() if p.endswith(".js") and not p.endswith(".min.js"))
        for tag, role in LIST_ROLES.items():
            if re.search(rf"""createElement\(\s*['"]{tag}['"]\s*\)""", library, flags=re.I):
                page.list_role = role
                page.lists_before = len(re.findall(rf"<{tag}\b", body, flags=re.I))
                break
        return page
    return page


def _board(raw: Any) -> Board | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("title"), str):
        return None
    items = raw.get("item") if isinstance(raw.get("item"), list) else []
    cards = [i["title"].strip() for i in items if isinstance(i, dict) and isinstance(i.get("title"), str)]
    drag_to = raw.get("dragTo")
    return Board(raw["id"], raw["title"].strip(), cards,
                 [d for d in drag_to if isinstance(d, str)] if isinstance(drag_to, list) else None)


def _vendor(path: str) -> bool:
    return any(part in VENDOR_DIRS for part in path.split("/")[:-1])


def state_fields(expression: str) -> tuple[str, str] | None:
    """(board field, card field) of the records the state expression builds: the object literal's two
    keys, the one naming a board/column/list first; None when the expression is not of that shape."""
    keys = re.findall(r"[{,]\s*([A-Za-z_$][\w$]*)\s*:", expression)
    keys = list(dict.fromkeys(keys))
    if len(keys) != 2:
        return None
    boardish = [k for k in keys if any(w in k.lower() for w in BOARD_WORDS)]
    if len(boardish) != 1:
        return None
    return boardish[0], next(k for k in keys if k != boardish[0])


# ---- the agent --------------------------------------------------------------------------------------
class BoardPageAgent:
    name = AGENT

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        out = AgentOutput()
        page = read_board_page(request.source.files)
        expression = request.manifest.state.page_expression() or ""
        fields = state_fields(expression) if request.manifest.state.kind == "js" else None
        missing = [what for what, ok in (
            ("inline board configuration (`boards: [{id, title, item: [...]}]`)", page.boards),
            ("state expression giving {board title, card title} records (state.kind = \"js\")", fields),
        ) if not ok]
        if missing:
            out.notes.append(f"{request.manifest.name}: the board-page agent did not find " + "; nor ".join(missing))
            return out
        composer = BoardComposer(request, page, expression, fields)
        if not composer.recipes():
            out.notes.append(f"{request.manifest.name}: boards found, but no card list role to drop on and no add form")
            return out
        if page.list_role is None:
            out.notes.append(f"{request.manifest.name}: no card list element found in the board script; no drag tasks")
        out.candidates = composer.draw()
        return out


class BoardComposer:
    def __init__(self, request: SynthesisRequest, page: BoardPage, expression: str, fields: tuple[str, str]) -> None:
        self.req, self.page, self.expression = request, page, expression
        self.board_field, self.card_field = fields
        self.home = request.manifest.start.home_path if request.manifest.start else "/"

    def recipes(self) -> list:
        p = self.page
        out = []
        if p.list_role and any(a.may_go_to(b) for a in p.boards for b in p.boards):
            out.append(self.move)
        if p.add_button and p.submit_button:
            out.append(self.add)
            if p.list_role:
                out.append(self.add_and_move)
        return out

    def draw(self) -> list[TaskSpec]:
        """Round-robin over the recipes, a few seeded tries each, until `count` distinct tasks (distinct
        by what they ask: the same move drawn twice is one task)."""
        return draw_distinct(self.recipes(), self.req.seed, self.req.count,
                             key=lambda spec: f"{spec.family}|{sorted(spec.params.items())}")

    # ---- recipes ------------------------------------------------------------------------------------
    def move(self, rng: random.Random, seed: int, allowed: bool = True) -> TaskSpec | None:
        """Drag a card onto another board; allowed=False picks a board its own board forbids (a negative
        the gate must reject: the page refuses the drop)."""
        pairs = [(a, c, b) for a in self.page.boards for c in a.cards for b in self.page.boards
                 if b.id != a.id and a.may_go_to(b) == allowed and self._unique(c)]
        if not pairs:
            return None
        source, card, target = rng.choice(pairs)
        return self._spec(
            "update", f"Move the card “{card}” from {source.short} to the “{target.short}” board.",
            {"move": card, "to": target.id}, seed, self._on(card, target, len(target.cards) + 1),
            [self._drag(card, target)], area="boards",
        )

    def add(self, rng: random.Random, seed: int) -> TaskSpec:
        board = rng.choice(self.page.boards)
        title = self._new_title(rng)
        return self._spec(
            "create", f"Add a card “{title}” to the “{board.short}” board.", {"add": title, "board": board.id}, seed,
            self._on(title, board, len(board.cards) + 1), self._add(title, board), area="cards",
        )

    def add_and_move(self, rng: random.Random, seed: int) -> TaskSpec | None:
        pairs = [(a, b) for a in self.page.boards for b in self.page.boards if a.may_go_to(b)]
        if not pairs:
            return None
        source, target = rng.choice(pairs)
        title = self._new_title(rng)
        return self._spec(
            "multi_step", f"Add a card “{title}” to the “{source.short}” board, then move it to “{target.short}”.",
            {"add": title, "board": source.id, "then_to": target.id}, seed,
            self._on(title, target, len(target.cards) + 1),
            [*self._add(title, source), self._drag(title, target)], area="cards",
        )

    # ---- pieces -------------------------------------------------------------------------------------
    def _unique(self, card: str) -> bool:
        return sum(card in b.cards for b in self.page.boards) == 1 and sum(b.cards.count(card) for b in self.page.boards) == 1

    def _new_title(self, rng: random.Random) -> str:
        taken = {c for b in self.page.boards for c in b.cards}
        return rng.choice([t for t in CARD_TITLES if t not in taken])

    def _index(self, board: Board) -> int:
        return self.page.boards.index(board)

    def _drag(self, card: str, target: Board) -> dict[str, Any]:
        """A semantic drag: the card by its text onto the target board's card list (by position: the lists
        have no names of their own)."""
        to = {"role": self.page.list_role, "nth": self.page.lists_before + self._index(target)}
        return {"action": "left_click_drag", "target": {"text": card}, "to": to}

    def _add(self, title: str, board: Board) -> list[dict[str, Any]]:
        button = {"role": "button", "name": self.page.add_button}
        if self._index(board):
            button["nth"] = self._index(board)
        return [{"action": "left_click", "target": button},
                {"action": "type", "text": title, "target": {"role": "textbox"}},
                {"action": "left_click", "target": {"role": "button", "name": self.page.submit_button}}]

    def _on(self, card: str, board: Board, count: int) -> dict[str, Any]:
        """The card is on the board, once, and the board holds `count` cards."""
        def where(w: dict[str, Any], n: int) -> dict[str, Any]:
            return {"template": "js_state_matches", "params": {"expression": self.expression, "where": w, "count": n}}

        return {"template": "all_of", "params": {"checks": [
            where({self.board_field: board.title, self.card_field: card}, 1),
            where({self.board_field: board.title}, count),
        ]}}

    def _spec(self, family: str, instruction: str, params: dict, seed: int, verifier: dict, reference: list,
              area: str) -> TaskSpec:
        return TaskSpec(
            sandbox=self.req.manifest.name,
            source_commit=self.req.source.commit,
            family=family,
            app_area=area,
            instruction=instruction,
            params=params,
            seed=seed,
            injection=[],  # the page's own initial cards (see the module docstring)
            verifier=verifier,
            reference=[{"action": "goto", "url": self.home}, *reference],
            provenance={"agent": AGENT, "model": None, "synthesiser_version": SYNTHESISER_VERSION},
        )
