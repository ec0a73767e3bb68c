"""What the reviews say: AutoJudge agreement with humans, agreement between reviewers, and the verifiers
reviewers flagged."""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations
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


def reviewer_label(row: dict[str, Any]) -> str:
    """What a decision says about the item, comparable across reviewers: for a trajectory the verdict it
    endorses (an accept endorses AutoJudge's, a relabel names its own), else the decision itself."""
    if row["item_kind"] == "trajectory" and row["decision"] == "accept" and row["judge_label"]:
        return row["judge_label"]
    if row["decision"] == "relabel":
        return row["label"]
    return row["decision"]


def cohen_kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters over the items both rated; None when chance agreement is total (every
    decision alike), where kappa is undefined."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[k] * second[k] for k in first) / (n * n)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def reviewer_agreement(lake: Lake) -> dict[str, Any]:
    """Agreement between reviewers on the items two or more of them decided (each reviewer's latest decision):
    percent agreement over every pair of reviewers on an item, and per pair of reviewers and item kind the
    percent agreement and Cohen's kappa. Items only one person decided say nothing here."""
    empty = {"items": 0, "pairs": 0, "agreed": 0, "agreement": None, "by_pair": [], "disagreements": []}
    if not lake.files("reviews"):
        return empty
    rows = lake.query("SELECT item_kind, item_id, reviewer, decision, label, judge_label FROM reviews")
    by_item: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for r in rows:
        by_item[(r["item_kind"], r["item_id"])][r["reviewer"]] = reviewer_label(r)
    shared = {k: v for k, v in by_item.items() if len(v) > 1}
    if not shared:
        return empty
    per_pair: dict[tuple[str, str, str], list[tuple[str, str]]] = defaultdict(list)
    disagreements = []
    for (kind, item_id), labels in sorted(shared.items()):
        for a, b in combinations(sorted(labels), 2):
            per_pair[(kind, a, b)].append((labels[a], labels[b]))
        if len(set(labels.values())) > 1:
            disagreements.append({"item_kind": kind, "item_id": item_id, "labels": dict(sorted(labels.items()))})
    by_pair = []
    for (kind, a, b), pairs in sorted(per_pair.items()):
        agreed = sum(x == y for x, y in pairs)
        by_pair.append({"item_kind": kind, "reviewers": (a, b), "items": len(pairs), "agreed": agreed,
                        "agreement": agreed / len(pairs), "kappa": cohen_kappa(pairs)})
    pairs_n = sum(p["items"] for p in by_pair)
    agreed_n = sum(p["agreed"] for p in by_pair)
    return {"items": len(shared), "pairs": pairs_n, "agreed": agreed_n, "agreement": agreed_n / pairs_n,
            "by_pair": by_pair, "disagreements": disagreements}


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
    between = reviewer_agreement(lake)
    if between["items"]:
        print(f"\nbetween reviewers: {between['agreed']}/{between['pairs']} reviewer pairs agree "
              f"({between['agreement']:.0%}) on {between['items']} items decided by two or more")
        for p in between["by_pair"]:
            kappa = f"{p['kappa']:.2f}" if p["kappa"] is not None else "n/a (every decision alike)"
            print(f"  {p['reviewers'][0]} & {p['reviewers'][1]:12} {p['item_kind']:10} {p['agreed']}/{p['items']} agree, "
                  f"Cohen's kappa {kappa}")
        for d in between["disagreements"][:10]:
            print(f"  disagree on {d['item_kind']} {d['item_id']}: " + ", ".join(f"{k} {v}" for k, v in d["labels"].items()))
    else:
        print("\nbetween reviewers: no item decided by two reviewers yet (open the queue with &reviewer=NAME)")
    flagged = flagged_verifiers(lake)
    print(f"\nverifiers flagged by reviewers (tasks retired): {len(flagged)}")
    for r in flagged:
        print(f"  {r['task_id']:36} {r['sandbox']:8} {r['family']:10} {r['verifier_json'][:70]}")
    return 0
