"""Prefect wiring for `judge`."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from flows.judging.judge import judge_pending
from lake import Lake
from lake.runs import recorded_run


@flow(name="judge")
@recorded_run("judge")
def judge(lake_root: str | None = None) -> dict:
    lake = Lake(lake_root)
    run_id = f"judge-{uuid.uuid4().hex[:12]}"
    counts = judge_pending(lake, run_id)
    get_run_logger().info("verdicts: %s", dict(counts) or "nothing new to judge")
    lake.refresh_catalog()
    markdown = "# judge\n\n" + (", ".join(f"{k}: {v}" for k, v in counts.most_common()) or "nothing new to judge")
    create_markdown_artifact(markdown, key="judge-summary")
    return {"run_id": run_id, "verdicts": dict(counts), "markdown": markdown}
