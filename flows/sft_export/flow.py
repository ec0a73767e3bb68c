"""Prefect wiring for `export-sft`: one task curates, writes, gates and publishes the dataset."""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.sft_export.config import ExportConfig
from flows.sft_export.export import export_sft as run_export
from lake import Lake
from lake.runs import recorded_run

progress: Any = None  # set by the CLI for a live progress bar


@task(name="export-dataset", cache_policy=NO_CACHE, task_run_name="{config.name}")
def export_dataset_task(lake_root: str, config: ExportConfig, out: str | None, run_id: str) -> dict:
    result = run_export(Lake(lake_root), config, out=out, run_id=run_id, progress=progress)
    get_run_logger().info("%s: %s %s, %d rows from %d trajectories", config.name, result.status, result.version or "-",
                          result.counts["rows"], result.counts["trajectories"])
    return result.to_json() | {"markdown": result.markdown()}


@flow(name="export-sft")
@recorded_run("export-sft")
def export_sft(
    name: str,
    format: str = "messages",
    per: str = "step",
    images: str = "embed",
    protocol: str = "qwen-xml",
    since: str | None = None,
    negatives: bool = False,
    route: str | None = None,
    max_per_sandbox: int | None = None,
    max_per_family: int | None = None,
    max_per_difficulty: int | None = None,
    shard_mb: int = 256,
    license: str = "other",
    out: str | None = None,
    lake_root: str | None = None,
) -> dict:
    config = ExportConfig(
        name=name, format=format, per=per, images=images, protocol=protocol, since=since, negatives=negatives, route=route,
        max_per_sandbox=max_per_sandbox, max_per_family=max_per_family, max_per_difficulty=max_per_difficulty,
        shard_bytes=shard_mb * 1024 * 1024, license=license,
    )
    lake = Lake(lake_root)
    result = export_dataset_task(lake.uri, config, out, f"export-{uuid.uuid4().hex[:12]}")
    lake.refresh_catalog()
    create_markdown_artifact(result["markdown"], key="export-sft-summary")
    return result
