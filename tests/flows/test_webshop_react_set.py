"""The WebShop ReAct set (tests/data/mining_eval/WEBSHOP_REACT.md): the builder on a made-up notebook, and the
Mind2Web form's words. Nothing here imports or runs a detector (the set is labelled blind; the lead measures it
once): the importer is called directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flows.labelled_sets import committed, imported

# Printed as the notebook's `webshop_run` prints an episode, with the running score line after each
EPISODE_0 = """-----------------
0
Action: reset
Observation: 
Webshop 
Instruction:  
i need a red mug, and price lower than 20.00 dollars 
[Search] 

Action: search[red mug]
Observation: 
[Back to Search] 
Page 1 (Total results: 50) 
[Next >] 
[B01] 
Red Mug 
$9.99 

Action: think[B01 is a red mug under 20 dollars. I can check it.]
Observation: OK.

Action: click[B01]
Observation: 
[Back to Search] 
[< Prev] 
size [small][large]
Red Mug 
[Buy Now] 

Action: think[For a red mug, the item has options 'small' and 'large',
Observation: OK.

Action: think[I pick large.]
Observation: OK.

Action: click[large]
Observation: You have clicked large.

Action: click[Next >]
Observation: Invalid action!

Action: click[Buy Now]
Observation: Your score (min 0.0, max 1.0): 1.0

1 1.0 1.0 0.0
-------------
"""
EPISODE_1 = """-----------------
1
Action: reset
Observation: 
Webshop 
Instruction:  
i want a blue pen 
[Search] 

Action: search[blue pen]
Observation: 
[Back to Search] 
Page 1 (Total results: 50) 
Action: an item list printed with a line that opens like an action is still this observation 

Action: click[small]
Observation: Invalid action!

Action: think[I give up.]
Observation: OK.

Action: exit[quit]
Observation: Invalid action!

Action: search blue pen
Observation: Invalid action!

2 0.5 0.5 0.0
-------------
"""


CUT = EPISODE_0.index("Action: think[For a red mug")


def _notebook(tmp_path: Path) -> Path:
    cells = [
        {"cell_type": "markdown", "source": ["# ReAct"]},
        {"cell_type": "code", "source": ["res1 = run_episodes(prompt1, 500)"], "outputs": [
            {"output_type": "stream", "name": "stdout", "text": EPISODE_0[:CUT].splitlines(keepends=True)},
            # a warning printed mid-episode (the kernel's stderr) is not part of the page
            {"output_type": "stream", "name": "stderr", "text": "DeprecationWarning: invalid escape sequence\n"},
            {"output_type": "stream", "name": "stdout", "text": EPISODE_0[CUT:]},
            {"output_type": "stream", "name": "stdout", "text": EPISODE_1},  # a string, not a list of lines
            {"output_type": "execute_result", "data": {"text/plain": ["-----------------\n9\n"]}},
        ]},
    ]  # fmt: skip
    work = tmp_path / "snapshot"
    work.mkdir()
    (work / "WebShop.ipynb").write_text(json.dumps({"cells": cells}))
    return committed(work)


def test_webshop_episodes_become_mind2web_steps_with_the_thoughts_before_each_action(tmp_path):
    from flows.failure_mining.webshop_react_set import build_webshop_react_set

    out = tmp_path / "data.jsonl"
    assert (
        build_webshop_react_set(_notebook(tmp_path), out, "HEAD") == 2
    )  # the result cell's text is not printed output
    first, second = map(json.loads, out.read_text().splitlines())
    assert (first["task_id"], first["instruction"], first["ended"]) == (
        "webshop/fixed_0", "i need a red mug, and price lower than 20.00 dollars", "terminated")  # fmt: skip
    assert second["ended"] == "max_steps" and first["source"]["path"] == "WebShop.ipynb#episode-0"
    assert first["source"]["license"] == "MIT"
    assert [s["action_repr"] for s in first["steps"]] == [
        "[searchbox] Search -> TYPE: red mug",
        "[] B01 -> CLICK",
        "[] large -> CLICK",
        "[] Next > -> CLICK",
        "[] Buy Now -> CLICK",
    ]  # reset and the thoughts are not steps
    thoughts = [s["think"] for s in first["steps"]]
    assert thoughts[0] is None and thoughts[1] == "B01 is a red mug under 20 dollars. I can check it."
    # a thought cut off by the model's token limit (no "]") and the one after it both go to the next action
    assert thoughts[2] == "For a red mug, the item has options 'small' and 'large',\nI pick large."
    assert [s["error"] for s in first["steps"]] == [None, None, None, "Invalid action!", None]
    assert first["steps"][4]["observation"] == "Your score (min 0.0, max 1.0): 1.0"
    assert first["steps"][1]["observation"].endswith("Red Mug \n[Buy Now]")
    # an observation line that happens to open with "Action: " but not at a step's start stays in it
    assert [s.get("action_repr") or s["raw_output"] for s in second["steps"]] == [
        "[searchbox] Search -> TYPE: blue pen",
        "[] small -> CLICK",
        "I give up.\nexit[quit]",
        "search blue pen",
    ]
    # actions the store does not have are the model's mistakes, kept with no action and that format error
    assert [(s.get("actions"), s.get("format_error")) for s in second["steps"][2:]] == [
        ([], "unknown_action: exit[quit]"),
        ([], "unknown_action: search blue pen"),
    ]
    assert second["steps"][0]["observation"].endswith("is still this observation")

    report, rows = imported(
        out,
        "SELECT raw_output, actions_json, format_error, error FROM steps ORDER BY trajectory_id, step_index",
    )
    assert (report.accepted, report.quarantined_total, report.steps) == (2, 0, 9)
    by_raw = {raw: (json.loads(acts), fmt, err) for raw, acts, fmt, err in rows}
    # the model's words reach raw_output before the action, as for the other formats
    acts, _, _ = by_raw["B01 is a red mug under 20 dollars. I can check it.\n[] B01 -> CLICK"]
    assert acts == [{"action": "left_click", "target": {"role": "generic", "name": "B01", "nth": 0}}]
    typed, _, _ = by_raw["[searchbox] Search -> TYPE: red mug"]
    assert (
        typed[0]["action"] == "type"
        and typed[0]["text"] == "red mug"
        and typed[0]["target"]["role"] == "searchbox"
    )
    assert by_raw["[] Next > -> CLICK"][2] == "Invalid action!"
    # kept, so the labels' step indices stay the source's, as the agent's format errors (not our mapping's gap)
    assert by_raw["I give up.\nexit[quit]"] == ([], "unknown_action: exit[quit]", "Invalid action!")
    assert by_raw["search blue pen"][1] == "unknown_action: search blue pen"


def test_reruns_of_the_harness_keep_each_notebooks_policy_and_tell_their_episodes_apart(tmp_path):
    from flows.failure_mining.webshop_react_set import build_webshop_react_set

    git_dir = _notebook(tmp_path)  # the same notebook read twice, as two models' runs
    runs = (("WebShop.ipynb", "react-model-a", "model-a"), ("WebShop.ipynb", "react-model-b", "model-b"))
    out = tmp_path / "data.jsonl"
    assert build_webshop_react_set(git_dir, out, "HEAD", runs, "someone/rerun") == 4
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task_id"], r["policy"]) for r in records] == [
        ("model-a/fixed_0", "react-model-a"),
        ("model-a/fixed_1", "react-model-a"),
        ("model-b/fixed_0", "react-model-b"),
        ("model-b/fixed_1", "react-model-b"),
    ]
    assert records[0]["source"]["repo"] == "someone/rerun"


def test_a_snapshot_without_the_notebook_is_refused_by_name(tmp_path):
    from flows.failure_mining.webshop_react_set import build_webshop_react_set

    work = tmp_path / "snapshot"
    work.mkdir()
    (work / "README.md").write_text("no notebook")
    with pytest.raises(ValueError, match="WebShop.ipynb"):
        build_webshop_react_set(committed(work), tmp_path / "data.jsonl", "HEAD")


def test_the_webshop_labels_cover_every_episode_once_with_steps_in_order():
    from tests.flows.labelled_sets import ROOT, checked_labels

    labels = ROOT / "tests" / "data" / "mining_eval" / "webshop_react_labels.jsonl"
    records, ids, lengths = checked_labels(
        labels, 500, (29, 465), "FLYWHEEL_MINING_EVAL_WEBSHOP_REACT", "webshop_react"
    )
    assert ids == {f"webshop/fixed_{n}" for n in range(500)}
    # every purchase is an episode's last step, one per episode
    buys = [rec for rec in records if rec["kind"] == "side_effect"]
    assert len({rec["task_id"] for rec in buys}) == len(buys) and all(
        rec["step"] == rec["last_step"] for rec in buys
    )
    if lengths is not None:
        assert all(rec["step"] == lengths[rec["task_id"]] - 1 for rec in buys)


def test_the_react_brittleness_labels_cover_every_episode_once_with_steps_in_order():
    from tests.flows.labelled_sets import ROOT, checked_labels

    labels = ROOT / "tests" / "data" / "mining_eval" / "react_brittleness_labels.jsonl"
    records, ids, lengths = checked_labels(
        labels, 806, (333, 471), "FLYWHEEL_MINING_EVAL_REACT_BRITTLENESS", "react_brittleness"
    )
    prefixes = {task_id.split("/")[0] for task_id in ids}
    assert prefixes == {"llama-3.1-8b", "gpt-3.5-turbo-instruct", "gpt-3.5-turbo"}
    buys = [rec for rec in records if rec["kind"] == "side_effect"]
    assert len({rec["task_id"] for rec in buys}) == len(buys)
    if lengths is not None:  # every purchase ends its episode
        assert all(rec["step"] == rec["last_step"] == lengths[rec["task_id"]] - 1 for rec in buys)


@pytest.mark.parametrize(
    "name, episodes, prefixes, loops, agreed, purchases",
    [
        # REACT_BRITTLENESS.md: the GPT-3.5 episodes; loops 68 of 68 and 68 of 69, purchases 332 both ways
        ("react_brittleness", 406, ("gpt-3.5-turbo-instruct/", "gpt-3.5-turbo/"), (68, 69), (68, 68), 332),
        # WEBSHOP_REACT.md: every episode; loops 27 of 29 and 27 of 27, purchases 465 both ways
        ("webshop_react", 500, ("webshop/",), (29, 27), (27, 27), 465),
    ],
)
def test_a_second_labeller_covers_its_episodes_once_and_agrees_as_reported(
    name, episodes, prefixes, loops, agreed, purchases
):
    from tests.flows.labelled_sets import ROOT

    here = ROOT / "tests" / "data" / "mining_eval"
    second = [json.loads(line) for line in (here / f"{name}_second_labeller.jsonl").read_text().splitlines()]
    first = [json.loads(line) for line in (here / f"{name}_labels.jsonl").read_text().splitlines()]
    ids = [rec["task_id"] for rec in second if rec["kind"] is None] + [rec["task_id"] for rec in second if rec["kind"]]
    assert len(set(ids)) == episodes and all(i.startswith(prefixes) for i in ids)
    assert not {rec["task_id"] for rec in second if rec["kind"] is None} & {rec["task_id"] for rec in second if rec["kind"]}
    assert all(rec["step"] <= rec["last_step"] for rec in second if rec["kind"])
    first = [rec for rec in first if rec["task_id"] in set(ids)]
    assert {rec["task_id"] for rec in first} == set(ids)

    def agreeing(labels, others, kind):
        return sum(
            any(
                o["task_id"] == rec["task_id"] and o["kind"] == kind
                and rec["step"] <= o["last_step"] + 1 and o["step"] <= rec["last_step"] + 1
                for o in others
            )
            for rec in labels if rec["kind"] == kind
        )  # fmt: skip

    assert tuple(sum(rec["kind"] == "loop" for rec in s) for s in (first, second)) == loops
    assert (agreeing(first, second, "loop"), agreeing(second, first, "loop")) == agreed
    assert agreeing(first, second, "side_effect") == agreeing(second, first, "side_effect") == purchases


def test_a_notebook_of_the_wrong_shape_gives_no_episode_and_no_crash():
    from flows.failure_mining.webshop_react_set import episodes, printed_output

    odd = [
        {"cells": {"not": "a list"}},
        {"cells": ["a string", 7, None, {"outputs": "text, not a list"}]},
        {"cells": [{"outputs": [7, {"output_type": "stream", "name": "stdout", "text": 42}]}]},
        {"cells": [{"outputs": [{"output_type": "stream", "name": "stdout", "text": ["no episode rule here\n"]}]}]},
        {},
    ]
    assert [episodes(printed_output(nb)) for nb in odd] == [[], [], [], [], []]
