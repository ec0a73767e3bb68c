"""Prefect wiring for `mine-failures`."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from flows.failure_mining.mining import mine
from lake import Lake
from lake.runs import recorded_run


@flow(name="mine-failures")
@recorded_run("mine-failures")
def mine_failures(policy: str | None = None, since: str | None = None, lake_root: str | None = None) -> dict:
    lake = Lake(lake_root)
    summary = mine(lake, f"mine-{uuid.uuid4().hex[:12]}", policy=policy, since=since)
    get_run_logger().info("mined %d trajectories (%d steps): %d seeds", summary.trajectories, summary.steps, summary.seeds)
    lake.refresh_catalog()
    markdown = summary.markdown()
    create_markdown_artifact(markdown, key="mine-failures-summary")
    return summary.to_json() | {"markdown": markdown}
