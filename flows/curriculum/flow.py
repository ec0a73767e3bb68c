"""Prefect wiring for `curriculum`: one task moves tasks between pools from the latest verdicts."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from flows.curriculum.curriculum import Band, update_pools
from lake import Lake
from lake.runs import recorded_run


@task(name="update-pools", cache_policy=NO_CACHE)
def update_pools_task(lake_root: str, run_id: str, low: float, high: float) -> dict[str, int]:
    moved = dict(update_pools(Lake(lake_root), run_id, Band(low, high)))
    get_run_logger().info("tasks moved into each pool: %s", moved or "none")
    return moved


@flow(name="curriculum")
@recorded_run("curriculum")
def curriculum(lake_root: str | None = None, low: float = 0.2, high: float = 0.8) -> dict:
    lake = Lake(lake_root)
    run_id = f"curriculum-{uuid.uuid4().hex[:12]}"
    moved = update_pools_task(lake.uri, run_id, low, high)
    lake.refresh_catalog()
    return {"run_id": run_id, "moved": moved}
