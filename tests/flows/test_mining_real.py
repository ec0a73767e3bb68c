"""`flywheel eval mining --real`: a labelled set of other agents' runs imported with the real importer and
scored per kind, per evidence level and against the same-action baseline. The small set here is made by
the test in the action-history text format; the public set (tests/data/mining_eval/LABELLING.md) is
scored when its data.jsonl is present."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.failure_mining.real_eval import LABELS, evaluate_set

ROOT = Path(__file__).resolve().parents[2]


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
    assert json.loads(out.stdout)["kinds"]["loop"]["recall"] == 1.0


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
    assert loop["f1"] >= 0.8  # measured 0.842: a floor, not the 0.85 target (not reached)
    assert side["recall"] >= 0.8 and side["precision"] >= 0.6
    halves = result["halves"]
    assert halves["tune"]["trajectories"] + halves["held_out"]["trajectories"] == result["trajectories"]
    held_out = halves["held_out"]["kinds"]["loop"]  # measured 0.718: the tuning did not carry over
    assert held_out["f1"] > halves["held_out"]["baselines"]["loop: same action 3x in a row"]["f1"]
