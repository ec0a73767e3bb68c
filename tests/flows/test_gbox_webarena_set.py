"""The eighth labelled set (tests/data/mining_eval/GBOX_WEBARENA.md): the builder on a made-up snapshot, and the labels'
shape. Nothing here imports or runs a detector (the set was labelled blind; the lead measures it once): the
importer is called directly and `real_eval.KNOWN_SETS` is read as text."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.flows.labelled_sets import ROOT, checked_labels, committed, known_set_entry

LABELS = ROOT / "tests" / "data" / "mining_eval" / "gbox_webarena_labels.jsonl"
RUNS, COUNTS = 100, (13, 55)  # labelled ranks 0-99 (GBOX_WEBARENA.md): runs, (loop, side-effect) labels

BOX = "'boxId': 'b-1'"
# A made-up log in the layout of babelcloud/webarena's gbox/trajectories/log_files/task_<n>_<date>.log: one
# entry per line opening with a time, continued on the lines after it.
LOG = f"""\
2025-10-27 15:54:27,825 - INFO - 📝 Logging to: log_files/task_7_20251027_155427.log
2025-10-27 15:54:29,916 - INFO - [Intent]: Add the blue towel to my wish list
2025-10-27 15:54:34,752 - INFO - Starting new session (model: some-model)
2025-10-27 15:54:39,489 - INFO - 💬 Let me look at the page first.
2025-10-27 15:54:40,283 - INFO - 🔧 [+5.53s think] mcp__gbox-browser__screenshot({{{BOX}}})
2025-10-27 15:54:43,069 - INFO - 📥 [⏱️ 2.79s exec] Tool result: {{'type': 'image'}}
2025-10-27 15:54:47,160 - INFO - 💬 I can see the shop.
It has a search box at the top.
2025-10-27 15:54:48,036 - INFO - 🔧 [+4.97s think] mcp__gbox-browser__click({{{BOX}, 'target': 'Search text input box at the top'}})
2025-10-27 15:54:52,794 - INFO - 📥 [⏱️ 4.76s exec] Tool result: Click action completed successfully
2025-10-27 15:54:57,034 - INFO - 💬 Now I type the query.
2025-10-27 15:54:57,875 - INFO - 🔧 [+5.08s think] mcp__gbox-browser__type({{{BOX}, 'content': 'blue towel', 'pressEnterAfterType': True}})
2025-10-27 15:55:02,668 - INFO - 📥 [⏱️ 4.79s exec] Tool result: Text typed successfully
2025-10-27 15:55:03,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__wait({{{BOX}, 'duration': 2000}})
2025-10-27 15:55:04,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__scroll({{{BOX}, 'direction': 'up', 'distance': 'short'}})
2025-10-27 15:55:05,000 - INFO - 💬 The results did not load; the same Go button again.
2025-10-27 15:55:05,500 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__click({{{BOX}, 'target': 'Search text input box at the top'}})
2025-10-27 15:55:06,000 - ERROR - ❌ [⏱️ 0.50s exec] Error: 500 Internal server error
2025-10-27 15:55:07,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__click({{{BOX}, 'target': 'Add to Wish List button', 'button': 'right'}})
2025-10-27 15:55:08,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__press_key({{{BOX}, 'keys': ['control', 'a']}})
2025-10-27 15:55:09,000 - INFO - 🔧 [+1.00s think] TodoWrite({{'todos': []}})
2025-10-27 15:55:09,500 - INFO - 💬 Noting progress.
2025-10-27 15:55:10,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__start_browser_box({{{BOX}}})
2025-10-27 15:55:10,100 - ERROR - ❌ [⏱️ 0.00s exec] Claude requested permissions to use it
2025-10-27 15:55:11,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__switch_tab({{{BOX}, 'tabId': '2'}})
2025-10-27 15:55:12,000 - INFO - 🔧 [+1.00s think] Bash({{'command': "curl -s 'http://x/a'\\nls", 'description': 'look'}})
2025-10-27 15:55:13,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__type({{{BOX}, 'content': "# Title\\n\\nA long README that the log cut...)
2025-10-27 15:55:14,000 - INFO - 🔧 [+1.00s think] mcp__task-completion__complete_task({{'finalAnswer': 'Added'}})
2025-10-27 15:55:15,000 - INFO - [Result] (PASS) config_files/7.json
"""


def _snapshot(tmp_path: Path) -> Path:
    folder = tmp_path / "snapshot" / "gbox" / "trajectories" / "log_files"
    folder.mkdir(parents=True)
    (folder / "task_7_20251027_155427.log").write_text(LOG)
    (folder / "task_8_20251027_160000.log").write_text(  # no call that acts: left out
        "2025-10-27 16:00:00,000 - INFO - [Intent]: Look\n"
        "2025-10-27 16:00:01,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__screenshot({'boxId': 'b'})\n"
    )
    (folder / "task_9_20251027_170000.log").write_text(
        "2025-10-27 17:00:00,000 - INFO - [Intent]: Wait\n"
        "2025-10-27 17:00:01,000 - INFO - 🔧 [+1.00s think] mcp__gbox-browser__wait({'boxId': 'b', 'duration': 500})\n"
        "2025-10-27 17:00:02,000 - INFO - [Unhandled Error] Error('Target page, context or browser has been closed')\n"
    )
    work = tmp_path / "snapshot"
    return committed(work, "logs")


def test_gbox_logs_become_browsergym_steps_with_the_models_words_and_described_targets(tmp_path):
    from flows.failure_mining.gbox_webarena_set import build_gbox_webarena_set
    from flows.rollout.importers import import_paths
    from lake import Lake

    out = tmp_path / "data.jsonl"
    assert build_gbox_webarena_set(_snapshot(tmp_path), out, "HEAD") == 2  # the log with no step is left out
    first, second = map(json.loads, out.read_text().splitlines())
    assert (first["task_id"], first["policy"], first["instruction"], first["ended"]) == (
        "task_7", "gbox_claude_code", "Add the blue towel to my wish list", "terminated")  # fmt: skip
    assert (second["task_id"], second["ended"]) == ("task_9", "env_error")  # a browser error, never completed
    assert first["source"]["license"] == "Apache-2.0" and first["source"]["path"].endswith(
        "task_7_20251027_155427.log"
    )
    steps = first["steps"]
    assert [s["action"] for s in steps] == [
        "click('g1')",
        "keyboard_type('blue towel')\nkeyboard_press('Enter')",  # pressEnterAfterType
        "noop(2000)",
        "scroll(0, -250)",  # up, short
        "click('g1')",  # the same description is the same element
        "click('g2', button='right')",
        "keyboard_press('Control+a')",
        "tab_focus('2')",  # TodoWrite and start_browser_box are not steps
        "bash(\"curl -s 'http://x/a'\\nls\")",
        "keyboard_type('# Title\\n\\nA long README that the log cut')",  # a cut argument read key by key
        "send_msg_to_user('Added')",
    ]
    assert steps[0]["axtree_txt"] == "[g1] textbox 'Search text input box at the top'"
    assert steps[5]["axtree_txt"] == "[g2] button 'Add to Wish List button'"
    # the words since the last step, the screenshot's included, lead the step they came before
    assert (
        steps[0]["think"]
        == "Let me look at the page first.\nI can see the shop.\nIt has a search box at the top."
    )
    assert steps[2]["think"] is None and steps[4]["think"].startswith("The results did not load")
    assert steps[7]["think"] == "Noting progress."
    # an error belongs to its own call; the dropped start_browser_box's error is not the step before it
    assert steps[4]["last_action_error"] == "Error: 500 Internal server error"
    assert not any("last_action_error" in s for i, s in enumerate(steps) if i != 4)
    with tempfile.TemporaryDirectory() as tmp:  # the real importer: nothing quarantined
        lake = Lake(Path(tmp) / "lake")
        report = import_paths(lake, [out], run_id="t")
        assert (report.accepted, report.quarantined_total, report.steps) == (2, 0, 12)
        con = lake.connect()
        try:
            rows = con.sql(
                "SELECT actions_json, format_error, ok FROM steps ORDER BY trajectory_id, step_index"
            ).fetchall()
        finally:
            con.close()
    errors = [err for _, err, _ in rows if err]
    assert sorted(e.split("(")[0] for e in errors) == ["unmapped_action: bash", "unmapped_action: tab_focus"]
    assert sum(1 for _, _, ok in rows if not ok) == 1  # the 500 error
    actions = [a for raw, _, _ in rows for a in json.loads(raw)]
    assert {"action": "terminate", "status": "success", "answer": "Added"} in actions


def test_the_gbox_webarena_labels_cover_the_labelled_runs_once_with_steps_in_order():
    checked_labels(LABELS, RUNS, COUNTS, "FLYWHEEL_MINING_EVAL_GBOX_WEBARENA", "gbox_webarena")


def test_the_gbox_webarena_set_is_a_known_set_with_its_own_variable():
    assert known_set_entry("gbox_webarena") == ("FLYWHEEL_MINING_EVAL_GBOX_WEBARENA", "gbox_webarena", False)
