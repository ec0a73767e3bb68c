"""Prefect wiring for `mine-failures`: one Prefect task per shard of steps, mapped over the task runner
(flows/engine.py); each shard lands its failures, rewards, seeds and mined rows as it finishes."""

from __future__ import annotations

import time
import uuid

from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.engine import task_runner
from flows.failure_mining import mining
from lake import Lake
from lake.runs import recorded_run


@task(name="mine-shard", cache_policy=NO_CACHE, retries=1, task_run_name="steps-{index}")
def mine_shard_task(lake_root: str, run_id: str, batch: mining.StepBatch, index: int) -> mining.MiningSummary:
    part = mining.mine_batch(Lake(lake_root), run_id, batch, index)
    get_run_logger().info("steps shard %d: %d trajectories, %d steps, %d failures", index, part.trajectories, part.steps,
                          part.failures)
    return part


@flow(name="mine-failures", task_runner=task_runner())
@recorded_run("mine-failures")
def mine_failures(policy: str | None = None, since: str | None = None, lake_root: str | None = None,
                  batch_steps: int = mining.BATCH_STEPS) -> dict:
    lake = Lake(lake_root)
    run_id, started = f"mine-{uuid.uuid4().hex[:12]}", time.perf_counter()
    summary = mining.MiningSummary(run_id=run_id)
    pending = mining.pending_trajectories(lake, policy, since)
    if not pending.is_empty():
        batches = mining.step_batches(lake, pending, batch_steps)  # a shard per task
        for part in mine_shard_task.map(unmapped(lake.uri), unmapped(run_id), batches, list(range(len(batches)))):
            mining.merge_summary(summary, part.result())
        mining.finish_run(lake, pending, batches, summary, started)
    get_run_logger().info("mined %d trajectories (%d steps): %d seeds", summary.trajectories, summary.steps, summary.seeds)
    lake.refresh_catalog()
    markdown = summary.markdown()
    create_markdown_artifact(markdown, key="mine-failures-summary")
    return summary.to_json() | {"markdown": markdown}
