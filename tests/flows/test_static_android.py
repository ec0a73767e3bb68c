"""The offline agent's Android reader on the notes-android source (no device needed)."""

from __future__ import annotations

from pathlib import Path

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.static_android import StaticAndroidAgent, _Paths, read_android_app
from flows.task_synthesis.source import SourceSnapshot, read_source
from sandboxes.manifest import load_manifest

NOTES = Path(__file__).resolve().parents[2] / "sandboxes" / "notes-android"


def test_reads_screens_labels_handlers_and_navigation_from_the_source():
    app = read_android_app(read_source(load_manifest(NOTES)))
    assert app.label == "Notes" and app.launcher == "NotesListActivity" and list(app.tables) == ["notes"]
    editor = app.screens["EditNoteActivity"]
    assert [(i.id, i.kind, i.label) for i in editor.inputs] == [
        ("title", "text", "Title"), ("body", "multiline", "Text"), ("folder", "text", "Folder"), ("pinned", "checkbox", "Pinned"),
    ]
    assert editor.methods["saveNote"].ops == [("insert", "notes"), ("update", "notes")]
    assert app.screens["NoteActivity"].details == {"folder": "Folder", "created_on": "Created"}
    paths = _Paths.find(app)
    assert (paths.table, paths.new_button, paths.save_button, paths.edit_button, paths.delete_button) == (
        "notes", "New note", "Save note", "Edit note", "Delete note",
    )
    assert paths.detail.activity == "NoteActivity" and paths.list_screen.list_columns == ["title", "folder"]


def test_a_broken_layout_is_a_note_not_a_crash(tmp_path):
    manifest = load_manifest(NOTES)
    source = read_source(manifest)
    broken = dict(source.files)
    broken["app/src/main/res/layout/activity_edit_note.xml"] = "<LinearLayout><!-- --oops --></LinearLayout>"
    request = SynthesisRequest(manifest, SourceSnapshot(manifest.name, "test", broken), None, 5, 0)
    out = StaticAndroidAgent().synthesize(request)
    assert not out.candidates
    assert any("activity_edit_note.xml is not well-formed XML" in n for n in out.notes)
    assert any("no screen that writes a table" in n for n in out.notes)
