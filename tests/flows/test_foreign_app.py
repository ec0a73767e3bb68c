"""A third-party static app added with only a sandbox.toml: TodoMVC (vanilla JS, MIT) from the npm
registry, its state in localStorage. The real npm fetch, the real gate, the real flow; when npm or the
registry cannot be reached, the tests are skipped with the reason."""

import dataclasses
from pathlib import Path

import duckdb
import pytest

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.static_page import read_page
from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.source import read_source
from sandboxes.manifest import ManifestError, load_manifest
from sandboxes.npm_source import SourceFetchError, fetch
from tests.conftest import in_own_thread, npm_sandbox

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "sandboxes" / "todomvc"


@pytest.fixture(scope="module")
def todomvc():
    return npm_sandbox("todomvc")


@pytest.fixture(scope="module")
def candidates(todomvc):
    """The page reader's candidates (the source reader alone: the static agent adds discovery's, tested in
    test_discovery.py and by the flow test below)."""
    from flows.task_synthesis.agents.static_page import StaticPageAgent

    return StaticPageAgent().synthesize(SynthesisRequest(todomvc, read_source(todomvc), None, 10, 0))


def test_the_sandbox_is_only_a_manifest_and_the_source_is_pinned_by_the_tarball(todomvc):
    assert sorted(p.name for p in FOLDER.iterdir()) == ["README.md", "sandbox.toml"], "no app code in the repo"
    source = read_source(todomvc)
    assert source.commit == f"{todomvc.source.integrity}:examples/vanillajs"
    assert "index.html" in source.files and "js/store.js" in source.files
    assert ROOT not in todomvc.source_dir.parents, "fetched into a cache outside the repo"


def test_a_tarball_with_another_hash_is_refused(todomvc):
    with pytest.raises(SourceFetchError, match="update source.integrity"):
        fetch(todomvc.source.npm, "sha512-" + "A" * 86 + "==")


def test_missing_npm_is_one_error_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("FLYWHEEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SourceFetchError, match="npm is not installed.*apt-get install -y npm"):
        fetch("todomvc@0.1.1")


def test_a_version_range_is_refused_in_the_manifest(tmp_path):
    text = (FOLDER / "sandbox.toml").read_text().replace('"todomvc@0.1.1"', '"todomvc@^0.1"')
    (tmp_path / "sandbox.toml").write_text(text)
    with pytest.raises(ManifestError, match="exact-version"):
        load_manifest(tmp_path)


def test_page_state_needs_its_expression_or_key(tmp_path):
    text = (FOLDER / "sandbox.toml").read_text().replace('key = "todos-vanillajs"', "")
    (tmp_path / "sandbox.toml").write_text(text)
    with pytest.raises(ManifestError, match="needs key"):
        load_manifest(tmp_path)


def test_the_page_agent_reads_controls_and_the_record_from_the_source(todomvc):
    page = read_page(read_source(todomvc).files)
    assert page.entry == "What needs to be done?"  # the placeholder: the field has no label
    assert page.named_checkboxes == ["Mark all as complete"]
    assert (page.text_field, page.flag_field) == ("title", "completed")
    assert page.checkboxes_before_list == 1 and page.item_checkbox and page.edits_on_dblclick
    assert page.remove_button == "✖"  # an empty button whose stylesheet draws its name
    assert ("Completed", "#/completed") in page.filters


def test_the_page_agent_reads_another_framework_of_the_same_package_alike(todomvc, tmp_path):
    text = (FOLDER / "sandbox.toml").read_text().replace("examples/vanillajs", "examples/vue")
    (tmp_path / "sandbox.toml").write_text(text.replace('"todos-vanillajs"', '"todos-vuejs"').replace('"todos"', '""'))
    page = read_page(read_source(load_manifest(tmp_path)).files)  # Vue: the record template sits in the HTML
    assert (page.entry, page.text_field, page.flag_field) == ("What needs to be done?", "title", "completed")
    assert page.checkboxes_before_list == 1 and page.item_checkbox and not page.has_ids


def test_candidates_inject_into_local_storage_and_judge_the_page_state(candidates):
    assert not candidates.notes
    assert len(candidates.candidates) == 10
    assert {c.family for c in candidates.candidates} >= {"create", "update", "delete", "multi_step", "search"}
    assert [s.kind for s in candidates.skills] == ["local_storage"]
    templates = {c.verifier["template"] for c in candidates.candidates}
    assert "js_state_matches" in templates


@pytest.mark.browser
def test_the_gate_verifies_them_in_the_live_app_and_rejects_wrong_ones(todomvc, candidates):
    from sandboxes.drivers import open_driver

    skills = {s.name: s for s in candidates.skills}
    complete = next(c for c in candidates.candidates if c.verifier["params"].get("where", {}).get("completed") is True
                    and c.family == "update")
    # the reference ticks the neighbouring record: the state changes, but not as the task asks
    click = complete.reference[-1]
    k = [r["title"] for r in complete.params["existing"]].index(complete.params["complete"])
    neighbour = {**click["target"], "nth": click["target"]["nth"] + (1 if k == 0 else -1)}
    wrong_box = dataclasses.replace(complete, seed=complete.seed + 1, reference=[*complete.reference[:-1], {**click, "target": neighbour}])
    already = dataclasses.replace(complete, seed=complete.seed + 2, injection=[
        {"skill": complete.injection[0]["skill"], "args": {"value": [
            {**r, "completed": True} for r in complete.injection[0]["args"]["value"]]}}])
    from verifier_templates.base import Probe

    def run_gate():
        with open_driver(todomvc) as driver:
            results = [ValidationGate(driver, skills).validate(c) for c in candidates.candidates]
            driver.reset()
            driver.inject(skills[complete.injection[0]["skill"]], complete.injection[0]["args"])
            state = driver.probe(Probe("state", "js", todomvc.state.page_expression()))
            wrong = ValidationGate(driver, skills).validate(wrong_box)
            done_before = ValidationGate(driver, skills).validate(already)
        return results, state, wrong, done_before

    results, state, wrong, done_before = in_own_thread(run_gate)
    verified = [r for r in results if r.status == "verified"]
    assert len(verified) >= 8, [(r.reason, r.detail) for r in results if r.status != "verified"]
    assert state == complete.injection[0]["args"]["value"], "the injected records are what the app shows"
    assert (wrong.status, wrong.reason) == ("rejected", "fails_after_reference")
    assert (done_before.status, done_before.reason) == ("rejected", "passes_initially")


DOM_STATE = (
    "Array.from(document.querySelectorAll('#todo-list li')).map(li => "
    "({title: li.querySelector('label').textContent, completed: li.classList.contains('completed')}))"
)


@pytest.mark.browser
def test_a_js_expression_over_the_rendered_page_is_the_state_probe(todomvc, tmp_path):
    """state kind "js": the verifiers read what the page renders, not what it stored."""
    from sandboxes.drivers import open_driver

    text = (FOLDER / "sandbox.toml").read_text().replace('kind = "local_storage"', f'kind = "js"\nexpression = "{DOM_STATE}"')
    (tmp_path / "sandbox.toml").write_text(text)
    manifest = load_manifest(tmp_path)
    from flows.task_synthesis.agents.static_page import StaticPageAgent

    out = StaticPageAgent().synthesize(SynthesisRequest(manifest, read_source(manifest), None, 7, 1))  # the page reader
    skills = {s.name: s for s in out.skills}
    assert {c.verifier["params"].get("expression") for c in out.candidates if c.verifier["template"] == "js_state_matches"} == {DOM_STATE}

    def run_gate():
        with open_driver(manifest) as driver:
            return [ValidationGate(driver, skills).validate(c) for c in out.candidates]

    results = in_own_thread(run_gate)
    assert sum(r.status == "verified" for r in results) >= 6, [(r.reason, r.detail) for r in results]


@pytest.mark.browser
@pytest.mark.slow
def test_synthesize_tasks_lands_verified_pairs_pinned_to_the_tarball(todomvc, prefect_harness, tmp_path):
    from flows.task_synthesis.flow import synthesize_tasks

    result = synthesize_tasks(sandboxes=["todomvc"], count=8, seed=5, lake_root=str(tmp_path / "lake"))
    (summary,) = result["sandboxes"]
    assert summary["error"] is None and summary["verified"] >= 6, summary
    con = duckdb.connect(str(tmp_path / "lake" / "catalog.duckdb"), read_only=True)
    commits = {r[0] for r in con.execute("SELECT DISTINCT source_commit FROM tasks WHERE status = 'verified'").fetchall()}
    assert commits == {f"{todomvc.source.integrity}:examples/vanillajs"}
    again = synthesize_tasks(sandboxes=["todomvc"], count=8, seed=5, lake_root=str(tmp_path / "lake"))
    assert again["sandboxes"][0]["already_known"] == again["sandboxes"][0]["candidates"] == 8
