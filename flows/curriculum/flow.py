"""Prefect wiring for `curriculum`."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger

from flows.curriculum.curriculum import Band, update_pools
from lake import Lake
from lake.runs import recorded_run


@flow(name="curriculum")
@recorded_run("curriculum")
def curriculum(lake_root: str | None = None, low: float = 0.2, high: float = 0.8) -> dict:
    lake = Lake(lake_root)
    run_id = f"curriculum-{uuid.uuid4().hex[:12]}"
    moved = update_pools(lake, run_id, Band(low, high))
    get_run_logger().info("tasks moved into each pool: %s", dict(moved) or "none")
    lake.refresh_catalog()
    return {"run_id": run_id, "moved": dict(moved)}
