"""What the static agent learns from an app's source: tables, routes with their SQL, forms, detail fields.

It reads server-rendered Flask apps in their real shapes: tables from `schema.sql` or SQLAlchemy models
(`db.Model` classes with `db.Column`, or `Mapped[...] = mapped_column(...)`), routes on the app or on
blueprints (their `url_prefix`, also when given to `register_blueprint` in an app factory), which need a
login (`@login_required`), the SQL each handler runs (literal SQL, or ORM writes: `session.add(Model(...))`,
`session.delete(...)`, attribute assignments), and Jinja templates with labelled forms. It only adds to
discovery, which needs none of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from flows.task_synthesis.source import SourceSnapshot

_JINJA_EXPR = re.compile(r"\{\{.*?\}\}", re.S)
_JINJA_BLOCK = re.compile(r"\{%.*?%\}", re.S)
_ROUTE_PARAM = re.compile(r"<(?:[a-z]+:)?(\w+)>")


@dataclass
class Column:
    name: str
    type: str
    not_null: bool
    has_default: bool
    references: str | None = None


@dataclass
class Table:
    name: str
    columns: dict[str, Column]

    @property
    def display_column(self) -> str | None:
        """The column a person would name a row by."""
        for c in ("name", "title", "label", "subject", "display_name", "full_name", "code", "email", "sku"):
            if c in self.columns:
                return c
        return None


@dataclass
class SqlOp:
    verb: str  # insert | update | delete | select
    table: str
    columns: list[str] = field(default_factory=list)
    where: str = ""


@dataclass
class Route:
    path: str  # Flask path, e.g. /addresses/<int:id>/edit
    methods: list[str]
    function: str
    ops: list[SqlOp]
    templates: list[str]
    login_required: bool = False

    @property
    def pattern(self) -> str:
        return _ROUTE_PARAM.sub("<>", self.path)

    @property
    def params(self) -> list[str]:
        return _ROUTE_PARAM.findall(self.path)

    def writes(self) -> list[SqlOp]:
        return [op for op in self.ops if op.verb in ("insert", "update", "delete")]


@dataclass
class Field:
    tag: str  # input | select | textarea
    name: str
    type: str
    id: str | None
    label: str | None
    required: bool
    static_options: list[tuple[str, str]] = field(default_factory=list)  # (value, text) written literally
    dynamic_options: bool = False  # options rendered by a Jinja loop
    value_expr: str | None = None


@dataclass
class Form:
    template: str
    method: str
    action: str  # with Jinja expressions replaced by <>
    action_raw: str
    label: str  # aria-label
    role: str | None
    fields: list[Field]
    buttons: list[str]
    endpoint: str | None = None  # the view function named by url_for() in the action
    mode: str | None = None  # "edit" / "new" when one template serves both through a Jinja conditional

    @property
    def visible_fields(self) -> list[Field]:
        return [f for f in self.fields if f.type not in ("hidden", "submit", "button") and f.label]

    @property
    def has_hidden(self) -> bool:
        return any(f.type == "hidden" for f in self.fields)


@dataclass
class DetailField:
    template: str
    label: str
    expr: str  # the Jinja expression inside <dd>, e.g. product.brand


@dataclass
class AppModel:
    tables: dict[str, Table]
    routes: list[Route]
    forms: list[Form]
    details: list[DetailField]

    def route_for_action(self, form: Form) -> Route | None:
        if form.endpoint:
            for r in self.routes:
                if r.function == form.endpoint and form.method.upper() in r.methods:
                    return r
            return None
        want = form.action.split("?")[0].rstrip("/") or "/"
        for r in self.routes:
            if r.pattern.rstrip("/") == want.rstrip("/") or (r.pattern == "/" and want == "/"):
                if form.method.upper() in r.methods:
                    return r
        return None

    def pages_rendering(self, template: str, mode: str | None = None) -> list[Route]:
        pages = [r for r in self.routes if template in r.templates and "GET" in r.methods]
        if mode == "new":
            return [r for r in pages if not r.params]
        if mode == "edit":
            return [r for r in pages if r.params]
        return pages


def build_app_model(src: SourceSnapshot) -> AppModel:
    tables = {}
    for text in src.glob(".sql").values():
        tables.update(parse_schema(text))
    python = src.glob(".py")
    models: dict[str, str] = {}  # model class -> its table
    for text in python.values():
        found, names = parse_models(text)
        tables.update({k: v for k, v in found.items() if k not in tables})
        models.update(names)
    defined: dict[tuple[str, str], str] = {}
    registered: dict[tuple[str, str], str] = {}
    for path, text in python.items():
        d, r = blueprint_prefixes(text, _module(path))
        defined.update(d)
        registered.update(r)
    routes = []
    for path, text in python.items():
        if "route(" in text or ".get(" in text or ".post(" in text:
            module = _module(path)
            owners = {var for (mod, var) in defined if mod == module} | {var for (mod, var) in registered if mod in (module, "")}
            prefixes = {var: registered.get((module, var), registered.get(("", var), defined.get((module, var), ""))) for var in owners}
            routes.extend(parse_routes(text, prefixes, models))
    forms, details = [], []
    templates = {p: t for p, t in src.files.items() if p.endswith((".html", ".jinja", ".j2"))}
    expanded = {p.split("/")[-1]: _expand_includes(t, templates) for p, t in templates.items()}
    for name, text in expanded.items():
        forms.extend(parse_forms(name, text))
        details.extend(parse_details(name, text))
    return AppModel(tables, routes, forms, details)


# ---- schema.sql ---------------------------------------------------------------------------------
_CREATE = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*?)\);", re.S | re.I)


def parse_schema(sql: str) -> dict[str, Table]:
    sql = re.sub(r"--[^\n]*", "", sql)
    tables = {}
    for name, body in _CREATE.findall(sql):
        cols = {}
        for part in _split_top_level(body):
            words = part.split()
            if not words or words[0].upper() in ("PRIMARY", "FOREIGN", "UNIQUE", "CHECK", "CONSTRAINT"):
                continue
            ref = re.search(r"REFERENCES\s+(\w+)", part, re.I)
            upper = part.upper()
            cols[words[0]] = Column(
                name=words[0],
                type=words[1].upper() if len(words) > 1 else "TEXT",
                not_null="NOT NULL" in upper or "PRIMARY KEY" in upper,
                has_default="DEFAULT" in upper or "PRIMARY KEY" in upper,
                references=ref.group(1) if ref else None,
            )
        tables[name] = Table(name, cols)
    return tables


def _split_top_level(body: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


# ---- routes -------------------------------------------------------------------------------------
_DECORATOR = re.compile(
    r"^@(\w+)\.(route|get|post)\(\s*[\"']([^\"']+)[\"'](?:[^)]*?methods\s*=\s*\[([^\]]*)\])?[^)]*\)\s*\n"
    r"((?:@[^\n]*\n)*)def\s+(\w+)",
    re.M,
)
_SQL = {
    "insert": re.compile(r"INSERT\s+(?:OR\s+\w+\s+)?INTO\s+(\w+)\s*\(([^)]*)\)", re.I),
    "update": re.compile(r"UPDATE\s+(\w+)\s+SET\s+(.*?)(?:\s+WHERE\s+(.*?))?(?:[\"']|$)", re.I | re.S),
    "delete": re.compile(r"DELETE\s+FROM\s+(\w+)(?:\s+WHERE\s+([^\"']*))?", re.I),
    "select": re.compile(r"SELECT\s.*?\sFROM\s+(\w+)", re.I | re.S),
}


def parse_routes(py: str, prefixes: dict[str, str] | None = None, models: dict[str, str] | None = None) -> list[Route]:
    """Routes of the app object or of blueprints (a blueprint's routes get its url_prefix)."""
    prefixes = prefixes or {}
    matches = list(_DECORATOR.finditer(py))
    routes = []
    for i, m in enumerate(matches):
        owner, kind, path, methods, decorators, fn = m.groups()
        path = (prefixes.get(owner, "").rstrip("/") + path) if prefixes.get(owner) else path
        end = matches[i + 1].start() if i + 1 < len(matches) else len(py)
        nxt = re.search(r"^(?:def |@|class )", py[m.end():end], re.M)
        body = py[m.end(): m.end() + nxt.start()] if nxt else py[m.end():end]
        if kind == "get":
            meths = ["GET"]
        elif kind == "post":
            meths = ["POST"]
        else:
            meths = [x.strip().strip("\"'").upper() for x in methods.split(",")] if methods else ["GET"]
        ops = parse_sql_ops(body) + parse_orm_ops(body, models or {})
        routes.append(Route(path, meths, fn, ops, re.findall(r"render_template\(\s*[\"']([^\"']+)", body),
                            login_required="login_required" in (decorators or "")))
    return routes


# ---- blueprints and SQLAlchemy models ------------------------------------------------------------------
_BLUEPRINT = re.compile(r"^(\w+)\s*=\s*Blueprint\(([^)]*)\)", re.M)
_REGISTER = re.compile(r"register_blueprint\(\s*(?:(\w+)\.)?(\w+)\s*(?:,[^)]*?url_prefix\s*=\s*[\"']([^\"']*)[\"'])?")
_MODEL = re.compile(r"^class\s+(\w+)\((?:[\w.]*Model|Base|DeclarativeBase)\):\s*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", re.M)
_MODEL_COLUMN = re.compile(
    r"^[ \t]+(\w+)\s*(?::\s*Mapped\[(.*?)\]\s*)?=\s*(?:db\.|sa\.)?(?:Column|mapped_column)\(([^\n]*)\)", re.M)
_SA_TYPES = {"Integer": "INTEGER", "BigInteger": "INTEGER", "Float": "REAL", "Numeric": "NUMERIC", "Boolean": "INTEGER",
             "DateTime": "TEXT", "Date": "TEXT", "String": "TEXT", "Text": "TEXT", "int": "INTEGER", "float": "REAL",
             "bool": "INTEGER", "str": "TEXT"}


def _module(path: str) -> str:
    name = path.rsplit("/", 1)[-1].removesuffix(".py")
    return path.rsplit("/", 2)[-2] if name == "__init__" and "/" in path else name


def blueprint_prefixes(py: str, module: str) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """url_prefix per (module, blueprint variable): as the Blueprint(...) defines it, and as
    register_blueprint(module.var, url_prefix=...) overrides it ("" module: a bare name)."""
    defined, registered = {}, {}
    for var, args in _BLUEPRINT.findall(py):
        m = re.search(r"url_prefix\s*=\s*[\"']([^\"']*)[\"']", args)
        defined[(module, var)] = m.group(1) if m else ""
    for mod, var, prefix in _REGISTER.findall(py):
        if prefix:
            registered[(mod, var)] = prefix
    return defined, registered


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def parse_models(py: str) -> tuple[dict[str, Table], dict[str, str]]:
    """SQLAlchemy models as tables (Flask-SQLAlchemy names a model's table in snake case unless
    `__tablename__` says otherwise), and model class -> table."""
    tables, names = {}, {}
    for cls, body in _MODEL.findall(py):
        named = re.search(r"__tablename__\s*=\s*[\"'](\w+)[\"']", body)
        table = named.group(1) if named else _snake(cls)
        cols = {}
        for col, mapped, args in _MODEL_COLUMN.findall(body):
            kind = re.search(r"\b(" + "|".join(_SA_TYPES) + r")\b", args + " " + mapped)
            optional = "Optional[" in mapped or "| None" in mapped or "nullable=True" in args
            ref = re.search(r"ForeignKey\(\s*[\"'](\w+)\.", args)
            cols[col] = Column(col, _SA_TYPES.get(kind.group(1), "TEXT") if kind else "TEXT",
                               not_null="primary_key=True" in args or "nullable=False" in args or (bool(mapped) and not optional),
                               has_default="default=" in args or "primary_key=True" in args, references=ref.group(1) if ref else None)
        if cols:
            tables[table] = Table(table, cols)
            names[cls] = table
    return tables, names


def parse_orm_ops(code: str, models: dict[str, str]) -> list[SqlOp]:
    """Writes through the ORM: `session.add(Model(a=..))` inserts, `session.delete(x)` deletes, and an
    attribute assigned before a commit (`post.title = ...`) updates the model of that name."""
    ops = []
    if not models:
        return ops
    for m in re.finditer(r"\b(" + "|".join(map(re.escape, models)) + r")\(([^)]*)\)", code):
        if "session.add" in code:
            ops.append(SqlOp("insert", models[m.group(1)], re.findall(r"(\w+)\s*=", m.group(2))))
    if "session.delete(" in code:
        queried = re.search(r"\b(" + "|".join(map(re.escape, models)) + r")\.query|select\((\w+)\)|get_or_404\((\w+)", code)
        model = next((g for g in (queried.groups() if queried else ()) if g in models), None)
        if model:
            ops.append(SqlOp("delete", models[model], [], "id = ?"))
    if "commit()" in code:
        for var, attr in re.findall(r"^\s*(\w+)\.(\w+)\s*=(?!=)", code, re.M):
            model = next((cls for cls in models if cls.casefold() == var.casefold()), None)
            if model:
                ops.append(SqlOp("update", models[model], [attr], "id = ?"))
    return ops


def parse_sql_ops(code: str) -> list[SqlOp]:
    code = re.sub(r"[\"']\s*\n\s*f?[\"']", "", code)  # join implicitly concatenated string literals
    ops = []
    for m in _SQL["insert"].finditer(code):
        ops.append(SqlOp("insert", m.group(1), re.findall(r"[A-Za-z_]\w*", m.group(2))))
    for m in _SQL["update"].finditer(code):
        cols = re.findall(r"(\w+)\s*=\s*(?:\?|:\w+)", m.group(2))
        ops.append(SqlOp("update", m.group(1), cols, (m.group(3) or "").strip()))
    for m in _SQL["delete"].finditer(code):
        ops.append(SqlOp("delete", m.group(1), [], (m.group(2) or "").strip()))
    for m in _SQL["select"].finditer(code):
        ops.append(SqlOp("select", m.group(1)))
    return ops


# ---- templates ----------------------------------------------------------------------------------
def _expand_includes(text: str, templates: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1)
        for p, t in templates.items():
            if p.endswith(name):
                return t
        return ""

    return re.sub(r"\{%-?\s*include\s+[\"']([^\"']+)[\"'][^%]*%\}", sub, text)


def _neutral(value: str) -> str:
    return _JINJA_EXPR.sub("<>", value)


class _FormParser(HTMLParser):
    def __init__(self, template: str) -> None:
        super().__init__(convert_charrefs=True)
        self.template = template
        self.forms: list[Form] = []
        self.labels: dict[str, str] = {}
        self._form: Form | None = None
        self._label_for: str | None = None
        self._label_text: list[str] = []
        self._select: Field | None = None
        self._option: tuple[str, list[str]] | None = None
        self._button: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if tag == "form":
            self._form = Form(
                self.template, a.get("method", "get").lower(), _neutral(a.get("action", "")), a.get("action", ""),
                a.get("aria-label", ""), a.get("role"), [], [],
            )
        elif tag == "label":
            self._label_for, self._label_text = a.get("for"), []
        elif self._form is not None and tag in ("input", "select", "textarea") and a.get("name"):
            typ = a.get("type", "text").lower() if tag == "input" else tag
            f = Field(tag, a["name"], typ, a.get("id"), None, "required" in a, value_expr=a.get("value"))
            if typ in ("submit", "button"):
                if a.get("value"):
                    self._form.buttons.append(a["value"])
                return
            self._form.fields.append(f)
            if tag == "select":
                self._select = f
        elif tag == "option" and self._select is not None:
            self._option = (a.get("value", ""), [])
        elif tag == "button" and self._form is not None and a.get("type", "submit") == "submit":
            self._button = []

    def handle_data(self, data: str) -> None:
        if self._label_for is not None:
            self._label_text.append(data)
        if self._option is not None:
            self._option[1].append(data)
        if self._button is not None:
            self._button.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "label" and self._label_for is not None:
            self.labels[self._label_for] = " ".join("".join(self._label_text).split())
            self._label_for = None
        elif tag == "option" and self._option is not None and self._select is not None:
            value, text = self._option
            text = " ".join("".join(text).split())
            if "<>" in _neutral(value) or "{{" in text:
                self._select.dynamic_options = True
            else:
                self._select.static_options.append((value, text))
            self._option = None
        elif tag == "select":
            self._select = None
        elif tag == "button" and self._button is not None and self._form is not None:
            text = " ".join("".join(self._button).split())
            if text:
                self._form.buttons.append(text)
            self._button = None
        elif tag == "form" and self._form is not None:
            self.forms.append(self._form)
            self._form = None


_CONDITIONAL = re.compile(r"\{\{\s*(.+?)\s+if\s+.+?\s+else\s+(.+?)\s*\}\}", re.S)
_LITERAL = re.compile(r"""\s*(['"])(.*)\1\s*""", re.S)
_URL_FOR = re.compile(r"""url_for\(\s*['"](\w+)['"]""")


def _branch(text: str, which: int) -> str:
    """Resolve `{{ A if cond else B }}` to A (which=1) or B (which=2); string literals lose their quotes."""

    def sub(m: re.Match) -> str:
        chosen = m.group(which)
        lit = _LITERAL.fullmatch(chosen)
        return lit.group(2) if lit else "{{ " + chosen + " }}"

    return _CONDITIONAL.sub(sub, text)


def parse_forms(template: str, text: str) -> list[Form]:
    text = _JINJA_BLOCK.sub("", text)
    # Jinja inside option text/value stays visible to the parser as "{{ ... }}".
    parser = _FormParser(template)
    parser.feed(text)
    forms = []
    for form in parser.forms:
        for f in form.fields:
            if f.id and f.id in parser.labels:
                f.label = parser.labels[f.id]
        texts = [form.action_raw, form.label, *form.buttons]
        if any(_CONDITIONAL.search(t) for t in texts):
            for which, mode in ((1, "edit"), (2, "new")):
                forms.append(_variant(form, which, mode))
        else:
            forms.append(_variant(form, 0, None))
    return forms


def _variant(form: Form, which: int, mode: str | None) -> Form:
    pick = (lambda t: _branch(t, which)) if which else (lambda t: t)
    action_raw = pick(form.action_raw)
    endpoint = _URL_FOR.search(action_raw)
    return Form(
        form.template, form.method, _neutral(action_raw), action_raw, pick(form.label), form.role,
        form.fields, [pick(b) for b in form.buttons], endpoint.group(1) if endpoint else None, mode,
    )


_DT_DD = re.compile(r"<dt[^>]*>(.*?)</dt>\s*<dd[^>]*>(.*?)</dd>", re.S | re.I)


def parse_details(template: str, text: str) -> list[DetailField]:
    out = []
    for dt, dd in _DT_DD.findall(text):
        label = " ".join(re.sub(r"<[^>]+>", "", dt).split())
        expr = re.fullmatch(r"\s*\{\{\s*([\w.]+)\s*\}\}\s*", dd)
        if label and expr:
            out.append(DetailField(template, label, expr.group(1)))
    return out
