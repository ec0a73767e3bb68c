"""The static agent's workspace path, offline: what it reads from the workspace's source and what it composes.
The pairs prove themselves in live containers in tests/sandboxes/test_container_sandbox.py."""

from pathlib import Path

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.static import StaticAgent
from flows.task_synthesis.source import SourceSnapshot, read_source
from sandboxes.actions import parse_actions
from sandboxes.manifest import load_manifest
from verifier_templates import get_template

ROOT = Path(__file__).resolve().parents[2]


def synthesize(source=None, count=18, seed=0):
    manifest = load_manifest(ROOT / "sandboxes" / "workspace")
    return StaticAgent().synthesize(SynthesisRequest(manifest, source or read_source(manifest), None, count, seed))


def test_it_composes_gui_cli_and_mixed_families_from_the_seed_and_the_forms():
    out = synthesize()
    assert not out.notes and len(out.candidates) == 18
    families = {c.family for c in out.candidates}
    assert families == {"edit_cell", "edit_json", "rename", "convert", "delete", "mixed"}
    for c in out.candidates:
        actions = {a.action for a in parse_actions(c.reference)}
        template = get_template(c.verifier["template"])
        assert {p.kind for p in template.probes(c.verifier["params"])} == {"file"}
        if c.family in ("rename", "convert"):
            assert actions == {"shell"}
        elif c.family == "mixed":
            assert "shell" in actions and "left_click" in actions
        else:
            assert "shell" not in actions and "left_click" in actions
    skills = {s.name for s in out.skills}
    assert {i["skill"] for c in out.candidates for i in c.injection} <= skills == {"write_file"}


def test_a_sensitive_delete_is_confirmed_with_the_user_first():
    deletes = [c for c in synthesize().candidates if c.family == "delete"]
    assert deletes
    for c in deletes:
        kinds = [a["action"] for a in c.reference]
        assert kinds[-2:] == ["call_user", "left_click"] and c.reference[-1]["target"]["name"] == "Delete file"


def test_same_seed_same_tasks_other_seed_other_tasks():
    ids = [c.task_id for c in synthesize(seed=4).candidates]
    assert ids == [c.task_id for c in synthesize(seed=4).candidates]
    assert set(ids) != {c.task_id for c in synthesize(seed=5).candidates}


def test_without_the_forms_it_says_what_it_skipped():
    manifest = load_manifest(ROOT / "sandboxes" / "workspace")
    full = read_source(manifest)
    no_forms = SourceSnapshot(full.sandbox, full.commit, {p: t for p, t in full.files.items() if not p.startswith("templates/")})
    out = synthesize(no_forms)
    assert any("Save row" in n for n in out.notes)
    assert {c.family for c in out.candidates} == {"rename", "convert"}, "only the shell families remain"
