"""The lyx_android_world labelled set (tests/data/mining_eval/LYX_ANDROID_WORLD.md): the builder on a made-up snapshot,
and the labels' shape. Nothing here imports or runs a detector (the set was labelled blind; the lead measures it once):
the importer is called directly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.flows.labelled_sets import ROOT, checked_labels, committed, imported, known_set_entry

LABELS = ROOT / "tests" / "data" / "mining_eval" / "lyx_android_world_labels.jsonl"
# every run of the set labelled (LYX_ANDROID_WORLD.md): runs, (loop, side-effect) labels
RUNS, COUNTS = 7, (10, 1)

_ELEMENTS = [
    {"ui_description": 'UI element 0: {"index": 0, "is_clickable": False, "is_editable": False}', "ui_bbox": [0, 1080, 0, 2400]},
    {"ui_description": 'UI element 1: {"index": 1, "text": "New \\"Event\\"", "is_clickable": True, "is_editable": False}', "ui_bbox": [108, 324, 240, 480]},
    {"ui_description": 'UI element 2: {"index": 2, "hint_text": "Title", "is_clickable": True, "is_editable": True}', "ui_bbox": [0, 1080, 480, 720]},
    {"ui_description": 'UI element 3: {"index": 3, "content_description": "Save", "is_clickable": True, "is_editable": False}', "ui_bbox": [864, 1080, 0, 240]},
]  # fmt: skip


def _step(goal, said, summary, elements=_ELEMENTS):
    return {
        "task_goal": goal,
        "result": False,
        "action_prompt": "You are an agent who can operate an Android phone ...",
        "action_output": said,
        "action_reason": said.split("\nAction:")[0],
        "summary_prompt": None,
        "summary": summary,
        "ui_description": elements,
    }


def _selected(action, words="Summary of this step: done."):
    return f"Action selected: {json.dumps(action)}. {words}"


def _snapshot(tmp_path: Path) -> Path:
    """A made-up snapshot in LYXFOREVER/my_android_world's layout: data_history/<start time>/history.json."""
    root = tmp_path / "snapshot"
    goal = "In Simple Calendar Pro, create an event titled 'Meeting'."
    january = [
        ('Reason: open it.\nAction: {"action_type": "open_app", "app_name": "Simple Calendar Pro"}', None),
        ('Reason: new event.\nAction: {"action_type": "click", "index": 1}', "Summary of this step: opened."),
        ('Reason: title.\nAction: {"action_type": "input_text", "text": "Meeting", "index": 2}', None),
        ('Reason: more.\nAction: {"action_type": "scroll", "direction": "down", "index": 2}', None),
        ('Reason: more.\nAction: {"action_type": "scroll", "direction": "left"}', None),
        ('Reason: hold.\nAction: {"action_type": "long_press", "index": 1}', None),
        ('Reason: out of range.\nAction: {"action_type": "click", "index": 9}', "The parameter index is out of range. Remember the index must be in the UI element list!"),
        ('Reason: save.\nAction: {"action_type": "click", "index": 3}', "Summary of this step: saved."),
        ('Reason: back.\nAction: {"action_type": "navigate_back"}', None),
        ('Reason: home.\nAction: {"action_type": "navigate_home"}', None),
        ('Reason: enter.\nAction: {"action_type": "keyboard_enter"}', None),
        ('Reason: wait.\nAction: {"action_type": "wait"}', "Some error occurred calling LLM during summarization phase: Error calling LLM"),
        ('Reason: done.\nAction: {"action_type": "status", "goal_status": "complete"}', "Agent thinks the request has been completed."),
    ]  # fmt: skip
    january_steps = []
    for said, summary in january:
        if summary is None or summary.startswith("Summary"):
            act = json.loads(said.split("Action: ", 1)[1])
            summary = _selected(act, summary or "Summary of this step: done.")
        january_steps.append(_step(goal, said, summary))
    april_goal = "Record an audio clip using Audio Recorder app and save it."
    april = [
        _step(april_goal, "Thought: open it.\nAction: open_app()", "Can not parse the output to a valid action. Please make sure to pick the action from the list with required parameters (if any) in the correct JSON format!"),
        _step(april_goal, "Thought: tap Get started.\nAction: click(start_box='(540,1200)')", _selected({"action_type": "click", "x": 540, "y": 1200}, " Tap on the yellow button.")),
        _step(april_goal, "Thought: answer.\nAction: answer(text='3')", _selected({"action_type": "answer", "text": "3"})),
    ]  # fmt: skip
    files = {
        "data_history/2025_01_08_17_09_50/history.json": json.dumps(january_steps),
        "data_history/2025_04_19_21_13_11/history.json": json.dumps(april),
        "data_history/2025_04_20_00_00_00/history.json": "[{not json",  # unreadable: left out
        "data_history/2025_04_20_00_00_01/history.json": "[]",  # no steps: left out
        # no goal: left out
        "data_history/2025_04_20_00_00_02/history.json": json.dumps([{"summary": "no goal"}]),
        "data_history/2025_04_20_00_00_03/notes.json": json.dumps(april),  # not a history.json: not read
        "task_pool/clock/20250228101711/action.json": json.dumps({"action_type": "click", "index": 11}),
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return committed(root)


def test_lyx_histories_become_steps_the_importer_reads_with_named_targets_words_and_refusals(tmp_path):
    from flows.failure_mining.lyx_android_world_set import LICENSE, build_lyx_android_world_set

    out = tmp_path / "data.jsonl"
    assert build_lyx_android_world_set(_snapshot(tmp_path), out, "HEAD") == 2
    first, second = map(json.loads, out.read_text().splitlines())
    assert (first["task_id"], second["task_id"]) == (
        "data_history/2025_01_08_17_09_50",
        "data_history/2025_04_19_21_13_11",
    )
    assert first["instruction"] == "In Simple Calendar Pro, create an event titled 'Meeting'."
    assert second["instruction"] == "Record an audio clip using Audio Recorder app and save it."
    assert first["source"]["path"] == "data_history/2025_01_08_17_09_50/history.json"
    assert first["source"]["license"] == LICENSE and first["source"]["repo"] == "LYXFOREVER/my_android_world"
    steps = first["steps"]
    assert [s["actions"] for s in steps] == [
        [{"action": "open_app", "app": "Simple Calendar Pro"}],
        [{"action": "left_click", "x": 200, "y": 150, "target": {"role": "generic", "name": 'New "Event"'}}],
        [{"action": "type", "text": "Meeting", "target": {"role": "textbox", "name": "Title"}}],
        [{"action": "scroll", "pixels": -300, "x": 500, "y": 250}],  # at the indexed element
        [{"action": "hscroll", "pixels": -300}],
        [{"action": "long_press", "x": 200, "y": 150}],
        [],  # the harness refused the index: nothing sent
        [{"action": "left_click", "x": 900, "y": 50, "target": {"role": "generic", "name": "Save"}}],
        [{"action": "system_button", "button": "back"}],
        [{"action": "system_button", "button": "home"}],
        [{"action": "system_button", "button": "enter"}],
        [{"action": "wait"}],  # the summary failed after the action ran: the action stays
        [{"action": "terminate", "status": "success"}],
    ]  # fmt: skip
    assert steps[6]["error"].startswith("The parameter index is out of range")
    assert [i for i, s in enumerate(steps) if "error" in s] == [6]
    assert steps[1]["raw_output"] == (
        'Reason: new event.\nAction: {"action_type": "click", "index": 1}\n'
        'Summary: Action selected: {"action_type": "click", "index": 1}. Summary of this step: opened.'
    )
    assert (steps[0]["screen_width"], steps[0]["screen_height"]) == (1080, 2400)
    april = second["steps"]
    assert [s["actions"] for s in april] == [
        [],  # `open_app()` the harness could not parse
        [{"action": "left_click", "x": 500, "y": 500}],  # the sent pixel point, not the model's start_box
        [{"action": "terminate", "status": "success", "answer": "3"}],
    ]
    assert april[0]["error"].startswith("Can not parse the output") and "error" not in april[1]
    report, errors = imported(out, "SELECT count(*) FROM steps WHERE error IS NOT NULL")  # the real importer
    assert (report.accepted, report.quarantined_total, report.steps) == (2, 0, 16)  # nothing quarantined
    assert errors == [(2,)]


def test_an_unknown_or_malformed_action_maps_to_nothing():
    from flows.failure_mining.lyx_android_world_set import actions_of, executed

    assert actions_of(None, _ELEMENTS) == []
    assert actions_of({"action_type": "click", "index": 42}, _ELEMENTS) == []  # no such element, no point
    assert actions_of({"action_type": "scroll", "direction": "sideways"}, _ELEMENTS) == []
    assert actions_of({"action_type": "open_app", "app_name": " "}, _ELEMENTS) == []
    assert actions_of({"action_type": "drag"}, _ELEMENTS) == []
    # the harness's `Action selected` wins over the model's own text; a broken one falls back to the text
    assert executed(
        'Action: {"action_type": "wait"}', 'Action selected: {"action_type": "navigate_back"}. ok'
    ) == {"action_type": "navigate_back"}
    assert executed('Action: {"action_type": "wait"}', "Action selected: {broken. ok") == {
        "action_type": "wait"
    }


def test_the_lyx_android_world_labels_cover_every_run_once_with_steps_in_order():
    _records, runs, lengths = checked_labels(
        LABELS, RUNS, COUNTS, "FLYWHEEL_MINING_EVAL_LYX_ANDROID_WORLD", "lyx_android_world"
    )
    if lengths is not None:  # with the data here: every run of it is labelled
        order = sorted(lengths, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        assert set(order[: len(runs)]) == runs == set(lengths)


def test_the_lyx_android_world_set_is_a_known_set_with_its_own_variable():
    assert known_set_entry("lyx_android_world") == (
        "FLYWHEEL_MINING_EVAL_LYX_ANDROID_WORLD", "lyx_android_world", False
    )  # fmt: skip
