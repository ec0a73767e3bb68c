"""Prefect wiring for `judge`: one Prefect task per batch of trajectories, mapped over the task runner
(flows/engine.py); each batch lands its verdicts as it finishes."""

from __future__ import annotations

import os
import uuid
from collections import Counter
from typing import Any

from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.engine import task_runner, transient_failure
from flows.judging.judge import judge_batch, pending_trajectories
from lake import Lake
from lake.runs import recorded_run

JUDGE_BATCH = int(os.environ.get("FLYWHEEL_JUDGE_BATCH", "50"))  # trajectories per judge task


@task(name="judge-batch", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2, retry_condition_fn=transient_failure,
      task_run_name="trajectories-{batch}")
def judge_batch_task(lake_root: str, run_id: str, rows: list[dict[str, Any]], batch: str) -> dict[str, int]:
    verdicts = judge_batch(Lake(lake_root), run_id, rows, f"judge-{batch}")
    get_run_logger().info("trajectories %s: %s", batch, ", ".join(f"{k} {v}" for k, v in verdicts.most_common()))
    return dict(verdicts)


@flow(name="judge", task_runner=task_runner())
@recorded_run("judge")
def judge(lake_root: str | None = None) -> dict:
    lake = Lake(lake_root)
    run_id = f"judge-{uuid.uuid4().hex[:12]}"
    rows = pending_trajectories(lake)
    batches = [rows[i:i + JUDGE_BATCH] for i in range(0, len(rows), JUDGE_BATCH)]
    counts: Counter = Counter()
    for future in judge_batch_task.map(unmapped(lake.uri), unmapped(run_id), batches, [str(i) for i in range(len(batches))]):
        counts.update(future.result())
    get_run_logger().info("verdicts: %s", dict(counts) or "nothing new to judge")
    lake.refresh_catalog()
    markdown = "# judge\n\n" + (", ".join(f"{k}: {v}" for k, v in counts.most_common()) or "nothing new to judge")
    create_markdown_artifact(markdown, key="judge-summary")
    return {"run_id": run_id, "verdicts": dict(counts), "markdown": markdown}
