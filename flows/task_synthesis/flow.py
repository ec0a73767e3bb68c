"""Prefect wiring for `synthesize-tasks`: one task per sandbox, a summary artifact, a catalog refresh."""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.task_synthesis import from_failures as targeted
from flows.task_synthesis import synthesis
from lake import Lake
from lake.runs import recorded_run
from sandboxes.manifest import load_manifest
from sandboxes.registry import select

# Set by the CLI to show a live progress bar; flows run fine without it.
progress: Any = None


@task(name="synthesize-sandbox", cache_policy=NO_CACHE, retries=0)
def synthesize_sandbox_task(
    manifest_dir: str, lake_root: str, run_id: str, count: int, seed: int, agent: str, workers: int,
    from_failures: bool = False, policy: str | None = None,
) -> dict:
    if from_failures:  # targeted tasks from mined failure seeds (flows/task_synthesis/from_failures.py)
        return targeted.synthesize_from_failures(
            load_manifest(manifest_dir), Lake(lake_root), run_id, count=count, policy=policy, progress=progress,
            workers=workers,
        ).to_json()
    summary = synthesis.synthesize_sandbox(
        load_manifest(manifest_dir), Lake(lake_root), run_id, count=count, seed=seed, agent_name=agent,
        progress=progress, workers=workers,
    )
    return summary.to_json()


@flow(name="synthesize-tasks", log_prints=True)
@recorded_run("synthesize-tasks")
def synthesize_tasks(
    sandboxes: list[str] | None = None,
    count: int = 40,
    seed: int = 0,
    agent: str = "static",
    lake_root: str | None = None,
    workers: int = 1,
    from_failures: bool = False,
    policy: str | None = None,
) -> dict:
    lake = Lake(lake_root)
    run_id = f"{'targeted' if from_failures else 'synth'}-{uuid.uuid4().hex[:12]}"
    manifests, problems = select(sandboxes or None)
    futures = [
        synthesize_sandbox_task.submit(str(m.folder), str(lake.root), run_id, count, seed, agent, workers, from_failures, policy)
        for m in manifests
    ]
    summaries = [_summary(m.name, f) for m, f in zip(manifests, futures)]
    for s in summaries:
        get_run_logger().info("%s: %d candidates, %d new, %d verified%s", s.sandbox, s.candidates,
                              s.candidates - s.already_known, s.verified, f"; error: {s.error}" if s.error else "")
    lake.refresh_catalog()
    markdown = synthesis.render_summary(summaries, [str(p) for p in problems])
    create_markdown_artifact(markdown, key="synthesize-tasks-summary", description="verified / rejected per sandbox")
    return {"run_id": run_id, "lake": str(lake.root), "sandboxes": [s.to_json() for s in summaries],
            "problems": [str(p) for p in problems], "markdown": markdown}


def _summary(sandbox: str, future: Any) -> synthesis.SandboxSummary:
    """The sandbox's summary; a sandbox whose task crashed gets its error there, and the others still report."""
    try:
        return synthesis.SandboxSummary(**_from_json(future.result()))
    except Exception as exc:
        return synthesis.SandboxSummary(sandbox, error=f"crashed: {type(exc).__name__}: {exc}"[:1000])


def _from_json(d: dict) -> dict:
    from collections import Counter

    return {
        "sandbox": d["sandbox"], "source_commit": d["source_commit"], "candidates": d["candidates"],
        "already_known": d["already_known"], "verified": d["verified"], "rejected": Counter(d["rejected"]),
        "families": Counter(d["verified_by_family"]), "error": d["error"], "notes": d["notes"],
    }
