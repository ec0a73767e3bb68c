"""What the reviews say: AutoJudge agreement with humans, and the verifiers reviewers flagged."""

from __future__ import annotations

from typing import Any

from flywheel.review.decisions import RETIRED_REASON
from lake import Lake


def judge_agreement(lake: Lake) -> dict[str, Any]:
    """Over the latest decision per (trajectory, reviewer): an accept agrees with AutoJudge, a relabel agrees
    only if it names the judge's own label. Rejections and flags say nothing about the label and are left out."""
    if not lake.files("reviews"):
        return {"compared": 0, "agreed": 0, "agreement": None, "by_judge_label": []}
    rows = lake.query(
        "SELECT judge_label, count(*) AS compared, "
        "count(*) FILTER (WHERE decision = 'accept' OR (decision = 'relabel' AND label = judge_label)) AS agreed "
        "FROM reviews WHERE item_kind = 'trajectory' AND decision IN ('accept', 'relabel') AND judge_label IS NOT NULL "
        "GROUP BY judge_label ORDER BY judge_label"
    )
    compared = sum(r["compared"] for r in rows)
    agreed = sum(r["agreed"] for r in rows)
    return {"compared": compared, "agreed": agreed, "agreement": agreed / compared if compared else None,
            "by_judge_label": rows}


def flagged_verifiers(lake: Lake) -> list[dict[str, Any]]:
    if not lake.files("tasks"):
        return []
    return lake.query(
        "SELECT task_id, sandbox, family, verifier_json, reason_detail, recorded_at FROM tasks "
        "WHERE status = 'retired' AND reason = ? ORDER BY recorded_at",
        [RETIRED_REASON],
    )


def decision_counts(lake: Lake) -> list[dict[str, Any]]:
    if not lake.files("reviews"):
        return []
    return lake.query("SELECT reviewer, item_kind, decision, count(*) AS n FROM reviews GROUP BY ALL ORDER BY ALL")


def print_stats(lake: Lake) -> int:
    counts = decision_counts(lake)
    if not counts:
        print("no reviews yet: run `flywheel review serve` and decide a few items")
        return 1
    print("decisions (latest per item and reviewer):")
    for r in counts:
        print(f"  {r['reviewer']:16} {r['item_kind']:10} {r['decision']:14} {r['n']}")
    agreement = judge_agreement(lake)
    if agreement["compared"]:
        print(f"\nAutoJudge vs humans: {agreement['agreed']}/{agreement['compared']} agree "
              f"({agreement['agreement']:.0%})")
        for r in agreement["by_judge_label"]:
            print(f"  judge said {r['judge_label']:10} {r['agreed']}/{r['compared']} confirmed")
    else:
        print("\nAutoJudge vs humans: no trajectory accepted or relabelled yet")
    flagged = flagged_verifiers(lake)
    print(f"\nverifiers flagged by reviewers (tasks retired): {len(flagged)}")
    for r in flagged:
        print(f"  {r['task_id']:36} {r['sandbox']:8} {r['family']:10} {r['verifier_json'][:70]}")
    return 0
