"""Prefect wiring for `curriculum`."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger

from flows.curriculum.curriculum import Band, update_pools
from lake import Lake


@flow(name="curriculum")
def curriculum(lake_root: str | None = None, low: float = 0.2, high: float = 0.8) -> dict:
    lake = Lake(lake_root)
    moved = update_pools(lake, f"curriculum-{uuid.uuid4().hex[:12]}", Band(low, high))
    get_run_logger().info("tasks moved into each pool: %s", dict(moved) or "none")
    lake.refresh_catalog()
    return {"moved": dict(moved)}
