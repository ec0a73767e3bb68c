"""A reviewer's decision on one item: one `reviews` row in its own Parquet file, and for a flagged
verifier a `retired` tasks row, so no two reviewers ever write the same file."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from flywheel.review.sampling import SampleItem
from lake import Lake, utcnow

DECISIONS = ("accept", "reject", "relabel", "flag_verifier")
LABELS = ("pass", "failed", "env_error")
RETIRED_REASON = "flagged_by_reviewer"
_REVIEW_ID = re.compile(r"^[A-Za-z0-9-]{8,64}$")


class DecisionError(ValueError):
    """A decision that cannot be recorded, with what to change."""


@dataclass(frozen=True)
class Decision:
    decision: str
    reason: str = ""
    label: str = ""
    review_id: str = ""  # chosen by the client so a retried request replaces its own file


def check(item: SampleItem, d: Decision) -> None:
    if d.decision not in DECISIONS:
        raise DecisionError(f"unknown decision {d.decision!r}; use one of {', '.join(DECISIONS)}")
    if d.decision == "reject" and not d.reason.strip():
        raise DecisionError("a rejection needs a reason")
    if d.decision == "relabel":
        if item.kind != "trajectory":
            raise DecisionError("only a judged trajectory has a label to correct; reject or flag a pair instead")
        if d.label not in LABELS:
            raise DecisionError(f"label must be one of {', '.join(LABELS)}, got {d.label!r}")
    if d.review_id and not _REVIEW_ID.match(d.review_id):
        raise DecisionError("review_id must be 8-64 letters, digits or dashes")


def record(lake: Lake, item: SampleItem, d: Decision, reviewer: str, sample_id: str,
           judge_label: str | None) -> dict[str, Any]:
    """Append the decision (and a retirement for a flagged verifier); returns the reviews row."""
    check(item, d)
    review_id = d.review_id or uuid.uuid4().hex
    now = utcnow()
    row = {
        "review_id": review_id, "item_kind": item.kind, "item_id": item.item_id, "sandbox": item.sandbox,
        "family": item.family, "reviewer": reviewer, "decision": d.decision, "reason": d.reason.strip() or None,
        "label": d.label if d.decision == "relabel" else None, "judge_label": judge_label,
        "sample_id": sample_id, "decided_at": now,
    }
    run_id = f"review-{reviewer}"
    if d.decision == "flag_verifier":
        _retire_task(lake, item, reviewer, d.reason.strip(), run_id, review_id)
    if lake.write("reviews", [row], run_id=run_id, batch=review_id) is None:
        raise DecisionError("the decision did not fit the reviews schema; it is in the quarantine table")
    return row


def _retire_task(lake: Lake, item: SampleItem, reviewer: str, reason: str, run_id: str, review_id: str) -> None:
    """Verifier retirement: a new `retired` row for the task, so synthesis, rollout and export stop using it."""
    task_id = item.item_id
    if item.kind == "trajectory":
        found = lake.query("SELECT task_id FROM trajectories WHERE trajectory_id = ? LIMIT 1", [item.item_id])
        if not found:
            raise DecisionError(f"trajectory {item.item_id} is not in the lake")
        task_id = found[0]["task_id"]
    latest = lake.query("SELECT * FROM tasks WHERE task_id = ?", [task_id])
    if not latest:
        raise DecisionError(f"task {task_id} is not in the lake")
    detail = {"reviewer": reviewer, "review_id": review_id, "why": reason or "verifier flagged in review"}
    retired = latest[0] | {"status": "retired", "reason": RETIRED_REASON, "reason_detail": json.dumps(detail),
                           "run_id": run_id, "recorded_at": utcnow()}
    lake.write("tasks", [retired], run_id=run_id, batch=f"retire-{review_id}")
