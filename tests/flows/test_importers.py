"""Importing trajectories from files: our schema (JSONL, Parquet), Qwen-CUA run directories, GUI-Odyssey
episodes; bad records quarantined with their reason, good ones landed once, re-imports adding nothing."""

import base64
import datetime as dt
import hashlib
import json
import shutil
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows.rollout.importers import import_paths
from lake import Lake

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
CLICK = {"action": "left_click", "x": 10, "y": 20}
DONE = {"action": "terminate", "status": "success", "answer": "42"}


def png(width: int, height: int, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real (tiny) PNG, written by hand so the tests need no imaging library."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def blob(lake: Lake, sha: str) -> bytes:
    return (lake.root / "blobs" / "sha256" / sha[:2] / sha[2:4] / sha).read_bytes()


def count(lake: Lake, table: str) -> int:
    return lake.query(f"SELECT count(*) AS n FROM {table}")[0]["n"] if lake.files(table) else 0


def steps_of(lake: Lake, trajectory_id: str) -> list[dict]:
    return lake.query("SELECT * FROM steps WHERE trajectory_id = ? ORDER BY step_index", [trajectory_id])


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def trajectory(task_id: str | None = "t-1", steps: list | None = None, **extra) -> dict:
    return {
        "task_id": task_id,
        "policy": "my-agent",
        "model": "m-1",
        "ended": "terminated",
        "steps": steps if steps is not None else [{"step_index": 0, "actions": [DONE]}],
        **extra,
    }


@pytest.fixture
def qwen_run(tmp_path):
    run = shutil.copytree(DATA / "qwen_run", tmp_path / "qwen_run")
    (run / "screenshots").mkdir()
    for i in range(3):
        (run / "screenshots" / f"step_00{i}.png").write_bytes(png(4 + i, 3))
    return run


@pytest.fixture
def odyssey(tmp_path):
    root = shutil.copytree(DATA / "gui_odyssey", tmp_path / "gui_odyssey")
    (root / "screenshots").mkdir()
    for i in range(6):
        (root / "screenshots" / f"8312751946205427_{i}.png").write_bytes(png(9, 16 + i))
    return root / "annotations" / "8312751946205427.json"


# ---- our schema ----------------------------------------------------------------------------------------


def test_jsonl_in_our_schema_lands_trajectories_steps_and_screenshot_blobs(lake, tmp_path):
    shot = png(8, 6)
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "a.png").write_bytes(shot)
    qwen = (
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "type", "text": "mug"}}\n</tool_call>'
    )
    path = write_jsonl(
        tmp_path / "ours.jsonl",
        [
            trajectory(
                steps=[
                    {
                        "step_index": 0,
                        "actions": [CLICK],
                        "screenshot_path": "shots/a.png",
                        "url": "http://x/",
                        "error": "timeout",
                    },
                    {
                        "step_index": 1,
                        "raw_output": qwen,
                        "screenshot_b64": base64.b64encode(png(5, 7)).decode(),
                    },
                    {"step_index": 2, "raw_output": "I am not sure what to do."},
                    {"step_index": 3, "actions": [DONE], "started_at": "2025-01-02T03:04:05Z"},
                ],
                started_at="2025-01-02T03:00:00+00:00",
                finished_at=1735787100,
            ),
            trajectory(
                task_id=None,
                instruction="Buy a mug",
                policy=None,
                ended=None,
                steps=[{"actions": [CLICK]}, {"actions": [CLICK]}],
            ),
        ],
    )
    report = import_paths(lake, [path], run_id="imp-1")
    assert (report.records_in, report.accepted, report.skipped, report.quarantined_total) == (2, 2, 0, 0)
    rows = lake.query("SELECT * FROM trajectories ORDER BY num_steps DESC")
    first, second = rows
    assert (first["task_id"], first["policy"], first["model"], first["ended"], first["num_steps"]) == (
        "t-1",
        "my-agent",
        "m-1",
        "terminated",
        4,
    )
    assert first["run_id"] == "imp-1" and first["final_answer"] == "42" and first["duration_s"] == 300.0
    expected_task = "imported-" + hashlib.sha256(b"Buy a mug").hexdigest()[:16]
    assert (second["task_id"], second["policy"], second["ended"]) == (expected_task, "imported", "max_steps")
    steps = steps_of(lake, first["trajectory_id"])
    assert [s["step_index"] for s in steps] == [0, 1, 2, 3]
    assert json.loads(steps[0]["actions_json"]) == [CLICK] and json.loads(steps[0]["points_json"]) == [
        [10, 20]
    ]
    assert blob(lake, steps[0]["screenshot_sha"]) == shot and (
        steps[0]["screen_width"],
        steps[0]["screen_height"],
    ) == (8, 6)
    assert blob(lake, steps[1]["screenshot_sha"]).startswith(b"\x89PNG") and steps[1]["screen_width"] == 5
    assert json.loads(steps[1]["actions_json"]) == [{"action": "type", "text": "mug", "clear": True}]
    assert steps[1]["raw_output"] == qwen and steps[1]["format_error"] is None and steps[1]["ok"] is True
    assert steps[2]["format_error"].startswith("no_tool_call") and steps[2]["actions_json"] == "[]"
    assert (steps[0]["ok"], steps[0]["error"], steps[0]["url"]) == (False, "timeout", "http://x/")
    assert steps[2]["ok"] is True and steps[2]["raw_output"] == "I am not sure what to do."  # nothing failed
    assert steps[3]["started_at"] == dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert [s["step_index"] for s in steps_of(lake, second["trajectory_id"])] == [0, 1]


def test_parquet_with_a_nested_steps_column(lake, tmp_path):
    rows = [
        {
            "task_id": "t-1",
            "policy": "p",
            "ended": "terminated",
            "end_detail": None,
            "episode": 3,
            "steps": [
                {
                    "step_index": 0,
                    "actions_json": json.dumps([CLICK]),
                    "screenshot_b64": base64.b64encode(png(2, 2)).decode(),
                },
                {"step_index": 1, "actions_json": json.dumps([DONE]), "screenshot_b64": None},
            ],
        },
        {"task_id": "t-2", "policy": "p", "ended": "env_error", "end_detail": "app crashed", "steps": []},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "export.parquet")
    report = import_paths(lake, [tmp_path / "export.parquet"])
    assert (report.records_in, report.accepted, report.steps) == (2, 2, 2)
    got = {r["task_id"]: r for r in lake.query("SELECT * FROM trajectories")}
    assert got["t-1"]["episode"] == 3 and got["t-1"]["num_steps"] == 2
    assert (got["t-2"]["ended"], got["t-2"]["end_detail"], got["t-2"]["num_steps"]) == (
        "env_error",
        "app crashed",
        0,
    )
    steps = steps_of(lake, got["t-1"]["trajectory_id"])
    assert json.loads(steps[1]["actions_json"]) == [DONE] and blob(lake, steps[0]["screenshot_sha"]) == png(
        2, 2
    )


def test_parquet_pair_joins_steps_on_trajectory_id_and_quarantines_orphan_steps(lake, tmp_path):
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"trajectory_id": "a", "task_id": "t-1", "ended": "terminated"},
                {"trajectory_id": "b", "task_id": "t-2", "ended": "max_steps"},
            ]
        ),
        tmp_path / "run7_trajectories.parquet",
    )
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"trajectory_id": "a", "step_index": 1, "actions_json": json.dumps([DONE])},
                {"trajectory_id": "a", "step_index": 0, "actions_json": json.dumps([CLICK])},
                {"trajectory_id": "b", "step_index": 0, "actions_json": json.dumps([CLICK])},
                {"trajectory_id": "zzz", "step_index": 0, "actions_json": json.dumps([CLICK])},
            ]
        ),
        tmp_path / "run7_steps.parquet",
    )
    # naming both halves imports the pair once
    report = import_paths(lake, [tmp_path / "run7_trajectories.parquet", tmp_path / "run7_steps.parquet"])
    assert (report.records_in, report.accepted, report.quarantined) == (3, 2, {"orphan_step": 1})
    assert report.balanced
    got = {r["task_id"]: r for r in lake.query("SELECT * FROM trajectories")}
    assert got["t-1"]["trajectory_id"] not in ("a", "b")  # ids are ours: hashes of the source records
    a_steps = steps_of(lake, got["t-1"]["trajectory_id"])
    assert [json.loads(s["actions_json"])[0]["action"] for s in a_steps] == ["left_click", "terminate"]
    orphan = lake.query("SELECT * FROM quarantine")[0]
    assert orphan["source_table"] == "steps" and orphan["reason"].startswith("orphan_step")
    assert json.loads(orphan["record_json"])["record"]["trajectory_id"] == "zzz"


# ---- Qwen-CUA run directory --------------------------------------------------------------------------


def test_qwen_cua_run_directory(lake, qwen_run):
    report = import_paths(lake, [qwen_run])
    assert (report.records_in, report.accepted, report.steps) == (1, 1, 3)
    t = lake.query("SELECT * FROM trajectories")[0]
    expected_task = (
        "imported-" + hashlib.sha256(b"Find the price of the blue mug and report it.").hexdigest()[:16]
    )
    assert (t["task_id"], t["policy"], t["model"], t["ended"]) == (
        expected_task,
        "imported",
        "qwen3-vl-8b-instruct",
        "terminated",
    )
    assert t["final_answer"] == "$12" and t["duration_s"] == 9.0 and t["num_steps"] == 3
    steps = steps_of(lake, t["trajectory_id"])
    assert json.loads(steps[0]["actions_json"]) == [{"action": "left_click", "x": 120, "y": 340}]
    assert json.loads(steps[0]["points_json"]) == [[120, 340]]
    assert (steps[0]["ok"], steps[0]["error"]) == (
        False,
        "the point (120, 340) is covered by a cookie banner",
    )
    # the unparseable turn is kept as a step with its format error, never dropped
    assert steps[1]["format_error"].startswith("unparseable_json") and steps[1]["actions_json"] == "[]"
    assert steps[1]["ok"] is True and steps[1]["error"] is None and "scroll" in steps[1]["raw_output"]
    assert json.loads(steps[2]["actions_json"]) == [
        {"action": "terminate", "status": "success", "answer": "$12"}
    ]
    # a turn starts when the previous one ended; epoch-second timestamps work as well as ISO ones
    assert (
        steps[1]["started_at"] == steps[0]["finished_at"] == dt.datetime(2025, 5, 1, 10, 0, 3, tzinfo=dt.UTC)
    )
    assert steps[2]["finished_at"] == dt.datetime(2025, 5, 1, 10, 0, 9, tzinfo=dt.UTC)
    for i, s in enumerate(steps):
        assert blob(lake, s["screenshot_sha"]) == png(4 + i, 3) and s["screen_width"] == 4 + i


def test_qwen_run_with_a_missing_screenshot_is_quarantined_then_lands_once_fixed(lake, qwen_run):
    (qwen_run / "screenshots" / "step_001.png").unlink()
    first = import_paths(lake, [qwen_run])
    assert (first.accepted, first.quarantined) == (0, {"missing_screenshot": 1})
    assert count(lake, "trajectories") == 0 and count(lake, "steps") == 0, "no half trajectory may land"
    assert "step 1" in lake.query("SELECT reason FROM quarantine")[0]["reason"]
    (qwen_run / "screenshots" / "step_001.png").write_bytes(png(5, 3))
    second = import_paths(lake, [qwen_run])
    assert (second.accepted, second.skipped) == (1, 0) and count(lake, "steps") == 3


def test_qwen_run_with_a_broken_event_line_is_quarantined(lake, qwen_run):
    events = qwen_run / "events.jsonl"
    events.write_text(events.read_text() + '{"step": 3, "output": "<tool_call>{\\"name\\"\n')
    report = import_paths(lake, [qwen_run])
    assert report.quarantined == {"invalid_json": 1} and count(lake, "trajectories") == 0


# ---- GUI-Odyssey -------------------------------------------------------------------------------------


def test_gui_odyssey_episode(lake, odyssey):
    report = import_paths(lake, [odyssey])
    assert (report.records_in, report.accepted, report.steps) == (1, 1, 6)
    t = lake.query("SELECT * FROM trajectories")[0]
    instruction = json.loads(odyssey.read_text())["task_info"]["instruction"]
    assert t["task_id"] == "imported-" + hashlib.sha256(instruction.encode()).hexdigest()[:16]
    assert (t["policy"], t["ended"], t["num_steps"], t["model"]) == ("imported", "terminated", 6, None)
    steps = steps_of(lake, t["trajectory_id"])
    assert [json.loads(s["actions_json"]) for s in steps] == [
        [{"action": "tap", "x": 500, "y": 999}],  # 0..1000 onto our 0..999 grid
        [{"action": "type", "text": "new york fashion week", "clear": True}],
        [{"action": "swipe", "x": 500, "y": 799, "x2": 500, "y2": 200}],
        [{"action": "system_button", "button": "home"}],
        [{"action": "long_press", "x": 250, "y": 400, "duration": 1.0}],
        [{"action": "terminate", "status": "success"}],
    ]
    assert json.loads(steps[5]["raw_output"])["ps"] == "Reminder set for September 5."
    for i, s in enumerate(steps):
        assert blob(lake, s["screenshot_sha"]) == png(9, 16 + i) and (
            s["screen_width"],
            s["screen_height"],
        ) == (9, 16 + i)


def test_gui_odyssey_action_we_cannot_express_quarantines_the_episode(lake, odyssey):
    episode = json.loads(odyssey.read_text())
    episode["steps"][3]["info"] = "KEY_APPSELECT"
    odyssey.write_text(json.dumps(episode))
    report = import_paths(lake, [odyssey])
    assert report.quarantined == {"unknown_action": 1} and count(lake, "trajectories") == 0


# ---- bad records, counts and re-imports ----------------------------------------------------------------


@pytest.fixture
def mixed(tmp_path):
    """Good records between every kind of bad one, each bad in exactly one way."""
    (tmp_path / "ok.png").write_bytes(png(3, 3))
    good = lambda n: trajectory(
        task_id=f"good-{n}",
        steps=[
            {"step_index": 0, "actions": [CLICK], "screenshot_path": "ok.png"},
            {"step_index": 1, "actions": [DONE]},
        ],
    )
    return write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            good(1),
            '{"task_id": "t-trunc", "steps": [{"step_index": 0, "act',  # truncated line
            trajectory(task_id="t-type", episode="three"),
            trajectory(task_id="t-steps", steps="not a list"),
            trajectory(
                task_id="t-unknown", steps=[{"step_index": 0, "actions": [{"action": "fly", "x": 1}]}]
            ),
            trajectory(task_id="t-args", steps=[{"step_index": 0, "actions": [{"action": "left_click"}]}]),
            trajectory(
                task_id="t-shot", steps=[{"step_index": 0, "actions": [CLICK], "screenshot_path": "nope.png"}]
            ),
            trajectory(
                task_id="t-dupe",
                steps=[{"step_index": 0, "actions": [CLICK]}, {"step_index": 0, "actions": [DONE]}],
            ),
            trajectory(task_id="t-ended", ended="finished"),
            trajectory(task_id=None),  # no task id, no instruction
            {"trajectory_id": "x", "step_index": 4, "actions": [CLICK]},  # a step with no trajectory
            "",  # blank lines are not records
            good(2),
        ],
    )


EXPECTED_REASONS = {
    "invalid_json": 1,
    "wrong_type:episode": 1,
    "wrong_type:steps": 1,
    "unknown_action": 1,
    "invalid_action": 1,
    "missing_screenshot": 1,
    "duplicate_step_index": 1,
    "invalid_value:ended": 1,
    "missing_field:task_id": 1,
    "orphan_step": 1,
}


def test_bad_records_are_quarantined_with_their_reason_and_good_ones_land_once(lake, mixed):
    report = import_paths(lake, [mixed])
    assert report.records_in == 12 and report.accepted == 2 and report.skipped == 0
    assert dict(report.quarantined) == EXPECTED_REASONS
    assert report.records_in == report.accepted + report.quarantined_total + report.skipped
    assert sorted(r["task_id"] for r in lake.query("SELECT task_id FROM trajectories")) == [
        "good-1",
        "good-2",
    ]
    assert count(lake, "steps") == 4
    assert all(s["screenshot_sha"] for s in lake.query("SELECT * FROM steps WHERE step_index = 0"))
    rows = lake.query("SELECT * FROM quarantine")
    assert len(rows) == 10 and all(r["source"] == str(mixed) for r in rows)
    reasons = {json.loads(r["record_json"])["source"].rsplit(":", 1)[1]: r["reason"] for r in rows}
    assert reasons["2"].startswith("invalid_json: ") and reasons["3"].startswith("wrong_type:episode: ")
    assert reasons["5"] == "unknown_action: step 0: 'fly' is not an action of ours"
    assert reasons["7"].startswith("missing_screenshot: step 0: nope.png")
    assert reasons["8"].startswith("duplicate_step_index: ")
    assert reasons["11"].startswith("orphan_step: ")
    # the truncated line is kept verbatim, the others as parsed records
    records = {
        json.loads(r["record_json"])["source"].rsplit(":", 1)[1]: json.loads(r["record_json"]) for r in rows
    }
    assert (
        records["2"]["record"].startswith('{"task_id": "t-trunc"')
        and records["5"]["record"]["task_id"] == "t-unknown"
    )


def test_importing_the_same_input_twice_adds_nothing(lake, mixed, qwen_run, odyssey):
    first = import_paths(lake, [mixed, qwen_run, odyssey])
    before = {t: count(lake, t) for t in ("trajectories", "steps", "quarantine")}
    blobs = sorted((lake.root / "blobs").rglob("*"))
    second = import_paths(lake, [mixed, qwen_run, odyssey, mixed])  # a path named twice is read once
    assert first.records_in == second.records_in == 14 and first.accepted == 4
    assert (second.accepted, second.quarantined_total, second.skipped) == (0, 0, 14) and second.balanced
    assert {t: count(lake, t) for t in before} == before == {"trajectories": 4, "steps": 13, "quarantine": 10}
    assert sorted((lake.root / "blobs").rglob("*")) == blobs
    assert first.run_id != second.run_id


def test_a_retry_under_the_same_run_id_replaces_its_own_files(lake, mixed, odyssey):
    import_paths(lake, [mixed, odyssey], run_id="imp-retry")
    again = import_paths(lake, [mixed, odyssey], run_id="imp-retry")
    assert again.accepted == 3 and again.skipped == 0  # its own rows are rewritten, not skipped
    # (the lake's table format writes new files per commit: what must hold is that no row is duplicated)
    assert (count(lake, "trajectories"), count(lake, "steps"), count(lake, "quarantine")) == (3, 10, 10)


def test_trajectory_ids_are_stable_and_distinct_per_record(lake, tmp_path):
    line = trajectory(task_id="same")
    path = write_jsonl(tmp_path / "twice.jsonl", [line, line])
    import_paths(lake, [path])
    ids = [r["trajectory_id"] for r in lake.query("SELECT trajectory_id FROM trajectories ORDER BY 1")]
    other = Lake(tmp_path / "other")
    import_paths(other, [path])
    assert len(set(ids)) == 2 and ids == [
        r["trajectory_id"] for r in other.query("SELECT trajectory_id FROM trajectories ORDER BY 1")
    ]


def test_an_unsupported_or_missing_path_fails_before_anything_is_written(lake, tmp_path, mixed):
    (tmp_path / "notes.txt").write_text("hello")
    for bad in (tmp_path / "notes.txt", tmp_path / "absent.jsonl", tmp_path):
        with pytest.raises((ValueError, FileNotFoundError)):
            import_paths(lake, [mixed, bad])
    assert not lake.files("trajectories") and not lake.files("quarantine")


# ---- other agents' log formats (records shaped as each project documents them) -------------------------


def _actions_of(lake: Lake) -> list[list[dict]]:
    rows = lake.query("SELECT actions_json, format_error FROM steps ORDER BY trajectory_id, step_index")
    return [json.loads(r["actions_json"]) or [r["format_error"]] for r in rows]


def test_browsergym_steps_resolve_bids_through_the_axtree_and_keep_the_instruction(lake, tmp_path):
    axtree = (
        "RootWebArea 'Inbox'\n  [a12] button 'Delete'\n  [b5] textbox 'Search mail'\n  [c7] combobox 'Sort'"
    )
    episode = {
        "goal": "Delete the newsletter from Bob",
        "steps": [
            {
                "action": "fill('b5', 'newsletter')",
                "think": "Search first.",
                "axtree_txt": axtree,
                "url": "http://m/",
            },
            {"action": "press('b5', 'Enter')\nclick('a12')", "axtree_txt": axtree},
            {"action": "select_option('c7', 'Newest')", "axtree_txt": axtree},
            {"action": "click('z9')", "last_action_error": "TimeoutError: no element z9"},
            {"action": "hover('a12')"},
            {"action": "send_msg_to_user('Deleted it.')"},
        ],
    }
    report = import_paths(lake, [write_jsonl(tmp_path / "bg.jsonl", [episode])])
    assert (report.accepted, report.steps) == (1, 6)
    assert _actions_of(lake) == [
        [
            {
                "action": "type",
                "text": "newsletter",
                "target": {"role": "textbox", "name": "Search mail", "nth": 0},
                "clear": True,
            }
        ],
        [
            {"action": "key", "keys": ["Enter"]},
            {"action": "left_click", "target": {"role": "button", "name": "Delete", "nth": 0}},
        ],
        [{"action": "select", "target": {"role": "combobox", "name": "Sort", "nth": 0}, "option": "Newest"}],
        [{"action": "left_click", "target": {"role": "element", "name": "bid:z9", "nth": 0}}],
        ["unmapped_action: hover('a12')"],  # kept as called: another element's hover is another turn
        [{"action": "terminate", "status": "success", "answer": "Deleted it."}],
    ]
    traj = lake.query("SELECT instruction, final_answer, ended FROM trajectories")[0]
    assert traj == {
        "instruction": "Delete the newsletter from Bob",
        "final_answer": "Deleted it.",
        "ended": "terminated",
    }
    steps = steps_of(lake, lake.query("SELECT trajectory_id FROM trajectories")[0]["trajectory_id"])
    assert steps[0]["raw_output"].startswith("Search first.") and steps[0]["url"] == "http://m/"
    assert (steps[3]["ok"], steps[3]["error"]) == (False, "TimeoutError: no element z9")


def test_browsergym_code_is_parsed_never_run(lake, tmp_path):
    marker = tmp_path / "ran"
    episode = {
        "goal": "x",
        "steps": [
            {"action": f"click(__import__('pathlib').Path('{marker}').touch())"},
            {"action": "click('a1'"},
        ],
    }
    report = import_paths(lake, [write_jsonl(tmp_path / "bg.jsonl", [episode])])
    assert report.accepted == 1 and not marker.exists()
    errors = [r["format_error"] for r in lake.query("SELECT format_error FROM steps ORDER BY step_index")]
    assert errors[0].startswith("invalid_arguments") and errors[1].startswith("unparseable_json")


def test_mind2web_operations_name_their_elements(lake, tmp_path):
    episode = {
        "annotation_id": "m2w-1",
        "confirmed_task": "Book a table for 2 at Nobu tonight",
        "steps": [
            {
                "operation": {"op": "TYPE", "value": "Nobu"},
                "element": {"tag": "input", "text": "Search restaurants"},
            },
            {"action_repr": "[button]  Book now -> CLICK"},
            {"action_repr": "[select]  Party size -> SELECT: 2"},
        ],
    }
    import_paths(lake, [write_jsonl(tmp_path / "m2w.jsonl", [episode])])
    assert _actions_of(lake) == [
        [
            {
                "action": "type",
                "text": "Nobu",
                "target": {"role": "textbox", "name": "Search restaurants", "nth": 0},
                "clear": True,
            }
        ],
        [{"action": "left_click", "target": {"role": "button", "name": "Book now", "nth": 0}}],
        [{"action": "select", "target": {"role": "combobox", "name": "Party size", "nth": 0}, "option": "2"}],
    ]
    assert lake.query("SELECT instruction FROM trajectories")[0]["instruction"].startswith("Book a table")


def test_aitw_and_androidcontrol_episodes_become_mobile_actions(lake, tmp_path):
    aitw = {
        "goal": "open settings",
        "steps": [
            {"action_type": "DUAL_POINT", "touch_yx": [0.5, 0.25], "lift_yx": [0.5, 0.25]},
            {"action_type": "DUAL_POINT", "touch_yx": [0.8, 0.5], "lift_yx": [0.2, 0.5]},
            {"action_type": "TYPE", "type_text": "wifi"},
            {"action_type": "PRESS_BACK"},
            {"action_type": "STATUS_TASK_COMPLETE"},
        ],
    }
    control = {
        "goal": "turn on wifi",
        "screen_width": 1080,
        "screen_height": 2400,
        "steps": [
            {"action_type": "open_app", "app_name": "Settings"},
            {"action_type": "click", "x": 540, "y": 1200},
            {"action_type": "scroll", "direction": "down"},
        ],
    }
    report = import_paths(lake, [write_jsonl(tmp_path / "android.jsonl", [aitw, control])])
    assert report.accepted == 2
    flat = [a[0] for a in _actions_of(lake)]
    assert {"action": "tap", "x": 250, "y": 500} in flat and {"action": "tap", "x": 500, "y": 500} in flat
    assert {"action": "swipe", "x": 500, "y": 800, "x2": 500, "y2": 200} in flat
    assert {"action": "open_app", "app": "Settings"} in flat and {
        "action": "system_button",
        "button": "back",
    } in flat


def test_openai_and_anthropic_computer_use_transcripts_become_steps_with_their_reasoning(lake, tmp_path):
    openai = {
        "screen_width": 1280,
        "screen_height": 800,
        "items": [
            {"role": "user", "content": [{"type": "input_text", "text": "Send the report to Ann"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Open the mail app."}]},
            {
                "type": "computer_call",
                "call_id": "c1",
                "action": {"type": "click", "x": 640, "y": 400, "button": "left"},
            },
            {"type": "computer_call", "call_id": "c2", "action": {"type": "type", "text": "ann@x.io"}},
            {"type": "computer_call", "call_id": "c3", "action": {"type": "keypress", "keys": ["ENTER"]}},
        ],
    }
    anthropic = {
        "screen": [1024, 768],
        "messages": [
            {"role": "user", "content": "Find the cheapest flight"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll click the search box."},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "computer",
                        "input": {"action": "left_click", "coordinate": [512, 384]},
                    },
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "computer",
                        "input": {
                            "action": "scroll",
                            "coordinate": [512, 384],
                            "scroll_direction": "down",
                            "scroll_amount": 5,
                        },
                    },
                ],
            },
        ],
    }
    report = import_paths(lake, [write_jsonl(tmp_path / "cu.jsonl", [openai, anthropic])])
    assert (report.accepted, report.steps) == (2, 5)
    rows = lake.query(
        "SELECT t.instruction, s.step_index, s.actions_json, s.raw_output FROM steps s "
        "JOIN trajectories t USING (trajectory_id) ORDER BY t.instruction, s.step_index"
    )
    assert [r["instruction"] for r in rows] == ["Find the cheapest flight"] * 2 + [
        "Send the report to Ann"
    ] * 3
    assert json.loads(rows[0]["actions_json"]) == [{"action": "left_click", "x": 500, "y": 500}]
    assert rows[0]["raw_output"].startswith("I'll click the search box.")
    assert json.loads(rows[1]["actions_json"]) == [{"action": "scroll", "pixels": -500, "x": 500, "y": 500}]
    assert json.loads(rows[2]["actions_json"]) == [{"action": "left_click", "x": 500, "y": 500}]
    assert json.loads(rows[4]["actions_json"]) == [{"action": "key", "keys": ["Enter"]}]


def test_pixel_actions_without_a_screen_size_are_quarantined_with_the_fix(lake, tmp_path):
    episode = {"goal": "g", "steps": [{"action": "Click at (600, 475)"}]}
    report = import_paths(lake, [write_jsonl(tmp_path / "text.jsonl", [episode])])
    assert report.quarantined == {"missing_field:screen_size": 1}
    assert "screen's width and height" in lake.query("SELECT reason FROM quarantine")[0]["reason"]


def test_action_history_text_becomes_actions(lake, tmp_path):
    episode = {
        "task": "Find jobs",
        "viewport": {"width": 1280, "height": 1000},
        "steps": [
            {"action": "Navigate to https://careers.example.com/"},
            {"action": "Click at (640, 500)", "thought": 'Let me click "Search".'},
            {"action": 'Type "support services"'},
            {"action": "Press ENTER"},
            {"action": "Scroll (delta_x=0, delta_y=400)"},
            {"action": "Select picker sp_3 -> Select option(s) [2]"},
        ],
    }
    import_paths(lake, [write_jsonl(tmp_path / "text.jsonl", [episode])])
    assert _actions_of(lake) == [
        [{"action": "goto", "url": "https://careers.example.com/"}],
        [{"action": "left_click", "x": 500, "y": 500}],
        [{"action": "type", "text": "support services", "clear": True}],
        [{"action": "key", "keys": ["Enter"]}],
        [{"action": "scroll", "pixels": -400}],
        ["unmapped_action: Select picker sp_3 -> Select option(s) [2]"],
    ]


def test_browsergym_targets_keep_their_rank_among_same_named_elements():
    """mining-7: each post's "Upvote" is another control (its rank among the page's elements so named), while
    one control whose bid changed as the page re-rendered keeps its role, name and rank."""
    from flows.rollout.foreign_formats import Screen, browsergym_step

    page = "[a1] heading 'First post'\n\t[a2] button 'Upvote'\n[a3] heading 'Second post'\n\t[a4] button 'Upvote'\n"
    rerendered = "[b7] button 'Accept'\n[b9] heading 'First post'\n\t[b8] button 'Upvote'\n"

    def target(action: str, tree: str) -> dict:
        acts = browsergym_step({"action": action, "axtree_txt": tree}, Screen(None, None)).actions
        return acts[0].target.model_dump(exclude_none=True)

    assert target("click('a2')", page) == {"role": "button", "name": "Upvote", "nth": 0}
    assert target("click('a4')", page) == {"role": "button", "name": "Upvote", "nth": 1}
    assert target("click('b8')", rerendered) == target("click('a2')", page)


def test_a_browsergym_call_with_no_counterpart_is_kept_as_called_so_two_notes_are_two_turns():
    """mining-14: an unmapped call (a note, a tab switch) keeps its arguments in format_error, so the miner
    tells `take_note('page 1 ...')` from `take_note('page 2 ...')` (a walk through pages, not one note repeated);
    the same call twice is one repeated. A long call is cut, and says so."""
    from flows.rollout.foreign_formats import UNMAPPED_CALL_CHARS, Screen, browsergym_step

    def unmapped(action: str) -> str:
        step = browsergym_step({"action": action}, Screen(None, None))
        assert step.actions == []
        return step.format_error

    first, second = unmapped("take_note('authors on page 1: ann, bo')"), unmapped("take_note('authors on page 2: cy')")
    assert first == "unmapped_action: take_note('authors on page 1: ann, bo')" and first != second
    assert unmapped("tab_focus(2)") == unmapped("tab_focus(2)") != unmapped("tab_focus(3)")
    long = unmapped(f"take_note('{'x' * 500}')")
    assert long.endswith("…)") and len(long) == len("unmapped_action: ") + UNMAPPED_CALL_CHARS
