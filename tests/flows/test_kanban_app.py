"""A third-party drag-and-drop app added with only a sandbox.toml: jKanban's demo board (Apache-2.0) from
the npm registry, its state in the page's DOM. A semantic drag through real mouse events, the board-page
agent, the real gate, the real synthesize-tasks and explore flows; when npm or the registry cannot be
reached, the tests are skipped with the reason."""

import json
import random
from pathlib import Path

import pytest

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.board_page import (
    BoardComposer,
    BoardPageAgent,
    read_board_page,
    state_fields,
)
from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.source import read_source
from sandboxes.actions import parse_actions
from tests.conftest import in_own_thread, npm_sandbox
from verifier_templates.base import Probe

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "sandboxes" / "kanban"


@pytest.fixture(scope="module")
def kanban():
    return npm_sandbox("kanban")


@pytest.fixture(scope="module")
def request_(kanban):
    return SynthesisRequest(kanban, read_source(kanban), None, 12, 0)


def _cards(state):
    return {(r["board"].split(" (")[0], r["title"]) for r in state}


def test_the_sandbox_is_only_a_manifest_and_the_source_is_pinned_by_the_tarball(kanban):
    assert sorted(p.name for p in FOLDER.iterdir()) == ["README.md", "sandbox.toml"], "no app code in the repo"
    source = read_source(kanban)
    assert source.commit == kanban.source.integrity
    assert "example/index.html" in source.files and "dist/jkanban.js" in source.files
    assert ROOT not in kanban.source_dir.parents, "fetched into a cache outside the repo"


def test_the_board_agent_reads_boards_cards_and_drag_limits_from_the_inline_config(request_):
    page = read_board_page(request_.source.files)
    assert [(b.id, b.short, b.drag_to) for b in page.boards] == [
        ("_todo", "To Do", ["_working"]), ("_working", "Working", None), ("_done", "Done", ["_working"])]
    assert page.boards[1].cards == ["Do Something!", "Run?"]
    assert (page.add_button, page.submit_button, page.list_role) == ("+ Add New Card", "Submit", "main")
    assert state_fields(request_.manifest.state.expression) == ("board", "title")


def test_a_page_without_board_config_gets_a_note_not_tasks(kanban, request_):
    from flows.task_synthesis.agents.board_page import BoardPageAgent
    from flows.task_synthesis.source import SourceSnapshot

    bare = SourceSnapshot("kanban", "x", {"example/index.html": "<html><body><div id='b'></div></body></html>"})
    out = BoardPageAgent().synthesize(SynthesisRequest(kanban, bare, None, 5, 0))
    assert not out.candidates and "did not find inline board configuration" in out.notes[0]


def test_candidates_move_add_and_add_then_move_with_semantic_drags(request_):
    out = BoardPageAgent().synthesize(request_)  # the board reader (the static agent adds discovery's)
    assert not out.notes and not out.skills
    assert {c.family for c in out.candidates} == {"update", "create", "multi_step"}
    assert len({json.dumps(c.params, sort_keys=True) for c in out.candidates}) == len(out.candidates) == 12
    drags = [a for c in out.candidates for a in c.reference if a["action"] == "left_click_drag"]
    assert drags and all(set(a) == {"action", "target", "to"} for a in drags)
    # every move goes to a board its own board allows
    page = read_board_page(request_.source.files)
    for c in out.candidates:
        if c.family == "update":
            source = next(b for b in page.boards if c.params["move"] in b.cards)
            assert source.drag_to is None or c.params["to"] in source.drag_to
    assert all(c.injection == [] for c in out.candidates)  # they start from the demo's own cards


@pytest.mark.browser
def test_a_semantic_drag_moves_the_card_in_the_live_page_and_reports_both_ends(kanban):
    from sandboxes.drivers import open_driver

    probe = Probe("state", "js", kanban.state.page_expression())
    drag = {"action": "left_click_drag", "target": {"text": "Run?"}, "to": {"role": "main", "nth": 2}}

    def run():
        with open_driver(kanban) as driver:
            driver.reset()
            before = driver.probe(probe)
            result = driver.act(parse_actions([drag])[0])
            after = driver.probe(probe)
            driver.reset()
            forbidden = driver.act(parse_actions([{**drag, "target": {"text": "Ok!"}, "to": {"role": "main", "nth": 0}}])[0])
            refused = driver.probe(probe)
        return before, result, after, forbidden, refused

    before, result, after, forbidden, refused = in_own_thread(run)
    assert ("Working", "Run?") in _cards(before) and ("Done", "Run?") not in _cards(before)
    assert ("Done", "Run?") in _cards(after) and ("Working", "Run?") not in _cards(after)
    assert len(after) == len(before)
    assert result.ok and len(result.point) == 4 and all(0 <= v <= 999 for v in result.point)
    assert result.point[2] > result.point[0], "from the Working board rightwards onto Done"
    assert forbidden.ok and refused == before, "Done's cards may only go to Working: the page refuses the drop"


@pytest.mark.browser
def test_the_gate_verifies_the_candidates_and_rejects_a_drag_the_board_forbids(kanban, request_):
    from sandboxes.drivers import open_driver

    out = BoardPageAgent().synthesize(request_)  # the board reader (the static agent adds discovery's)
    page = read_board_page(request_.source.files)
    composer = BoardComposer(request_, page, kanban.state.expression, state_fields(kanban.state.expression))
    forbidden = composer.move(random.Random(3), 3, allowed=False)
    assert forbidden is not None

    def run():
        with open_driver(kanban) as driver:
            gate = ValidationGate(driver, {})
            return [gate.validate(c) for c in out.candidates], gate.validate(forbidden)

    results, negative = in_own_thread(run)
    verified = [r for r, c in zip(results, out.candidates) if r.status == "verified"]
    assert len(verified) >= 10, [(r.reason, r.detail) for r in results if r.status != "verified"]
    families = {c.family for r, c in zip(results, out.candidates) if r.status == "verified"}
    assert {"update", "multi_step"} <= families, "drags among the verified"
    assert (negative.status, negative.reason) == ("rejected", "fails_after_reference"), negative.detail


def test_a_semantic_drag_exports_as_a_coordinate_drag():
    from flows.sft_export.formats import ground
    from sandboxes.actions import Drag

    acts = json.dumps([{"action": "left_click_drag", "target": {"text": "Run?"}, "to": {"role": "main", "nth": 2}}])
    assert ground(acts, json.dumps([[411, 225, 870, 210]]), "http://x/") == [Drag(x=411, y=225, x2=870, y2=210)]
    assert ground(acts, json.dumps([None]), "http://x/") is None  # never located: not an assistant turn


@pytest.mark.browser
@pytest.mark.slow
def test_synthesize_tasks_then_explore_yield_verified_pairs(kanban, prefect_harness, tmp_path):
    from flows.exploration.flow import explore
    from flows.task_synthesis.flow import synthesize_tasks
    from lake import Lake

    root = tmp_path / "lake"
    result = synthesize_tasks(sandboxes=["kanban"], count=12, seed=5, lake_root=str(root))
    (summary,) = result["sandboxes"]
    assert summary["error"] is None and summary["verified"] >= 10, summary
    assert summary["verified_by_family"].get("update", 0) >= 1 and summary["verified_by_family"].get("multi_step", 0) >= 1
    print(f"synthesize-tasks: {summary['verified']} of {summary['candidates']} verified")

    explored = explore(sandboxes=["kanban"], areas=4, steps=30, minutes=1.5, lake_root=str(root))
    (s,) = explored["sandboxes"]
    assert s["error"] is None and s["verified"] >= 1, s
    print(f"explore: {s['verified']} new verified tasks")
    rows = Lake(root).query(
        "SELECT reference_json FROM tasks WHERE status = 'verified' AND provenance_json LIKE '%\"agent\": \"explore\"%'")
    submitted = [json.loads(r["reference_json"]) for r in rows]
    # the add-card form: its text field has no label; the explorer types into it by role and place
    assert any(a.get("action") == "type" and a["target"].get("role") == "textbox" for ref in submitted for a in ref), submitted


def test_a_script_built_form_without_names_is_one_affordance_the_explorer_can_fill():
    from flows.exploration.ui_tree import affordances

    tree = "\n".join([
        "- main:", "  - text: Do Something! Run?", "  - textbox", '  - button "Submit"', '  - button "Cancel"',
        "- contentinfo:", '  - button "+ Add New Card"', '- textbox "Search"', "- main:", "  - textbox",
    ])
    forms = {tuple(f.buttons): f for f in affordances(tree).forms}
    assert set(forms) == {("Submit", "Cancel"), ("+ Add New Card",)}  # the last textbox has no button beside it
    (field,) = forms[("Submit", "Cancel")].fields
    assert (field.role, field.label, field.nth) == ("textbox", "", 0)


def test_a_drag_needs_both_ends_by_element_or_by_point():
    from pydantic import ValidationError

    from sandboxes.actions import Drag

    assert Drag(target={"text": "Run?"}, x2=10, y2=20).to is None  # a card dropped at a point
    with pytest.raises(ValidationError, match="where it ends"):
        Drag(target={"text": "Run?"})
    with pytest.raises(ValidationError, match="where it starts"):
        Drag(to={"role": "main"}, x=None, y=5)


# A page of our own for the driver's drag (no registry needed): cards move between two lists on
# mousedown / mousemove / mouseup, like dragula; the first card moves only by its handle.
DRAG_PAGE = """<ul id="a" aria-label="Left" style="min-height:120px;width:300px;float:left">
<li><span class="item_handle" style="display:inline-block;width:20px;height:20px;background:#000"></span><span>Grab me</span></li>
<li>Anywhere</li></ul>
<ul id="b" aria-label="Right" style="min-height:120px;width:300px;float:left;margin-left:200px"><li>Stay</li></ul>
<script>
let held = null, moved = false;
document.addEventListener('mousedown', e => {
  const card = e.target.closest('li');
  if (card && (!card.querySelector('.item_handle') || e.target.classList.contains('item_handle'))) { held = card; moved = false; }
});
document.addEventListener('mousemove', e => { if (held && e.buttons === 1) moved = true; });
document.addEventListener('mouseup', e => {
  const list = document.elementFromPoint(e.clientX, e.clientY)?.closest('ul');
  if (held && moved && list) list.appendChild(held);
  held = null;
});
</script>"""
LISTS = "[...document.querySelectorAll('ul')].map(u => [...u.children].map(li => li.textContent.trim()))"


@pytest.mark.browser
def test_a_semantic_drag_grabs_the_handle_and_moves_through_real_mouse_events(shop_app, browser_host):
    from sandboxes.web import WebDriver

    driver = WebDriver(shop_app, browser_host)
    probe = Probe("lists", "js", LISTS)
    outcomes = []
    for source in ("Grab me", "Anywhere"):
        driver.reset()
        driver.observe(screenshot=False)
        driver.page.set_content(DRAG_PAGE)
        drag = {"action": "left_click_drag", "target": {"text": source}, "to": {"role": "list", "name": "Right"}}
        result = driver.act(parse_actions([drag])[0])
        outcomes.append((result, driver.probe(probe)))
    driver.close()
    (grabbed, after_grab), (anywhere, after_any) = outcomes
    assert grabbed.ok and after_grab == [["Anywhere"], ["Stay", "Grab me"]], "moved by its handle"
    assert anywhere.ok and after_any == [["Grab me"], ["Stay", "Anywhere"]], "no handle: moved from its centre"
    # both ends on the 0..999 grid; the handle sits left of the card's text, so the start is further left
    assert len(grabbed.point) == 4 and grabbed.point[0] < anywhere.point[0] + 5 and grabbed.point[2] > grabbed.point[0]
