"""`flywheel eval mining --real`: a labelled set of other agents' runs imported with the real importer and
scored per kind, per evidence level and against the same-action baseline. The small set here is made by
the test in the action-history text format; the public set (tests/data/mining_eval/LABELLING.md) is
scored when its data.jsonl is present."""

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from flows.failure_mining.real_eval import KNOWN_SETS, LABELS, evaluate_set, known_set_data

ROOT = Path(__file__).resolve().parents[2]


def _committed(work: Path) -> Path:
    """`work` as a git repository with one commit of everything in it: the shape of a fetched snapshot."""
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "runs"], check=True)
    return work / ".git"


def _run(task_id: str, instruction: str, steps: list[tuple[str, str]]) -> dict:
    return {
        "task_id": task_id,
        "instruction": instruction,
        "viewport": {"width": 1000, "height": 1000},
        "steps": [{"action": a, "thought": t} for a, t in steps],
    }


def _small_set(tmp_path: Path) -> tuple[Path, Path]:
    runs = [
        _run(
            "stuck",
            "Find the FAQ",
            [
                ("Navigate to https://shop.example/", ""),
                ("Click at (500, 900)", 'Let me click "Accept cookies".'),
                ("Click at (500, 900)", "The banner is still showing. Let me click it again."),
                ("Click at (520, 905)", "It didn't work. Let me click more precisely."),
                ("Click at (100, 50)", "The banner persists; I'll use the menu instead."),
            ],
        ),
        _run(
            "reading",
            "Read the article",
            [("Scroll (delta_x=0, delta_y=600)", "I can see more of the article.")] * 6,
        ),
        _run(
            "buyer",
            "Find a blue mug under $10",
            [
                ("Click at (300, 300)", 'This mug is $8. Let me click "Add to cart".'),
                ("Click at (900, 50)", "It was added. Let me open the cart to check."),
            ],
        ),
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in runs))
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        '{"task_id": "stuck", "kind": "loop", "step": 2, "last_step": 3}\n'
        '{"task_id": "reading", "kind": null}\n'
        '{"task_id": "buyer", "kind": "side_effect", "step": 0}\n'
    )
    return data, labels


def test_a_labelled_foreign_set_is_scored_per_kind_evidence_level_and_baseline(tmp_path):
    data, labels = _small_set(tmp_path)
    result = evaluate_set(data, labels)
    assert (result["trajectories"], result["steps"]) == (3, 13)
    assert result["kinds"]["loop"] | {"f1": None} == {
        "findings": 1,
        "labels": 1,
        "precision": 1.0,
        "recall": 1.0,
        "f1": None,
        "matched": 1,  # the counts behind the ratios, for pooling sets exactly
        "found": 1,
    }
    assert (
        result["kinds"]["side_effect"]["recall"] == 1.0 and result["kinds"]["side_effect"]["precision"] == 1.0
    )
    baseline = result["baselines"]["loop: same action 3x in a row"]
    assert (
        baseline["precision"] == 0.0
    )  # it calls six scrolls through an article a loop, and misses the re-aimed clicks
    assert set(result["by_evidence_level"]) == {"reasoning", "actions"}
    assert set(result["halves"]) == {"tune", "held_out"}  # a fixed split by the task_id's hash
    assert sum(h["trajectories"] for h in result["halves"].values()) == 3
    assert result["by_evidence_level"]["reasoning"]["loop"]["recall"] == 1.0


def test_the_cli_prints_the_same_figures(tmp_path):
    data, labels = _small_set(tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "flywheel.cli",
            "eval",
            "mining",
            "--real",
            str(data),
            "--labels",
            str(labels),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        check=True,
    )
    result = json.loads(out.stdout)
    assert result["kinds"]["loop"]["recall"] == 1.0 and result["status"].startswith("unknown")
    # the reader's table on stderr: the one set, no pooled row, and a status saying no one vouched for it
    table = out.stderr.splitlines()
    row = next(line.split() for line in table if line.startswith(data.parent.name))
    assert row[1:3] == [str(result["trajectories"]), "unknown"]
    assert row[3:8] == [f"{result['kinds']['loop']['precision']:.3f}", "/", "1.000", "/", f"{result['kinds']['loop']['f1']:.3f}"]
    assert not any(line.startswith("pooled") for line in table)
    assert any(line.startswith("in all: loops") for line in table)


@pytest.mark.parametrize(
    "label_line, said",
    [
        ('{"task_id": "nobody", "kind": "loop", "step": 1}', "line 2: task 'nobody' is not in the data"),
        ('{"task_id": "stuck", "kind": "loop"}', "line 2: not a label (KeyError: 'step')"),
        ('{"task_id": "stuck", "kind": "loops", "step": 1}', "line 2: kind 'loops' is none of loop, side_effect or null"),
        ("stuck,loop,1", "line 2: not a label (JSONDecodeError"),
        ('{"task_id": "stuck", "kind": "loop", "step": "two"}', "line 2: not a label (ValueError"),
        ('["stuck", "loop", 1]', "line 2: not a label"),
    ],
)
def test_a_bad_label_is_one_error_naming_its_line_and_the_shape(tmp_path, capsys, label_line, said):
    from flywheel.cli import main

    data, labels = _small_set(tmp_path)
    good = labels.read_text().splitlines()
    labels.write_text("\n".join([good[0], label_line, *good[1:]]) + "\n")
    assert main(["eval", "mining", "--real", str(data), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {labels}, {said}") and len(err.splitlines()) == 1, err
    assert "not in the data" in said or '"kind": "loop" | "side_effect" | null' in err  # the shape, to fix it by
    assert main(["eval", "mining", "--real", str(tmp_path / "none.jsonl"), "--labels", str(labels)]) == 2
    assert "no data file at" in capsys.readouterr().err


def test_a_known_sets_files_given_by_path_keep_its_status(tmp_path, monkeypatch):
    import flows.failure_mining.real_eval as real_eval

    data, labels = _small_set(tmp_path)
    monkeypatch.setenv("FLYWHEEL_MINING_EVAL_OPERATOR", str(data))
    monkeypatch.setattr(real_eval, "KNOWN_SETS", {"operator_evals": ("FLYWHEEL_MINING_EVAL_OPERATOR", "x", labels, False)})
    assert real_eval.status_of(data, labels) == real_eval.SET_STATUS["operator_evals"]
    assert real_eval.status_of(tmp_path / "." / data.name, labels) == real_eval.SET_STATUS["operator_evals"]
    # the same runs scored against other labels are not that set
    other = tmp_path / "other_labels.jsonl"
    other.write_text(labels.read_text())
    assert real_eval.status_of(data, other) == real_eval.UNKNOWN_STATUS
    assert real_eval.status_of(tmp_path / "missing.jsonl", labels) == real_eval.UNKNOWN_STATUS


def _public_set() -> Path | None:
    for candidate in (
        os.environ.get("FLYWHEEL_MINING_EVAL"),
        ROOT.parent / "shared" / "mining_eval" / "abp" / "data.jsonl",
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


@pytest.mark.skipif(
    _public_set() is None, reason="the public set's data.jsonl is not here (see LABELLING.md)"
)
def test_on_the_public_set_the_miner_beats_the_baselines():
    result = evaluate_set(_public_set(), LABELS)
    loop, side = result["kinds"]["loop"], result["kinds"]["side_effect"]
    assert loop["f1"] > result["baselines"]["loop: same action 3x in a row"]["f1"]
    assert loop["f1"] >= 0.8  # measured 0.883 (mining-5), in-sample: both halves were read to choose rules
    assert side["recall"] >= 0.8 and side["precision"] >= 0.6
    halves = result["halves"]
    assert halves["tune"]["trajectories"] + halves["held_out"]["trajectories"] == result["trajectories"]
    held_out = halves["held_out"]["kinds"]["loop"]  # 0.718 (mining-3), 0.821 (mining-5) after rules read on it
    assert held_out["f1"] > halves["held_out"]["baselines"]["loop: same action 3x in a row"]["f1"]


# ---- the fresh set: open-operator-evals' WebVoyager30 runs (tests/data/mining_eval/OPERATOR_EVALS.md) ----


def _notte_call(state: dict, actions: list, elements: str, outcome: str | None) -> dict:
    messages = [{"role": "system", "content": "Example: B1[:]<button>Submit Form</button>"}]
    if outcome:
        messages.append({"role": "user", "content": outcome})
    messages.append(
        {"role": "user", "content": [{"type": "text", "text": f"[Interaction elements]\n{elements}"}]}
    )
    return {
        "messages_in": messages,
        "message_out": {"content": json.dumps({"state": state, "actions": actions})},
    }


def _browser_use_call(state: dict, actions: list, elements: str) -> dict:
    text = f"Current url: https://shop.example/\nInteractive elements from top layer:\n{elements}"
    reply = json.dumps({"current_state": state, "action": actions})
    return {
        "messages_in": [{"type": "human", "content": [{"type": "text", "text": text}]}],
        "message_out": {"tool_calls": [{"function": {"name": "AgentOutput", "arguments": reply}}]},
    }


def _proxy_call(thinking: str, tool: str | None, args: dict, elements: str) -> dict:
    content = f"<observation>{thinking}</observation><thinking>So I act.</thinking>"
    calls = [{"function": {"name": tool, "arguments": json.dumps(args)}}] if tool else []
    if tool is None:  # a tool call written into the text, as proxy-lite sometimes does
        content += '<tool_call>{"name": "goto", "arguments": {"url": "https://shop.example/"}}</tool_call>'
    screen = {
        "label": "screenshot",
        "role": "user",
        "content": [{"type": "text", "text": f"URL: x\n{elements}"}],
    }
    return {"messages_in": [screen], "message_out": {"content": content, "tool_calls": calls}}


def _result(task_id: str, calls: list[dict]) -> dict:
    return {
        "task_id": task_id,
        "task_description": "Find the FAQ",
        "agent_answer": "done",
        "steps": [{"url": "https://shop.example/", "llm_calls": [c]} for c in calls]
        + [{"url": "x", "llm_calls": []}],
    }


def _operator_repo(tmp_path: Path) -> Path:
    """A git repository laid out as open-operator-evals, with one run of each agent (made here)."""
    runs = {
        "Notte/1/Shop--0/0": _result(
            "webvoyager--Shop--0",
            [
                _notte_call(
                    {"previous_goal_status": "unknown", "next_goal": "Accept the cookies."},
                    [{"click": {"id": "B2"}}],
                    'B1[:]<button>Reject</button>\nB2[:]<div role="button" aria_label="Accept all">Accept</div>',
                    None,
                ),
                _notte_call(
                    {"previous_goal_status": "failure", "previous_goal_eval": "The banner is still showing."},
                    [
                        {"fill": {"id": "I1", "value": "faq"}},
                        {"completion": {"success": False, "answer": "no"}},
                    ],
                    "I1[:]<input>Search</input>",
                    "❌ action 'click' with id=B2 failed with error: not visible",
                ),
                {"messages_in": [], "message_out": {"content": "not JSON at all"}},  # a reply it cannot read
            ],
        ),
        "BrowserUse/2/Shop--0/0": _result(
            "webvoyager--Shop--0",
            [
                _browser_use_call(
                    {"evaluation_previous_goal": "Unknown", "next_goal": "Search for the FAQ"},
                    [{"input_text": {"index": 2, "text": "faq"}}, {"click_element": {"index": 3}}],
                    "[2]<input text;searchbox;Search 'it';false/>\n[3]<button Go;submit/>",
                ),
                _browser_use_call({"memory": "x"}, [{"extract_content": {"goal": "faq"}}], ""),
            ],
        ),
        "Convergence/3/Shop--0/1": _result(
            "webvoyager--Shop--0",
            [
                _proxy_call(
                    "A consent form.",
                    "click",
                    {"mark_id": 0},
                    '- [0] <button title="Accept">Accept all</button>',
                ),
                _proxy_call("Still there.", None, {}, ""),
                _proxy_call(
                    "Search.", "type", {"entries": [{"mark_id": 1, "content": "faq"}], "submit": True}, ""
                ),
            ],
        ),
        "Convergence/3/Shop--1/5": _result("webvoyager--Shop--1", []),  # run 5: not in the labelled sample
        "Convergence/3/Shop--2/0": {  # another project's output, read as untrusted: shapes it should not have
            "task_id": ["not", "text"],
            "steps": [
                "a page as text",
                {"llm_calls": {"not": "a list"}},
                {"llm_calls": [{"messages_in": "x", "message_out": ["x"]}, 7]},
                {"llm_calls": [{"message_out": {"content": '<tool_call>{"name": "rm -rf"}</tool_call>'}}]},
            ],
        },
    }
    work = tmp_path / "oe"
    for rel, result in runs.items():
        path = work / "WebVoyager30" / rel / "results_no_screenshot.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(result))
    return _committed(work)


def test_open_operator_evals_runs_become_steps_the_importer_reads_with_targets_words_and_errors(tmp_path):
    from flows.failure_mining.operator_evals_set import build_operator_evals_set
    from flows.failure_mining.real_eval import load_set

    out = tmp_path / "data.jsonl"
    assert build_operator_evals_set(_operator_repo(tmp_path), out) == 4
    records = {r["task_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    notte = records["Notte/webvoyager--Shop--0/0"]["steps"]
    assert [s["action"] for s in notte] == [
        "click('B2')",
        "fill('I1', 'faq')",
        "report_infeasible('no')",
        "invalid_reply()",
    ]
    assert "[B2] button 'Accept all'" in notte[0]["axtree"] and "Submit Form" not in notte[0]["axtree"]
    assert notte[0]["error"].startswith("❌") and "error" not in notte[1]  # the harness's outcome of B2
    assert notte[1]["thought"].startswith("failure The banner is still showing.")
    browser_use = records["BrowserUse/webvoyager--Shop--0/0"]["steps"]
    assert [s["action"] for s in browser_use] == ["fill('2', 'faq')", "click('3')", "extract_content()"]
    assert browser_use[0]["thought"] == browser_use[1]["thought"]  # one turn, two actions
    proxy = records["Convergence/webvoyager--Shop--0/1"]["steps"]
    assert [s["action"] for s in proxy] == [
        "click('0')",
        "goto('https://shop.example/')",
        "fill('1', 'faq')",
        "keyboard_press('Enter')",
    ]
    odd = records["Convergence/['not', 'text']/0"]["steps"]
    assert [s["action"] for s in odd] == ["invalid_reply()", "rm__rf()"]  # kept, as actions we cannot run
    frames = load_set(out)  # the real importer: nothing quarantined, targets by role and name
    steps = frames["steps"].sort("trajectory_id", "step_index")
    assert steps.height == 13
    actions = " ".join(steps["actions_json"].to_list())
    assert '"name": "Accept all"' in actions and "Search \\u2019it\\u2019" in actions
    unmapped = steps.filter(pl.col("format_error").is_not_null())["format_error"].to_list()
    assert sorted(unmapped) == [
        "unmapped_action: extract_content()",  # kept as called (these calls have no arguments)
        "unmapped_action: invalid_reply()",
        "unmapped_action: invalid_reply()",
        "unmapped_action: rm__rf()",
    ]


def test_without_a_path_the_cli_scores_every_known_set_that_is_here_and_names_the_missing(
    tmp_path, monkeypatch, capsys
):
    import flows.failure_mining.real_eval as real_eval
    from flywheel.cli import main

    data, labels = _small_set(tmp_path)
    monkeypatch.setenv("FLYWHEEL_MINING_EVAL_OPERATOR", str(data))
    monkeypatch.delenv("FLYWHEEL_MINING_EVAL", raising=False)
    known = {  # these two only: the other sets' data may be on this machine (../shared/mining_eval)
        "operator_evals": ("FLYWHEEL_MINING_EVAL_OPERATOR", "x", labels, False),
        "abp": ("FLYWHEEL_MINING_EVAL", "no-such-set", LABELS, True),
    }
    monkeypatch.setattr(real_eval, "KNOWN_SETS", known)
    assert main(["eval", "mining", "--real"]) == 0
    out = capsys.readouterr()
    result = json.loads(out.out)
    assert "FLYWHEEL_MINING_EVAL" in result["abp"]["skipped"]
    fresh = result["operator_evals"]
    assert fresh["kinds"]["loop"]["recall"] == 1.0 and "halves" not in fresh
    assert "loop: same action 3x in a row" in fresh["baselines"]
    # pooled over the sets scored (the skipped one adds nothing), and a table for the reader on stderr
    assert result["pooled"]["sets"] == 1 and result["pooled"]["kinds"] == fresh["kinds"]
    assert list(result["pooled_by_status"]) == ["in-sample"]  # one status here: no rows of its own below
    assert result["pooled_by_status"]["in-sample"]["kinds"] == fresh["kinds"]
    err = out.err.splitlines()
    assert err[0].startswith("labelled sets: 0/2") and any(line.startswith("labelled sets: 2/2") for line in err)
    table = err[next(i for i, line in enumerate(err) if line.split()[:2] == ["set", "runs"]) :]
    assert any(line.startswith("abp") and "skipped" in line for line in table)
    assert any(line.startswith("pooled") and "1 sets" in line for line in table)
    # each set says how much it can still tell: blind, or in-sample since which rules read it
    assert result["abp"]["status"].startswith("in-sample") and fresh["status"] == real_eval.SET_STATUS["operator_evals"]


def test_pooled_figures_are_those_of_the_sets_scored_as_one(tmp_path):
    """Pooling adds counts, not ratios: two sets pooled score as the set holding both runs' data and labels."""
    from flows.failure_mining.real_eval import pooled

    data, labels = _small_set(tmp_path)
    runs, label_lines = data.read_text().splitlines(), labels.read_text().splitlines()
    parts = {}
    for name, keep in (("first", [0]), ("rest", [1, 2])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.jsonl").write_text("".join(runs[i] + "\n" for i in keep))
        (tmp_path / name / "labels.jsonl").write_text("".join(label_lines[i] + "\n" for i in keep))
        parts[name] = evaluate_set(tmp_path / name / "data.jsonl", tmp_path / name / "labels.jsonl", split=False)
    parts["missing"] = {"status": "blind", "skipped": "no data.jsonl"}

    total, whole = pooled(parts), evaluate_set(data, labels, split=False)

    assert total["sets"] == 2 and total["steps"] == whole["steps"]
    for kind in ("loop", "side_effect"):
        assert total["kinds"][kind] == whole["kinds"][kind]
        assert total["by_confidence"].get(kind) == whole["by_confidence"].get(kind)
    assert total["by_evidence_level"] == whole["by_evidence_level"]  # a level's recall is over every label
    assert total["baselines"] == {k: v for k, v in whole["baselines"].items() if k.startswith("loop")}


def test_blind_and_in_sample_sets_are_also_pooled_apart(tmp_path):
    from flows.failure_mining.real_eval import pooled, pooled_by_status, summary_table

    data, labels = _small_set(tmp_path)
    runs, label_lines = data.read_text().splitlines(), labels.read_text().splitlines()
    sets = {}
    for name, keep, status in (("read", [0], "in-sample: read since"), ("new", [1, 2], "blind: labelled, scored once")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.jsonl").write_text("".join(runs[i] + "\n" for i in keep))
        (tmp_path / name / "labels.jsonl").write_text("".join(label_lines[i] + "\n" for i in keep))
        scored = evaluate_set(tmp_path / name / "data.jsonl", tmp_path / name / "labels.jsonl", split=False)
        sets[name] = {"status": status, **scored}
    apart = pooled_by_status(sets)
    assert list(apart) == ["blind", "in-sample"]
    assert apart["blind"]["kinds"] == sets["new"]["kinds"] and apart["in-sample"]["kinds"] == sets["read"]["kinds"]
    table = summary_table(sets, pooled(sets)).splitlines()
    rows = {line.split("  ")[0].strip(): line for line in table if line.startswith("pooled") and "  " in line}
    assert set(rows) == {"pooled", "pooled, blind", "pooled, in-sample"}
    assert "1 sets" in rows["pooled, blind"] and "2 sets" in rows["pooled"]


def test_every_known_set_says_whether_its_findings_were_read():
    from flows.failure_mining.real_eval import SET_STATUS

    assert set(SET_STATUS) == set(KNOWN_SETS)
    assert all(status.startswith(("blind", "in-sample")) for status in SET_STATUS.values())


@pytest.mark.skipif(
    known_set_data("operator_evals") is None,
    reason="the fresh set's data.jsonl is not here (see tests/data/mining_eval/OPERATOR_EVALS.md)",
)
def test_on_the_operator_evals_set_the_miner_beats_the_baseline():
    """In-sample since mining-5 (its findings were read to choose rules): floors, not the issue's targets."""
    result = evaluate_set(known_set_data("operator_evals"), KNOWN_SETS["operator_evals"][2], split=False)
    loop, side = result["kinds"]["loop"], result["kinds"]["side_effect"]
    assert (result["trajectories"], result["labels"]["loop"]) == (163, 48)
    assert loop["f1"] > result["baselines"]["loop: same action 3x in a row"]["f1"]  # measured 0.854 vs 0.634
    assert loop["f1"] >= 0.8
    assert side["recall"] >= 0.8 and side["precision"] >= 0.6  # measured 1.0 / 1.0 (4 labels)


@pytest.mark.skipif(
    known_set_data("operator_evals_run2") is None,
    reason="run 2 of the fresh set is not here (see tests/data/mining_eval/OPERATOR_EVALS.md)",
)
def test_on_run_2_the_miner_beats_the_baseline():
    result = evaluate_set(
        known_set_data("operator_evals_run2"), KNOWN_SETS["operator_evals_run2"][2], split=False
    )
    loop = result["kinds"]["loop"]
    assert (result["trajectories"], result["labels"]["loop"]) == (84, 17)
    assert loop["f1"] > result["baselines"]["loop: same action 3x in a row"]["f1"]  # 0.869 (mining-5) vs 0.580
    assert loop["f1"] >= 0.8  # in-sample since mining-5


# The held-out sample (OPERATOR_EVALS.md "Runs 3-7"): every run 3..7 of every task and agent that made a model call,
# labelled blind; (runs, steps) of the builder's data.jsonl and (loop, side-effect) label counts.
HELDOUT_RUNS, HELDOUT_STEPS, HELDOUT_COUNTS = 432, 5319, (144, 22)
HELDOUT_BY_AGENT = {  # agent: (runs, loop labels, side-effect labels)
    "BrowserUse": (141, 30, 8),
    "Convergence": (145, 102, 8),
    "Notte": (146, 12, 6),
}


def test_the_held_out_operator_labels_cover_runs_3_to_7_once_with_steps_in_order():
    labels = [json.loads(line) for line in KNOWN_SETS["operator_evals_heldout"][2].read_text().splitlines()]
    runs = {rec["task_id"] for rec in labels}
    assert len(runs) == HELDOUT_RUNS
    assert {tid.rsplit("/", 1)[1] for tid in runs} == {"3", "4", "5", "6", "7"}  # never runs 0-2 (read by rule authors)
    kinds = [rec["kind"] for rec in labels]
    assert (kinds.count("loop"), kinds.count("side_effect")) == HELDOUT_COUNTS
    for agent, counts in HELDOUT_BY_AGENT.items():
        mine = [rec for rec in labels if rec["task_id"].startswith(agent + "/")]
        got = [rec["kind"] for rec in mine]
        assert (len({rec["task_id"] for rec in mine}), got.count("loop"), got.count("side_effect")) == counts
    by_run: dict[str, list[dict]] = {}
    for rec in labels:
        by_run.setdefault(rec["task_id"], []).append(rec)
    for tid, recs in by_run.items():
        if any(rec["kind"] is None for rec in recs):
            assert len(recs) == 1, tid  # a clean run has one line, and no labels
            continue
        spans = [(rec["step"], rec["last_step"]) for rec in recs]
        assert all(0 <= first <= last for first, last in spans), tid
        assert spans == sorted(spans), tid  # in step order
        loops = [(rec["step"], rec["last_step"]) for rec in recs if rec["kind"] == "loop"]
        assert all(a[1] < b[0] for a, b in zip(loops, loops[1:])), tid  # loop spans of a run never overlap


@pytest.mark.skipif(
    known_set_data("operator_evals_heldout") is None,
    reason="runs 3-7 of the fresh set are not here (see tests/data/mining_eval/OPERATOR_EVALS.md)",
)
def test_the_held_out_labels_name_every_run_of_the_built_sample_and_only_its_steps():
    """Reads data.jsonl as text only (no importer, no detector: the set stays blind until the lead measures it)."""
    records = [json.loads(line) for line in known_set_data("operator_evals_heldout").read_text().splitlines()]
    length = {rec["task_id"]: len(rec["steps"]) for rec in records}
    assert (len(length), sum(length.values())) == (HELDOUT_RUNS, HELDOUT_STEPS)
    labels = [json.loads(line) for line in KNOWN_SETS["operator_evals_heldout"][2].read_text().splitlines()]
    assert {rec["task_id"] for rec in labels} == set(length)
    assert all(rec["last_step"] < length[rec["task_id"]] for rec in labels if rec["kind"])


# A second labeller on runs 3 and 4 of the held-out sample (OPERATOR_EVALS.md "Agreement on runs 3-4"),
# labelled blind to the first labeller's labels and committed first; (runs, loop, side-effect labels).
SECOND_LABELLER = KNOWN_SETS["operator_evals_heldout"][2].with_name(
    "operator_evals_heldout_second_labeller.jsonl"
)
SECOND_BY_RUN = {"3": (82, 29, 4), "4": (86, 26, 3)}
SECOND_BY_AGENT = {"BrowserUse": (51, 11, 2), "Convergence": (57, 38, 2), "Notte": (60, 6, 3)}


def _label_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _runs_3_and_4(labels: list[dict]) -> list[dict]:
    return [rec for rec in labels if rec["task_id"].rsplit("/", 1)[1] in ("3", "4")]


def test_the_second_labeller_covers_runs_3_and_4_of_the_held_out_labels_once_with_steps_in_order():
    second = _label_lines(SECOND_LABELLER)
    first = _runs_3_and_4(_label_lines(KNOWN_SETS["operator_evals_heldout"][2]))
    assert {rec["task_id"] for rec in second} == {rec["task_id"] for rec in first}  # the same 168 runs only
    for prefix, suffix, counts in [("", "/" + r, c) for r, c in SECOND_BY_RUN.items()] + [
        (a + "/", "", c) for a, c in SECOND_BY_AGENT.items()
    ]:
        mine = [r for r in second if r["task_id"].startswith(prefix) and r["task_id"].endswith(suffix)]
        kinds = [rec["kind"] for rec in mine]
        runs = len({rec["task_id"] for rec in mine})
        assert (runs, kinds.count("loop"), kinds.count("side_effect")) == counts, prefix + suffix
    by_run: dict[str, list[dict]] = {}
    for rec in second:
        by_run.setdefault(rec["task_id"], []).append(rec)
    for tid, recs in by_run.items():
        if any(rec["kind"] is None for rec in recs):
            assert len(recs) == 1, tid  # a clean run has one line, and no labels
            continue
        spans = [(rec["step"], rec["last_step"]) for rec in recs]
        assert all(0 <= a <= b for a, b in spans) and spans == sorted(spans), tid
        loops = [(rec["step"], rec["last_step"]) for rec in recs if rec["kind"] == "loop"]
        assert all(a[1] < b[0] for a, b in zip(loops, loops[1:])), tid  # loop spans of a run never overlap


def test_the_two_labellers_agreement_on_runs_3_and_4_is_the_one_reported(tmp_path):
    """The evaluation's matching (overlap within TOLERANCE) between the two label files; no detector runs."""
    from flows.failure_mining.evaluation import TOLERANCE, _matched
    from flows.failure_mining.real_eval import labels_for

    first = tmp_path / "first.jsonl"
    lines = _runs_3_and_4(_label_lines(KNOWN_SETS["operator_evals_heldout"][2]))
    first.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    ids = sorted({rec["task_id"] for rec in lines})
    frames = {"trajectories": pl.DataFrame({"task_id": ids, "trajectory_id": ids})}
    a, _ = labels_for(frames, first)
    b, _ = labels_for(frames, SECOND_LABELLER)
    got = {}
    for kind in ("loop", "side_effect"):
        ak, bk = a.filter(pl.col("kind") == kind), b.filter(pl.col("kind") == kind)
        matched = (_matched(ak, bk, TOLERANCE).sum(), _matched(bk, ak, TOLERANCE).sum())
        got[kind] = (ak.height, bk.height, *matched)
    # (first's labels, second's, first's matched, second's matched): loop F1 0.953, side effects 1.0
    assert got == {"loop": (52, 55, 51, 51), "side_effect": (8, 7, 8, 7)}


@pytest.mark.skipif(
    known_set_data("operator_evals_heldout") is None,
    reason="runs 3-7 of the fresh set are not here (see tests/data/mining_eval/OPERATOR_EVALS.md)",
)
def test_the_second_labeller_names_every_run_3_and_4_of_the_built_sample_and_only_its_steps():
    """Reads data.jsonl as text only (no importer, no detector)."""
    records = [json.loads(line) for line in known_set_data("operator_evals_heldout").read_text().splitlines()]
    length = {rec["task_id"]: len(rec["steps"]) for rec in _runs_3_and_4(records)}
    assert (len(length), sum(length.values())) == (168, 1943)
    labels = _label_lines(SECOND_LABELLER)
    assert {rec["task_id"] for rec in labels} == set(length)
    assert all(rec["last_step"] < length[rec["task_id"]] for rec in labels if rec["kind"])

# ---- the third set: ColorBrowserAgent's WebArena runs (tests/data/mining_eval/WEBARENA_COLORBROWSER.md) ----


def _dump(output, url: str, axtree: str, error: str = "") -> dict:
    obs = {
        "goal": "Post a comment",
        "open_pages_urls": ["http://shop.test/", url],
        "active_page_index": [1],
        "axtree_txt": axtree,
        "last_action_error": error,
    }
    return {"step": 0, "obs": obs, "action": output}


def _webarena_repo(tmp_path: Path) -> Path:
    """A git repository laid out as MadeAgents/browser-agent's WebArena results, with two runs (made here)."""
    tree = "RootWebArea 'Forum'\n\t[12] textbox 'Comment'\n\t[15] button 'Post'"
    runs = {
        "task_3": (
            [
                _dump(
                    "<think>\nType the comment.\n</think>\n<action>\n```fill('12', 'nice')```\n</action>",
                    "u/a",
                    tree,
                ),
                _dump('<think>Post it.</think>\n<action>\n```click("15")```', "u/a", tree),  # never closed
                _dump("", "u/a", tree, error="TimeoutError: Locator.click: Timeout 500ms exceeded."),
                _dump(
                    "<think>Done.</think><action>```send_msg_to_user('posted')```</action",
                    "u/b",
                    tree,
                    error="ValueError: Received an empty action.",
                ),
                _dump("<think>Done.</think><action>```send_msg_to_user('posted')```</action>", "u/b", tree),
            ],
            {"n_steps": 4, "cum_reward": 1.0},  # the fifth dump is the final observation: never executed
        ),
        "task_4": (
            [_dump("<think>Look.</think><action>```hover('15')```</action>", "u/c", tree)],
            {"n_steps": 1},
        ),
    }
    work = tmp_path / "browser-agent"
    for task, (dumps, summary) in runs.items():
        folder = work / "trajectories" / "webarena" / "results" / task
        folder.mkdir(parents=True)
        for i, dump in enumerate(dumps):
            (folder / f"steps_info_{i}.json").write_text(json.dumps(dump))
        (folder / "summary_info.json").write_text(json.dumps(summary))
    chores = work / "trajectories" / "webchorearena" / "results" / "task_10000"  # the same agent's other benchmark
    chores.mkdir(parents=True)
    (chores / "steps_info_0.json").write_text(json.dumps(_dump("<action>```click('15')```</action>", "u/d", tree)))
    (chores / "summary_info.json").write_text(json.dumps({"n_steps": 1}))
    broken = work / "trajectories" / "webarena" / "results" / "task_5"  # untrusted: not JSON, wrong types
    broken.mkdir(parents=True)
    (broken / "steps_info_0.json").write_text("{not json")
    (broken / "steps_info_1.json").write_text(json.dumps({"obs": ["x"], "action": ["click('1')"]}))
    (broken / "summary_info.json").write_text(json.dumps({"n_steps": "two"}))
    return _committed(work)


def test_webarena_step_dumps_become_steps_the_importer_reads_with_targets_words_and_errors(tmp_path):
    from flows.failure_mining.real_eval import load_set
    from flows.failure_mining.webarena_colorbrowser_set import (
        WEBCHOREARENA_RESULTS,
        build_webarena_colorbrowser_set,
    )

    repo = _webarena_repo(tmp_path)
    some = tmp_path / "some.jsonl"
    assert build_webarena_colorbrowser_set(repo, some, sample=lambda task_id: task_id.endswith("_3")) == 1
    out = tmp_path / "data.jsonl"
    assert build_webarena_colorbrowser_set(repo, out) == 3  # WebArena's folder only
    chores = tmp_path / "chores.jsonl"
    assert build_webarena_colorbrowser_set(repo, chores, results=WEBCHOREARENA_RESULTS) == 1
    (chore,) = map(json.loads, chores.read_text().splitlines())
    assert chore["task_id"] == "webchorearena/task_10000" and chore["source"]["path"].endswith("webchorearena/results/task_10000")
    assert [s["action"] for s in chore["steps"]] == ["click('15')"]
    records = {r["task_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert [s["action"] for s in records["webarena/task_5"]["steps"]] == ["empty_action()"] * 2
    run = records["webarena/task_3"]
    assert run["instruction"] == "Post a comment" and run["final_answer"] == "send_msg_to_user('posted')"
    steps = run["steps"]
    assert [s["action"] for s in steps] == [
        "fill('12', 'nice')",
        'click("15")',
        "empty_action()",  # the harness got nothing to run; kept so indices stay the source's
        "send_msg_to_user('posted')",
    ]
    assert [s["think"] for s in steps] == ["Type the comment.", "Post it.", None, "Done."]
    assert steps[0]["url"] == "u/a" and steps[3]["url"] == "u/b"  # the active page, not the first
    assert steps[1]["error"].startswith("TimeoutError") and steps[0]["error"] is None  # the next dump's
    assert steps[2]["error"] == "ValueError: Received an empty action."
    assert run["source"]["license"] == "Apache-2.0" and len(run["source"]["commit"]) == 40
    frames = load_set(out)  # the real importer: nothing quarantined, targets by role and name
    imported = frames["steps"].sort("trajectory_id", "step_index")
    assert imported.height == 7
    actions = " ".join(imported["actions_json"].to_list())
    assert '"name": "Post"' in actions and '"name": "Comment"' in actions
    unmapped = imported.filter(pl.col("format_error").is_not_null())["format_error"].to_list()
    assert sorted(unmapped) == ["unmapped_action: empty_action()"] * 3 + ["unmapped_action: hover('15')"]


# ColorBrowserAgent's runs (MadeAgents/browser-agent): the third set (WebArena, WEBARENA_COLORBROWSER.md) and the
# fourth (WebChoreArena, WEBCHOREARENA_COLORBROWSER.md): (set, task prefix, runs, steps, (loops, side effects))
COLORBROWSER_SETS = [
    ("webarena_colorbrowser", "webarena/task_", 809, 6999, (69, 376)),  # the 812 tasks but 3 whose browser never started
    ("webchorearena_colorbrowser", "webchorearena/task_", 527, 11429, (79, 140)),  # every executed run
]


@pytest.mark.parametrize("name,prefix,runs,steps,counts", COLORBROWSER_SETS)
def test_the_colorbrowser_sets_labels_cover_every_run_once_with_steps_in_order(name, prefix, runs, steps, counts):
    labels = [json.loads(line) for line in KNOWN_SETS[name][2].read_text().splitlines()]
    assert all(rec["task_id"].startswith(prefix) for rec in labels)
    assert len({rec["task_id"] for rec in labels}) == runs
    kinds = [rec["kind"] for rec in labels]
    assert (kinds.count("loop"), kinds.count("side_effect")) == counts
    assert all(0 <= rec["step"] <= rec["last_step"] for rec in labels if rec["kind"])


@pytest.mark.parametrize("name,prefix,runs,steps,counts", [
    pytest.param(*s, marks=pytest.mark.skipif(known_set_data(s[0]) is None, reason=f"{s[0]}'s data.jsonl is not here "
                                              "(see its recipe in tests/data/mining_eval/)")) for s in COLORBROWSER_SETS])
def test_on_the_colorbrowser_sets_the_miner_beats_the_baselines(name, prefix, runs, steps, counts):
    """Each was measured once blind (DESIGN_NOTES: mining-5 on the third, mining-6 on the fourth); both are
    in-sample now. Side effects meet the issue's bar on both; loops only beat the baseline."""
    result = evaluate_set(known_set_data(name), KNOWN_SETS[name][2], split=False)
    labels = result["labels"]
    assert (result["trajectories"], result["steps"], labels["loop"], labels["side_effect"]) == (runs, steps, *counts)
    assert result["kinds"]["loop"]["f1"] > result["baselines"]["loop: same action 3x in a row"]["f1"]
    side = result["kinds"]["side_effect"]
    assert side["recall"] >= 0.8 and side["precision"] >= 0.6, side  # a manifest's sensitive list finds none


# The fifth set (OSWORLD_VERIFIED.md): UI-TARS and Doubao on OSWorld's desktop, labelled blind; the labelled
# batches are the runs of ranks 0..OSWORLD_RUNS-1 (sha256 of the task id), every other run of data.jsonl unscored.
OSWORLD_RUNS, OSWORLD_STEPS, OSWORLD_COUNTS = 722, 23733, (388, 555)


def _osworld_text(task: str, steps: list[tuple[str, str]]) -> str:
    """A run as the source's text files lay it out (made here)."""
    head = f"Trajectory ID: x\nSource Model: m\nDomain: os\n\nTask:\n{task}\n\nSuccess Binary: False\nSuccess Raw: 0.0\n\n"
    head += f"Number of Steps: {len(steps)}\n\n" + "=" * 60 + "\nTRAJECTORY\n" + "=" * 60 + "\n"
    body = ""
    for n, (thought, code) in enumerate(steps, 1):
        body += f"\n{'=' * 50}\nSTEP {n}\n{'=' * 50}\n\n" + (f"Thought:\n{thought}\n\n" if thought else "") + f"Action:\n{code}\n"
    return head + body


def _osworld_repo(tmp_path: Path) -> Path:
    texts = tmp_path / "summary" / "outputs" / "trajectory_texts"
    texts.mkdir(parents=True)
    run = [
        ("点击 File 菜单。", "pyautogui.click(96.0, 72.0, button='left')"),
        ("菜单没有展开，再次点击。", "pyautogui.click(2400.0, 1080.0, button='right')"),  # off the screen: clamped
        ("输入文件名。", "pyperclip.copy('a\nb \\'c\\'')\npyautogui.hotkey('ctrl', 'v')\npyautogui.press('enter')"),
        ("", "pyautogui.moveTo(192.0, 108.0)\npyautogui.dragTo(384.0, 216.0, duration=1.0)"),
        ("保存。", "pyautogui.hotkey('ctrl', 's')\npyautogui.scroll(-5, x=960.0, y=540.0)"),
        ("", "WAIT"),
        ("写一个程序。", "with open('r.txt', 'w') as f:\n    f.write('x')"),
        ("", "# Unrecognized action type: call_user"),
        ("", "DONE\n\n" + "=" * 50 + "\nSTEP ?\n" + "=" * 50),
    ]
    (texts / "UI-TARS-0717-100step__0a0faba3-5580-44df-965d-f562a99b291c.txt").write_text(_osworld_text("Save it", run))
    (texts / "doubao-x__11111111-2222-3333-4444-555555555555.txt").write_text(_osworld_text("Stop", [("", "FAIL")]))
    (texts / "notes.txt").write_text("not a run")  # untrusted: left out, by its name
    (texts / "m__00000000-0000-0000-0000-000000000000.txt").write_text("garbage, no task and no step")
    work = texts.parents[1]
    return _committed(work)


def test_osworld_run_texts_become_steps_the_importer_reads_with_words_and_grid_points(tmp_path):
    from flows.failure_mining.osworld_verified_set import build_osworld_verified_set
    from flows.failure_mining.real_eval import load_set

    out = tmp_path / "data.jsonl"
    assert build_osworld_verified_set(_osworld_repo(tmp_path), out) == 2
    records = {r["task_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    run = records["UI-TARS-0717-100step/0a0faba3-5580-44df-965d-f562a99b291c"]
    assert run["instruction"] == "Save it" and run["policy"] == "UI-TARS-0717-100step"
    assert run["source"]["license"] == "MIT" and len(run["source"]["commit"]) == 40
    assert [s["actions"] for s in run["steps"]] == [
        [{"action": "left_click", "x": 50, "y": 66}],
        [{"action": "right_click", "x": 999, "y": 999}],
        [{"action": "type", "text": "a\nb 'c'"}, {"action": "key", "keys": ["Enter"]}],
        [{"action": "left_click_drag", "x": 100, "y": 100, "x2": 200, "y2": 200}],
        [{"action": "key", "keys": ["Control", "s"]}, {"action": "scroll", "pixels": -500, "x": 500, "y": 500}],
        [{"action": "wait"}],
        [{"action": "shell", "command": "with open('r.txt', 'w') as f:\n    f.write('x')"}],  # parsed, never run
        [],  # the harness ran nothing
        [{"action": "terminate", "status": "success"}],  # the trailing empty banner is not code
    ]
    assert run["steps"][1]["raw_output"] == "菜单没有展开，再次点击。\npyautogui.click(2400.0, 1080.0, button='right')"
    assert records["doubao-x/11111111-2222-3333-4444-555555555555"]["steps"][0]["actions"][0]["status"] == "failure"
    frames = load_set(out)  # the real importer: nothing quarantined
    assert frames["steps"].height == 10 and frames["trajectories"].height == 2


def test_the_osworld_labels_cover_the_labelled_batches_once_with_steps_in_order():
    labels = [json.loads(line) for line in KNOWN_SETS["osworld_verified"][2].read_text().splitlines()]
    assert len({rec["task_id"] for rec in labels}) == OSWORLD_RUNS
    kinds = [rec["kind"] for rec in labels]
    assert (kinds.count("loop"), kinds.count("side_effect")) == OSWORLD_COUNTS
    assert all(0 <= rec["step"] <= rec["last_step"] for rec in labels if rec["kind"])


@pytest.mark.skipif(
    known_set_data("osworld_verified") is None,
    reason="the fifth set's data.jsonl is not here (see tests/data/mining_eval/OSWORLD_VERIFIED.md)",
)
def test_on_the_blind_osworld_set_the_miner_beats_the_baselines():
    """Labelled before any detector ran on it (OSWORLD_VERIFIED.md); mining-7 measured on it once, on
    2026-12-02: loop P 0.796 R 0.572 F1 0.666 against the same-action baseline's 0.409, side effects P 0.861
    R 0.238 (the manifest baseline finds none). The issue's bars (loop F1 >= 0.85, side-effect R >= 0.8) are
    NOT met on this set: the floors below are what was measured, so a change that loses ground fails here.
    In-sample since (helper 15e read it to add the model's words in other languages): loop P 0.823 R 0.637 F1
    0.718, side effects P 0.766 R 0.252 - the coordinate clicks the Chinese words name add recall and cost
    precision (LABELLING.md "mining-7: the model's words in other languages"); the floors follow. mining-8
    (helper 15h, in-sample: coordinates by distance, drags, waits, re-aims the words confirm, stuck stretches):
    loop P 0.852 R 0.701 F1 0.769; the loop floor moved up to 0.76, side effects unchanged.
    Then (lead,
    in-sample): a Save / Create the words call a button counts, and a sentence opening with a later step
    names no control of this click: side effects P 0.751 R 0.494; with files dragged into a folder and Rename /
    Install / Restore buttons: P 0.760 R 0.632. mining-9 counts one loop found by several rules once (116 of
    the 554 findings were a second rule's copy of a loop already found): loop P 0.820 R 0.701 F1 0.756, the
    same recall; the floor follows the count to 0.75."""
    result = evaluate_set(known_set_data("osworld_verified"), KNOWN_SETS["osworld_verified"][2], split=False)
    labels = result["labels"]
    assert (result["trajectories"], result["steps"], labels["loop"], labels["side_effect"]) == (
        OSWORLD_RUNS,
        OSWORLD_STEPS,
        *OSWORLD_COUNTS,
    )
    loop, baselines = result["kinds"]["loop"], result["baselines"]
    assert loop["f1"] >= 0.75 and loop["f1"] > baselines["loop: same action 3x in a row"]["f1"] + 0.2, loop
    side = result["kinds"]["side_effect"]
    assert side["recall"] >= 0.62 and side["precision"] >= 0.75, side
    assert side["recall"] > baselines["side_effect: manifest sensitive lists only"]["recall"]


ANDROID_RUNS, ANDROID_STEPS, ANDROID_COUNTS = 41, 711, (22, 18)


def _el(text, desc, cls, box, resource=None):
    x0, y0, x1, y1 = box
    return {"text": text, "content_description": desc, "class_name": f"android.widget.{cls}", "resource_name": resource,
            "bbox_pixels": {"x_min": x0, "x_max": x1, "y_min": y0, "y_max": y1}}  # fmt: skip


def _android_repo(tmp_path: Path) -> Path:
    """A made-up snapshot in gyaanantia/android_world_agents' layout: results/**/<task>_<variant>_<model>*.json."""
    hidden = _el(None, None, "FrameLayout", (0, 0, 1080, 2400))  # in the harness's list, left out of the prompt's
    save = _el("SAVE", None, "Button", (800, 100, 1000, 200))
    name = _el("Adam", None, "EditText", (0, 400, 1080, 500))
    listing = (
        "Here is a list of descriptions for some UI elements on the current screen:\n"
        'A. "SAVE" button\nB. a "First name" text box with the text "Adam"\n\nNow output an action'
    )

    def step(said, summary, elements=(hidden, save, name), prompt=listing):
        return {"agent_data": {"action_output": said, "summary": summary, "before_element_list": list(elements),
                               "action_prompt": prompt}}  # fmt: skip

    run = {
        "goal": "Create a new contact for Adam.", "model_name": "gpt-x", "prompt_variant": "base",
        "step_records": [
            step('Reason: type the name.\nAction: {"action_type": "input_text", "text": "Adam", "index": 1}',
                 'Action selected: {...}. Typed "Adam".'),
            step('Reason: save it.\nAction: {"action_type": "click", "index": 0}', "Action selected: {...}. Saved."),
            step('Reason: again.\nAction: {"action_type": "click", "index":  N}',
                 "Can not parse the output to a valid action. Please make sure to pick the action from the list!"),
            step('Reason: tap the corner.\nAction: {"action_type": "click", "x": 540, "y": 1200}', "Tapped."),
            step('Reason: T3A listing.\nAction: {"action_type": "scroll", "direction": "down", "index": 1}', "Scrolled.",
                 prompt="UI element 1: UIElement(text='SAVE', ...)"),  # its own listing counts the harness's list
            step('Reason: done.\nAction: {"action_type": "status", "goal_status": "complete"}',
                 "Agent thinks the request has been completed."),
        ],
    }  # fmt: skip
    results = tmp_path / "snapshot" / "results" / "results_seeact"
    results.mkdir(parents=True)
    (results / "ContactsAddContact_base_gpt-x_1.json").write_text(json.dumps(run))
    (results.parent / "demo.json").write_text(json.dumps({"goal": "a demo", "observations": []}))  # no steps: left out
    (results.parent / "broken.json").write_text("{not json")
    return _committed(tmp_path / "snapshot")


def test_android_world_episodes_become_steps_the_importer_reads_with_named_targets_words_and_errors(tmp_path):
    from flows.failure_mining.android_world_agents_set import build_android_world_agents_set
    from flows.failure_mining.real_eval import load_set

    out = tmp_path / "data.jsonl"
    assert build_android_world_agents_set(_android_repo(tmp_path), out) == 1
    (run,) = map(json.loads, out.read_text().splitlines())
    assert run["task_id"] == "results/results_seeact/ContactsAddContact_base_gpt-x_1"
    assert (run["policy"], run["model"], run["instruction"]) == ("seeact-base", "gpt-x", "Create a new contact for Adam.")
    assert run["source"]["license"].startswith("none stated") and len(run["source"]["commit"]) == 40
    assert [s["actions"] for s in run["steps"]] == [
        # the index counts the prompt's A., B., ...: B is the field, placed at its own box's centre
        [{"action": "type", "text": "Adam", "target": {"role": "textbox", "name": "First name"}}],
        [{"action": "left_click", "x": 833, "y": 62, "target": {"role": "button", "name": "SAVE"}}],
        [],  # the harness could not parse the turn
        [{"action": "left_click", "x": 500, "y": 500}],  # given in pixels
        [{"action": "scroll", "pixels": -300, "x": 833, "y": 62}],  # T3A's listing: index 1 of the harness's list
        [{"action": "terminate", "status": "success"}],
    ]
    assert run["steps"][1]["raw_output"].endswith("\nSummary: Action selected: {...}. Saved.")
    assert run["steps"][2]["error"].startswith("Can not parse the output") and "error" not in run["steps"][1]
    frames = load_set(out)  # the real importer: nothing quarantined
    assert frames["steps"].height == 6 and frames["steps"]["error"].drop_nulls().len() == 1


def test_the_android_world_labels_cover_every_run_once_with_steps_in_order():
    labels = [json.loads(line) for line in KNOWN_SETS["android_world_agents"][2].read_text().splitlines()]
    runs = {rec["task_id"] for rec in labels}
    assert len(runs) == ANDROID_RUNS
    clean = [rec["task_id"] for rec in labels if rec["kind"] is None]
    assert len(clean) == len(set(clean)) and not set(clean) & {rec["task_id"] for rec in labels if rec["kind"]}
    kinds = [rec["kind"] for rec in labels]
    assert (kinds.count("loop"), kinds.count("side_effect")) == ANDROID_COUNTS
    assert all(0 <= rec["step"] <= rec["last_step"] for rec in labels if rec["kind"])
    data = known_set_data("android_world_agents")
    if data is not None:  # with the data here: every run labelled, every label inside its run
        lengths = {r["task_id"]: len(r["steps"]) for r in map(json.loads, data.read_text().splitlines())}
        assert set(lengths) == runs and sum(lengths.values()) == ANDROID_STEPS
        assert all(rec["last_step"] < lengths[rec["task_id"]] for rec in labels if rec["kind"])


@pytest.mark.skipif(
    known_set_data("mobile_agent_bench") is None,
    reason="the mobile-agent-bench set's data.jsonl is not here (see tests/data/mining_eval/MOBILE_AGENT_BENCH.md)",
)
def test_on_the_phone_agents_set_the_miner_beats_the_baseline():
    """Labelled blind (MOBILE_AGENT_BENCH.md) and measured once at mining-9 (loop F1 0.399 against the
    baseline's 0.061; side effects P 1.0 R 0.114). In-sample since: failing stretches (loop F1 0.529), then
    mining-10's repeats the instruction asks for (tasks b6-b8: "tap Ping three times", "5 iterations"): loop
    P 0.684 R 0.539 F1 0.603, recall unchanged; then its missed side effects were read: MCP tool names
    (`nerve_clear_app_data`), a control named bare after the verb ("Now tapping Submit."), a turn's later
    target: side effects P 1.0 R 0.714; then (mining-11) the builder kept a screenshot saved to a file as the
    call, and a stopped recording counts as written: side effects P 1.0 R 1.0. The loop bar of the issue is not
    met here: the floors are what was measured."""
    result = evaluate_set(known_set_data("mobile_agent_bench"), KNOWN_SETS["mobile_agent_bench"][2], split=False)
    assert (result["trajectories"], result["labels"]["loop"], result["labels"]["side_effect"]) == (167, 102, 35)
    loop, baselines = result["kinds"]["loop"], result["baselines"]
    assert loop["f1"] >= 0.60 and loop["precision"] >= 0.68, loop
    assert loop["f1"] > baselines["loop: same action 3x in a row"]["f1"] + 0.4
    side = result["kinds"]["side_effect"]
    assert side["precision"] >= 0.9 and side["recall"] >= 0.97, side


@pytest.mark.skipif(
    known_set_data("android_world_agents") is None,
    reason="the AndroidWorld agents' set's data.jsonl is not here (see tests/data/mining_eval/ANDROID_WORLD_AGENTS.md)",
)
def test_on_the_android_world_set_the_miner_holds_what_was_measured():
    """Labelled blind (ANDROID_WORLD_AGENTS.md), measured once at mining-7 (loop F1 0.522, the baseline's
    0.781); in-sample since. mining-11's failing stretches from the words and scroll searches: loop P 0.667
    R 0.682 F1 0.674. The baseline still beats the miner here (its loops are mostly the same tap or scroll
    three times): the floor is what was measured, not the issue's target."""
    result = evaluate_set(known_set_data("android_world_agents"), KNOWN_SETS["android_world_agents"][2], split=False)
    assert (result["trajectories"], result["labels"]["loop"]) == (41, 22)
    loop = result["kinds"]["loop"]
    assert loop["f1"] >= 0.67 and loop["precision"] >= 0.66, loop


@pytest.mark.skipif(
    known_set_data("gbox_webarena") is None,
    reason="the GBOX WebArena set's data.jsonl is not here (see tests/data/mining_eval/GBOX_WEBARENA.md)",
)
def test_on_the_gbox_set_side_effects_meet_the_bar_and_loops_do_not():
    """Labelled blind (GBOX_WEBARENA.md) and measured once at mining-9: side effects P 0.625 R 0.836 (the bar
    met blind), loops F1 0.0 - as the baseline: each of its loops names one control in new free-text words."""
    result = evaluate_set(known_set_data("gbox_webarena"), KNOWN_SETS["gbox_webarena"][2], split=False)
    assert (result["labels"]["loop"], result["labels"]["side_effect"]) == (13, 55)
    side = result["kinds"]["side_effect"]
    assert side["recall"] >= 0.8 and side["precision"] >= 0.6, side
    assert result["kinds"]["loop"]["findings"] <= 3, result["kinds"]["loop"]  # no flood of false loops either


# What mining-15 measured on each labelled set: loop F1 and side-effect precision and recall at their floors, so a
# rule that loses ground on any set fails here. The bar (loop F1 >= 0.85) is met on ABP, the three OE sets,
# webtestpilot's two parts and android_world_mcp's ranks 78-111 (held out, scored once at mining-12 and once at
# mining-13: 0.549 -> 0.854).
MINING_15_FLOORS = {  # set: (loop F1, side-effect precision, side-effect recall), as mining-15 measured them
    "abp": (0.88, 0.80, 0.99),
    # (runs 0-1: the sign-up rule's two findings there are a Weiter on Google's form the labels of runs 3-7 and
    # of run 2 count, and a cookie banner's Accept pressed on GitHub's sign-up page)
    "operator_evals": (0.88, 0.66, 0.99),
    "operator_evals_run2": (0.86, 0.99, 0.99),
    "operator_evals_heldout": (0.87, 0.90, 0.99),
    "webarena_colorbrowser": (0.66, 0.94, 0.97),
    "webchorearena_colorbrowser": (0.72, 0.71, 0.96),
    "osworld_verified": (0.75, 0.76, 0.69),
    "android_world_agents": (0.67, 0.99, 0.55),
    "webcanvas": (0.58, 0.84, 0.93),
    "gbox_webarena": (0.0, 0.65, 0.90),
    "mobile_agent_bench": (0.60, 0.99, 0.99),
    "webtestpilot_baselines": (0.93, 0.79, 0.42),
    "webtestpilot_baselines_late": (0.87, 0.66, 0.39),
    "lyx_android_world": (0.82, 0.5, 0.99),
    "android_world_mcp": (0.79, 0.99, 0.57),
    "android_world_mcp_late": (0.81, 0.90, 0.76),
    "android_world_mcp_rest": (0.85, 0.71, 0.5),
    "webshop_react": (0.84, 0.99, 0.99),  # blind: scored once with mining-15 (2026-12-05), 0.849 / 1.0 / 1.0
    "react_brittleness": (0.98, 0.99, 0.99),  # blind: scored once with mining-15 (2026-12-05), 0.985 / 1.0 / 1.0
}


@pytest.mark.parametrize("name", sorted(MINING_15_FLOORS))
def test_each_labelled_set_keeps_what_mining_15_measured(name):
    if known_set_data(name) is None:
        pytest.skip(f"the {name} set's data.jsonl is not here (tests/data/mining_eval/*.md say how to build it)")
    loop_f1, side_p, side_r = MINING_15_FLOORS[name]
    kinds = evaluate_set(known_set_data(name), KNOWN_SETS[name][2], split=False)["kinds"]
    assert (kinds["loop"]["f1"] or 0.0) >= loop_f1, kinds["loop"]
    assert kinds["side_effect"]["precision"] >= side_p and kinds["side_effect"]["recall"] >= side_r, kinds["side_effect"]


def test_the_floors_name_every_known_set():
    assert set(MINING_15_FLOORS) == set(KNOWN_SETS)
