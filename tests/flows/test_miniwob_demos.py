"""MiniWoB++ human demonstrations (DOM events with a DOM snapshot per event) through the real importer, and
the miner's bad-argument findings on them. The demos here are made by the test in the recorder's format
(stanfordnlp/miniwob-plusplus-demos); the public set is measured when its data.jsonl is present
(tests/data/mining_eval/HUMAN_DEMOS.md)."""

import json
import os
from pathlib import Path

import pytest

from flows.failure_mining.human_demos import bad_args_share
from flows.rollout.foreign_formats import miniwob_demo_steps
from flows.rollout.importers import import_paths
from lake import Lake

ROOT = Path(__file__).resolve().parents[2]


def _node(tag, left, top, width, height, children=(), **extra):
    return {"tag": tag, "left": left, "top": top, "width": width, "height": height,
            "children": list(children), **extra}


def _page(value="", checked_focus=False, select_value="a", target=None):
    """A task area with a label + checkbox, a native time input, a native select and a submit button."""
    def mark(ref, node):
        return node | ({"recordingTarget": True} if target == ref else {})

    return _node("BODY", 0, 0, 800, 210, [_node("DIV", 0, 0, 160, 210, [
        mark("label", _node("LABEL", 5, 10, 60, 15, text="Gift wrap")),
        mark("box", _node("INPUT_checkbox", 70, 10, 12, 12, id="ch", **({"focused": True} if checked_focus else {}))),
        mark("time", _node("INPUT_time", 5, 40, 100, 20, id="tt", value=value)),
        mark("select", _node("SELECT", 5, 70, 100, 20, id="sel", value=select_value)),
        mark("submit", _node("BUTTON", 5, 100, 60, 25, id="subbtn", text="Submit")),
    ], id="wrap")])


def _events(kind, dom_before, dom_after, **event):
    """One DOM event as the recorder writes it: before (timing 1) and after (timing 3) the page handled it."""
    return [{"time": 0, "action": {"type": kind, "timing": 1, **event}, "dom": dom_before},
            {"time": 0, "action": {"type": kind, "timing": 3, **event}, "dom": dom_after}]


def _demo():
    page = _page()
    focused = _page(checked_focus=True)
    states = [{"time": 0, "action": None, "dom": page}]
    # a click on the label: one press, and the browser clicks the checkbox too (two click events)
    states += _events("mousedown", _page(target="label"), page, x=20, y=15)
    states += _events("mouseup", page, page, x=20, y=15)
    states += _events("click", _page(target="label"), focused, x=20, y=15)
    states += _events("click", _page(target="box"), focused, x=20, y=15)
    # the native time input: a click (its picker is not in the DOM), then "1245" typed
    states += _events("mousedown", _page(checked_focus=True, target="time"), focused, x=30, y=50)
    states += _events("click", focused, focused, x=30, y=50)
    for digit, value in zip("1245", ["", "", "", "12:45"], strict=True):
        states += _events("keypress", _page(checked_focus=True, value=value), _page(checked_focus=True, value=value),
                          keyCode=ord(digit), charCode=ord(digit))
    done = _page(checked_focus=True, value="12:45")
    # the native select: a press opens its popup (outside the DOM), a second one picks the option already chosen
    states += _events("mousedown", done, done, x=40, y=80)
    states += _events("click", done, done, x=40, y=80)
    states += _events("mousedown", done, done, x=40, y=80)
    states += _events("click", done, done, x=40, y=80)
    states += _events("keydown", done, done, keyCode=13, charCode=0)
    states += _events("mousedown", done, done, x=30, y=110)
    states += _events("click", done, done, x=30, y=110)
    return {"utterance": "Check gift wrap, enter 12:45 PM as the time and submit.", "states": states,
            "reward": 0.8, "rawReward": 1}


def test_a_demo_becomes_clicks_typing_keys_and_a_closing_terminate():
    steps, instruction = miniwob_demo_steps(_demo())
    actions = [s["actions"][0]["action"] if s["actions"] else None for s in steps]
    assert actions == ["left_click", "left_click", "type", "left_click", "left_click", "key", "left_click", "terminate"]
    assert steps[0]["actions"][0] == {"action": "left_click", "x": 125, "y": 71}  # (20, 15) of a 160 x 210 area
    assert steps[2]["actions"][0]["text"] == "1245"
    assert steps[-1]["actions"][0]["status"] == "success"
    assert instruction.startswith("Check gift wrap")
    assert steps[3]["ui_tree_sha"] == steps[4]["ui_tree_sha"]  # the recorder's target mark is not the page
    assert steps[0]["ui_tree_sha"] != steps[1]["ui_tree_sha"]  # the checkbox took the focus


def test_imported_demos_have_no_bad_argument_findings_when_only_the_dom_stayed_the_same(tmp_path):
    data = tmp_path / "demos.jsonl"
    data.write_text(json.dumps(_demo() | {"task_id": "d1"}) + "\n")
    lake = Lake(tmp_path / "lake")
    report = import_paths(lake, [data], run_id="imp")
    assert report.quarantined_total == 0
    result = bad_args_share(data)
    assert (result["episodes"], result["with_bad_args"]) == (1, 0)
    assert result["undecidable"].get("click_hit_nothing", 0) >= 2  # the native inputs' clicks: not decided
    # a miner that took an unchanged DOM as proof of "no effect" would call the select's clicks misses
    trusting = bad_args_share(data, as_screens=True)
    assert trusting["bad_args_by_reason"].get("click_hit_nothing", 0) >= 1


@pytest.mark.parametrize(
    "bad, code",
    [
        ({"type": "mousedown", "timing": 1, "x": "left", "y": 3}, "wrong_type:coordinate"),
        ({"type": "keypress", "timing": 1, "keyCode": 1, "charCode": 10**9}, "wrong_type:charCode"),
    ],
)
def test_a_broken_demo_is_quarantined_with_the_reason(tmp_path, bad, code):
    record = {"utterance": "x", "states": [{"time": 0, "action": bad, "dom": _page()}], "task_id": "bad"}
    data = tmp_path / "demos.jsonl"
    data.write_text(json.dumps(record) + "\n")
    report = import_paths(Lake(tmp_path / "lake"), [data], run_id="imp")
    assert report.quarantined_total == 1 and any(code in reason for reason in report.quarantined)


def _public_set() -> Path | None:
    for candidate in (
        os.environ.get("FLYWHEEL_HUMAN_DEMOS"),
        ROOT.parent / "shared" / "mining_eval" / "miniwob" / "data.jsonl",
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


@pytest.mark.skipif(_public_set() is None, reason="the MiniWoB++ demos' data.jsonl is not here (HUMAN_DEMOS.md)")
def test_on_public_human_demos_at_most_one_percent_of_episodes_have_a_bad_argument_finding():
    assert bad_args_share(_public_set())["share_with_bad_args"] <= 0.01
