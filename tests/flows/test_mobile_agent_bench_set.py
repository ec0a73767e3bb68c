"""The mobile-agent-bench labelled set (tests/data/mining_eval/MOBILE_AGENT_BENCH.md): the builder on a made-up snapshot, and the
labels' shape. Nothing here imports or runs a detector (the set was labelled blind; the lead measures it once): the
importer is called directly and `real_eval.KNOWN_SETS` is read as text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.flows.labelled_sets import ROOT, checked_labels, committed, imported, known_set_entry
from tests.flows.labelled_sets import call as _call
from tests.flows.labelled_sets import result as _result
from tests.flows.labelled_sets import said as _said
from tests.flows.labelled_sets import text as _text

LABELS = ROOT / "tests" / "data" / "mining_eval" / "mobile_agent_bench_labels.jsonl"
RUNS, COUNTS = (
    167,
    (102, 35),
)  # every run of the set labelled (MOBILE_AGENT_BENCH.md): runs, (loop, side-effect) labels


def _snapshot(tmp_path: Path) -> Path:
    """A made-up snapshot in LincForge/mobile-agent-bench's layout: tasks/<id>-<name>.yaml and
    results/<tool>/<task>/run-<n>/{meta.json, transcript.jsonl} (Claude Code stream-json)."""
    root = tmp_path / "snapshot"
    (root / "tasks").mkdir(parents=True)
    (root / "tasks" / "a1-open.yaml").write_text("id: a1\nprompt: |\n  Open the app and read the channel.\n")
    (root / "tasks" / "a2-form.yaml").write_text("id: a2\nprompt: |\n  Fill the form and press Submit.\n")
    nerve = "mcp__linc-nerve__nerve_"
    linc = [
        json.dumps({"type": "system", "subtype": "init", "model": "claude-x"}),
        _said(_call("t0", "ToolSearch", {"query": "select:nerve_tap"})),
        _result("t0", "loaded"),
        _said(_text("I'll launch the app."), _call("t1", nerve + "launch", {"package": "dev.example"})),
        _result("t1", '{"success":true}'),
        _said(_text("Tap About."), _call("t2", nerve + "tap", {"x": 504, "y": 1122})),
        _result("t2", '{"success":false,"reason":"no window"}'),
        _said(_text("Still the home screen. Again."), _call("t3", nerve + "tap", {"x": 504, "y": 1122}),
              _call("t4", nerve + "logcat", {"lines": 5})),
        _result("t3", '{"success":true}'),
        _result("t4", "Error: circuit breaker open", error=True),
        _said(_call("t5", nerve + "swipe", {"start_x": 500, "start_y": 1800, "end_x": 500, "end_y": 400})),
        _said(_call("t6", "mcp__mobile-mcp__mobile_press_button", {"button": "BACK"})),
        _said(_call("t7", nerve + "screenshot", {})),
        _said(_text("The channel is BENCH-STABLE.")),
    ]  # fmt: skip
    flow = 'appId: dev.example\n---\n- launchApp\n- tapOn: "Form"\n- tapOn:\n    point: "50%,15%"\n- tapOn:\n    point: "192,192"\n- inputText: "Ann"\n- stopApp'
    maestro = [
        _said(_call("m1", "mcp__maestro__run", {"device_id": "d", "yaml": flow})),
        _result("m1", "Flow executed successfully"),
        _said(_call("m2", "mcp__mobile-mcp__mobile_swipe_on_screen", {"direction": "up", "distance": 600})),
    ]
    empty = [json.dumps({"type": "system", "subtype": "init"}), _said(_text("I cannot reach a device."))]
    for path, lines, meta in (
        ("results/linc/a1/run-1", linc, {"task": "a1", "model": "claude-x", "verdict": "PASS"}),
        (
            "results/maestro/a2/run-2",
            maestro,
            {"task": "a2", "timed_out": True, "verdict": "FAIL", "device": {"model": "Google Pixel Watch 2"}},
        ),  # fmt: skip
        ("results/maestro/a2/run-3", empty, {"task": "a2"}),
        ("results_v2/linc/a1/run-1", linc, {"task": "a1"}),  # another grid: not read
    ):
        (root / path).mkdir(parents=True)
        (root / path / "transcript.jsonl").write_text("\n".join(lines) + "\n{not json\n")
        (root / path / "meta.json").write_text(json.dumps(meta))
    return committed(root)


def test_mobile_agent_bench_runs_become_steps_the_importer_reads_with_words_points_and_errors(tmp_path):
    from flows.failure_mining.mobile_agent_bench_set import build_mobile_agent_bench_set

    out = tmp_path / "data.jsonl"
    assert build_mobile_agent_bench_set(_snapshot(tmp_path), out, "HEAD") == 2  # no tool call: left out
    first, second = map(json.loads, out.read_text().splitlines())
    assert (first["task_id"], second["task_id"]) == ("results/linc/a1/run-1", "results/maestro/a2/run-2")
    assert (first["policy"], first["model"], first["instruction"], first["ended"], second["ended"]) == (
        "claude-code+linc", "claude-x", "Open the app and read the channel.", "terminated", "max_steps")  # fmt: skip
    assert first["source"]["license"] == "MIT" and first["source"]["path"].endswith("run-1/transcript.jsonl")
    steps = first["steps"]
    assert [s["actions"] for s in steps] == [
        [],  # Claude Code's ToolSearch: kept, unmapped
        [{"action": "open_app", "app": "dev.example"}],
        [{"action": "tap", "x": 500, "y": 500}],  # (504, 1122) of 1008 x 2244
        [{"action": "tap", "x": 500, "y": 500}],
        [{"action": "shell", "command": 'linc-nerve.nerve_logcat {"lines": 5}'}],
        [{"action": "swipe", "x": 496, "y": 802, "x2": 496, "y2": 178}],
        [{"action": "system_button", "button": "back"}],
        [{"action": "screenshot"}],
        [{"action": "terminate", "status": "success", "answer": "The channel is BENCH-STABLE."}],
    ]
    assert steps[0]["format_error"] == "unmapped_action: ToolSearch"
    assert steps[2]["raw_output"] == 'Tap About.\nmcp__linc-nerve__nerve_tap {"x": 504, "y": 1122}'
    assert steps[3]["raw_output"].startswith("Still the home screen. Again.\n")
    assert (
        steps[4]["raw_output"] == 'mcp__linc-nerve__nerve_logcat {"lines": 5}'
    )  # same message: no new words
    assert (
        steps[2]["error"].startswith('{"success":false')
        and steps[4]["error"] == "Error: circuit breaker open"
    )
    assert "error" not in steps[1] and "error" not in steps[3]
    assert second["steps"][0]["actions"] == [
        {"action": "open_app", "app": "dev.example"},
        {"action": "left_click", "target": {"text": "Form"}},
        {"action": "tap", "x": 500, "y": 150},
        {"action": "tap", "x": 500, "y": 500},  # a point in pixels, on the watch
        {"action": "type", "text": "Ann"},
        {"action": "shell", "command": "maestro.stopApp dev.example"},
    ]
    # the watch's run: its 384 x 384 screen (600 px up from the centre leaves it)
    assert second["steps"][1]["actions"] == [{"action": "swipe", "x": 500, "y": 500, "x2": 500, "y2": 0}]
    assert (second["steps"][1]["screen_width"], first["steps"][2]["screen_width"]) == (384, 1008)
    report, errors = imported(out, "SELECT count(*) FROM steps WHERE error IS NOT NULL")  # the real importer
    assert (report.accepted, report.quarantined_total, report.steps) == (2, 0, 11)  # nothing quarantined
    assert errors == [(2,)]


def test_the_mobile_agent_bench_labels_cover_the_labelled_runs_once_with_steps_in_order():
    _records, runs, lengths = checked_labels(LABELS, RUNS, COUNTS, "FLYWHEEL_MINING_EVAL_MOBILE_AGENT_BENCH", "mobile_agent_bench")
    if lengths is not None:  # with the data here: the labelled runs are a prefix of the labelling order
        order = sorted(lengths, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        assert set(order[: len(runs)]) == runs


def test_the_mobile_agent_bench_set_is_a_known_set_with_its_own_variable():
    assert known_set_entry("mobile_agent_bench") == ("FLYWHEEL_MINING_EVAL_MOBILE_AGENT_BENCH", "mobile_agent_bench", False)


def test_a_screenshot_saved_to_a_file_is_the_call_itself_and_a_plain_one_a_screenshot():
    """A capture the agent only looks at is a `screenshot`; one saved to a path writes a file, so the builder
    keeps the call (`<server>.<tool> <input>`), whose tool name says its effect."""
    from flows.failure_mining.mobile_agent_bench_set import actions_of

    save = "mcp__mobile-mcp__mobile_save_screenshot"
    assert actions_of(save, {"device": "d"}) == [{"action": "screenshot"}]
    assert actions_of(save, {"device": "d", "saveTo": "/tmp/crash.png"}) == [
        {"action": "shell", "command": 'mobile-mcp.mobile_save_screenshot {"device": "d", "saveTo": "/tmp/crash.png"}'}
    ]
    assert actions_of("mcp__linc-nerve__nerve_screenshot", {}) == [{"action": "screenshot"}]
