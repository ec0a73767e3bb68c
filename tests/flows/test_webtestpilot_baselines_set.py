"""The WebTestPilot baselines set (tests/data/mining_eval/WEBTESTPILOT_BASELINES.md): the builder on a made-up
snapshot, and the labels' shape. Nothing here imports or runs a detector (the set was labelled blind; the lead
measures it once): the importer is called directly."""

from __future__ import annotations

import json
from pathlib import Path

from tests.flows.labelled_sets import ROOT, checked_labels, committed, imported, known_set_entry

LABELS = ROOT / "tests" / "data" / "mining_eval" / "webtestpilot_baselines_labels.jsonl"
# labelled ranks 0-119 (WEBTESTPILOT_BASELINES.md): runs, (loop, side-effect) labels
RUNS, COUNTS = 120, (45, 47)
# ranks 120-236, labelled blind afterwards and held out (WEBTESTPILOT_BASELINES.md, "Late ranks (held out)")
LATE_LABELS = ROOT / "tests" / "data" / "mining_eval" / "webtestpilot_baselines_labels_late.jsonl"
LATE_RUNS, LATE_COUNTS = 117, (46, 51)
FIELD = "/html/body/div[4]/form/div[1]/input"
SAVE = "/html/body/div[4]/form/div[6]/button"


def _act(name, **args):
    return {"action": {"name": name, "args": args}}


def _snapshot(tmp_path: Path) -> Path:
    """A made-up snapshot in WebTestPilot's layout: results/<agent>/<app>/<app>.final.json and input/<app>/*.json."""
    root = tmp_path / "snapshot" / "experiments" / "rq1_2"
    case = {"name": "02::Book Create", "url": "http://localhost:8081/", "actions": [
        {"action": "Type \"Book\" in the name field", "expectedResult": "Name is filled"},
        {"action": "Click \"Save Book\"", "expectedResult": "Book is saved"}]}  # fmt: skip
    pinata = {"summary": {}, "results": [
        {"test_name": "02::Book Create - Bug", "success": False, "error_message": "Failed at step 2", "traces": [
            _act("fill", label="3", value="Book", xpath=FIELD),
            _act("finish", status="success", reason="Typed 'Book' into the Name field."),
            _act("scroll", direction="up"),
            _act("select", label="9", options=["Weight"], xpath="/html/body/form/div[2]/select"),
            _act("click", label="5", xpath=SAVE),
            _act("finish", status="fail", reason="The Save Book button did not respond."),
        ]},
        {"test_name": "03::Book Read", "success": True, "error_message": None, "traces": []},  # no trace: left out
    ]}  # fmt: skip
    lavague = {"results": [
        {"test_name": "02::Book Create", "success": False, "error_message": "Error at step 3: invalid syntax",
         "traces": [
            _act("click", xpath=FIELD), _act("click", xpath=FIELD), _act("setValue", xpath=FIELD, value="Book"),
            _act("fail"), _act("scroll_down", content="x"), _act("back"), _act("wait", content="1"),
            "code", _act('"""Take screenshots"""\n  paths = ['), _act("click", xpath=SAVE),
        ]},
    ]}  # fmt: skip
    for agent, data in (("pinata", pinata), ("lavague", lavague), ("naviqate", lavague)):
        folder = root / "results" / agent / "bookstack"
        folder.mkdir(parents=True)
        (folder / "bookstack.final.json").write_text(json.dumps(data))
    not_final = root / "results" / "pinata" / "bookstack" / "bookstack.v1.json"
    not_final.write_text(json.dumps(pinata))
    (root / "results" / "lavague" / "indico").mkdir()
    (root / "results" / "lavague" / "indico" / "indico.final.json").write_text("{not json")
    (root / "input" / "bookstack").mkdir(parents=True)
    (root / "input" / "bookstack" / "tc_02_book_create.json").write_text(json.dumps(case))
    (root / "input" / "bookstack" / "tc_99_broken.json").write_text("[{")
    return committed(tmp_path / "snapshot")


def test_webtestpilot_runs_become_browsergym_steps_the_importer_reads_with_verdicts_and_named_targets(
    tmp_path,
):
    from flows.failure_mining.webtestpilot_baselines_set import RAN_NOTHING, build_webtestpilot_baselines_set

    out = tmp_path / "data.jsonl"
    # lavague and pinata final files only: naviqate, a non-final file, broken JSON and an empty run are left out
    assert build_webtestpilot_baselines_set(_snapshot(tmp_path), out, "HEAD") == 2
    lavague, pinata = map(json.loads, out.read_text().splitlines())
    assert (lavague["task_id"], pinata["task_id"]) == (
        "lavague/bookstack/02::Book Create",
        "pinata/bookstack/02::Book Create - Bug",
    )
    assert (lavague["policy"], pinata["policy"], lavague["ended"], pinata["ended"]) == (
        "lavague", "pinata", "env_error", "terminated")  # fmt: skip
    # the buggy variant runs the same test case: both carry its steps as the instruction
    assert lavague["instruction"] == pinata["instruction"]
    assert lavague["instruction"].startswith("Test case 02::Book Create on http://localhost:8081/:\n1. Type")
    assert "(expected: Book is saved)" in pinata["instruction"]
    assert pinata["source"]["path"].endswith("pinata/bookstack/bookstack.final.json#0")
    assert pinata["source"]["license"].startswith("none stated")
    assert [s["action"] for s in pinata["steps"]] == [
        "fill('x1', 'Book')",
        "finish()",  # the agent's verdict on the test step: kept, unmapped, with its words
        "scroll(0, -500)",
        "select_option('x2', 'Weight')",
        "click('x3')",
        "finish()",
    ]
    assert pinata["steps"][5]["think"] == "Step verdict: fail. The Save Book button did not respond."
    assert pinata["steps"][0]["axtree_txt"] == f"[x1] textbox '{FIELD}'"
    assert pinata["steps"][3]["axtree_txt"].startswith("[x2] combobox") and pinata["steps"][4][
        "axtree_txt"
    ].startswith("[x3] button")
    assert [s["action"] for s in lavague["steps"]] == [
        "click('x1')",
        "click('x1')",  # the same xpath is the same element id throughout the run
        "fill('x1', 'Book')",
        "fail()",
        "scroll(0, 500)",
        "go_back()",
        "noop()",
        "unparsed_action()",  # a bare string in the traces
        "unparsed_action()",  # code text as the action's name
        "click('x2')",
    ]
    assert [bool(s.get("last_action_error")) for s in lavague["steps"]] == [i == 3 for i in range(10)]
    assert lavague["steps"][3]["last_action_error"] == RAN_NOTHING
    report, rows = imported(out, "SELECT format_error FROM steps")  # the real importer
    assert (report.accepted, report.quarantined_total, report.steps) == (2, 0, 16)  # nothing quarantined
    errors = [e for (e,) in rows if e]
    assert sorted(e.split("(")[0] for e in errors) == sorted(
        ["unmapped_action: fail"] + ["unmapped_action: finish"] * 2 + ["unmapped_action: unparsed_action"] * 2
    )


def test_the_webtestpilot_baselines_labels_cover_the_labelled_runs_once_with_steps_in_order():
    checked_labels(
        LABELS, RUNS, COUNTS, "FLYWHEEL_MINING_EVAL_WEBTESTPILOT_BASELINES", "webtestpilot_baselines"
    )


def test_the_late_webtestpilot_baselines_labels_cover_other_runs_once_with_steps_in_order():
    _, late, lengths = checked_labels(
        LATE_LABELS,
        LATE_RUNS,
        LATE_COUNTS,
        "FLYWHEEL_MINING_EVAL_WEBTESTPILOT_BASELINES",
        "webtestpilot_baselines",
    )
    _, early, _ = checked_labels(
        LABELS, RUNS, COUNTS, "FLYWHEEL_MINING_EVAL_WEBTESTPILOT_BASELINES", "webtestpilot_baselines"
    )
    assert not late & early
    if lengths is not None:  # with the data here, the two files together label every built run
        assert late | early == set(lengths)


def test_the_webtestpilot_baselines_set_is_a_known_set_with_its_own_variable():
    assert known_set_entry("webtestpilot_baselines") == (
        "FLYWHEEL_MINING_EVAL_WEBTESTPILOT_BASELINES", "webtestpilot_baselines", False
    )  # fmt: skip


def test_the_late_ranks_are_a_known_set_on_the_same_data():
    assert known_set_entry("webtestpilot_baselines_late") == (
        "FLYWHEEL_MINING_EVAL_WEBTESTPILOT_BASELINES", "webtestpilot_baselines", False
    )  # fmt: skip
