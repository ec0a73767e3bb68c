"""The android_world_mcp labelled set (tests/data/mining_eval/ANDROID_WORLD_MCP.md): the builder on a made-up
snapshot, and the labels' shape. Nothing here imports or runs a detector (the set was labelled blind; the lead
measures it once): the importer is called directly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.flows.labelled_sets import ROOT, checked_labels, committed, imported, known_set_entry
from tests.flows.labelled_sets import call as _call
from tests.flows.labelled_sets import result as _result
from tests.flows.labelled_sets import said as _said
from tests.flows.labelled_sets import text as _text

LABELS = ROOT / "tests" / "data" / "mining_eval" / "android_world_mcp_labels.jsonl"
RUNS, COUNTS = 28, (19, 7)  # the runs labelled (ANDROID_WORLD_MCP.md): runs, (loop, side-effect) labels
LATE_LABELS = ROOT / "tests" / "data" / "mining_eval" / "android_world_mcp_labels_late.jsonl"
LATE_RUNS, LATE_COUNTS = 50, (19, 26)  # ranks 28-77, labelled blind after the lead tuned on ranks 0-27
REST_LABELS = ROOT / "tests" / "data" / "mining_eval" / "android_world_mcp_labels_rest.jsonl"
REST_RUNS, REST_COUNTS = 34, (10, 10)  # ranks 78-111, labelled blind by a third labeller
RESULTS = "androidworld_mcp/run_results"
DEVICE = "mcp__wimb-device__"


def _snapshot(tmp_path: Path) -> Path:
    """A made-up snapshot in MetaFlowCodeRepo/android_world_test's layout:
    androidworld_mcp/run_results/<task>/<run>/{stream.jsonl, spec.json, prompt.txt, summary.json}."""
    root = tmp_path / "snapshot"
    calls = [
        ("home", "press_home", {}, '{"success":true,"action":"home"}'),
        ("shot", "get_screenshot", {"quality": 15}, "请根据截图分析页面内容"),
        ("app", "open_app", {"package_name": "com.arduia.expense"}, '{"success":true}'),
        ("wait", "wait_stable_screen", {"stable_duration": 2, "timeout": 10}, '{"success":true}'),
        ("ai", "ai_click", {"text": "SAVE"}, '{"success":true}'),
        ("icon", "ai_click", {"icon": "右下角加号"}, '{"success":false,"error":"AI未能在屏幕上找到目标"}'),
        ("frac", "click", {"x": 0.5, "y": 0.88}, '{"success":true,"x":540,"y":2104}'),
        ("px", "click", {"x": 540, "y": 1196}, '{"success":true}'),
        ("sw", "swipe", {"from_x": 0.5, "from_y": 0.8, "to_x": 0.5, "to_y": 0.2, "duration": 300}, "{}"),
        ("in", "input_text", {"innerid": 38, "text": "120.00"}, '{"success":true}'),
        ("set", "ai_set_text", {"element": "Name 输入框", "text": "Coffee"}, '{"success":true}'),
        ("back", "press_back", {}, "fetch failed"),
        ("xml", "get_screen_xml", {}, '{"success":true,"xml":"<node/>"}'),
        ("upd", "wait_screen_update", {"timeout": 3}, '{"success":true,"screen_updated":false}'),
    ]
    expense = [json.dumps({"type": "system", "subtype": "init", "model": "claude-x"})]
    expense += [
        _said(_call("ts", "ToolSearch", {"query": "select:mcp__wimb-device__click"})),
        _result("ts", "ok"),
    ]
    expense += [_said(_text("Home first."), _call("home", DEVICE + "press_home", {}))]
    for ident, tool, given, text in calls:
        if ident != "home":
            expense.append(_said(_call(ident, DEVICE + tool, given)))
        expense.append(_result(ident, text, error=text == "fetch failed"))
    expense += [
        _said(_text("Let me try the helper."), _call("b1", "Bash", {"command": "python3 mcp_call.py press_home"}),
              _call("w1", "Write", {"file_path": "/tmp/t.py", "content": "print(1)"})),
        _result("b1", "This command requires approval", error=True),
        _result("w1", "written"),
        _said(_call("r1", "Read", {"file_path": ".mcp.json"})),
        _said(_text('{"success": true}')),
        json.dumps({"type": "result", "subtype": "success"}),
    ]  # fmt: skip
    capped = [
        _said(_call("c1", DEVICE + "open_app", {"package_name": "org.videolan.vlc"})),
        _result("c1", '{"success":true}'),
        json.dumps({"type": "stream_event", "event": {"type": "content_block_delta"}}),
        json.dumps({"type": "result", "subtype": "error_max_turns"}),
    ]
    empty = [json.dumps({"type": "system", "subtype": "init"}), _said(_text("No MCP tools are loaded."))]
    runs = {
        "ExpenseAddSingle/ExpenseAddSingle_0-1": (
            expense,
            {"goal": "Add an expense."},
            {"stop_reason": "success", "self_eval": {"success": True}},
        ),  # fmt: skip
        "OpenAppVLC/OpenAppVLC_0-2": (capped, None, {}),  # no spec.json: the prompt is the instruction
        "OpenAppVLC/OpenAppVLC_0-3": (empty, {"goal": "Open VLC."}, {}),  # no tool call: left out
    }
    for run, (lines, spec, summary) in runs.items():
        folder = root / RESULTS / run
        folder.mkdir(parents=True)
        (folder / "stream.jsonl").write_text("\n".join(lines) + "\n{not json\n")
        (folder / "prompt.txt").write_text("你正在 Android 真机上执行\n  Open the VLC app.\n")
        if spec is not None:
            (folder / "spec.json").write_text(json.dumps(spec))
        (folder / "summary.json").write_text(json.dumps(summary) if summary else "{broken")
    (root / RESULTS / "OpenAppVLC" / "stray.jsonl").write_text("{}")  # not a run folder
    (root / RESULTS / "Odd" / "a" / "b").mkdir(parents=True)
    (root / RESULTS / "Odd" / "a" / "b" / "stream.jsonl").write_text(expense[1])  # too deep: not a run
    return committed(root)


def test_android_world_mcp_runs_become_steps_the_importer_reads_with_words_points_and_errors(tmp_path):
    from flows.failure_mining.android_world_mcp_set import build_android_world_mcp_set

    out = tmp_path / "data.jsonl"
    assert build_android_world_mcp_set(_snapshot(tmp_path), out, "HEAD") == 2
    first, second = map(json.loads, out.read_text().splitlines())
    assert (first["task_id"], second["task_id"]) == (
        "ExpenseAddSingle/ExpenseAddSingle_0-1",
        "OpenAppVLC/OpenAppVLC_0-2",
    )
    assert (first["policy"], first["model"], first["instruction"], first["ended"], first["end_detail"]) == (
        "claude-code+wimb-device", "claude-x", "Add an expense.", "terminated", "self_eval success True")  # fmt: skip
    assert second["instruction"].endswith("Open the VLC app.") and second["ended"] == "max_steps"
    assert first["source"]["license"] == "none stated" and first["source"]["path"] == (
        f"{RESULTS}/ExpenseAddSingle/ExpenseAddSingle_0-1/stream.jsonl"
    )
    steps = first["steps"]
    assert [s["actions"] for s in steps] == [
        [],  # Claude Code's ToolSearch: kept, unmapped
        [{"action": "system_button", "button": "home"}],
        [{"action": "screenshot"}],
        [{"action": "open_app", "app": "com.arduia.expense"}],
        [{"action": "wait", "seconds": 10.0}],
        [{"action": "left_click", "target": {"text": "SAVE"}}],
        [{"action": "left_click", "target": {"text": "右下角加号"}}],
        [{"action": "tap", "x": 500, "y": 880}],  # fractions of the screen
        [{"action": "tap", "x": 500, "y": 500}],  # pixels of 1080 x 2392
        [{"action": "swipe", "x": 500, "y": 800, "x2": 500, "y2": 200}],
        [{"action": "type", "text": "120.00"}],
        [{"action": "type", "text": "Coffee", "target": {"text": "Name 输入框"}}],
        [{"action": "system_button", "button": "back"}],
        [
            {"action": "shell", "command": "wimb-device.get_screen_xml {}"}
        ],  # a UI-tree read, named by the builder
        [{"action": "wait", "seconds": 3.0}],
        [{"action": "shell", "command": "python3 mcp_call.py press_home"}],  # the agent's own command
        [{"action": "shell", "command": 'claude-code.Write {"file_path": "/tmp/t.py"}'}],
        [],  # Read
        [{"action": "terminate", "status": "success", "answer": '{"success": true}'}],
    ]
    assert (
        steps[0]["format_error"] == "unmapped_action: ToolSearch"
        and steps[17]["format_error"] == "unmapped_action: Read"
    )
    assert steps[1]["raw_output"] == "Home first.\nmcp__wimb-device__press_home {}"
    assert steps[15]["raw_output"].startswith("Let me try the helper.\nBash ")
    assert steps[16]["raw_output"].startswith("Write ")  # same message: no new words
    errors = {i: s["error"] for i, s in enumerate(steps) if "error" in s}
    assert errors == {
        6: '{"success":false,"error":"AI未能在屏幕上找到目标"}',
        12: "fetch failed",
        15: "This command requires approval",
    }
    assert all((s["screen_width"], s["screen_height"]) == (1080, 2392) for s in steps)
    report, _ = imported(out, "SELECT 1")  # the real importer: nothing quarantined
    assert (report.accepted, report.quarantined_total, report.steps) == (2, 0, 20)


def test_a_call_with_unreadable_input_maps_to_nothing_or_to_its_name():
    from flows.failure_mining.android_world_mcp_set import actions_of

    assert actions_of(DEVICE + "click", {"x": "left"}) == [
        {"action": "shell", "command": 'wimb-device.click {"x": "left"}'}
    ]
    assert actions_of(DEVICE + "ai_click", {}) == [{"action": "shell", "command": "wimb-device.ai_click {}"}]
    assert actions_of("Bash", {"command": "  "}) == []
    assert actions_of(DEVICE + "ai_seq_click", {"items": ["A", {"icon": "B"}, 3]}) == [
        {"action": "left_click", "target": {"text": "A"}},
        {"action": "left_click", "target": {"text": "B"}},
    ]
    assert actions_of(DEVICE + "lock_screen", {}) == [
        {"action": "shell", "command": "wimb-device.lock_screen {}"}
    ]


def test_the_android_world_mcp_labels_cover_the_labelled_runs_once_with_steps_in_order():
    _records, runs, lengths = checked_labels(
        LABELS, RUNS, COUNTS, "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP", "android_world_mcp"
    )
    if lengths is not None:  # with the data here: the labelled runs are a prefix of the labelling order
        order = sorted(lengths, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        assert set(order[: len(runs)]) == runs


def test_the_late_android_world_mcp_labels_cover_ranks_28_on_once_and_share_no_run_with_the_first_file():
    _records, runs, lengths = checked_labels(
        LATE_LABELS, LATE_RUNS, LATE_COUNTS, "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP", "android_world_mcp"
    )
    early = {json.loads(line)["task_id"] for line in LABELS.read_text().splitlines()}
    assert not runs & early
    if lengths is not None:  # with the data here: the late runs are the next ranks of the labelling order
        order = sorted(lengths, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        assert set(order[len(early) : len(early) + len(runs)]) == runs


def test_the_rest_of_the_android_world_mcp_labels_cover_ranks_78_on_once_and_share_no_run_with_the_others():
    _records, runs, lengths = checked_labels(
        REST_LABELS, REST_RUNS, REST_COUNTS, "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP", "android_world_mcp"
    )
    before = {json.loads(line)["task_id"] for f in (LABELS, LATE_LABELS) for line in f.read_text().splitlines()}
    assert not runs & before
    if lengths is not None:  # with the data here: the rest are the last ranks of the labelling order
        order = sorted(lengths, key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        assert set(order[len(before) :]) == runs


def test_the_android_world_mcp_set_is_a_known_set_with_its_own_variable():
    assert known_set_entry("android_world_mcp") == (
        "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP", "android_world_mcp", False
    )  # fmt: skip


def test_the_late_ranks_are_a_known_set_on_the_same_data():
    assert known_set_entry("android_world_mcp_late") == (
        "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP", "android_world_mcp", False
    )  # fmt: skip


def test_the_rest_of_the_ranks_are_a_known_set_on_the_same_data():
    assert known_set_entry("android_world_mcp_rest") == (
        "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP", "android_world_mcp", False
    )  # fmt: skip
