"""The seventh labelled set (tests/data/mining_eval/WEBCANVAS.md): the builder on a made-up snapshot, and the labels'
shape. Nothing here imports or runs a detector (the set was labelled blind; the lead measures it once): the
importer is called directly and `real_eval.KNOWN_SETS` is read as text."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.flows.labelled_sets import ROOT, checked_labels, committed, known_set_entry

LABELS = ROOT / "tests" / "data" / "mining_eval" / "webcanvas_labels.jsonl"
RUNS, COUNTS = 140, (37, 16)  # labelled ranks 0-139 (WEBCANVAS.md): runs, (loop, side-effect) labels


def _step(action, thought, plan, url, selector=""):
    return {"step_index": 1, "trace_description": {"thought": thought, "action": plan}, "selector": selector,
            "action": action, "task_score": "0 / 2", "url": url,
            "current_reward_score_description": {"score": "3, reason: another model's verdict"}}  # fmt: skip


def _snapshot(tmp_path: Path) -> Path:
    """A made-up snapshot in iMeanAI/WebCanvas' layout: results/<group>/<variant>/out.json, a list of runs."""
    runs = [
        {"task_id": 7, "task_name": "Add a towel to the cart in shop", "task_status": "limit", "step_list": [
            _step('google_search["shop towels"]', "Search first.", "Searching.", "https://www.google.com/search?q=shop%20towels"),
            _step("click[72]", "Open the shop.", "Clicking the shop link.", "https://shop.example/",
                  "#rso > div > a"),
            _step("fill_search[13,bath towel]", "Search the shop.", "Filling the search box.",
                  "https://shop.example/s?q=bath+towel", "#search > form > input"),
            _step("click[34]", "Add it.", "Clicking Add to cart.", "https://shop.example/cart", "#addtobag > button"),
            _step("None", "Wait for the page.", "Switching tabs.", "https://shop.example/cart"),
            _step("select_option[68,$50]", "Set the price.", "Selecting $50.", "https://shop.example/cart",
                  "#price > select"),
            _step("go_back", "Back.", "Going back.", "https://shop.example/s?q=bath+towel"),
            _step("goto[https://shop.example/help]", "Help.", "Opening help.", "https://shop.example/help"),
        ]},
        {"task_id": 7, "task_name": "Add a towel to the cart in shop", "task_status": "finished", "step_list": [
            _step("click[5]", "Open it.", "Clicking.", "https://shop.example/x", "div > a")]},
        {"task_id": 8, "task_name": "no steps", "task_status": "error", "step_list": []},
    ]  # fmt: skip
    folder = tmp_path / "snapshot" / "results" / "group1" / "Dom-based"
    folder.mkdir(parents=True)
    (folder / "out.json").write_text(json.dumps(runs))
    (folder.parent / "broken.json").write_text("[{not json")
    return committed(tmp_path / "snapshot")


def test_webcanvas_runs_become_browsergym_steps_the_importer_reads_with_words_urls_and_named_targets(
    tmp_path,
):
    from flows.failure_mining.webcanvas_set import build_webcanvas_set
    from flows.rollout.importers import import_paths
    from lake import Lake

    out = tmp_path / "data.jsonl"
    assert build_webcanvas_set(_snapshot(tmp_path), out, "HEAD") == 2  # the run with no steps is left out
    first, second = map(json.loads, out.read_text().splitlines())
    assert (first["task_id"], second["task_id"]) == (
        "results/group1/Dom-based/out/7",
        "results/group1/Dom-based/out/7#2",
    )
    assert (first["policy"], first["instruction"], first["ended"], second["ended"]) == (
        "webcanvas", "Add a towel to the cart in shop", "max_steps", "terminated")  # fmt: skip
    assert (
        first["source"]["license"] == "MIT"
        and first["source"]["path"] == "results/group1/Dom-based/out.json#0"
    )
    steps = first["steps"]
    assert [s["action"] for s in steps] == [
        "goto('https://www.google.com/search?q=shop%20towels')",  # what the harness opens for google_search
        "click('72')",
        "fill('13', 'bath towel')\npress('13', 'Enter')",  # fill_search fills, then presses Enter
        "click('34')",
        "no_action()",  # the turn ran nothing: kept, unmapped, so indices stay the source's
        "select_option('68', '$50')",
        "go_back()",
        "goto('https://shop.example/help')",
    ]
    assert steps[1]["axtree_txt"] == "[72] link '#rso > div > a'" and steps[3]["axtree_txt"].startswith(
        "[34] button"
    )
    assert steps[2]["axtree_txt"].startswith("[13] textbox") and steps[5]["axtree_txt"].startswith(
        "[68] combobox"
    )
    # the page an action was taken on is the URL the step before recorded (the source logs the page after it)
    assert [s["url"] for s in steps[:3]] == [
        None,
        "https://www.google.com/search?q=shop%20towels",
        "https://shop.example/",
    ]
    # a turn that ran nothing says so, as BrowserGym reports an action it could not run; the others ran
    assert [bool(s.get("last_action_error")) for s in steps] == [a == "no_action()" for a in (s["action"] for s in steps)]
    assert steps[3]["think"] == "Add it.\nAction: Clicking Add to cart." and "verdict" not in json.dumps(
        steps
    )
    with tempfile.TemporaryDirectory() as tmp:  # the real importer: nothing quarantined
        lake = Lake(Path(tmp) / "lake")
        report = import_paths(lake, [out], run_id="t")
        assert (report.accepted, report.quarantined_total, report.steps) == (2, 0, 9)
        con = lake.connect()
        try:
            rows = con.sql(
                "SELECT actions_json, format_error FROM steps ORDER BY trajectory_id, step_index"
            ).fetchall()
        finally:
            con.close()
    actions = [json.loads(a) for a, _ in rows]
    assert {"action": "key", "keys": ["Enter"]} in next(a for a in actions if len(a) == 2)
    assert sum(1 for _, err in rows if err and err.startswith("unmapped_action: no_action")) == 1


def test_the_webcanvas_labels_cover_the_labelled_runs_once_with_steps_in_order():
    checked_labels(LABELS, RUNS, COUNTS, "FLYWHEEL_MINING_EVAL_WEBCANVAS", "webcanvas")


def test_the_webcanvas_set_is_a_known_set_with_its_own_variable():
    assert known_set_entry("webcanvas") == ("FLYWHEEL_MINING_EVAL_WEBCANVAS", "webcanvas", False)
