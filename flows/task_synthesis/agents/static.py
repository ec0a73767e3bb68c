"""The offline coding agent: reads an app's schema, routes, forms and templates and composes
task families from them. No model, no network; deterministic for a given seed and source commit.

Every recipe here is derived from what the source shows (which form writes which table, which page
renders which form, which detail fields a page displays); nothing is written per app.
"""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.agents.navigation import Navigator
from flows.task_synthesis.app_model import AppModel, Field, Form, Route, Table, build_app_model
from flows.task_synthesis.task_spec import SYNTHESISER_VERSION, TaskSpec
from flows.task_synthesis.values import person, value_for
from sandboxes.skills import Skill

FAMILIES = ("create", "update", "delete", "retrieve", "search", "multi_step")
OPENERS = ("Please ", "Could you ", "I need you to ", "Go ahead and ", "")
PREPOSITIONS = ("to", "from", "into", "in", "on", "as", "for")
INJECT_ID_RANGE = (900_000, 999_999)
NAMING_COLUMNS = ("name", "title", "subject", "label", "display_name", "full_name")
TEXTLIKE = ("text", "email", "textarea", "number", "date", "tel", "url", "search")

Recipe = Callable[[random.Random, int], "TaskSpec | None"]


def singular(table: str) -> str:
    word = table.replace("_", " ")
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def quote(value: Any) -> str:
    return f"“{value}”"


@dataclass
class _Fill:
    field: Field
    action: dict[str, Any]
    spoken: str  # how a person would say the value
    column: str | None
    stored: Any  # the value the verifier expects in the column


class StaticAgent:
    name = "static"

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        if request.manifest.sandbox.kind == "desktop":  # a files workspace with a file browser and a shell
            from flows.task_synthesis.agents.workspace import WorkspaceAgent

            return WorkspaceAgent().synthesize(request)
        model = build_app_model(request.source)
        out = AgentOutput()
        if not model.tables or not model.forms:
            out.notes.append(
                f"{request.manifest.name}: found {len(model.tables)} tables and {len(model.forms)} forms in the "
                "source; the static agent needs schema.sql and labelled forms (sandboxes/WRITING_APPS.md)"
            )
            return out
        if request.app_db is None:
            out.notes.append(f"{request.manifest.name}: no app database to draw parameters from")
            return out
        db = sqlite3.connect(f"file:{request.app_db}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        try:
            composer = _Composer(request, model, db)
            recipes = composer.recipes()
            out.candidates = _draw(recipes, request.count, request.seed)
            out.skills = list(composer.skills.values())
            out.notes.extend(composer.notes)
        finally:
            db.close()
        typed = sum(any(a.get("action") == "goto" for a in c.reference) for c in out.candidates)
        if typed:
            out.notes.append(f"{request.manifest.name}: {typed} of {len(out.candidates)} references open a page by its URL "
                             "(no link path from the home page was found)")
        used = {inj["skill"] for c in out.candidates for inj in c.injection}
        out.skills = [s for s in out.skills if s.name in used]
        return out


def _draw(recipes: dict[str, list[Recipe]], count: int, seed: int) -> list[TaskSpec]:
    """Round-robin over families (a few seeded tries each turn) until `count` distinct candidates."""
    families = [f for f in FAMILIES if recipes.get(f)]
    rng = random.Random(seed)
    out: dict[str, TaskSpec] = {}
    rounds = 0
    while families and len(out) < count and rounds < count * 4:
        rounds += 1
        family = families[rounds % len(families)]
        for _ in range(6):
            cand_seed = rng.randrange(2**31)
            spec = rng.choice(recipes[family])(random.Random(cand_seed), cand_seed)
            if spec is not None and spec.task_id not in out:
                out[spec.task_id] = spec
                break
    return list(out.values())


class _Composer:
    def __init__(self, request: SynthesisRequest, model: AppModel, db: sqlite3.Connection) -> None:
        self.req = request
        self.model = model
        self.db = db
        self.sandbox = request.manifest.name
        self.commit = request.source.commit
        self.skills: dict[str, Skill] = {}
        self.notes: list[str] = []
        self._who_value: tuple[str, str] = ("Ana", "Silva")
        start = request.manifest.start
        self.typed_urls = 0  # references that open a page by its URL (no link path to it was found)
        self.nav = Navigator(request.source.files, model, start.home_path if start else "/")

    # ---- recipes --------------------------------------------------------------------------------
    def recipes(self) -> dict[str, list[Recipe]]:
        out: dict[str, list[Recipe]] = {f: [] for f in FAMILIES}

        def add(family: str, fn: Callable[[random.Random, int], TaskSpec | None]) -> None:
            def recipe(rng: random.Random, seed: int) -> TaskSpec | None:
                self._who_value = person(random.Random(seed))  # one made-up person per candidate
                return fn(rng, seed)

            out[family].append(recipe)

        for form in self.model.forms:
            if form.method == "get":
                if any(f.name == "q" for f in form.fields):
                    add("search", lambda rng, s, form=form: self.search(form, rng, s))
                continue
            route = self.model.route_for_action(form)
            if route is None or not route.writes():
                continue
            op = route.writes()[0]
            if op.table not in self.model.tables:
                continue
            if op.verb in ("insert", "update", "delete"):
                method = {"insert": self.create, "update": self.update, "delete": self.delete}[op.verb]
                family = {"insert": "create", "update": "update", "delete": "delete"}[op.verb]
                add(family, lambda rng, s, f=form, r=route, m=method: m(f, r, rng, s))
        for detail in self.model.details:
            add("retrieve", lambda rng, s, d=detail: self.retrieve(d, rng, s))
        singles = out["create"] + out["update"]
        if len(singles) >= 2:
            out["multi_step"].append(lambda rng, s: self.multi_step(singles, rng, s))
        return out

    # ---- families -------------------------------------------------------------------------------
    def create(self, form: Form, route: Route, rng: random.Random, seed: int) -> TaskSpec | None:
        table = self.model.tables[route.writes()[0].table]
        page = self._page(form, rng)
        if page is None:
            return None
        url, ctx_table, ctx_row = page
        fills = []
        for f in form.visible_fields:
            if f.type == "password":
                if f.required:
                    return None
                continue
            fill = self._fill(form, f, table, rng, ctx_table, ctx_row)
            if fill is None:
                if f.required:
                    return None
                continue
            if f.type == "checkbox" and not fill.stored:
                continue  # unticked is the default a person would not mention
            if fill.column is None:  # a value the app keeps nowhere a verifier can read: not asked for
                if f.required:
                    return None
                continue
            fills.append(fill)
        where = self._where(fills, table)
        if not where or not fills:
            return None
        main = self._main_phrase(form, ctx_table, ctx_row)
        details = _join([f"{_spoken_label(f.field.label)} {f.spoken}" for f in fills if f.field.type != "checkbox"])
        ticks = [f"tick {quote(f.field.label)}" for f in fills if f.field.type == "checkbox"]
        instruction = f"{rng.choice(OPENERS)}{main} with {details}{', and ' + _join(ticks) if ticks else ''}."
        reference = [*self._open(url), *[f.action for f in fills], *self._submit(form)]
        params = {"form": form.label, "page": url, "values": {f.field.name: f.stored for f in fills}}
        verifier = {"template": "row_exists", "params": {"table": table.name, "where": where}}
        return self._spec("create", url, instruction, params, seed, [], verifier, reference)

    def update(self, form: Form, route: Route, rng: random.Random, seed: int) -> TaskSpec | None:
        op = route.writes()[0]
        table = self.model.tables[op.table]
        pages = self.model.pages_rendering(form.template, form.mode)
        if not pages:
            return None
        page = rng.choice(pages)
        injection: list[dict[str, Any]] = []
        if page.params:
            if _path_table(page.path, self.model) != table.name:
                return None
            row = self._inject_row(table, rng, form)
            if row is None:
                return None
            injection.append({"skill": self._insert_skill(table).name, "args": row})
            key = {"id": row["id"]}
            url = _fill_path(page.path, row["id"])
            subject = f"the {singular(table.name)} {quote(row[table.display_column])}" if table.display_column else None
        else:
            literal = re.search(r"(\w+)\s*=\s*(\d+)", op.where)
            if not literal:
                return None
            key = {literal.group(1): int(literal.group(2))}
            current = self.db.execute(f"SELECT * FROM {table.name} WHERE {literal.group(1)} = ?", [key[literal.group(1)]]).fetchone()
            if current is None:
                return None
            row = dict(current)
            url = page.path
            subject = None
        candidates = [f for f in form.visible_fields if f.name in op.columns and f.type != "password"]
        if not candidates:
            return None
        chosen = rng.sample(candidates, k=min(len(candidates), rng.choice((1, 1, 2))))
        fills = []
        for f in chosen:
            fill = self._fill(form, f, table, rng, None, None, current=row.get(f.name))
            if fill is None:
                return None
            fills.append(fill)
        phrases = []
        for fill in fills:  # the first phrase names the record (the request must say which one)
            label = _spoken_label(fill.field.label)
            which = f" of {subject}" if subject and not phrases else ""
            if fill.field.type == "checkbox":
                phrases.append(f"{'tick' if fill.stored else 'untick'} {quote(fill.field.label)}{' for ' + subject if which else ''}")
            elif subject:
                phrases.append(f"change the {label}{which} to {fill.spoken}")
            else:  # one record of the user's own (settings): the form says which ("Update vacation reply")
                thing = " ".join(form.label.split()[1:]).lower()
                mine = f" in my {thing}" if thing and label not in thing and not phrases else ""
                phrases.append(f"change {'the' if mine else 'my'} {label}{mine} to {fill.spoken}")
        instruction = f"{rng.choice(OPENERS)}{_join(phrases)}."
        where = dict(key) | {f.column: f.stored for f in fills if f.column}
        verifier = {"template": "row_exists", "params": {"table": table.name, "where": where}}
        reference = [*self._open(url, row if injection else None, table.name), *[f.action for f in fills], *self._submit(form)]
        params = {"form": form.label, "page": url, "key": key, "values": {f.field.name: f.stored for f in fills}}
        return self._spec("update", url, instruction, params, seed, injection, verifier, reference)

    def delete(self, form: Form, route: Route, rng: random.Random, seed: int) -> TaskSpec | None:
        op = route.writes()[0]
        table = self.model.tables[op.table]
        if not re.search(r"\bid\s*=\s*\?", op.where) or not table.display_column:
            return None
        pages = [p for p in self.model.pages_rendering(form.template, form.mode) if p.params and _path_table(p.path, self.model) == table.name]
        if not pages:
            return None
        row = self._inject_row(table, rng, form)
        if row is None:
            return None
        url = _fill_path(rng.choice(pages).path, row["id"])
        instruction = f"{rng.choice(OPENERS)}delete the {singular(table.name)} {quote(row[table.display_column])}."
        verifier = {"template": "row_absent", "params": {"table": table.name, "where": {"id": row["id"]}}}
        reference = [*self._open(url, row, table.name), *self._submit(form)]
        injection = [{"skill": self._insert_skill(table).name, "args": row}]
        params = {"form": form.label, "page": url, "row": row["id"]}
        return self._spec("delete", url, instruction, params, seed, injection, verifier, reference)

    def retrieve(self, detail: Any, rng: random.Random, seed: int) -> TaskSpec | None:
        attr = detail.expr.split(".")[-1]
        for page in self.model.pages_rendering(detail.template):
            table_name = _path_table(page.path, self.model)
            if len(page.params) != 1 or table_name is None:
                continue
            table = self.model.tables[table_name]
            display = table.display_column
            if attr not in table.columns or not display or attr == display:
                continue
            rows = self.db.execute(
                f"SELECT id, {display} AS shown, {attr} AS value FROM {table.name} "
                f"WHERE {attr} IS NOT NULL AND trim(CAST({attr} AS TEXT)) != '' AND {display} IN "
                f"(SELECT {display} FROM {table.name} GROUP BY {display} HAVING count(*) = 1) "
                f"ORDER BY id LIMIT 500"
            ).fetchall()
            if not rows:
                continue
            row = rng.choice(rows)
            url = _fill_path(page.path, row["id"])
            entity = singular(table.name)
            instruction = rng.choice(
                (
                    f"What is the {detail.label.lower()} of the {entity} {quote(row['shown'])}?",
                    f"Look up the {entity} {quote(row['shown'])} and tell me its {detail.label.lower()}.",
                    f"Find out the {detail.label.lower()} of the {entity} {quote(row['shown'])}.",
                )
            )
            reference = [{"action": "goto", "url": url}, {"action": "terminate", "status": "success", "answer": str(row["value"])}]
            verifier = {"template": "answer_equals", "params": {"answer": str(row["value"])}}
            params = {"detail": detail.label, "page": url, "row": row["id"]}
            return self._spec("retrieve", url, instruction, params, seed, [], verifier, reference)
        return None

    def search(self, form: Form, rng: random.Random, seed: int) -> TaskSpec | None:
        route = self.model.route_for_action(form)
        if route is None:
            return None
        tables = [self.model.tables[o.table] for o in route.ops if o.verb == "select" and o.table in self.model.tables]
        tables = sorted((t for t in tables if t.display_column in NAMING_COLUMNS), key=lambda t: NAMING_COLUMNS.index(t.display_column))
        q = next(f for f in form.fields if f.name == "q")
        if not tables or not q.label:
            return None
        table = tables[0]
        row = self.db.execute(
            f"SELECT {table.display_column} AS shown FROM {table.name} ORDER BY id LIMIT 1 OFFSET ?",
            [rng.randrange(max(1, self._count(table.name)))],
        ).fetchone()
        if row is None or not str(row["shown"]).strip():
            return None
        term = " ".join(str(row["shown"]).split()[:3])
        actions = [*self._open("/"), {"action": "type", "target": self._target(form, q), "text": term}]
        lookaheads = [f"(?=(?:.*&)?q={re.escape(term)}(?:&|$))"]
        said = f"Search for {quote(term)}"
        filters = [f for f in form.visible_fields if f.tag == "select" and len([o for o in f.static_options if o[0]]) > 0]
        if filters and rng.random() < 0.5:
            f = rng.choice(filters)
            value, text = rng.choice([o for o in f.static_options if o[0]])
            actions.append({"action": "select", "target": self._target(form, f), "value": value})
            lookaheads.append(f"(?=(?:.*&)?{re.escape(f.name)}={re.escape(value)}(?:&|$))")
            said += f" with {f.label.lower()} set to {quote(text)}"
        actions.extend(self._submit(form))
        path = re.escape(route.path)
        verifier = {"template": "url_matches", "params": {"pattern": f"{path}\\?{''.join(lookaheads)}"}}
        instruction = f"{said}{rng.choice(('.', ' and show me the results.', ' for me.'))}"
        params = {"form": form.label, "term": term, "pattern": verifier["params"]["pattern"]}
        return self._spec("search", route.path, instruction, params, seed, [], verifier, actions)

    def multi_step(self, singles: list[Recipe], rng: random.Random, seed: int) -> TaskSpec | None:
        parts: list[TaskSpec] = []
        for _ in range(10):
            spec = rng.choice(singles)(random.Random(rng.randrange(2**31)), seed)
            if spec and all(spec.params.get("form") != p.params.get("form") for p in parts):
                parts.append(spec)
            if len(parts) == 2:
                break
        if len(parts) < 2:
            return None
        a, b = parts
        second = b.instruction[0].lower() + b.instruction[1:] if not b.instruction.startswith("I ") else b.instruction
        for opener in OPENERS:
            if opener and second.startswith(opener.lower()):
                second = second[len(opener):]
        instruction = f"{a.instruction.rstrip('.?')}, and then {second.rstrip('.?')}."
        verifier = {"template": "all_of", "params": {"checks": [a.verifier, b.verifier]}}
        params = {"steps": [a.params, b.params]}
        back = [] if b.reference and b.reference[0]["action"] == "goto" else [self.nav.home_link() or {"action": "goto", "url": "/"}]
        return self._spec(
            "multi_step", a.app_area, instruction, params, seed, a.injection + b.injection, verifier, a.reference + back + b.reference,
        )

    # ---- pieces ---------------------------------------------------------------------------------
    def _spec(self, family: str, url: str, instruction: str, params: dict, seed: int, injection: list, verifier: dict, reference: list) -> TaskSpec:
        instruction = instruction[:1].upper() + instruction[1:]
        if instruction.startswith("Could you ") and instruction.endswith("."):
            instruction = instruction[:-1] + "?"
        area = url if "/" not in url else (url.strip("/").split("/")[0].split("?")[0] or "home")
        return TaskSpec(
            sandbox=self.sandbox,
            source_commit=self.commit,
            family=family,
            app_area=area,
            instruction=instruction,
            params=params,
            seed=seed,
            injection=injection,
            verifier=verifier,
            reference=reference,
            provenance={"agent": "static", "model": None, "synthesiser_version": SYNTHESISER_VERSION},
        )

    def _page(self, form: Form, rng: random.Random) -> tuple[str, str | None, dict | None] | None:
        """A URL of a page showing the form; for entity pages, a random existing entity's."""
        pages = self.model.pages_rendering(form.template, form.mode)
        plain = [p for p in pages if not p.params]
        if plain:
            return rng.choice(plain).path, None, None
        for p in pages:
            table = _path_table(p.path, self.model)
            if len(p.params) == 1 and table:
                n = self._count(table)
                if not n:
                    continue
                row = self.db.execute(f"SELECT * FROM {table} ORDER BY id LIMIT 1 OFFSET ?", [rng.randrange(n)]).fetchone()
                return _fill_path(p.path, row["id"]), table, dict(row)
        return None

    def _open(self, url: str, row: dict[str, Any] | None = None, table: str | None = None) -> list[dict[str, Any]]:
        """How a person gets to `url` from the home page: the links they would click; a typed URL only
        when no link path is known (a record on a paginated list, a page nothing links to)."""
        clicks = self.nav.path_to(url, row, table)
        if clicks is None:
            self.typed_urls += 1
            return [{"action": "goto", "url": url}]
        return clicks

    def _count(self, table: str) -> int:
        return self.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def _target(self, form: Form, f: Field) -> dict[str, Any]:
        t: dict[str, Any] = {"label": f.label}
        if form.label and "{{" not in form.label:
            t["within"] = form.label
        return t

    def _submit(self, form: Form) -> list[dict[str, Any]]:
        """Press the form's button; a control the manifest declares sensitive is confirmed with the
        user first, as a careful agent should (and as the training data should show)."""
        name = form.buttons[0] if form.buttons else "Submit"
        target: dict[str, Any] = {"role": "button", "name": name}
        if form.label and "{{" not in form.label:
            target["within"] = form.label
        click = {"action": "left_click", "target": target}
        kind = self.req.manifest.sensitive_kind(name)
        if kind is None:
            return [click]
        ask = {"action": "call_user", "reason": f"This will {kind} ({name}). Shall I go ahead?"}
        return [ask, click]

    def _fill(self, form: Form, f: Field, table: Table, rng: random.Random, ctx_table: str | None, ctx_row: dict | None, current: Any = None) -> _Fill | None:
        if not f.label or "{{" in f.label:
            return None
        column = f.name if f.name in table.columns else None
        target = self._target(form, f)
        if f.type == "checkbox":
            value = 0 if current else 1 if current is not None else rng.choice((0, 1))
            return _Fill(f, {"action": "check", "target": target, "checked": bool(value)}, "on" if value else "off", column, value)
        if f.type == "radio":
            return None
        if f.tag == "select":
            if f.static_options:
                options = [o for o in f.static_options if o[0] != "" and str(o[0]) != str(current)]
                if not options:
                    return None
                value, text = rng.choice(options)
                stored: Any = int(value) if value.lstrip("-").isdigit() else value
                return _Fill(f, {"action": "select", "target": target, "value": value}, quote(text), column, stored)
            ref = table.columns[f.name].references if column else _guess_ref(f.name, self.model)
            if not ref or ref not in self.model.tables:
                return None
            ref_table = self.model.tables[ref]
            sql, args = f"SELECT * FROM {ref}", []
            if ctx_table and ctx_row:
                link = next((c.name for c in ref_table.columns.values() if c.references == ctx_table), None)
                if link:
                    sql, args = sql + f" WHERE {link} = ?", [ctx_row["id"]]
            rows = [dict(r) for r in self.db.execute(sql + " ORDER BY id LIMIT 200", args).fetchall()]
            rows = [r for r in rows if r["id"] != current]
            if not rows:
                return None
            row = rng.choice(rows)
            return _Fill(f, {"action": "select", "target": target, "value": str(row["id"])}, quote(_describe(ref_table, row)), column, row["id"])
        if f.type in TEXTLIKE:
            col = table.columns.get(f.name)
            who = self._who(rng)
            value = value_for(f.name, col.type if col else "TEXT", f.type, rng, table.name, who)
            for _ in range(5):
                if str(value) != str(current):
                    break
                value = value_for(f.name, col.type if col else "TEXT", f.type, rng, table.name)
            spoken = str(value) if isinstance(value, int) else quote(value)
            return _Fill(f, {"action": "type", "target": target, "text": str(value)}, spoken, column, value)
        return None

    def _where(self, fills: list[_Fill], table: Table) -> dict[str, Any]:
        """Every value the request names, in the column it lands in: a verifier that checks only some of
        them passes an agent that typed the others wrong (the gate's counterfactual replays reject it)."""
        return {f.column: f.stored for f in fills if f.column}

    def _main_phrase(self, form: Form, ctx_table: str | None, ctx_row: dict | None) -> str:
        words = form.label.split() or (form.buttons[0].split() if form.buttons else ["submit"])
        verb, rest = words[0].lower(), " ".join(words[1:]).lower()
        ctx = ""
        if ctx_table and ctx_row:
            display = self.model.tables[ctx_table].display_column
            ctx = f"the {singular(ctx_table)} {quote(ctx_row[display])}" if display else f"this {singular(ctx_table)}"
        if ctx and rest.split(" ")[0] in PREPOSITIONS:
            return f"{verb} {ctx} {rest}"
        if verb in ("add", "create", "new") and rest:
            phrase = f"{'create' if verb == 'new' else verb} a new {rest}"
        else:
            phrase = f"{verb} {rest}".strip()
        return f"{phrase} for {ctx}" if ctx else phrase

    # ---- injection ------------------------------------------------------------------------------
    def _insert_columns(self, table: Table) -> list[str]:
        cols = ["id"]
        for c in table.columns.values():
            if c.name == "id":
                continue
            if (c.not_null and not c.has_default) or (c.type == "TEXT" and not c.references) or c.references == "users":
                cols.append(c.name)
        return cols

    def _insert_skill(self, table: Table) -> Skill:
        name = f"insert_{table.name}"
        if name not in self.skills:
            cols = self._insert_columns(table)
            self.skills[name] = Skill(
                name=name,
                sandbox=self.sandbox,
                kind="sql",
                description=f"Add one {singular(table.name)} row with the given values (read from schema.sql)",
                spec={
                    "table": table.name,
                    "statements": [f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES ({', '.join(':' + c for c in cols)})"],
                },
            )
        return self.skills[name]

    def _inject_row(self, table: Table, rng: random.Random, form: Form | None = None) -> dict[str, Any] | None:
        """A record to inject; for a form its page shows only under conditions on the record, one that meets them."""
        wanted = form_conditions(self.nav.templates.get(form.template, ""), form) if form is not None else {}
        if any(col not in table.columns for col in wanted):
            return None
        row: dict[str, Any] = {"id": rng.randint(*INJECT_ID_RANGE)}
        for name in self._insert_columns(table)[1:]:
            col = table.columns[name]
            if col.references:
                ids = [r[0] for r in self.db.execute(f"SELECT id FROM {col.references} ORDER BY id LIMIT 50").fetchall()]
                if not ids:
                    return None
                row[name] = 1 if col.references == "users" and 1 in ids else rng.choice(ids)
            elif name.endswith("_at") or name.endswith("date"):
                row[name] = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d} 09:{rng.randint(10, 59)}:00"
            else:
                sample = self.db.execute(f"SELECT {name} FROM {table.name} WHERE {name} IS NOT NULL LIMIT 1").fetchone()
                if sample is not None and isinstance(sample[0], int) and col.type != "TEXT":
                    row[name] = sample[0] if name.startswith(("is_", "has_")) else value_for(name, "INTEGER", "number", rng)
                else:
                    row[name] = value_for(name, col.type, "text", rng, table.name, self._who(rng))
        if any(col not in row for col in wanted):  # a condition on a column the skill does not write
            return None
        return row | wanted

    def _who(self, rng: random.Random) -> tuple[str, str]:
        """The made-up person of the current candidate, so its name, email and phone agree."""
        return self._who_value


def _describe(table: Table, row: dict[str, Any]) -> str:
    """How a person names a row: its name-like column, else its short descriptive text columns."""
    if table.display_column in NAMING_COLUMNS and row.get(table.display_column) not in (None, ""):
        return str(row[table.display_column])
    texts = [
        str(v) for k, v in row.items()
        if isinstance(v, str) and v and len(v) < 40 and not k.endswith("_at") and k not in ("sku", "code", "password")
    ]
    return " / ".join(texts[:2]) or f"#{row['id']}"


def _guess_ref(field_name: str, model: AppModel) -> str | None:
    if not field_name.endswith("_id"):
        return None
    base = field_name[:-3]
    for cand in (base + "s", base + "es", base[:-1] + "ies" if base.endswith("y") else base, base):
        if cand in model.tables:
            return cand
    return None


def _path_table(path: str, model: AppModel) -> str | None:
    parts = [p for p in path.strip("/").split("/") if p and not p.startswith("<")]
    for p in reversed(parts[:1] or []):
        name = p.replace("-", "_")
        if name in model.tables:
            return name
    return None


def _fill_path(path: str, value: Any) -> str:
    return re.sub(r"<(?:[a-z]+:)?\w+>", str(value), path, count=1)


def _spoken_label(label: str) -> str:
    return re.sub(r"^(your|my)\s+", "", label.lower())


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


_IF_BLOCK = re.compile(r"\{%-?\s*(if|elif|else|endif)\b\s*(.*?)\s*-?%\}", re.S)
_EQUALS = re.compile(r"""^\w+\.(\w+)\s*==\s*(-?\d+|'[^']*'|"[^"]*")$""")


def form_conditions(template_text: str, form: Form) -> dict[str, Any]:
    """What a record must hold for its page to show `form`: the `{% if record.column == literal %}` blocks
    around the form in the template (a "Delete forever" shown only in the trash). Conditions of other
    shapes (an else branch, `not`, `in`) are not read: they constrain nothing here, as before."""
    at = template_text.find(f'aria-label="{form.label}"') if form.label else -1
    if at < 0:
        return {}
    open_blocks: list[str | None] = []
    for m in _IF_BLOCK.finditer(template_text, 0, at):
        tag, cond = m.group(1), m.group(2)
        if tag == "if":
            open_blocks.append(cond)
        elif tag == "endif":
            if open_blocks:
                open_blocks.pop()
        elif open_blocks:  # elif / else: the branch holds when earlier ones did not
            open_blocks[-1] = None
    wanted: dict[str, Any] = {}
    for cond in open_blocks:
        parts = [p.strip() for p in re.split(r"\s+and\s+", cond or "")]
        for part in parts:
            m = _EQUALS.match(part)
            if not m:
                continue
            literal = m.group(2)
            wanted[m.group(1)] = int(literal) if literal.lstrip("-").isdigit() else literal[1:-1]
    return wanted