"""The offline agent for Android sandboxes: reads the app's source — its schema, layouts, strings,
manifest and the Java/Kotlin handlers — and composes tasks played through the touch screen.

What it reads (the ordinary shape of a small SQLiteOpenHelper app; see sandboxes/notes-android):
- tables from the `CREATE TABLE` statements of any .sql file (e.g. assets/schema.sql);
- the launcher activity and the app's label from AndroidManifest.xml, strings from res/values/strings.xml;
- each activity's screen from `setContentView(R.layout.X)`: inputs (EditText, CheckBox) whose id is the
  column they write, labelled by a TextView with `android:labelFor`; buttons with `android:onClick`;
  detail values (a TextView whose id is a column, labelled with labelFor); lists (`tools:listitem`);
- each handler method's effect: the activity it starts (`new Intent(this, X.class)`, with an id when it
  calls putExtra) and the SQL it runs (`db.insert("notes", ...)`, `update`, `delete`).
From these: create (New -> fill -> Save), update and delete of an injected row (open its row -> Edit
-> change -> Save, or Delete), retrieve (open a row, answer with a detail value) and multi-step.
Anything it cannot find is a note, not a guess.
"""

from __future__ import annotations

import random
import re
import sqlite3
import unicodedata
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.agents.static import OPENERS, quote, singular
from flows.task_synthesis.app_model import Table, parse_schema
from flows.task_synthesis.source import SourceSnapshot
from flows.task_synthesis.task_spec import SYNTHESISER_VERSION, TaskSpec
from flows.task_synthesis.values import value_for
from sandboxes.skills import Skill

AGENT = "static-android"
NS = "{http://schemas.android.com/apk/res/android}"
TOOLS = "{http://schemas.android.com/tools}"
INJECT_ID_RANGE = (900_000, 999_999)
FAMILIES = ("create", "update", "delete", "retrieve", "multi_step")


@dataclass
class Input:
    id: str
    kind: str  # text | multiline | number | checkbox
    label: str


@dataclass
class Screen:
    """One activity: its layout's controls and what its handler methods do."""

    activity: str
    inputs: list[Input] = field(default_factory=list)
    buttons: dict[str, str] = field(default_factory=dict)  # onClick method -> visible text
    details: dict[str, str] = field(default_factory=dict)  # column id -> its label
    list_columns: list[str] = field(default_factory=list)  # ids shown in each row of its list
    methods: dict[str, Method] = field(default_factory=dict)


@dataclass
class Method:
    starts: str | None = None  # the activity it opens
    with_id: bool = False  # ... for one row (an id extra)
    ops: list[tuple[str, str]] = field(default_factory=list)  # (insert|update|delete, table)


@dataclass
class AndroidApp:
    label: str
    launcher: str
    tables: dict[str, Table]
    screens: dict[str, Screen]
    problems: list[str] = field(default_factory=list)  # files it could not read, and why


def read_android_app(src: SourceSnapshot) -> AndroidApp:
    """The app model from the source files (layout XML, strings, manifest, Java or Kotlin, schema)."""
    problems: list[str] = []
    xml: dict[str, ElementTree.Element] = {}
    for path, text in src.files.items():
        if path.endswith(".xml"):
            try:
                xml[path] = ElementTree.fromstring(text)
            except ElementTree.ParseError as exc:
                problems.append(f"{path} is not well-formed XML ({exc}); fix it so the app builds and can be read")
    strings: dict[str, str] = {}
    for path, root in xml.items():
        if re.search(r"res/values[^/]*/strings\.xml$", path):
            strings.update({s.get("name"): s.text or "" for s in root.iter("string")})

    def string(value: str | None) -> str:
        return strings.get(value.split("/", 1)[1], "") if value and value.startswith("@string/") else value or ""

    tables: dict[str, Table] = {}
    for text in src.glob(".sql").values():
        tables.update(parse_schema(text))
    label, launcher = "", ""
    for path, root in xml.items():
        if path.endswith("AndroidManifest.xml"):
            app = root.find("application")
            label = string(app.get(NS + "label")) if app is not None else ""
            for act in root.iter("activity"):
                if any(c.get(NS + "name") == "android.intent.category.LAUNCHER" for c in act.iter("category")):
                    launcher = act.get(NS + "name", "").rsplit(".", 1)[-1]
    layouts = {path.rsplit("/", 1)[-1][:-4]: root for path, root in xml.items() if "/res/layout/" in path}
    screens: dict[str, Screen] = {}
    for path, text in src.files.items():
        if not path.endswith((".java", ".kt")):
            continue
        cls = re.search(r"class\s+(\w+)", text)
        layout = re.search(r"setContentView\(\s*R\.layout\.(\w+)", text)
        if not cls or not layout or layout.group(1) not in layouts:
            continue
        screen = _screen(cls.group(1), layouts[layout.group(1)], layouts, string)
        screen.methods = _methods(text)
        screens[screen.activity] = screen
    return AndroidApp(label, launcher, tables, screens, problems)


def _screen(activity: str, root: ElementTree.Element, layouts: dict[str, ElementTree.Element], string) -> Screen:
    screen = Screen(activity)
    labels = {el.get(NS + "labelFor", "").split("/")[-1]: string(el.get(NS + "text")) for el in root.iter() if el.get(NS + "labelFor")}
    for el in root.iter():
        vid = el.get(NS + "id", "").split("/")[-1]
        tag = el.tag.rsplit(".", 1)[-1]
        if tag == "EditText" and vid:
            kind = el.get(NS + "inputType", "text")
            kind = "multiline" if "Multi" in kind else "number" if "number" in kind.lower() else "text"
            screen.inputs.append(Input(vid, kind, labels.get(vid) or string(el.get(NS + "hint"))))
        elif tag in ("CheckBox", "Switch") and vid:
            screen.inputs.append(Input(vid, "checkbox", string(el.get(NS + "text"))))
        elif tag.endswith("Button") and el.get(NS + "onClick"):
            screen.buttons[el.get(NS + "onClick")] = string(el.get(NS + "text")) or string(el.get(NS + "contentDescription"))
        elif tag == "TextView" and vid in labels:
            screen.details[vid] = labels[vid]
        elif el.get(TOOLS + "listitem"):
            item = layouts.get(el.get(TOOLS + "listitem").split("/")[-1])
            if item is not None:
                screen.list_columns = [e.get(NS + "id", "").split("/")[-1] for e in item.iter() if e.get(NS + "id")]
    return screen


_METHOD = re.compile(r"(?:(?:public|protected|private|static|final|override|fun)\s+)*(?:void\s+)?(\w+)\s*\(([^)]*)\)\s*(?::\s*\w+\s*)?\{")


def _methods(code: str) -> dict[str, Method]:
    out: dict[str, Method] = {}
    for m in _METHOD.finditer(code):
        if m.group(1) in ("if", "for", "while", "switch", "catch", "try", "synchronized"):
            continue
        body = _block(code, m.end() - 1)
        method = Method()
        start = re.search(r"Intent\(\s*this\s*,\s*(\w+)(?:\.class|::class\.java)\s*\)", body)
        if start:
            method.starts, method.with_id = start.group(1), "putExtra(" in body
        method.ops = [(v, t) for v, t in re.findall(r"\.(insert|update|delete)\(\s*\"(\w+)\"", body)]
        out.setdefault(m.group(1), method)
    return out


def _block(code: str, open_brace: int) -> str:
    depth = 0
    for i in range(open_brace, len(code)):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            return code[open_brace + 1:i]
    return code[open_brace + 1:]


def _ascii(text: str) -> str:
    """What `input text` can type on any device."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()


class StaticAndroidAgent:
    name = "static"

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        out = AgentOutput()
        app = read_android_app(request.source)
        out.notes.extend(f"{request.manifest.name}: {problem}" for problem in app.problems)
        paths = _Paths.find(app)
        if paths.table is None:
            out.notes.append(
                f"{request.manifest.name}: found {len(app.tables)} tables and {len(app.screens)} screens but no "
                "screen that writes a table through labelled inputs (discovery on a device is not built yet)"
            )
            return out
        if request.app_db is None:
            out.notes.append(f"{request.manifest.name}: no app database to draw parameters from ([android] db_path)")
            return out
        db = sqlite3.connect(f"file:{request.app_db}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        try:
            composer = _Composer(request, app, paths, db)
            recipes = {f: fn for f, fn in composer.recipes().items() if fn is not None}
            rng = random.Random(request.seed)
            found: dict[str, TaskSpec] = {}
            families = [f for f in FAMILIES if f in recipes]
            for turn in range(request.count * 4):
                if len(found) >= request.count or not families:
                    break
                seed = rng.randrange(2**31)
                spec = recipes[families[turn % len(families)]](random.Random(seed), seed)
                if spec is not None:
                    found.setdefault(spec.task_id, spec)
            out.candidates = list(found.values())
            out.skills = list(composer.skills.values())
            out.notes.extend(composer.notes)
        finally:
            db.close()
        return out


@dataclass
class _Paths:
    """How a person gets to each writing screen, as the handlers show it."""

    table: str | None = None
    list_screen: Screen | None = None
    new_button: str | None = None  # on the list screen: opens the editor empty
    editor: Screen | None = None
    save_button: str | None = None
    detail: Screen | None = None  # a row's page, opened by tapping the row
    edit_button: str | None = None  # on the detail page: opens the editor for the row
    delete_button: str | None = None

    @classmethod
    def find(cls, app: AndroidApp) -> _Paths:
        p = cls()
        home = app.screens.get(app.launcher)
        if home is None:
            return p
        p.list_screen = home
        for method, text in home.buttons.items():
            m = home.methods.get(method)
            if m and m.starts in app.screens and not m.with_id:
                editor = app.screens[m.starts]
                for save, save_text in editor.buttons.items():
                    ops = editor.methods.get(save, Method()).ops
                    inserts = [t for v, t in ops if v == "insert" and t in app.tables]
                    if inserts:
                        p.table, p.new_button, p.editor, p.save_button = inserts[0], text, editor, save_text
        opener = next((m for name, m in home.methods.items() if m.with_id and m.starts in app.screens and name not in home.buttons), None)
        if opener is not None and home.list_columns:
            p.detail = app.screens[opener.starts]
            for method, text in p.detail.buttons.items():
                m = p.detail.methods.get(method, Method())
                if m.starts == (p.editor.activity if p.editor else None) and m.with_id:
                    p.edit_button = text
                if ("delete", p.table) in m.ops:
                    p.delete_button = text
        return p


class _Composer:
    def __init__(self, request: SynthesisRequest, app: AndroidApp, paths: _Paths, db: sqlite3.Connection) -> None:
        self.req, self.app, self.paths, self.db = request, app, paths, db
        self.table = app.tables[paths.table]
        self.entity = singular(self.table.name)
        self.skills: dict[str, Skill] = {}
        self.notes: list[str] = []
        self.display = next((c for c in paths.list_screen.list_columns if c in self.table.columns), None) or self.table.display_column

    def recipes(self) -> dict[str, Any]:
        p = self.paths
        editable = [i for i in (p.editor.inputs if p.editor else []) if i.id in self.table.columns and i.label]
        has_detail = p.detail is not None and self.display is not None
        return {
            "create": self.create if editable and p.new_button else None,
            "update": self.update if has_detail and p.edit_button and editable else None,
            "delete": self.delete if has_detail and p.delete_button else None,
            "retrieve": self.retrieve if has_detail and any(c in self.table.columns for c in p.detail.details) else None,
            "multi_step": self.multi_step if editable and p.new_button and has_detail and (p.edit_button or p.delete_button) else None,
        }

    # ---- families -------------------------------------------------------------------------------
    def create(self, rng: random.Random, seed: int) -> TaskSpec | None:
        fills, said, values = [], [], {}
        for field_ in self.paths.editor.inputs:
            if field_.id not in self.table.columns or not field_.label:
                continue
            if field_.kind == "checkbox":
                if rng.random() < 0.5:
                    fills.append({"action": "check", "target": {"label": field_.label}, "checked": True})
                    said.append(f"tick {quote(field_.label)}")
                    values[field_.id] = 1
                continue
            value = self._value(field_, rng)
            fills.append({"action": "type", "target": {"label": field_.label}, "text": str(value)})
            said.append(f"{field_.label.lower()} {quote(value)}")
            values[field_.id] = value
        if self.display not in values:
            return None
        text_said = [s for s in said if not s.startswith("tick")]
        ticks = [s for s in said if s.startswith("tick")]
        instruction = f"{rng.choice(OPENERS)}add a new {self.entity} with {_join(text_said)}{' and ' + _join(ticks) if ticks else ''}."
        reference = [self._tap_button(self.paths.new_button), *fills, *self._press(self.paths.save_button)]
        verifier = {"template": "row_exists", "params": {"table": self.table.name, "where": values}}
        return self._spec("create", instruction, {"values": values}, seed, [], verifier, reference)

    def update(self, rng: random.Random, seed: int) -> TaskSpec | None:
        row = self._inject_row(rng)
        choices = [i for i in self.paths.editor.inputs if i.id in self.table.columns and i.label and i.kind != "checkbox"]
        if row is None or not choices:
            return None
        field_ = rng.choice(choices)
        value = self._value(field_, rng, avoid=row.get(field_.id))
        instruction = f"{rng.choice(OPENERS)}change the {field_.label.lower()} of the {self.entity} {quote(row[self.display])} to {quote(value)}."
        reference = [
            {"action": "left_click", "target": {"text": row[self.display]}},
            self._tap_button(self.paths.edit_button),
            {"action": "type", "target": {"label": field_.label}, "text": str(value)},
            *self._press(self.paths.save_button),
        ]
        verifier = {"template": "row_exists", "params": {"table": self.table.name, "where": {"id": row["id"], field_.id: value}}}
        params = {"row": row["id"], "values": {field_.id: value}}
        return self._spec("update", instruction, params, seed, [self._injection(row)], verifier, reference)

    def delete(self, rng: random.Random, seed: int) -> TaskSpec | None:
        row = self._inject_row(rng)
        if row is None:
            return None
        instruction = f"{rng.choice(OPENERS)}delete the {self.entity} {quote(row[self.display])}."
        reference = [{"action": "left_click", "target": {"text": row[self.display]}}, *self._press(self.paths.delete_button)]
        verifier = {"template": "row_absent", "params": {"table": self.table.name, "where": {"id": row["id"]}}}
        return self._spec("delete", instruction, {"row": row["id"]}, seed, [self._injection(row)], verifier, reference)

    def retrieve(self, rng: random.Random, seed: int) -> TaskSpec | None:
        column, label = rng.choice([(c, lbl) for c, lbl in self.paths.detail.details.items() if c in self.table.columns])
        rows = self.db.execute(
            f"SELECT id, {self.display} AS shown, {column} AS value FROM {self.table.name} WHERE {column} IS NOT NULL "
            f"AND {self.display} IN (SELECT {self.display} FROM {self.table.name} GROUP BY 1 HAVING count(*) = 1) ORDER BY id"
        ).fetchall()
        if not rows:
            return None
        row = rng.choice(rows)
        instruction = rng.choice((
            f"What does the {self.entity} {quote(row['shown'])} say under {quote(label)}?",
            f"Look up the {self.entity} {quote(row['shown'])}: what is its {quote(label)}?",
        ))
        reference = [
            {"action": "left_click", "target": {"text": row["shown"]}},
            {"action": "terminate", "status": "success", "answer": str(row["value"])},
        ]
        verifier = {"template": "answer_equals", "params": {"answer": str(row["value"])}}
        return self._spec("retrieve", instruction, {"row": row["id"], "detail": label}, seed, [], verifier, reference)

    def multi_step(self, rng: random.Random, seed: int) -> TaskSpec | None:
        """Create one row, then change or delete another (the editor returns to the list after Save)."""
        first = self.create(random.Random(rng.randrange(2**31)), seed)
        then = [f for f in (self.update if self.paths.edit_button else None, self.delete if self.paths.delete_button else None) if f]
        second = rng.choice(then)(random.Random(rng.randrange(2**31)), seed)
        if first is None or second is None:
            return None
        tail = second.instruction[0].lower() + second.instruction[1:]
        for opener in OPENERS:
            if opener and tail.startswith(opener.lower()):
                tail = tail[len(opener):]
        instruction = f"{first.instruction.rstrip('.')}, and then {tail}"
        verifier = {"template": "all_of", "params": {"checks": [first.verifier, second.verifier]}}
        return self._spec(
            "multi_step", instruction, {"steps": [first.params, second.params]}, seed,
            first.injection + second.injection, verifier, first.reference + second.reference,
        )

    # ---- pieces ---------------------------------------------------------------------------------
    def _value(self, field_: Input, rng: random.Random, avoid: Any = None) -> Any:
        column = self.table.columns[field_.id]
        categories = self._categories(field_.id) if field_.id != self.display else []
        for _ in range(6):
            if categories:  # a folder, a category: one of the values the app already uses
                value: Any = rng.choice(categories)
            else:
                value = value_for(field_.id, column.type, "number" if field_.kind == "number" else "text", rng, self.table.name)
            value = _ascii(value) if isinstance(value, str) else value
            if str(value) != str(avoid):
                return value
        return None

    def _categories(self, column: str) -> list[Any]:
        """The values of a column that takes a few repeated values (a folder, a category), else []."""
        values = [r[0] for r in self.db.execute(
            f"SELECT {column} FROM {self.table.name} WHERE {column} IS NOT NULL GROUP BY 1 HAVING count(*) > 1 ORDER BY 1"
        )]
        return values if 1 < len(values) <= 8 else []

    def _tap_button(self, name: str) -> dict[str, Any]:
        return {"action": "left_click", "target": {"role": "button", "name": name}}

    def _press(self, name: str) -> list[dict[str, Any]]:
        """A control the manifest declares sensitive is confirmed with the user first."""
        kind = self.req.manifest.sensitive_kind(name)
        ask = [{"action": "call_user", "reason": f"This will {kind} ({name}). Shall I go ahead?"}] if kind else []
        return [*ask, self._tap_button(name)]

    def _insert_skill(self) -> Skill:
        name = f"insert_{self.table.name}"
        if name not in self.skills:
            cols = ["id", *[c.name for c in self.table.columns.values() if c.name != "id" and (not c.has_default or c.type == "TEXT")]]
            self.skills[name] = Skill(
                name, self.req.manifest.name, "sql",
                f"Add one {self.entity} row with the given values (read from the app's schema)",
                {"table": self.table.name, "statements": [
                    f"INSERT INTO {self.table.name} ({', '.join(cols)}) VALUES ({', '.join(':' + c for c in cols)})"
                ]},
            )
        return self.skills[name]

    def _inject_row(self, rng: random.Random) -> dict[str, Any] | None:
        row: dict[str, Any] = {"id": rng.randint(*INJECT_ID_RANGE)}
        for col in self._insert_skill().spec["statements"][0].split("(")[1].split(")")[0].split(", ")[1:]:
            c = self.table.columns[col]
            if col.endswith(("_on", "_at", "date")):
                row[col] = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"
            elif col != self.display and self._categories(col):
                row[col] = rng.choice(self._categories(col))
            else:
                row[col] = _ascii(str(value_for(col, c.type, "text", rng, self.table.name))) if c.type == "TEXT" else value_for(col, c.type, "number", rng)
        return row

    def _injection(self, row: dict[str, Any]) -> dict[str, Any]:
        return {"skill": self._insert_skill().name, "args": row}

    def _spec(self, family: str, instruction: str, params: dict, seed: int, injection: list, verifier: dict, reference: list) -> TaskSpec:
        instruction = instruction[:1].upper() + instruction[1:]
        if instruction.startswith("Could you ") and instruction.endswith("."):
            instruction = instruction[:-1] + "?"
        return TaskSpec(
            sandbox=self.req.manifest.name, source_commit=self.req.source.commit, family=family, app_area=self.table.name,
            instruction=instruction, params=params, seed=seed, injection=injection, verifier=verifier, reference=reference,
            provenance={"agent": AGENT, "model": None, "synthesiser_version": SYNTHESISER_VERSION},
        )


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
