"""Discovery-driven synthesis (flows/task_synthesis/discovery): unit checks on values, scans and the
families built from transitions, the rule that the synthesis code names no sandbox, and a live walk of
the npm-fetched TodoMVC (third-party: the `todomvc` package, MIT) in a real browser."""

from __future__ import annotations

import ast
import random
import re
import tomllib
from pathlib import Path

import pytest

from flows.task_synthesis.discovery.families import chain, families_from, instance, to_spec
from flows.task_synthesis.discovery.fill import fill_action, value_for_field
from flows.task_synthesis.discovery.page_scan import FieldInfo
from flows.task_synthesis.discovery.state import Observed, StateDiff, records_path, storage_expression
from flows.task_synthesis.discovery.walk import Slot, Transition, WalkResult

ROOT = Path(__file__).resolve().parents[2]


def sandbox_names() -> set[str]:
    names = set()
    for toml in [*ROOT.glob("sandboxes/*/sandbox.toml"), *ROOT.glob("corpus/*/sandbox.toml")]:
        names.add(tomllib.loads(toml.read_text())["sandbox"]["name"])
    return names


# ---- no per-app code -----------------------------------------------------------------------------------
def test_the_discovery_path_and_the_explorer_name_no_sandbox():
    names = sandbox_names()
    assert {"todomvc", "kanban"} <= names
    files = [*ROOT.glob("flows/task_synthesis/discovery/*.py"), *ROOT.glob("flows/exploration/*.py"),
             ROOT / "flows/task_synthesis/agents/base.py"]
    found = []
    for f in files:
        text = f.read_text()
        for n in names:
            if n == "kanban" and f.name == "base.py":
                continue  # "a kanban-style board": the kind of page the board reader reads, not the sandbox
            if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text, re.I):
                found.append(f"{f.relative_to(ROOT)}: {n}")
    assert not found, found


def test_no_synthesis_module_branches_on_a_sandbox_name():
    """No string in the code of flows/task_synthesis (docstrings aside) is a sandbox's name or its folder;
    names that are also plain words (a workspace, a shop) only count where code compares with them."""
    names = sandbox_names()
    plain_words = {"workspace", "shop", "mail", "kanban"}
    hits = []
    for f in ROOT.glob("flows/task_synthesis/**/*.py"):
        tree = ast.parse(f.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        compared = {id(c) for n in ast.walk(tree) if isinstance(n, ast.Compare) for c in [n.left, *n.comparators]}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                v = node.value.strip().casefold()
                named = v in names and (v not in plain_words or id(node) in compared)
                if named or any(f"sandboxes/{n}" in v for n in names):
                    hits.append(f"{f.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not hits, hits


# ---- values by type and constraints ------------------------------------------------------------------------
def field(**kw) -> FieldInfo:
    base = {"target": {"label": kw.get("label", "Field")}, "role": "textbox", "type": "text", "label": "Field"}
    return FieldInfo(**(base | kw))


@pytest.mark.parametrize("seed", range(5))
def test_values_meet_the_fields_type_and_constraints(seed):
    rng = random.Random(seed)
    assert re.fullmatch(r"[^@\s]+@[^@\s]+\.\w+", value_for_field(field(type="email", label="Email"), rng))
    n = int(value_for_field(field(type="number", role="spinbutton", min="3", max="9"), rng))
    assert 3 <= n <= 9
    assert re.fullmatch(r"\d{5}", value_for_field(field(pattern=r"\d{5}", label="Postcode"), rng))
    assert re.fullmatch(r"[A-Z]{2}-\d{3}", value_for_field(field(pattern=r"[A-Z]{2}-\d{3}", label="Code"), rng))
    day = value_for_field(field(type="date", min="2030-01-01", max="2030-12-31"), rng)
    assert "2030-01-01" <= day <= "2030-12-31"
    assert re.fullmatch(r"\d\d:\d\d", value_for_field(field(type="time"), rng))
    assert len(value_for_field(field(maxlength=6), rng)) <= 6
    assert len(value_for_field(field(minlength=30), rng)) >= 30
    options = [{"label": "— choose —", "value": ""}, {"label": "Red", "value": "r"}, {"label": "Blue", "value": "b"}]
    act, said = fill_action(field(type="select", role="combobox", options=options), rng)
    assert act["action"] == "select" and said in ("Red", "Blue")
    assert fill_action(field(type="select", role="combobox", options=options[:1]), rng) is None  # nothing valid to pick
    assert fill_action(field(type="checkbox", role="checkbox"), rng)[0] == {"action": "check", "target": {"label": "Field"}, "checked": True}


def test_a_stored_list_of_records_is_found_and_read_by_key():
    assert records_path({"todos": [{"title": "a"}], "n": 1}) == ["todos"]
    assert records_path([{"id": 1}]) == []
    assert records_path({"a": "x"}) is None
    expr = storage_expression("localStorage:app-state", ["todos"])
    assert 'localStorage.getItem("app-state")' in expr and '?.["todos"]' in expr
    assert storage_expression("cookie:sid", []) == ""  # cookies are found, never a verifier's state


# ---- families from transitions ----------------------------------------------------------------------------
def _walk(transitions, initial=None) -> WalkResult:
    return WalkResult(transitions, ["/"], {}, Observed(records=initial or []), [], [], 1.0)


def test_a_typed_record_becomes_a_create_family_whose_variants_name_and_check_their_own_value():
    entry = field(label="What needs doing?", target={"role": "textbox", "name": "What needs doing?"})
    before = [{"list": "Groceries", "text": "Eggs"}]
    after = before + [{"list": "Groceries", "text": "Buy milk"}]
    t = Transition("enter", [{"action": "goto", "url": "/"}],
                   [{"action": "type", "target": entry.target, "text": "Buy milk", "clear": True}, {"action": "key", "keys": ["Enter"]}],
                   StateDiff(records=(before, after)), [Slot(0, entry, "Buy milk")], heading="Groceries")
    noise = Transition("page_button", [], [{"action": "left_click", "target": {"role": "button", "name": "Help"}}], StateDiff())
    fams, dropped = families_from(_walk([t, noise], before), None)
    assert [f.name for f in fams] == ["create"] and dropped == {"no state change": 1}
    first = instance(fams[0], random.Random(1), fresh=False)
    assert first.request == "Add “Buy milk” to “Groceries”."
    assert first.verifier["params"]["where"] == {"list": "Groceries", "text": "Buy milk"}
    other = instance(fams[0], random.Random(2), fresh=True)
    typed = other.reference[1]["text"]
    assert typed != "Buy milk" and quote_in(typed, other.request)
    assert other.verifier["params"]["where"]["text"] == typed  # the verifier checks the value the request names
    spec = to_spec(other, "app", "c0", 0, sign_in=[{"action": "goto", "url": "/login"}])
    assert spec.injection == [{"skill": "replay_ui", "args": {"actions": [{"action": "goto", "url": "/login"}]}}]


def quote_in(value: str, text: str) -> bool:
    return f"“{value}”" in text


def test_a_card_dragged_to_another_list_is_a_move_family_checked_by_both_names():
    before = [{"list": "To do", "text": "Write tests"}, {"list": "Done", "text": "Plan"}]
    after = [{"list": "Done", "text": "Write tests"}, {"list": "Done", "text": "Plan"}]
    t = Transition("drag", [{"action": "goto", "url": "/"}],
                   [{"action": "left_click_drag", "target": {"text": "Write tests"}, "to": {"text": "Plan"}}],
                   StateDiff(records=(before, after)), item="Write tests", to="Done")
    (fam,), _ = families_from(_walk([t], before), None)
    inst = instance(fam, random.Random(0), fresh=False)
    assert fam.name == "move" and inst.request == "Move “Write tests” to “Done”."
    assert inst.verifier["params"]["where"] == {"text": "Write tests", "list": "Done"}


def test_a_drag_onto_the_card_an_earlier_drag_took_away_is_no_chain():
    """A drag finds its list by a card that list held when the walk scanned it; when the first step of a
    chain moved that card elsewhere, the second drop lands in the card's new list."""
    start = [{"list": "To do", "text": "A"}, {"list": "To do", "text": "B"}, {"list": "Done", "text": "C"}, {"list": "Later", "text": "D"}]

    def drag(card: str, onto: str, to: str, after: list[dict]) -> Transition:
        return Transition("drag", [{"action": "goto", "url": "/"}],
                          [{"action": "left_click_drag", "target": {"text": card}, "to": {"text": onto}}],
                          StateDiff(records=(start, after)), item=card, to=to)

    c_to_todo = drag("C", "B", "To do", [start[0], start[1], {"list": "To do", "text": "C"}, start[3]])
    a_to_done = drag("A", "C", "Done", [{"list": "Done", "text": "A"}, start[1], start[2], start[3]])  # dropped onto C
    b_to_later = drag("B", "D", "Later", [start[0], {"list": "Later", "text": "B"}, start[2], start[3]])
    fams, _ = families_from(_walk([c_to_todo, a_to_done, b_to_later], start), None)
    c_move, a_move, b_move = (instance(f, random.Random(0), fresh=False) for f in fams)
    assert chain(c_move, a_move) is None, "C went to “To do”: a drop onto C no longer reaches “Done”"
    assert chain(a_move, c_move) is not None, "the drop onto B: B did not move"
    assert chain(b_move, a_move) is not None, "C stays where it was"


def test_another_cards_reorder_is_checked_where_its_replay_put_it():
    """The walk dropped its first card onto the last (it went to place 3); another card dropped onto that
    card goes where the drop puts it from where it started (place 2 from below, under a library that drops
    before the card), so its variant's check and request come from its replay, and a card the drop does not
    move gives none."""
    from flows.task_synthesis.discovery.families import observed_reorder

    walked = _drag("A", _items(todo=["A", "B", "C", "D"]), _items(todo=["B", "C", "A", "D"]), to="todo")
    (fam,), _ = families_from(_walk([walked]), ITEMS_OF)
    fam.extra["peers"] = ["D"]
    other = instance(fam, random.Random(0), fresh=True)
    assert other.verifier["params"]["where"] == {"text": "D", "list": "todo", "at": 2}, "a variant first says the walk's place"
    start = _items(todo=["A", "B", "C", "D"])
    seen = observed_reorder(other, start, _items(todo=["A", "B", "D", "C"]))
    assert seen.verifier["params"]["where"] == {"text": "D", "list": "todo", "at": 2}
    seen = observed_reorder(other, start, _items(todo=["A", "D", "B", "C"]))  # a library that drops before the card
    assert seen.verifier["params"]["where"] == {"text": "D", "list": "todo", "at": 1} and seen.verifier["params"]["count"] == 1
    assert seen.request == "Move “D” to position 2 in “todo”." and seen.reference == other.reference
    assert observed_reorder(other, start, start) is None, "the drop left the card where it was"


def test_a_prefilled_field_gets_another_value_of_its_shape():
    for seed in range(5):
        rng = random.Random(seed)
        assert re.fullmatch(r"#[0-9A-F]{6}", value_for_field(field(value="#194D33"), rng))
        assert re.fullmatch(r"[0-9a-f]{6}", value_for_field(field(value="19ad33"), rng))
        n = int(value_for_field(field(value="77"), rng))
        assert 0 <= n <= 255 and n != 77
        assert re.fullmatch(r"0\.\d\d", value_for_field(field(value="0.90"), rng))
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", value_for_field(field(value="2024-03-01"), rng))
        assert not re.fullmatch(r"#?[0-9A-Fa-f]+", value_for_field(field(value="Buy milk", label="Title"), rng))  # words get words


def test_a_form_sends_its_named_fields_and_an_editor_changes_one_value():
    from flows.task_synthesis.discovery.page_scan import Group
    from flows.task_synthesis.discovery.walk import _edit_target, _sent_fields

    name = field(label="Name", name="name", required=True)
    widget = field(label="Filter", name="", named=False)  # a list's filter box: no name, sends nothing
    picks = field(label="Available", name="perms_old", type="select", role="listbox", multiple=True)
    add = Group("form", "Add group", [name, widget, picks], [{"name": "Save", "target": {"role": "button", "name": "Save"}}])
    assert _sent_fields(add) == [name]
    assert _edit_target(add) is None, "an empty form is filled in"
    held = field(label="Title", value="Team trip")
    create = Group("form", "", [field(label="HREF", value="0b8c-4f1e"), field(label="Title"), field(label="Description")], [])
    assert _edit_target(create) is None, "one prefilled field (a generated id) does not make an editor"
    editor = Group("form", "", [field(label="Description", value="Plans"), held, field(label="Source")], [])
    assert _edit_target(editor, "Team trip") is held, "the field holding the record's name"
    assert _edit_target(editor).label == "Description", "mostly filled in: its first filled field"
    # no field has a name (a script reads them): all are sent
    loose = Group("form", "", [field(label="A", name="", named=False), field(label="B", name="", named=False)], [])
    assert len(_sent_fields(loose)) == 2


def test_a_request_names_only_the_values_its_verifier_checks():
    from flows.task_synthesis.discovery.families import _checked_slots

    verifier = {"template": "row_exists", "params": {"table": "groups", "where": {"name": "Budget trip 42"}}}
    slots = {"Name": "Budget trip 42", "Filter": "garden", "Staff": "yes"}
    assert _checked_slots(slots, verifier) == {"Name": "Budget trip 42", "Staff": "yes"}
    assert _checked_slots({"Filter": "garden"}, verifier) == {"Filter": "garden"}, "none checked: all said (the gate says why)"


ITEMS_OF = "window.lists"  # a manifest expression whose state is lists of plain strings


def _drag(card: str, before: list, after: list, to: str = "Done") -> Transition:
    t = Transition("drag", [{"action": "goto", "url": "/"}], [{"action": "left_click_drag", "target": {"text": card}, "to": {"text": "x"}}],
                   StateDiff(manifest=([], [1]), items=(before, after)), item=card, to=to)
    return t


def _items(**lists: list[str]) -> list[dict]:
    return [{"list": name, "text": text, "at": i} for name, texts in lists.items() for i, text in enumerate(texts)]


def test_lists_of_plain_values_give_move_reorder_and_delete_checked_on_the_items_view():
    moved = _drag("B", _items(todo=["A", "B"], done=["C"]), _items(todo=["A"], done=["C", "B"]))
    reordered = _drag("A", _items(todo=["A", "B", "C"]), _items(todo=["B", "A", "C"]), to="todo")
    gone = _drag("C", _items(todo=["A"], done=["C"]), _items(todo=["A"], done=[]))
    same = _drag("A", _items(todo=["A", "B"]), _items(todo=["A", "B"]))
    fams, dropped = families_from(_walk([moved, reordered, gone, same]), ITEMS_OF)
    by = {f.name: f for f in fams}
    assert set(by) == {"move", "reorder", "delete"} and dropped  # the drag that moved nothing gives no family
    assert by["move"].verifier["params"]["where"] == {"text": "B", "list": "done"}
    assert by["reorder"].verifier["params"]["where"] == {"text": "A", "list": "todo", "at": 1}
    assert instance(by["reorder"], random.Random(0), fresh=False).request == "Move “A” to position 2 in “todo”."
    assert by["delete"].verifier["params"] == {"expression": by["delete"].verifier["params"]["expression"], "where": {"text": "C", "list": "done"}, "count": 0}
    assert ITEMS_OF in by["move"].verifier["params"]["expression"]
    # another card of the same list: only the card's text changes in the check, never a list that reads like it
    grid = _drag("1", _items(**{"1": ["1", "2", "3"]}), _items(**{"1": ["2", "1", "3"]}), to="grid")
    (fam,), _ = families_from(_walk([grid]), ITEMS_OF)
    fam.extra["peers"] = ["3"]
    other = instance(fam, random.Random(0), fresh=True)
    assert other.verifier["params"]["where"] == {"text": "3", "list": "1", "at": 1}
    # two reorders of one list move each other's cards: never chained
    assert chain(instance(fam, random.Random(0), fresh=False), other) is None
    assert chain(instance(by["move"], random.Random(0), fresh=False), instance(fam, random.Random(0), fresh=False)) is not None


def test_a_document_state_is_checked_leaf_by_leaf():
    doc = {"boolean": True, "number": 123, "object": {"a": "b", "c": "d"}}
    flip = Transition("item", [], [{"action": "left_click", "target": {"role": "checkbox"}}],
                      StateDiff(manifest=(doc, doc | {"boolean": False})), item="boolean:true")
    removed = Transition("item", [], [{"action": "left_click", "target": {"role": "button", "name": "Remove"}}],
                         StateDiff(manifest=(doc, doc | {"object": {"a": "b"}})), item="c:d", control={"role": "button", "name": "Remove"})
    fams, _ = families_from(_walk([flip, removed]), "editor.get()")
    by = {f.name: f for f in fams}
    assert by["toggle"].verifier["params"]["where"] == {"boolean": False}
    assert instance(by["toggle"], random.Random(0), fresh=False).request == "Set “boolean” to false."
    assert by["delete"].verifier["params"]["where"] == {"object.c": None}


def test_a_key_renamed_in_place_is_checked_by_its_own_path_in_every_variant():
    """A tree editor's field renamed where it is shown: the check names the new key as the leaf's path, so a
    variant typing another name must check that name (not the first one's path)."""
    doc = {"boolean": True, "number": 123}
    key = field(label="", target={"text": "boolean"}, value="boolean")
    renamed = Transition("edit", [{"action": "goto", "url": "/"}], [{"action": "type", "target": key.target, "text": "Dinner trip 28",
                         "clear": True}], StateDiff(manifest=(doc, {"Dinner trip 28": True, "number": 123})), [Slot(0, key, "Dinner trip 28")],
                         item="boolean")
    (fam,), _ = families_from(_walk([renamed]), "editor.get()")
    assert fam.verifier["params"]["where"] == {"Dinner trip 28": True, "boolean": None}
    other = instance(fam, random.Random(5), fresh=True)
    typed = other.reference[1]["text"]
    assert typed != "Dinner trip 28" and other.verifier["params"]["where"] == {typed: True, "boolean": None}


COLOUR = {"hex": "#194D33", "rgba": {"r": 25, "g": 77, "b": 51, "a": 1}, "hsl": {"h": 150, "s": 0.5, "l": 0.2, "a": 1}}


def _colour_typed(hex_: str, r: int, g: int, b: int, h: int) -> Transition:
    box = field(label="hex", target={"label": "hex"}, value="#194D33")
    after = {"hex": hex_, "rgba": {"r": r, "g": g, "b": b, "a": 1}, "hsl": {"h": h, "s": 0.3, "l": 0.4, "a": 1}}
    return Transition("enter", [{"action": "goto", "url": "/"}], [{"action": "type", "target": box.target, "text": hex_, "clear": True},
                      {"action": "key", "keys": ["Enter"]}], StateDiff(manifest=(COLOUR, after)), [Slot(0, box, hex_)], heading="Sketch")


def test_a_document_value_typed_is_checked_by_the_leaf_that_took_it_and_its_variants_by_their_own():
    (fam,), _ = families_from(_walk([_colour_typed("#1A2B3C", 26, 43, 60, 210)]), "picker.colors")
    assert fam.name == "update" and fam.verifier["params"]["where"] == {"hex": "#1A2B3C"}  # not the rgb / hsl it implies
    assert instance(fam, random.Random(0), fresh=False).request == "Set “hex” to “#1A2B3C” in “Sketch”."
    other = instance(fam, random.Random(3), fresh=True)
    typed = other.reference[1]["text"]
    assert typed != "#1A2B3C" and other.verifier["params"]["where"] == {"hex": typed} and quote_in(typed, other.request)


def test_a_press_that_sets_the_value_its_control_names_is_a_select_over_the_options_beside_it():
    from flows.task_synthesis.discovery.page_scan import PageScan

    after = {"hex": "#F44336", "rgba": {"r": 244, "g": 67, "b": 54, "a": 1}, "hsl": {"h": 4, "s": 0.9, "l": 0.6, "a": 1}}
    press = Transition("page_button", [{"action": "goto", "url": "/"}],
                       [{"action": "left_click", "target": {"role": "button", "name": "Color:#F44336"}}],
                       StateDiff(manifest=(COLOUR, after)), button="Color:#F44336")
    swatches = [{"name": f"Color:{c}", "target": {"role": "button", "name": f"Color:{c}"}} for c in ("#F44336", "#E91E63", "#9C27B0")]
    walk = _walk([press])
    walk.scans["/"] = PageScan("/", "", [], [], swatches + [{"name": "Help", "target": {"role": "button", "name": "Help"}}], [], [], [])
    (fam,), _ = families_from(walk, "picker.colors")
    assert fam.name == "select" and fam.verifier["params"]["where"] == {"hex": "#F44336"}
    assert [o["value"] for o in fam.extra["options"]] == ["#E91E63", "#9C27B0"]
    assert instance(fam, random.Random(0), fresh=False).request == "Choose “#F44336”."
    other = instance(fam, random.Random(1), fresh=True)
    picked = other.verifier["params"]["where"]["hex"]
    assert picked in ("#E91E63", "#9C27B0") and other.reference[-1]["target"]["name"] == f"Color:{picked}"
    assert other.request == f"Choose “{picked}”."


def test_steps_on_one_document_chain_only_by_what_their_replay_did():
    from flows.task_synthesis.discovery.families import chain_on_document, observed_chain

    nxt = Transition("page_button", [{"action": "goto", "url": "/"}], [{"action": "left_click", "target": {"role": "link", "name": "Next"}}],
                     StateDiff(manifest=({"step": 0}, {"step": 1})), button="Next")
    (fam,), _ = families_from(_walk([nxt]), "wizard.state")
    one = instance(fam, random.Random(0), fresh=False)
    assert chain(one, one) is None  # both check `step`: all_of(step 1, step 1) says nothing of the second press
    twice = chain_on_document(one, one)
    assert twice.reference == one.reference + one.reference[1:]  # the second press stays on the page
    made = observed_chain(twice, {"step": 0}, {"step": 2}, [one.verifier])
    assert made.verifier["params"]["where"] == {"step": 2}
    assert observed_chain(twice, {"step": 0}, {"step": 1}, [one.verifier]) is None  # the second press did nothing
    (colour,), _ = families_from(_walk([_colour_typed("#1A2B3C", 26, 43, 60, 210)]), "picker.colors")
    typed = instance(colour, random.Random(0), fresh=False)
    assert chain_on_document(typed, typed) is None  # one value twice
    typed_twice = chain_on_document(typed, one)
    assert observed_chain(typed_twice, COLOUR, {"hex": "#FFFFFF"}, []) is None


# ---- the live walk on a third-party app ---------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.slow
def test_the_walk_types_ticks_hovers_and_edits_in_the_live_todomvc():
    from sandboxes.drivers import open_driver
    from tests.conftest import in_own_thread, npm_sandbox

    manifest = npm_sandbox("todomvc")
    from flows.task_synthesis.discovery.walk import DiscoveryWalk

    def run():  # Playwright's sync API in a thread of its own: a session fixture's may hold the main thread's
        with open_driver(manifest) as driver:
            return DiscoveryWalk(driver, manifest, seed=0, max_seconds=120).run()

    walk = in_own_thread(run)
    kinds = [t.kind for t in walk.changing]
    assert kinds[:1] == ["enter"] and "item" in kinds and "edit" in kinds, kinds
    assert any(a.get("action") == "mouse_move" for t in walk.changing for a in t.actions), "a hover revealed a control"
    fams, _ = families_from(walk, manifest.state.page_expression())
    assert {"create", "toggle", "delete", "update"} <= {f.name for f in fams}
    assert "localStorage" in walk.state.describe()


# ---- the Flask reader in real shapes (enrichment) ------------------------------------------------------------
FACTORY_APP = {
    "blog/__init__.py": '''
from flask import Flask
def create_app():
    app = Flask(__name__)
    from . import auth, posts
    app.register_blueprint(auth.bp)
    app.register_blueprint(posts.bp, url_prefix="/posts")
    return app
''',
    "blog/models.py": '''
from .db import db
class Post(db.Model):
    __tablename__ = "posts"
    id = db.Column(db.Integer, primary_key=True)
    title = db.Column(db.String(120), nullable=False)
    body = db.Column(db.Text)
    author_id = db.Column(db.Integer, db.ForeignKey("users.id"))

class User(Base):
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(200))
    nickname: Mapped[Optional[str]] = mapped_column(String(40))
''',
    "blog/auth.py": '''
bp = Blueprint("auth", __name__, url_prefix="/auth")
@bp.route("/login", methods=["GET", "POST"])
def login():
    return render_template("auth/login.html")
''',
    "blog/posts.py": '''
bp = Blueprint("posts", __name__)
@bp.route("/new", methods=["GET", "POST"])
@login_required
def create():
    post = Post(title=request.form["title"], body=request.form["body"])
    db.session.add(post)
    db.session.commit()
    return redirect(url_for("posts.index"))

@bp.post("/<int:id>/delete")
@login_required
def delete(id):
    post = db.get_or_404(Post, id)
    db.session.delete(post)
    db.session.commit()

@bp.route("/<int:id>/edit", methods=["POST"])
def edit(id):
    post = Post.query.get(id)
    post.title = request.form["title"]
    db.session.commit()
''',
}


def test_the_flask_reader_reads_factories_blueprints_logins_and_sqlalchemy_models():
    from flows.task_synthesis.app_model import build_app_model
    from flows.task_synthesis.source import SourceSnapshot

    model = build_app_model(SourceSnapshot("blog", "c0", FACTORY_APP))
    assert set(model.tables) == {"posts", "user"}
    posts, user = model.tables["posts"], model.tables["user"]
    assert posts.columns["title"].not_null and not posts.columns["body"].not_null
    assert posts.columns["author_id"].references == "users" and posts.columns["id"].type == "INTEGER"
    assert user.columns["email"].not_null and not user.columns["nickname"].not_null
    routes = {r.path: r for r in model.routes}
    assert set(routes) == {"/auth/login", "/posts/new", "/posts/<int:id>/delete", "/posts/<int:id>/edit"}
    assert routes["/posts/new"].login_required and not routes["/auth/login"].login_required
    assert [(o.verb, o.table, o.columns) for o in routes["/posts/new"].writes()] == [("insert", "posts", ["title", "body"])]
    assert [(o.verb, o.table) for o in routes["/posts/<int:id>/delete"].writes()] == [("delete", "posts")]
    assert [(o.verb, o.table, o.columns) for o in routes["/posts/<int:id>/edit"].writes()] == [("update", "posts", ["title"])]


def test_values_an_app_makes_up_per_load_are_named_by_no_task():
    from flows.task_synthesis.discovery.agent import names_per_load, per_load

    first = [{"id": 0, "status": "on-hold", "title": "Synergize web-enabled portals"}, {"id": 1, "status": "approved", "title": "Mesh lean users"}]
    second = [{"id": 0, "status": "approved", "title": "Drive viral channels"}, {"id": 1, "status": "on-hold", "title": "Seize scalable models"}]
    made_up = per_load(first, second)
    assert "mesh lean users" in made_up and "approved" not in made_up  # a status both loads have is not made up
    (fam,), _ = families_from(_walk([_colour_typed("#1A2B3C", 26, 43, 60, 210)]), "picker.colors")
    inst = instance(fam, random.Random(0), fresh=False)
    assert not names_per_load(inst, made_up)
    inst.request = "Move “Mesh lean users” to “approved”."
    assert names_per_load(inst, made_up)


def test_a_step_on_one_record_of_a_document_is_done_on_the_others_and_checked_by_what_each_replay_did():
    from flows.task_synthesis.discovery.families import observed_on_record, on_other_record
    from flows.task_synthesis.discovery.page_scan import PageScan

    doc = {"array": [1, 2, 3], "number": 123, "string": "Hello World"}
    menu = {"role": "button", "name": "Open the actions menu"}
    rows = [{"role": "button", "name": menu["name"], "item": item, "target": menu | ({"nth": i} if i else {})}
            for i, item in enumerate(["array[3]", "number:123", "string:Hello World"])]
    remove = Transition("item", [{"action": "goto", "url": "/"}],
                        [{"action": "left_click", "target": rows[2]["target"]}, {"action": "left_click", "target": {"role": "button", "name": "Remove"}}],
                        StateDiff(manifest=(doc, {k: v for k, v in doc.items() if k != "string"})), item="string:Hello World",
                        control={"role": "button", "name": "Remove"})
    walk = _walk([remove])
    walk.scans["/"] = PageScan("/", "", [], rows, [], [], [], [])
    (fam,), _ = families_from(walk, "editor.get()")
    assert fam.name == "delete" and fam.verifier["params"]["where"] == {"string": None}
    assert [r["item"] for r in fam.extra["records"]] == ["array[3]", "number:123"]
    other = on_other_record(fam, fam.extra["records"][0])
    assert other.reference[1]["target"] == rows[0]["target"] and other.request == "Remove “array[3]”."
    made = observed_on_record(other, doc, {k: v for k, v in doc.items() if k != "array"})
    assert made.verifier["params"]["where"] == {"array": None}  # the whole list is gone, not its items
    assert observed_on_record(other, doc, doc | {"number": 5}) is None  # not a removal: not this family's task


def test_a_number_typed_into_a_document_is_checked_as_typed_so_its_variants_check_their_own():
    box = field(label="r", target={"label": "r"}, value="25")
    after = {"hex": "#5E4D33", "rgba": {"r": 94, "g": 77, "b": 51, "a": 1}, "hsl": {"h": 36, "s": 0.3, "l": 0.28, "a": 1}}
    t = Transition("enter", [{"action": "goto", "url": "/"}], [{"action": "type", "target": box.target, "text": "94", "clear": True},
                   {"action": "key", "keys": ["Enter"]}], StateDiff(manifest=(COLOUR, after)), [Slot(0, box, "94")])
    (fam,), _ = families_from(_walk([t]), "picker.colors")
    assert fam.verifier["params"]["where"] == {"rgba.r": "94"}
    other = instance(fam, random.Random(5), fresh=True)
    assert other.verifier["params"]["where"] == {"rgba.r": other.reference[1]["text"]} != {"rgba.r": "94"}


# ---- chains that say what the end state shows, and do not redo what the first step established ----------------
SIGN_IN = [{"action": "goto", "url": "/app/"}, {"action": "type", "target": {"label": "User"}, "text": "me", "clear": True},
           {"action": "left_click", "target": {"role": "button", "name": "Sign in"}}]  # a sign-in that lives in the page


def _made_and_renamed() -> tuple[Transition, Transition]:
    title, about = field(label="Title"), field(label="Description")
    made = [{"title": "Team trip", "description": "Plans for June", "type": "calendar"}]
    create = Transition("form", SIGN_IN, [{"action": "left_click", "target": {"role": "link", "name": "Create new"}},
                                          {"action": "type", "target": title.target, "text": "Team trip", "clear": True},
                                          {"action": "type", "target": about.target, "text": "Plans for June", "clear": True},
                                          {"action": "left_click", "target": {"role": "button", "name": "Create"}}],
                        StateDiff(manifest=([], made)), [Slot(1, title, "Team trip"), Slot(2, about, "Plans for June")],
                        heading="Create new calendar", page="/app/", url_after="http://127.0.0.1:1/app/")
    renamed = [made[0] | {"title": "Budget 7"}]
    rename = Transition("form", create.path + create.actions,
                        [{"action": "left_click", "target": {"role": "link", "name": "✏️", "nth": 0}},
                         {"action": "type", "target": title.target, "text": "Budget 7", "clear": True},
                         {"action": "left_click", "target": {"role": "button", "name": "Save"}}],
                        StateDiff(manifest=(made, renamed)), [Slot(1, title, "Budget 7")], heading=" ", item="Team trip",
                        page="/app/", url_after="http://127.0.0.1:1/app/", made_by=create)
    return create, rename


def test_a_made_then_renamed_chain_names_and_checks_what_the_end_state_holds():
    from flows.task_synthesis import counterfactual
    from flows.task_synthesis.discovery.families import made_then

    create, rename = _made_and_renamed()
    fams, _ = families_from(_walk([create, rename]), "dav.collections()")
    by = {f.name: f for f in fams}
    assert set(by) == {"create", "update"} and by["update"].setup is create
    for fresh in (False, True):
        inst = instance(by["update"], random.Random(3), fresh=fresh)
        made = made_then(inst)
        first_title = inst.setup[len(SIGN_IN) + 1]["text"]
        new_title = inst.reference[1]["text"]
        about = inst.setup[len(SIGN_IN) + 2]["text"]
        assert first_title not in made.request, "the title the rename replaced is not in the end state: unsaid"
        assert quote_in(new_title, made.request) and "rename it to" in made.request
        assert f"Description “{about}”" in made.request, "a lone value left is said with its field: it is not the name"
        # one record as it ends: the description the making typed and the title the rename set
        assert made.verifier["params"]["where"] == {"title": new_title, "description": about} and made.verifier["params"]["count"] == 1
        named = {v.named[0] for v in counterfactual.variants(made.request, made.reference, [])}
        assert named == {new_title, about}, "each value the request names gets a near miss the check tells apart"


def test_a_chain_does_not_sign_in_again_into_a_page_the_first_step_left_signed_in():
    create, _ = _made_and_renamed()
    create.arrival = len(SIGN_IN)  # as the walk sets it: the path opens the page by signing in
    opens = {"action": "left_click", "target": {"role": "link", "name": "➕"}}  # a press that opens the form: part of the path
    other = Transition("form", SIGN_IN + [opens], [{"action": "type", "target": {"label": "Title"}, "text": "Reading list", "clear": True},
                                                   {"action": "left_click", "target": {"role": "button", "name": "Create"}}],
                       StateDiff(manifest=([], [{"title": "Reading list", "type": "addressbook"}])),
                       [Slot(0, field(label="Title"), "Reading list")], heading="Create new address book", page="/app/",
                       url_after="http://127.0.0.1:1/app/", arrival=len(SIGN_IN))
    fams, _ = families_from(_walk([create, other]), "dav.collections()")
    a, b = (instance(f, random.Random(0), fresh=False) for f in fams)
    both = chain(a, b)
    assert both.reference == a.reference + [opens] + other.actions, "the sign-in holds; the press that opens the form is done again"
    assert sum(act.get("text") == "me" for act in both.reference) == 1
    create.url_after = "http://127.0.0.1:1/app/settings"  # the first step ended elsewhere: the second's path is walked again
    assert chain(a, b).reference == a.reference + b.reference


def test_a_value_set_and_then_set_again_is_no_chain():
    from flows.task_synthesis.discovery.families import made_then

    first = _colour_typed("#1A2B3C", 26, 43, 60, 210)
    box = first.slots[0].field
    was = first.diff.manifest[1]
    again = Transition("edit", first.path + first.actions,
                       [{"action": "double_click", "target": {"text": "#1A2B3C"}}, {"action": "type", "target": box.target, "text": "#445566"},
                        {"action": "key", "keys": ["Enter"]}],
                       StateDiff(manifest=(was, was | {"hex": "#445566"})), [Slot(1, box, "#445566")], item="#1A2B3C", made_by=first)
    fams, _ = families_from(_walk([first, again]), "picker.colors")
    follow = next(f for f in fams if f.setup is not None)
    inst = instance(follow, random.Random(0), fresh=False)
    assert inst.setup and made_then(inst) is None, "the first value is gone at the end: that step does not count"


def _channel_typed(channel: str, value: int) -> Transition:
    box = field(label=channel, target={"label": channel}, value=str(COLOUR["rgba"][channel]))
    rgba = COLOUR["rgba"] | {channel: value}
    after = COLOUR | {"hex": f"#{rgba['r']:02X}{rgba['g']:02X}{rgba['b']:02X}", "rgba": rgba}
    return Transition("enter", [{"action": "goto", "url": "/"}], [{"action": "type", "target": box.target, "text": str(value), "clear": True},
                      {"action": "key", "keys": ["Enter"]}], StateDiff(manifest=(COLOUR, after)), [Slot(0, box, str(value))], heading=channel)


def test_a_step_that_changes_what_the_first_names_is_not_chained_after_it():
    from flows.task_synthesis.discovery.families import overwrites

    fams, _ = families_from(_walk([_colour_typed("#1A2B3C", 26, 43, 60, 210), _channel_typed("r", 94), _channel_typed("g", 177)]),
                            "picker.colors")
    hex_, red, green = (instance(f, random.Random(0), fresh=False) for f in fams)
    assert overwrites(hex_, red) and chain(hex_, red) is None, "a red changes the hex the first step set"
    assert not overwrites(red, green) and chain(red, green) is not None, "red and green are leaves of their own"
    was, now = green.family.transition.diff.manifest
    green.family.transition.diff = StateDiff(manifest=(was, now | {"rgba": now["rgba"] | {"r": 25.0000001}}))
    assert not overwrites(red, green), "a red recomputed by rounding is not changed"
    # a leaf recomputed from another that lands on the typed value by rounding did not take it
    green51 = _channel_typed("g", 51)
    was, now = green51.diff.manifest
    green51.diff = StateDiff(manifest=(was | {"rgba": was["rgba"] | {"b": 50.9999999}}, now))  # b: 51 again, recomputed
    (fam,), _ = families_from(_walk([green51]), "picker.colors")
    assert fam.verifier["params"]["where"] == {"rgba.g": "51"}


def test_chains_on_one_document_grow_to_three_steps_by_what_their_replays_did():
    from flows.task_synthesis.discovery.agent import observed_chains

    nxt = Transition("page_button", [{"action": "goto", "url": "/"}], [{"action": "left_click", "target": {"role": "link", "name": "Next"}}],
                     StateDiff(manifest=({"step": 0}, {"step": 1})), button="Next")
    (fam,), _ = families_from(_walk([nxt]), "wizard.state")
    one = instance(fam, random.Random(0), fresh=False)
    replays = []

    def wizard(actions):  # a four-step wizard: each Next goes one step on, up to the last
        replays.append(actions)
        return {"step": 0}, {"step": min(3, sum(a.get("target", {}).get("name") == "Next" for a in actions))}

    made = observed_chains([one], random.Random(0), 10, wizard)
    assert [m.verifier["params"]["where"] for m in made] == [{"step": 2}, {"step": 3}]
    assert made[1].request == "Next, then next, then next." and len(replays) == 2


def test_a_chain_that_held_gets_a_third_step_of_a_kind_it_has_not_had():
    """Three leaves of their own (red, green, blue): every two-step chain is extended by the third kind, even
    when the first step drawn for it is a kind the chain had (which cannot join it)."""
    from flows.task_synthesis.discovery.agent import observed_chains

    fams, _ = families_from(_walk([_channel_typed("r", 94), _channel_typed("g", 177), _channel_typed("b", 25)]), "picker.colors")
    steps = [instance(f, random.Random(0), fresh=False) for f in fams]

    def picker(actions):
        rgba = dict(COLOUR["rgba"])
        for a in actions:
            if a.get("action") == "type":
                rgba[a["target"]["label"]] = int(a["text"])
        return COLOUR, COLOUR | {"rgba": rgba}

    made = observed_chains(steps, random.Random(3), 40, picker)
    two = [m for m in made if m.request.count(", then") == 1]
    three = [m for m in made if m.request.count(", then") == 2]
    assert len(two) == 6 and len(three) == 6, [m.request for m in made]
    assert all(set(m.verifier["params"]["where"]) == {"rgba.r", "rgba.g", "rgba.b"} for m in three)


def test_of_leaves_that_took_one_typed_value_the_one_named_like_the_field_is_checked():
    blue = _channel_typed("b", 25)  # r was 159 in an inconsistent first colour, and is recomputed to 25 as well
    was, now = blue.diff.manifest
    blue.diff = StateDiff(manifest=(was | {"rgba": was["rgba"] | {"r": 159}}, now))
    (fam,), _ = families_from(_walk([blue]), "picker.colors")
    assert fam.verifier["params"]["where"] == {"rgba.b": "25"}


def test_typing_is_enough_is_checked_with_the_record_a_step_acts_on_made_first():
    from flows.task_synthesis.discovery.agent import _typing_is_enough
    from flows.task_synthesis.discovery.families import Instance

    box = {"role": "textbox", "name": "g"}
    made = [{"action": "goto", "url": "/"}, {"action": "type", "target": box, "text": "177"}, {"action": "key", "keys": ["Enter"]}]
    own = [{"action": "type", "target": box, "text": "176"}, {"action": "key", "keys": ["Enter"]}]
    (fam,), _ = families_from(_walk([_channel_typed("g", 176)]), "picker.colors")
    inst = Instance(fam, "Set “g” to “176”.", made, None, own, fam.verifier, ["176"])
    seen = []

    def as_you_type(actions):  # the field is read as you type: the last value typed is the colour's green
        seen.append(actions)
        typed = [a["text"] for a in actions if a["action"] == "type"]
        return COLOUR, {"rgba": {"g": typed[-1]}}

    assert _typing_is_enough(inst, as_you_type) and seen == [made + own[:-1]]


def test_a_record_made_anew_under_the_typed_name_is_an_update_checked_on_its_own_table():
    """An app that renames by making the record again (a study copied under the new name, the old one deleted)
    changes a side table too (a row of the new record's settings): the check is on the table holding the typed
    name, that row there and the old name gone, and the request renames the record."""
    entry = field(label="Study name", target={"label": "Study name"})
    studies = {"counts": {"inserted": 1, "deleted": 1, "updated": 0},
               "inserted": [{"study_id": 3, "study_name": "Trip budget 12"}], "deleted": [{"study_id": 2, "study_name": "house-prices"}],
               "updated": []}
    side = {"counts": {"inserted": 1, "deleted": 0, "updated": 0}, "deleted": [], "updated": [],
            "inserted": [{"study_system_attribute_id": 1, "study_id": 3, "key": "note_ver", "value_json": "0"}]}
    t = Transition("form", [{"action": "goto", "url": "/"}],
                   [{"action": "left_click", "target": {"role": "button", "name": "rename study"}},
                    {"action": "type", "target": entry.target, "text": "Trip budget 12", "clear": True},
                    {"action": "left_click", "target": {"role": "button", "name": "Rename"}}],
                   StateDiff(db={"studies": studies, "study_system_attributes": side}), [Slot(1, entry, "Trip budget 12")],
                   heading=" ", button="Rename", item="2. house-prices")
    (fam,), _ = families_from(_walk([t]), None)
    assert fam.name == "update"
    assert fam.verifier == {"template": "all_of", "params": {"checks": [
        {"template": "row_exists", "params": {"table": "studies", "where": {"study_name": "Trip budget 12"}}},
        {"template": "row_absent", "params": {"table": "studies", "where": {"study_name": "house-prices"}}}]}}
    other = instance(fam, random.Random(3), fresh=True)
    typed = [a for a in other.reference if a["action"] == "type"][0]["text"]
    assert typed != "Trip budget 12" and other.request == f"Rename “2. house-prices” to “{typed}”."
    assert other.verifier["params"]["checks"][0]["params"]["where"] == {"study_name": typed}


# A page of our own in the shape of a component-library app (made here, served by http.server): a toolbar (a
# search box beside Reload and Create, no <form>), repeated cards with an icon button each, a panel classed
# "card" that does not repeat, and a dialog whose Save turns on 400 ms after the last keystroke (a debounce),
# beside a button that only adds a row to the form.
CARDS_PAGE = """<!doctype html><body>
<div class="toolbar"><input type="text" aria-label="Search"><button>Reload</button><button>Create</button></div>
<div class="list">
  <div class="card"><h5>1. alpha</h5><p>Kind: A</p><div class="actions"><button aria-label="rename">r</button><button aria-label="delete">x</button></div></div>
  <div class="card"><h5>2. beta</h5><p>Kind: B</p><div class="actions"><button aria-label="rename">r</button><button aria-label="delete">x</button></div></div>
</div>
<div class="card panel"><p>About this page</p><button>Help</button></div>
<div role="dialog" aria-label="New"><label for="n">Name</label><input id="n"><button>Add row</button><button>Cancel</button><button id="go" disabled>Save</button></div>
<ul id="saved"></ul>
<script>
  let t = null;
  n.addEventListener('input', () => { clearTimeout(t); t = setTimeout(() => { go.disabled = !n.value; }, 400); });
  go.onclick = () => { const li = document.createElement('li'); li.textContent = n.value; saved.appendChild(li); };
  document.querySelectorAll('.card [aria-label=delete]').forEach(b => b.onclick = () => {
    const card = b.closest('.card'), ask = document.createElement('div');
    ask.setAttribute('role', 'dialog'); ask.innerHTML = '<p>Delete it?</p><button>No</button><button>Yes</button>';
    ask.querySelectorAll('button')[1].onclick = () => { card.remove(); ask.remove(); };
    ask.querySelectorAll('button')[0].onclick = () => ask.remove();
    document.body.appendChild(ask); });
  document.querySelectorAll('.card [aria-label=rename]').forEach(b => b.onclick = () => {  // a dialog with a list of hints
    const h = b.closest('.card').querySelector('h5'), ask = document.createElement('div');
    ask.setAttribute('role', 'dialog');
    ask.innerHTML = '<ul><li>Names are unique</li><li>At most 40 letters</li></ul><label for="r">New name</label><input id="r"><button>Rename</button>';
    ask.querySelector('button').onclick = () => { h.textContent = ask.querySelector('input').value; ask.remove(); };
    document.body.appendChild(ask); });
</script></body>"""
# A page that shows what it fetched after its load event (a long answer, so it lands well after the load).
LATER_PAGE = """<!doctype html><body><div id="fetched"></div><script>
  addEventListener('load', () => { const x = new XMLHttpRequest(); x.open('GET', 'names.json');
    x.onload = () => JSON.parse(x.responseText).forEach(n => {
      const b = document.createElement('button'); b.textContent = n; fetched.appendChild(b); });
    x.send(); });
</script></body>"""
CARDS_STATE = ("({saved: [...document.querySelectorAll('#saved li')].map(l => l.textContent), "
               "cards: [...document.querySelectorAll('.list .card h5')].map(h => h.textContent)})")


@pytest.fixture(scope="module")
def cards_page(tmp_path_factory):
    from sandboxes.manifest import load_manifest

    root = tmp_path_factory.mktemp("cards")
    (root / "site").mkdir()
    (root / "site" / "index.html").write_text(CARDS_PAGE)
    (root / "site" / "later.html").write_text(LATER_PAGE)
    (root / "site" / "names.json").write_text('["Archive"]' + " " * 40_000_000)
    (root / "sandbox.toml").write_text(f'''[sandbox]
name = "cards-page"
kind = "web"
[source]
path = "site"
[start]
command = ["{{python}}", "-m", "http.server", "{{port}}", "--bind", "127.0.0.1"]
ready_path = "/index.html"
home_path = "/index.html"
[state]
kind = "js"
expression = "{CARDS_STATE}"
''')
    return load_manifest(root)


@pytest.mark.browser
def test_toolbars_cards_disabled_submits_and_confirmed_deletes_on_a_component_library_page(cards_page):
    """The scan: a toolbar's buttons beside a search box stay page buttons (Create opens a form); repeated cards
    are records named by their heading, a lone panel is not; a form's disabled submit is listed, marked. The
    walk: typing turns the submit on after the app's pause and the step presses it (the driver waits for the
    input's short timer), a card's delete is confirmed in the dialog it opens, and a card's rename, which opens a
    dialog (with a list of hints: the page's lists change, the app's state does not), is walked into."""
    from flows.task_synthesis.discovery.page_scan import scan_page
    from flows.task_synthesis.discovery.walk import DiscoveryWalk, _name_shape
    from sandboxes.actions import parse_actions
    from sandboxes.drivers import open_driver
    from tests.conftest import in_own_thread

    def run():
        with open_driver(cards_page) as driver:
            walk = DiscoveryWalk(driver, cards_page, 0)
            walk.in_page_login = []
            path = [{"action": "goto", "url": "/index.html"}]
            walk._reset()
            walk._do(path)
            scan = scan_page(driver)
            walk._shown = {b["name"] for b in scan.page_buttons} | {c["name"] for c in scan.on_items}
            (dialog,) = [g for g in scan.groups if g.fields[0].spoken == "Name"]
            saved = walk._group_step(path, dialog, "form", "/index.html")
            deleting = next(c for c in scan.on_items if c["name"] == "delete")
            deleted = walk._item_step(path, deleting, "/index.html")
            walk._page_groups = {_name_shape(g.signature()) for g in scan.groups}  # as a walk of the page sets them
            renaming = next(c for c in scan.on_items if c["name"] == "rename")
            renamed = walk._item_step(path, renaming, "/index.html")
            walk._reset()  # the recorded step replayed as the gate does: typed, then pressed at once
            replayed = walk._do(saved.path + saved.actions) and walk.state.read().manifest
            driver.reset()  # a press right after opening the page, on what it fetched after its load event
            fetched_press = [driver.act(a).ok for a in parse_actions(
                [{"action": "goto", "url": "/later.html"}, {"action": "left_click", "target": {"role": "button", "name": "Archive"}}])]
            return scan, dialog, saved, deleted, renamed, replayed, fetched_press

    scan, dialog, saved, deleted, renamed, replayed, fetched_press = in_own_thread(run)
    assert {"Reload", "Create", "Help"} <= {b["name"] for b in scan.page_buttons}
    assert [(c["name"], c["item"]) for c in scan.on_items] == [("rename", "1. alpha"), ("delete", "1. alpha"),
                                                               ("rename", "2. beta"), ("delete", "2. beta")]
    assert [(b["name"], bool(b.get("disabled"))) for b in dialog.buttons] == [("Add row", False), ("Cancel", False), ("Save", True)]
    assert saved.button == "Save" and saved.actions[-1] == {"action": "left_click", "target": {"role": "button", "name": "Save"}}
    typed = saved.slots[0].value
    assert saved.diff.manifest[1]["saved"] == [typed]
    assert replayed and replayed["saved"] == [typed], "a replay waits for the input's timer before pressing"
    assert fetched_press == [True, True], "opening a page waits for what it fetches after its load event"
    assert deleted.actions[-1]["target"] == {"role": "button", "name": "Yes"} and deleted.item == "1. alpha"
    assert deleted.diff.manifest[1]["cards"] == ["2. beta"]
    # a press that only opened a dialog (the page's lists changed: its hints) walks into the dialog's form
    assert renamed.button == "Rename" and renamed.diff.manifest[1]["cards"] == [renamed.slots[0].value, "2. beta"]


def test_no_chain_names_a_record_the_first_step_renamed_or_removed():
    """"Rename “2. house-prices” to “X”, then remove “2. house-prices”" asks for a record the first step took
    away; chains of other steps on that record, or of that step and another record, stay."""
    from flows.task_synthesis.discovery.families import Family, Instance

    def step(name: str, item: str, value: str) -> Instance:
        t = Transition("item", [{"action": "goto", "url": "/"}], [{"action": "left_click", "target": {"text": value}}], StateDiff(),
                       item=item)
        check = {"template": "row_exists", "params": {"table": "t", "where": {"name": value}}}
        return Instance(Family(name, f"{name}|{value}", t, check, [value]), f"{name} {item}", [], None, t.path + t.actions, check,
                        [value], item)

    renamed, removed = step("update", "2. house-prices", "X"), step("delete", "2. house-prices", "Y")
    assert chain(renamed, removed) is None and chain(removed, renamed) is None
    assert chain(step("toggle", "2. house-prices", "Z"), removed) is not None
    assert chain(renamed, step("delete", "1. wine", "W")) is not None

# ---- multi-step forms ----------------------------------------------------------------------------------------
WIZARD = {"step": 0, "fields": {"Name": "", "Email": "", "Team": ""}, "plan": "Pro"}
NEXT = {"action": "left_click", "target": {"role": "button", "name": "Next"}}


def _wizard_steps() -> tuple[Transition, Transition]:
    """A two-step form as the walk records it: the second step continues the first (its path is the first's)."""
    name, email, team = (field(label=x, type="email" if x == "Email" else "text") for x in ("Name", "Email", "Team"))
    one = Transition("form", [{"action": "goto", "url": "/"}],
                     [{"action": "type", "target": name.target, "text": "Ada", "clear": True},
                      {"action": "type", "target": email.target, "text": "ada@example.com", "clear": True}, NEXT],
                     StateDiff(manifest=(WIZARD, WIZARD | {"step": 1, "fields": {"Name": "Ada", "Email": "ada@example.com", "Team": ""}})),
                     [Slot(0, name, "Ada"), Slot(1, email, "ada@example.com")], heading="Sign up", button="Next", leads_on=True)
    after_one = one.diff.manifest[1]
    two = Transition("form", one.path + one.actions, [{"action": "type", "target": team.target, "text": "Blue team", "clear": True}, NEXT],
                     StateDiff(manifest=(after_one, after_one | {"step": 2, "fields": after_one["fields"] | {"Team": "Blue team"}})),
                     [Slot(0, team, "Blue team")], heading="Sign up", button="Next", continues=one)
    return one, two


def test_a_wizards_next_step_is_chained_where_the_step_before_it_ended():
    from flows.task_synthesis.discovery.families import chain_on_document, follows

    one, two = _wizard_steps()
    fams, _ = families_from(_walk([one, two]), "wizard.state")
    assert [f.verifier["params"]["where"] for f in fams] == [{"fields.Name": "Ada", "fields.Email": "ada@example.com"},
                                                            {"fields.Team": "Blue team"}]
    first, second = (instance(f, random.Random(3), fresh=True) for f in fams)
    assert second.reference[: len(two.path)] == two.path, "the second step alone walks the first one to reach its fields"
    first.reference, first.dropped = first.reference[:-1], first.reference[-1:]  # typing was its check: Next left out
    both = chain_on_document(first, second)
    assert both.reference == first.reference + [NEXT] + second.reference[len(two.path):], \
        "the first step's own values, its Next again, then the second step's fields: the first step is not redone"
    assert follows(first, second) and not follows(second, first), "the first step's fields are gone once the second shows"
    assert not follows(first, instance(fams[0], random.Random(4), fresh=True)), "nor is the first step done twice"
    assert chain(second, first) is None


def test_a_radio_picked_in_a_wizard_step_is_a_select_over_the_groups_other_options():
    one, _ = _wizard_steps()
    options = [{"label": p, "value": p, "target": {"label": p}, "checked": p == "Pro"} for p in ("Starter", "Pro", "Business")]
    starter = field(label="Starter", type="radio", role="radio", group="plan", options=options)
    pick = Transition("choice", one.path + one.actions, [{"action": "check", "target": {"label": "Starter"}, "checked": True}],
                      StateDiff(manifest=(one.diff.manifest[1], one.diff.manifest[1] | {"plan": "Starter"})),
                      [Slot(0, starter, "Starter")], heading="Sign up", continues=one)
    (fam,), _ = families_from(_walk([pick]), "wizard.state")
    assert fam.name == "select" and fam.verifier["params"]["where"] == {"plan": "Starter"}
    assert [o["value"] for o in fam.extra["options"]] == ["Business"], "not the plan it came with, nor the one picked"
    other = instance(fam, random.Random(0), fresh=True)
    assert other.verifier["params"]["where"] == {"plan": "Business"} and other.reference[-1]["target"] == {"label": "Business"}
    assert other.request == "Choose “Business” in “Sign up”."


def test_without_a_replayer_a_step_whose_typing_already_held_leaves_its_press_out_but_its_chain_keeps_it():
    """explore's walk has no replayer: the state it read once the fields were filled (before Next) says typing
    was the change, so the press is no part of the step (the gate would find it passes truncated), while a chain
    into the wizard's next step presses it again to get there."""
    from types import SimpleNamespace

    from flows.task_synthesis.discovery.agent import draw

    one, two = _wizard_steps()
    for t in (one, two):
        t.typed_state = {**t.diff.manifest[1], "step": t.diff.manifest[0]["step"]}  # the fields filled, the step not yet on
    fams, _ = families_from(_walk([one, two]), "wizard.state")
    specs = draw(fams, _walk([one, two]), SimpleNamespace(seed=0, count=12), "wizard", "x")
    singles = [s for s in specs if s.family == "update"]
    assert singles and all(s.reference[-1] != NEXT for s in singles), [s.reference[-1] for s in singles]
    chained = [s for s in specs if s.family == "multi_step"]
    assert chained and all(s.reference.count(NEXT) == 1 and s.reference[-1] != NEXT for s in chained), \
        "Next after the first step (the second step's fields show then), not after the last"


def test_the_few_families_note_counts_chains_and_retrieves_as_families():
    from types import SimpleNamespace as NS

    from flows.task_synthesis.discovery.agent import notes

    walk = NS(scans={}, pages=["/"], seconds=1.0, steps=3, transitions=[], changing=[], state=None, notes=[],
              sign_in=None, initial=None)
    fams = [NS(name=n) for n in ("create", "update", "delete")]
    manifest = NS(name="app")
    with_chains = [NS(family=f) for f in ["create", "update", "delete"] * 6 + ["multi_step"] * 2]
    assert not any("few families" in n for n in notes(manifest, walk, fams, {}, with_chains, count=20))
    without = [NS(family=f) for f in ["create", "update", "delete"] * 7]
    assert any("few families" in n for n in notes(manifest, walk, fams, {}, without, count=20))


def test_the_auth_hint_is_given_for_a_sign_in_form_not_for_a_sign_up():
    from types import SimpleNamespace as NS

    from flows.task_synthesis.discovery.agent import notes
    from flows.task_synthesis.discovery.page_scan import FieldInfo, Group

    def field(kind: str, label: str) -> FieldInfo:
        return FieldInfo({}, "textbox", kind, label)

    def hinted(*fields: FieldInfo) -> bool:
        scan = NS(groups=[Group("form", "", list(fields), [{"name": "Go"}])], on_items=[], cards=[])
        walk = NS(scans={"/": scan}, pages=["/"], seconds=1.0, steps=3, transitions=[], changing=[], state=None,
                  notes=[], sign_in=None, initial=None)
        return any("[auth]" in n for n in notes(NS(name="app"), walk, [], {}, [], count=20))

    assert hinted(field("text", "Username"), field("password", "Password"), field("checkbox", "Remember me"))
    assert not hinted(field("text", "First name"), field("text", "Last name"), field("email", "Email"),
                      field("password", "Password"))
    assert not hinted(field("email", "Email"), field("password", "Password"), field("password", "Repeat password"))
