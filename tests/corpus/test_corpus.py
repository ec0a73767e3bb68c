"""The foreign-app corpus (corpus/): third-party apps no one here wrote, fetched at pinned versions with
integrity from npm and PyPI, each added with only a sandbox.toml. Each one fetches, starts and answers in
a real browser; then the real synthesize-tasks (default static agent) and explore flows must get what
issue 13's "Done when" asks from it. When the npm registry or PyPI cannot be reached the app's tests are
skipped with the reason."""

from __future__ import annotations

import json
import os
import random
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.foreign import CORPUS, corpus_apps, measure
from sandboxes.manifest import load_manifest
from sandboxes.npm_source import SourceFetchError
from tests.conftest import in_own_thread
from verifier_templates.base import Probe

APPS = [p.name for p in corpus_apps()]
# Left out on purpose (kept for an independent check): the demo labs of the Qwen-CUA repository, Flask's
# tutorial app, and the framework builds of the TodoMVC repository / npm package.
EXCLUDED = ("todomvc", "flaskr", "qwen")
# Apps on which today's discovery does not yet reach the thresholds below. They are not run in CI (a few
# minutes each for an expected failure); FLYWHEEL_CORPUS_PENDING=run runs them too, strictly: one that
# meets the thresholds then fails here until it is taken off this list.
YIELD_PENDING = set(APPS) - {"html5sortable", "dragula", "jsoneditor", "radicale", "vue-color", "django-admin",
                             "optuna-dashboard", "gentelella"}
RUN_PENDING = os.environ.get("FLYWHEEL_CORPUS_PENDING") == "run"
# Apps that meet the thresholds in a measured bench/foreign.py run but whose full run costs CI too much time:
# skipped in CI, with the reason; FLYWHEEL_CORPUS_PENDING=run runs them too (and they must pass).
CI_TOO_SLOW = {"html5sortable": "meets the bar (30 of 33 verified, 4 families, 47% multi-step; its CI yield run passed on "
                                "a7e3ad7) and is a second drag-board app beside dragula, whose yield CI runs: left out of CI "
                                "for time (~150 CPU-s, 4.6 per verified pair), as CI neared 70 of its 90 minutes",
               "jsoneditor": "meets the bar (30 of 30 verified, 40% multi-step; its CI yield run passed on a7e3ad7) and its "
                             "in-place typing is tested on its own in CI (test_the_walk_types_over_text_edited_in_place...): "
                             "left out of CI for time (~144 CPU-s, 4.8 per verified pair), as CI neared 70 of its 90 minutes",
               "radicale": "meets the bar (30 of 30 verified, 4 families, 40% multi-step in bench/foreign.py on 4a50592) "
                           "but its gated run costs ~12 CPU-s per pair (974 s wall at load 2-9), over CI's ~4 min",
               "django-admin": "meets the bar (25 of 30 verified, 4 families, 40% multi-step in bench/foreign.py on 4a50592) "
                               "but its gated run costs ~20 CPU-s per pair (1123 s wall at load 2-9), over CI's ~4 min",
               "optuna-dashboard": "meets the bar (30 of 32 verified, 4 families, 33% multi-step in bench/foreign.py) but its "
                                   "run costs ~11 CPU-s per pair (~320 CPU-s, 28 min wall at load 6-13), over CI's ~4 min",
               "gentelella": "meets the bar (34 of 34 verified, 4 families, 44% multi-step in bench/foreign.py on 4a50592) "
                             "but its gated run costs ~320 CPU-s (~9 per pair; 908 s wall at load 2-9), over CI's ~4 min"}
# Synthesis and exploration sizes for CI (bench/foreign.py runs the full sizes).
COUNT, STEPS, MINUTES = 30, 80, 1.0


def fetched(name: str):
    manifest = load_manifest(CORPUS / name)
    try:
        manifest.source_dir  # noqa: B018 - fetches (npm pack / pip install, pinned and hash-checked) on first use
    except SourceFetchError as exc:
        print(f"SKIPPED: cannot fetch {name}: {exc}")
        pytest.skip(f"cannot fetch {name}'s source: {exc}")
    return manifest


def test_the_corpus_is_eight_or_more_pinned_third_party_apps_with_only_a_manifest():
    assert len(APPS) >= 8
    for name in APPS:
        folder = CORPUS / name
        assert sorted(p.name for p in folder.iterdir()) == ["sandbox.toml"], f"{name}: no app code in the repo"
        assert not any(x in name for x in EXCLUDED)
        source = tomllib.loads((folder / "sandbox.toml").read_text())["source"]
        assert (source.get("npm") and source.get("integrity", "").startswith("sha512-")) or source.get("pypi"), \
            f"{name}: fetched from npm with its integrity, or from PyPI with every package hashed"
        load_manifest(folder)  # validates, without fetching
    listed = (CORPUS / "README.md").read_text()
    assert all(f"`{name}`" in listed for name in APPS), "every app is in corpus/README.md with its licence"


def test_the_readmes_default_run_does_not_include_the_corpus():
    from sandboxes.registry import discover

    found, _ = discover()
    assert not {m.name for m in found} & set(APPS)


@pytest.fixture(scope="module")
def chromium():
    """One Chromium for all the apps' start checks (each opens its own context over CDP)."""
    from sandboxes.web import SharedBrowser

    with SharedBrowser() as shared:
        yield shared.endpoint


# apps whose state is empty on a fresh start (the expression answers, with no records)
EMPTY_AT_START = {"radicale": "a fresh CalDAV server holds no collections until one is created"}


@pytest.mark.browser
@pytest.mark.parametrize("name", APPS)
def test_each_app_fetches_starts_and_answers(name, chromium):
    from sandboxes.drivers import open_driver

    manifest = fetched(name)
    assert Path(CORPUS).resolve() not in manifest.source_dir.resolve().parents, "fetched into the cache, not the repo"

    def run():
        with open_driver(manifest, browser_endpoint=chromium) as driver:
            driver.reset()
            obs = driver.observe()
            expression = manifest.state.page_expression()
            state = driver.probe(Probe("state", "js", expression)) if expression else None
            return obs, state

    obs, state = in_own_thread(run)
    assert obs.url.startswith(f"http://{manifest.name}.local/") and obs.ui_tree.strip(), f"{name}: the page rendered nothing"
    if manifest.state.page_expression():
        assert state is not None, f"{name}: the state expression read nothing"
        if name not in EMPTY_AT_START:
            assert state not in ([], {}), f"{name}: the state expression read nothing: {json.dumps(state)}"


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.xfail(
    n in YIELD_PENDING, strict=True, run=RUN_PENDING,
    reason="discovery does not yet reach the Done-when figures on this app (FLYWHEEL_CORPUS_PENDING=run tries)"),
    pytest.mark.skipif(n in CI_TOO_SLOW and not RUN_PENDING, reason=CI_TOO_SLOW.get(n, ""))]) for n in APPS])
def test_synthesis_and_exploration_yield_what_the_done_when_asks(name, prefect_harness, tmp_path):
    fetched(name)
    got = measure(CORPUS / name, tmp_path / "lake", count=COUNT, steps=STEPS, minutes=MINUTES)
    print(f"{name}: {got.verified} verified of {got.candidates}, families {dict(got.families)}, "
          f"multi-step {got.multi_step_share:.0%}, rejected {dict(got.rejected)}, notes {got.notes}")
    assert not got.errors, got.errors
    if got.verified < 20:
        assert got.notes, f"{name}: few pairs ({got.verified}) and no note saying which discovery step found nothing"
    assert got.duplicates == 0, "no two verified pairs with the same request and verifier"
    assert got.verified >= 20 and len(got.families) >= 4 and got.multi_step_share >= 0.25, (
        f"{name}: {got.verified} verified over {len(got.families)} families, {got.multi_step_share:.0%} multi-step")


@pytest.mark.browser
def test_explore_walks_a_board_by_dragging_cards_to_other_lists(chromium):
    """explore's discovery walk on a board no one here wrote (html5sortable's demo, native HTML5 drag and
    drop): it drags cards, and the drags it records change the app's state."""
    from flows.exploration.coverage import AppAreas
    from flows.exploration.exploration import walk_transitions
    from flows.task_synthesis.discovery.page_scan import scan_page
    from flows.task_synthesis.discovery.walk import DiscoveryWalk
    from sandboxes.drivers import open_driver

    manifest = fetched("html5sortable")

    def run():
        with open_driver(manifest, browser_endpoint=chromium) as driver:
            walk = DiscoveryWalk(driver, manifest, 0, max_seconds=600)  # bounded by the two lists, not by time
            walk._reset()
            path = [{"action": "goto", "url": manifest.start.home_path}]
            walk._do(path)
            scan = scan_page(driver)
            scan.zones = scan.zones[:2]  # the page's first two lists: each one's card to the other, and a reorder in each
            walk._drags(path, scan, manifest.start.home_path)
            return walk.transitions

    rows = walk_transitions(SimpleNamespace(transitions=in_own_thread(run)), AppAreas(None))
    drags = [r for r in rows if r.submit == "drag"]
    assert drags and all(r.actions[-1]["action"] == "left_click_drag" for r in drags)
    assert any(r.changed_state for r in drags), [r.to_row("run", "x", None)["diff_json"] for r in drags]


@pytest.mark.browser
def test_explore_fills_every_field_of_a_form_app_with_valid_values_and_submits(chromium):
    """explore's discovery walk on forms no one here wrote (Django's admin, signed in from the manifest's
    [auth]): on "Add group" and "Add user" it types a value into every field the form sends (the password
    twice alike), presses the form's submit button, and the app stores a record holding the typed values."""
    from flows.task_synthesis.discovery.page_scan import scan_page
    from flows.task_synthesis.discovery.walk import DiscoveryWalk, _sent_fields
    from sandboxes.drivers import open_driver

    manifest = fetched("django-admin")

    def run():
        out = {}
        with open_driver(manifest, browser_endpoint=chromium) as driver:
            walk = DiscoveryWalk(driver, manifest, 0)
            walk.sign_in = walk._sign_in()
            for page in ("/admin/auth/group/add/", "/admin/auth/user/add/"):
                path = [{"action": "goto", "url": page}]
                walk._reset()
                walk._do(path)
                (form,) = [g for g in scan_page(driver).groups if g.kind == "form" and len(g.fields) > 1]
                out[page] = (form, walk._group_step(path, form, "form", page))
        return walk.sign_in, out

    sign_in, steps = in_own_thread(run)
    assert sign_in, "signed in with the manifest's [auth] account"
    for page, (form, step) in steps.items():
        sent = [f for f in _sent_fields(form) if f.type not in ("checkbox", "radio")]
        typed = {s.field.spoken: s.value for s in step.slots}
        assert sent and all(f.spoken in typed for f in sent), f"{page}: every field it sends gets a value: {typed}"
        assert step.actions[-1]["action"] == "left_click" and step.button == "Save", f"{page}: submitted with its button"
        table = "auth_group" if "group" in page else "auth_user"
        (row,) = step.diff.db[table]["inserted"]
        assert set(typed.values()) & {str(v) for v in row.values()}, f"{page}: the stored row holds a typed value: {row}"
    passwords = [s.value for s in steps["/admin/auth/user/add/"][1].slots if s.field.type == "password"]
    assert len(passwords) == 2 and passwords[0] == passwords[1], "a password and its confirmation alike"


@pytest.mark.browser
def test_the_walk_types_over_text_edited_in_place_and_each_edit_changes_the_document(chromium):
    """A tree editor no one here wrote (jsoneditor: keys and values are contenteditable, no inputs): the scan
    finds the texts a person edits in place, the walk types over them and leaves the field, and the app's
    document holds what was typed — a step families turn into update tasks."""
    from flows.task_synthesis.discovery.families import families_from
    from flows.task_synthesis.discovery.page_scan import scan_page
    from flows.task_synthesis.discovery.walk import DiscoveryWalk, WalkResult, _in_place_texts
    from sandboxes.drivers import open_driver

    manifest = fetched("jsoneditor")

    def run():
        with open_driver(manifest, browser_endpoint=chromium) as driver:
            walk = DiscoveryWalk(driver, manifest, 0)
            path = [{"action": "goto", "url": manifest.start.home_path}]
            walk._reset()
            walk._do(path)
            texts = _in_place_texts(scan_page(driver))
            walk.initial = walk.state.read()
            steps = [walk._in_place_step(path, t, manifest.start.home_path) for t in texts[:3]]
            return texts, steps, walk

    texts, steps, walk = in_own_thread(run)
    assert "Hello World" in [t.value for t in texts], [t.value for t in texts]
    assert steps and all(s is not None and s.diff for s in steps), "each edit changed the document"
    for s in steps:
        typed = s.slots[0].value
        assert typed in json.dumps(s.diff.manifest), f"the document holds what was typed over {s.item!r}: {typed!r}"
    walked = WalkResult(steps, [manifest.start.home_path], {}, walk.initial, [], [], 0.0)
    fams, _ = families_from(walked, manifest.state.page_expression())
    assert {f.name for f in fams} & {"update", "create", "delete"}


@pytest.mark.browser
def test_recorded_steps_replay_on_a_react_build_that_fetches_after_load_and_debounces_its_input(chromium):
    """optuna-dashboard (a React build no one here wrote): its study cards are fetched after the page's load
    event, its delete asks to confirm in a dialog, and its "New Study" Create turns on half a second after the
    last keystroke. Replayed the way the gate replays a reference — each action right after the one before —
    the steps land: the driver waits for the requests the page counts in flight and for the input's short timers."""
    from sandboxes.actions import parse_actions
    from sandboxes.drivers import open_driver

    manifest = fetched("optuna-dashboard")
    studies = Probe("studies", "sql", "SELECT study_name FROM studies ORDER BY study_id", shape="rows")
    steps = {
        "delete": [{"action": "goto", "url": "/dashboard"},
                   {"action": "left_click", "target": {"role": "button", "name": "delete study"}},
                   {"action": "left_click", "target": {"role": "button", "name": "Yes"}}],
        "create": [{"action": "goto", "url": "/dashboard"},
                   {"action": "left_click", "target": {"role": "button", "name": "Create"}},
                   {"action": "type", "target": {"label": "Study name"}, "text": "Budget trip 42", "clear": True},
                   {"action": "left_click", "target": {"role": "button", "name": "Create"}}],
    }

    def run():
        out = {}
        with open_driver(manifest, browser_endpoint=chromium) as driver:
            for name, actions in steps.items():
                driver.reset()
                results = [driver.act(a) for a in parse_actions(actions)]
                out[name] = ([r.error for r in results if not r.ok], driver.probe(studies))
        return out

    got = in_own_thread(run)
    assert got["delete"] == ([], [["wine-classifier"]]), got["delete"]
    assert got["create"] == ([], [["wine-classifier"], ["house-prices"], ["Budget trip 42"]]), got["create"]

def test_explore_walks_a_multi_step_form_step_by_step_and_picks_its_choices(chromium):
    """explore's discovery walk on a wizard no one here wrote (Gentelella's onboarding wizard: Account, Workspace,
    Invite, Confirm): it types a value of each field's type into the step's fields, presses Next (not "Save & exit")
    and goes on into the next step's fields, each step recorded as continuing the one before (its path walks that
    one); the plan it came with is changed as a step of its own, a select over the other plans."""
    from flows.task_synthesis.discovery.families import chain_on_document, families_from, instance
    from flows.task_synthesis.discovery.page_scan import scan_page
    from flows.task_synthesis.discovery.walk import DiscoveryWalk, WalkResult
    from sandboxes.drivers import open_driver

    manifest = fetched("gentelella")
    home = manifest.start.home_path

    def run():
        with open_driver(manifest, browser_endpoint=chromium) as driver:
            walk = DiscoveryWalk(driver, manifest, 0)
            path = [{"action": "goto", "url": home}]
            walk._reset()
            walk._do(path)
            (form,) = [g for g in scan_page(driver).groups if any(f.type == "email" for f in g.fields)]
            walk.initial = walk.state.read()
            walk._group_step(path, form, "form", home)
            fams, _ = families_from(WalkResult(walk.transitions, [home], {}, walk.initial, [], [], 0.0), manifest.state.page_expression())
            steps = [f for f in fams if f.transition.kind == "form"]
            both = chain_on_document(*(instance(f, random.Random(1), fresh=True) for f in steps[:2]))
            walk._reset()
            chained = walk.state.read().manifest if walk._do(both.reference) else None
            return walk.transitions, fams, both, chained

    transitions, fams, both, chained = in_own_thread(run)
    steps = [t for t in transitions if t.kind == "form"]
    assert len(steps) == 3, [t.slots for t in steps]  # Account, Workspace, Invite (Confirm has no field)
    assert all(t.button == "Next →" for t in steps), "Next, not Save & exit"
    assert [t.continues for t in steps] == [None, steps[0], steps[1]]
    assert all(t.path == t.continues.path + t.continues.actions for t in steps[1:]), "each step's path walks the one before"
    typed = {s.field.spoken: (s.field.type, s.value) for t in steps for s in t.slots}
    assert set(typed) == {"First name", "Last name", "Email", "Password", "Workspace name", "Team member emails"}
    assert "@" in typed["Email"][1] and typed["Password"][0] == "password"
    for t in steps:
        after = t.diff.manifest[1]
        assert all(after["fields"][s.field.spoken] == s.value for s in t.slots), "the step's fields hold what it typed"
    (choice,) = [t for t in transitions if t.kind == "choice"]
    assert choice.continues is steps[0] and choice.diff.manifest[1]["plan"] != choice.diff.manifest[0]["plan"]
    names = {f.name for f in fams}
    assert {"update", "select"} <= names, names
    (select,) = [f for f in fams if f.name == "select"]
    assert select.extra["options"], "the other plans are its variants"
    assert chained and all(v in chained["fields"].values() for v in both.values), \
        "the two steps chained: the second typed where the first ended, and both steps' values are held"
