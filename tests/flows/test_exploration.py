"""explore: abstract states, state diffs, the coverage model, reverse synthesis, the explorer on a live
sandbox whose sensitive button deletes everything, and the flow raising coverage of shop and mail."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flows.exploration.coverage import AppAreas, AreaCoverage, measure, pick_targets
from flows.exploration.explorer import ExploreConfig, Explorer, Transition
from flows.exploration.reverse import candidate, derive
from flows.exploration.state_diff import SqliteState
from flows.exploration.ui_tree import abstract_state, affordances, url_pattern
from flows.task_synthesis.task_spec import TaskSpec
from lake import utcnow
from sandboxes.manifest import load_manifest
from tests.shop_references import ADD_ADDRESS

ROOT = Path(__file__).resolve().parents[2]
WIPEOUT = ROOT / "tests" / "data" / "sandboxes" / "wipeout"

LIST_A = """- navigation "Main":
  - link "Inbox":
    - /url: /folders/1
- main:
  - heading "Inbox" [level=1]
  - list:
    - listitem:
      - link "Budget for May":
        - /url: /messages/3
      - text: 12 unread
    - listitem:
      - link "Lunch?":
        - /url: /messages/9
  - form "Mark all messages in Inbox as read":
    - button "Mark all as read"
"""
LIST_B = """- navigation "Main":
  - link "Inbox":
    - /url: /folders/1
- main:
  - heading "Archive" [level=1]
  - list:
    - listitem:
      - link "Flight to Porto":
        - /url: /messages/77
      - text: 3 unread
    - listitem:
      - link "Receipt":
        - /url: /messages/78
    - listitem:
      - link "Re: plans":
        - /url: /messages/79
  - form "Mark all messages in Archive as read":
    - button "Mark all as read"
"""
FORM = """- main:
  - form "Add address":
    - textbox "Label"
    - textbox "City": Porto
    - combobox "Country":
      - option "France" [selected]
      - option "Portugal"
    - checkbox "Default address" [checked]
    - button "Add address"
  - button "Sign out"
"""


# ---- abstract states and affordances -----------------------------------------------------------------
def test_lists_with_different_data_are_one_abstract_state():
    assert url_pattern("http://h/folders/1?page=2&sort=date") == url_pattern("http://h/folders/4?sort=name&page=9")
    assert abstract_state("http://h/folders/1", LIST_A) == abstract_state("http://h/folders/4", LIST_B)


def test_a_different_control_or_url_pattern_is_another_state():
    with_button = LIST_A.replace('    - button "Mark all as read"', '    - button "Mark all as read"\n    - button "Empty folder"')
    assert abstract_state("http://h/folders/1", LIST_A) != abstract_state("http://h/folders/1", with_button)
    assert abstract_state("http://h/folders/1", LIST_A) != abstract_state("http://h/labels/1", LIST_A)


def test_affordances_read_links_forms_fields_and_loose_buttons():
    found = affordances(FORM)
    form, loose = found.forms
    assert (form.label, form.buttons) == ("Add address", ["Add address"])
    fields = {f.label: f for f in form.fields}
    assert fields["City"].value == "Porto" and fields["Label"].value == ""
    assert fields["Country"].options == ["France", "Portugal"] and fields["Country"].selected == "France"
    assert fields["Default address"].checked
    assert (loose.label, loose.buttons) == ("", ["Sign out"])
    assert ("Budget for May", "/messages/3") in affordances(LIST_A).links
    assert affordances('- link "Active":\n  - /url: "#/active"').links == [("Active", "#/active")]  # YAML-quoted


def test_script_driven_pages_submit_lone_fields_with_enter_and_toggle_checkboxes():
    found = affordances('- textbox "What needs to be done?"\n- checkbox "Mark all as complete"')
    assert [(f.submit, f.buttons) for f in found.forms] == [("enter", ["What needs to be done?"]), ("check", ["Mark all as complete"])]
    reference = [{"action": "goto", "url": "/"},
                 {"action": "type", "target": {"role": "textbox", "name": "What needs to be done?"}, "text": "Milk"},
                 {"action": "key", "keys": ["Enter"]}, {"action": "left_click", "target": {"role": "checkbox", "name": "Mark all as complete"}}]
    assert AppAreas(None).task_areas(reference, {}) == {"/", "form What needs to be done? on /", "form Mark all as complete on /"}


# ---- state diffs ---------------------------------------------------------------------------------------
def test_sqlite_state_diffs_inserted_updated_and_deleted_rows(tmp_path):
    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, pinned INTEGER)")
        con.executemany("INSERT INTO notes VALUES (?, ?, 0)", [(1, "a"), (2, "b"), (3, "c")])
    state = SqliteState(db)
    before = state.read()
    assert state.read() is before  # no write in between: the cached rows, not a new read
    with con:
        con.execute("INSERT INTO notes VALUES (4, 'd', 0)")
        con.execute("UPDATE notes SET pinned = 1 WHERE id = 2")
        con.execute("DELETE FROM notes WHERE id = 3")
    con.close()
    diff = state.diff(before, state.read())
    assert diff["notes"]["counts"] == {"inserted": 1, "deleted": 1, "updated": 1}
    assert diff["notes"]["inserted"][0]["title"] == "d"
    assert diff["notes"]["updated"][0]["changes"] == {"pinned": [0, 1]}
    assert diff["notes"]["deleted"][0]["id"] == 3


# ---- reverse synthesis -----------------------------------------------------------------------------------
def _transition(diff, net=None, actions=None, fills=None, **kw) -> Transition:
    actions = actions or [{"action": "left_click", "target": {"role": "button", "name": "Star", "within": "Star message"}}]
    return Transition("s1", "http://h/messages/7", [{"action": "goto", "url": "/messages/7"}], actions, "s2",
                      "http://h/messages/7", diff, kw.pop("area", "POST /messages/<>/star"), fills=fills or {},
                      form_label=kw.pop("form_label", "Star message"), button=kw.pop("button", "Star"),
                      net=diff if net is None else net, **kw)


def _update(table, row, changes):
    return {table: {"counts": {"inserted": 0, "deleted": 0, "updated": 1}, "inserted": [], "deleted": [],
                    "updated": [{"row": row, "changes": changes}]}}


INITIAL = {"messages": {"columns": ["id", "subject", "is_starred"], "rows": {7: (7, "Budget for May", 0)}}}


def test_an_update_becomes_field_equals_with_a_request_naming_the_row():
    t = _transition(_update("messages", {"id": 7, "subject": "Budget for May", "is_starred": 1, "updated_at": "2026-01-01 10:00"},
                            {"is_starred": [0, 1], "updated_at": ["2026-01-01 09:00", "2026-01-01 10:00"]}))
    spec = candidate(t, "mail", "abc", INITIAL)
    assert spec.family == "update"
    assert spec.verifier == {"template": "field_equals", "params": {"table": "messages", "key": {"id": 7}, "field": "is_starred", "value": 1}}
    assert spec.reference == [*t.path, *t.actions]
    assert spec.instruction == "Star the message “Budget for May”."


def test_an_insert_becomes_row_exists_on_the_typed_values_and_a_delete_row_absent():
    typed = {"Title": "Quarterly plan"}
    ins = {"notes": {"counts": {"inserted": 1, "deleted": 0, "updated": 0}, "deleted": [], "updated": [],
                     "inserted": [{"id": 6, "title": "Quarterly plan", "pinned": 0, "created_at": "2026-02-02 10:00"}]}}
    spec = candidate(_transition(ins, fills=typed, form_label="Add note", button="Add note"), "notes", "abc", {})
    assert (spec.family, spec.verifier["template"], spec.verifier["params"]["where"]) == ("create", "row_exists", {"title": "Quarterly plan"})
    assert "“Quarterly plan”" in spec.instruction
    gone = {"notes": {"counts": {"inserted": 0, "deleted": 1, "updated": 0}, "inserted": [], "updated": [],
                      "deleted": [{"id": 2, "title": "b", "pinned": 0}]}}
    spec = candidate(_transition(gone), "notes", "abc", {})
    assert spec.verifier == {"template": "row_absent", "params": {"table": "notes", "where": {"id": 2}}}


def test_a_step_that_undoes_its_path_yields_no_candidate():
    step = _update("messages", {"id": 7, "is_starred": 0}, {"is_starred": [1, 0]})  # unstar, after a path that starred
    assert candidate(_transition(step, net={}), "mail", "abc", INITIAL) is None


def test_derive_keeps_thin_areas_and_caps_candidates_per_area():
    ts = [
        _transition(_update("messages", {"id": i, "is_starred": 1}, {"is_starred": [0, 1]})) for i in range(6)
    ]
    assert len(derive(ts, "mail", "abc", {"POST /messages/<>/star"}, INITIAL, per_area=4)) == 4
    assert derive(ts, "mail", "abc", {"POST /messages/<>/archive"}, INITIAL) == []


# ---- the coverage model ----------------------------------------------------------------------------------
def test_areas_come_from_the_source_and_tasks_map_onto_them(shop_manifest, lake):
    areas = AppAreas.from_source(shop_manifest)
    assert {"/addresses/new", "POST /addresses/new", "POST /wishlist/new", "table addresses"} <= set(areas.areas)
    assert areas.action("Remove Summit Trail Shoe from wishlist", "Remove", "/wishlist") == "POST /wishlist/<>/delete"
    verifier = {"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7"}}}
    assert areas.task_areas(ADD_ADDRESS, verifier) == {"/addresses/new", "POST /addresses/new", "table addresses"}

    spec = TaskSpec("shop", "c", "create", "addresses", "Add my boathouse", {"p": 1}, 1, [], verifier, ADD_ADDRESS)
    lake.write("tasks", [spec.to_row("verified", None, None, "r1", utcnow())], "r1", "shop")
    covered = {c.area: c.verified_tasks for c in measure(lake, "shop", areas)}
    assert covered["POST /addresses/new"] == 1 and covered["table addresses"] == 1 and covered["POST /wishlist/new"] == 0


def test_a_task_counts_as_new_coverage_by_the_areas_it_is_measured_in_not_the_one_it_was_aimed_at(shop_manifest):
    from flows.exploration.exploration import reaches_an_empty_area

    areas = AppAreas.from_source(shop_manifest)
    verifier = {"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7"}}}
    # derived for the empty wishlist form, but its steps and verifier are the address form's
    aimed_elsewhere = TaskSpec("shop", "c", "create", "POST /wishlist/new", "Add my boathouse", {"area": "POST /wishlist/new"},
                               1, [], verifier, ADD_ADDRESS)
    touched = areas.task_areas(ADD_ADDRESS, verifier)
    assert not reaches_an_empty_area(areas, aimed_elsewhere, {key: 1 for key in touched} | {"POST /wishlist/new": 0})
    assert reaches_an_empty_area(areas, aimed_elsewhere, {key: 1 for key in touched} | {"table addresses": 0})
    assert reaches_an_empty_area(areas, aimed_elsewhere, {})  # nothing verified before: every area it touches is new


def test_trajectories_and_mined_failures_count_towards_the_areas_they_touch(shop_manifest, lake):
    areas = AppAreas.from_source(shop_manifest)
    verifier = {"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7"}}}
    spec = TaskSpec("shop", "c", "create", "addresses", "Add my boathouse", {"p": 2}, 1, [], verifier, ADD_ADDRESS)
    lake.write("tasks", [spec.to_row("rejected", "flaky", None, "r1", utcnow())], "r1", "shop")
    lake.write("trajectories", [{"trajectory_id": "tr1", "task_id": spec.task_id, "sandbox": "shop"}], "r1", "shop")
    lake.write("steps", [{"trajectory_id": "tr1", "step_index": i, "url": u} for i, u in
                         enumerate(["http://h/addresses/new", "http://h/wishlist"])], "r1", "shop")
    lake.write("failures", [{"failure_id": f"f{i}", "trajectory_id": "tr1", "task_id": spec.task_id, "sandbox": "shop"} for i in range(2)], "r1", "shop")
    cov = {c.area: c for c in measure(lake, "shop", areas)}
    assert (cov["POST /addresses/new"].verified_tasks, cov["POST /addresses/new"].trajectories, cov["POST /addresses/new"].failures) == (0, 1, 2)
    assert cov["/wishlist"].trajectories == 1 and cov["/wishlist"].failures == 0  # visited, not where the task failed
    assert "POST /addresses/new" in pick_targets(list(cov.values()), 0)  # fails often: targeted whatever K is


def test_targets_are_the_thinnest_areas_plus_often_failing_ones():
    cov = [
        AreaCoverage("POST /a", "action", "source", verified_tasks=5, trajectories=10, failures=8),
        AreaCoverage("POST /b", "action", "source", verified_tasks=0),
        AreaCoverage("/c", "screen", "source", verified_tasks=1, trajectories=4),
        AreaCoverage("table t", "entity", "source"),
    ]
    assert pick_targets(cov, 2) == ["POST /b", "/c", "POST /a"]


# ---- the explorer on a live sandbox ------------------------------------------------------------------------
def _notes(db: Path) -> list[tuple]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT id, title FROM notes ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.mark.browser
def test_the_explorer_never_presses_a_sensitive_control_unmarked_and_nothing_is_lost(browser_host):
    from sandboxes.app_process import AppProcess
    from sandboxes.web import WebDriver

    manifest = load_manifest(WIPEOUT)
    with AppProcess(manifest) as app:
        initial = _notes(app.state_path)
        assert len(initial) == 5
        driver = WebDriver(app, browser_host)
        try:
            result = Explorer(driver, manifest, AppAreas.from_source(manifest), config=ExploreConfig(max_steps=40, max_seconds=90)).run()
            after = _notes(app.state_path)  # the live DB, before any reset
        finally:
            driver.close()
    skipped = [t for t in result.transitions if t.outcome == "skipped_sensitive"]
    assert [(t.button, t.sensitive) for t in skipped] == [("Delete everything", "delete")]
    pressed = [a for t in result.performed for a in t.actions if (a.get("target") or {}).get("name") == "Delete everything"]
    assert pressed == []
    assert not any(ch["counts"]["deleted"] for t in result.transitions for ch in t.diff.values())
    assert set(initial) <= set(after)  # every note is still there (the explorer may have added some)
    assert any(t.changed_state for t in result.performed)  # it did act: pins and new notes


@pytest.mark.browser
def test_in_confirm_mode_the_sensitive_press_follows_a_call_user(browser_host):
    from sandboxes.app_process import AppProcess
    from sandboxes.web import WebDriver

    manifest = load_manifest(WIPEOUT)
    with AppProcess(manifest) as app:
        driver = WebDriver(app, browser_host)
        try:
            config = ExploreConfig(max_steps=40, max_seconds=90, sensitive="confirm")
            result = Explorer(driver, manifest, AppAreas.from_source(manifest), config=config).run()
            driver.reset()
            restored = _notes(app.state_path)
        finally:
            driver.close()
    wipes = [t for t in result.performed if t.button == "Delete everything"]
    assert len(wipes) == 1 and wipes[0].sensitive == "delete"
    assert [a["action"] for a in wipes[0].actions[-2:]] == ["call_user", "left_click"]
    assert wipes[0].diff["notes"]["counts"]["deleted"] == 5
    assert len(restored) == 5  # the sandbox's snapshot brings everything back


# ---- the flow, end to end ----------------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.slow
def test_explore_raises_coverage_of_shop_and_mail_with_new_verified_tasks(prefect_harness, tmp_path):
    from flows.exploration.flow import explore
    from flows.task_synthesis.flow import synthesize_tasks
    from lake import Lake

    root = tmp_path / "lake"
    synthesize_tasks(sandboxes=["shop", "mail"], count=4, seed=5, lake_root=str(root))
    # the step cap decides how far it explores (74 and 90 steps in ~40-60 s on this machine), not the clock: a
    # time budget that binds would make the yield, and so this verdict, depend on the machine's load
    result = explore(sandboxes=["shop", "mail"], areas=8, steps=90, minutes=10, lake_root=str(root))
    by_name = {s["sandbox"]: s for s in result["sandboxes"]}
    for name in ("shop", "mail"):
        s = by_name[name]
        assert s["error"] is None
        assert s["share_after"] > s["share_before"], s
        assert s["skipped_sensitive"] > 0  # both apps declare sensitive controls the explorer met
    assert sum(s["verified_in_empty_areas"] for s in by_name.values()) >= 20, by_name
    assert "before" in result["markdown"] or "areas covered before" in result["markdown"]
    lake = Lake(root)
    rows = lake.query("SELECT sandbox, phase, count(*) AS n FROM coverage GROUP BY ALL ORDER BY ALL")
    assert {(r["sandbox"], r["phase"]) for r in rows} == {("mail", "after"), ("mail", "before"), ("shop", "after"), ("shop", "before")}
    explored = lake.query("SELECT count(*) AS n FROM tasks WHERE status = 'verified' AND provenance_json LIKE '%\"agent\": \"explore\"%'")
    assert explored[0]["n"] == sum(s["verified"] for s in by_name.values())
    moves = lake.query("SELECT action_json, outcome FROM transitions WHERE sensitive IS NOT NULL")
    assert moves and all(m["outcome"] == "skipped_sensitive" for m in moves)
    for chart in result["charts"].values():
        assert Path(chart).read_text().startswith("<svg")


def test_coverage_show_prints_the_areas_and_writes_a_picture(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "flywheel.cli", "--lake", str(tmp_path / "lake"), "coverage", "show", "shop"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert "0 of" in out.stdout and "`POST /addresses/new`" in out.stdout
    picture = tmp_path / "lake" / "reports" / "coverage-shop.svg"
    assert picture.read_text().startswith("<svg")


def test_the_llm_rewrites_requests_but_never_loses_a_quoted_value(tmp_path, lake):
    from flows.exploration.reverse import rewrite_with
    from flywheel.llm import LLMClient, LLMSettings
    from tests.doubles.openai_server import FakeOpenAIServer

    ts = [_transition(_update("messages", {"id": 7, "is_starred": 1}, {"is_starred": [0, 1]}))]
    with FakeOpenAIServer() as srv:  # TEST DOUBLE for a hosted model
        srv.reply({"role": "assistant", "content": "Please star my email “Budget for May”."},
                  {"role": "assistant", "content": "Star the budget email."})  # drops the quoted subject
        client = LLMClient(LLMSettings(model="tiny", api_base=srv.url, cache_dir=tmp_path / "cache", timeout=5.0), lake=lake, run_id="r")
        first = derive(ts, "mail", "abc", {"POST /messages/<>/star"}, INITIAL, rewrite=rewrite_with(client))
        second = derive(ts, "mail", "abc2", {"POST /messages/<>/star"}, dict(INITIAL, messages={"columns": ["id", "subject"], "rows": {7: (7, "Budget for June")}}),
                        rewrite=rewrite_with(client))
        client.flush()
    assert first[0].instruction == "Please star my email “Budget for May”." and first[0].provenance["rewritten"]
    assert second[0].instruction == "Star the message “Budget for June”."  # the draft is kept
    assert "Budget for May" in srv.requests[0]["messages"][1]["content"]
    assert len(lake.query("SELECT * FROM llm_calls WHERE purpose = 'explore_request'")) == 2


def test_a_transition_reached_through_earlier_submissions_asks_for_them_too():
    typed = {"What needs to be done?": "Buy milk"}
    add = Transition("s0", "http://h/", [{"action": "goto", "url": "/"}],
                     [{"action": "type", "target": {"role": "textbox", "name": "What needs to be done?"}, "text": "Buy milk"},
                      {"action": "key", "keys": ["Enter"]}], "s1", "http://h/", {"page_state": {}}, "form A", fills=typed,
                     submit="enter", net={"page_state": {"before": [], "after": [{"title": "Buy milk", "completed": False}]}})
    mark = Transition("s1", "http://h/", add.path + add.actions, [{"action": "left_click", "target": {"role": "checkbox", "name": "Mark all as complete"}}],
                      "s2", "http://h/", {"page_state": {}}, "form B", button="Mark all as complete", submit="check",
                      net={"page_state": {"before": [], "after": [{"title": "Buy milk", "completed": True}]}})
    first, second = derive([add, mark], "todomvc", "c", {"form A", "form B"}, {}, expression="app.state")
    assert first.instruction == "Enter “Buy milk” in “What needs to be done?”."
    assert second.instruction == "Enter “Buy milk” in “What needs to be done?”, then mark all as complete."
    assert second.reference == [*add.path, *add.actions, *mark.actions]
    assert second.verifier["template"] == "js_state_matches"
    assert second.verifier["params"]["where"] == {"title": "Buy milk", "completed": True}


def test_forms_with_no_name_or_page_are_named_in_words_and_old_lakes_keys_read_so(shop_manifest, lake):
    from flows.exploration.coverage import explored_areas

    areas = AppAreas.from_source(shop_manifest)
    assert areas.action("", "", "/") == "form (no name) on /"
    assert areas.action("", "", None) == "form (no name) on (page not known)"
    assert areas.action("Search 2 items", "", None) == "form Search # items on (page not known)"
    now = utcnow()
    lake.write("coverage", [{"sandbox": "shop", "area": key, "area_kind": "action", "exists_from": "exploration",
                             "phase": "after", "run_id": "x", "recorded_at": now}
                            for key in ("form  on /", "form  on ?", "form Go on ?", "form (no name) on /")], "x", "shop")
    assert sorted(explored_areas(lake, "shop")) == [  # an earlier version's names, read as this one's, once
        ("form (no name) on (page not known)", "action"), ("form (no name) on /", "action"),
        ("form Go on (page not known)", "action")]
