"""Prefect wiring for `rollout`."""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.rollout.rollout import render_summary
from flows.rollout.rollout import rollout as run_rollout
from lake import Lake
from lake.runs import recorded_run

progress: Any = None  # set by the CLI for a live progress bar


@flow(name="rollout")
@recorded_run("rollout")
def rollout(
    policy: str = "replay",
    sandboxes: list[str] | None = None,
    tasks: list[str] | None = None,
    episodes: int = 1,
    workers: int = 1,
    noise: str | None = None,
    lake_root: str | None = None,
    profile: str | None = None,
    all_tasks: bool = False,
    budget: int | None = None,
    recheck_every: int = 2,
) -> dict:
    lake = Lake(lake_root)
    run_id = f"rollout-{uuid.uuid4().hex[:12]}"
    summary = run_rollout(lake, run_id, policy, sandboxes, tasks, episodes, workers, noise, progress, profile,
                          all_tasks=all_tasks, budget=budget, recheck_every=recheck_every)
    lake.refresh_catalog()
    markdown = render_summary(summary, policy, profile)
    create_markdown_artifact(markdown, key="rollout-summary")
    if summary.sandboxes:
        create_table_artifact([{"sandbox": s, "episodes": sum(c.values()), **dict(c)} for s, c in summary.sandboxes.items()],
                              key="rollout-episodes", description="episodes per sandbox and how they ended")
    return {"run_id": run_id, "episodes": summary.episodes, "errors": summary.errors,
            "ended": {s: dict(c) for s, c in summary.sandboxes.items()}, "markdown": markdown,
            "plan": summary.plan.to_json() if summary.plan else None}
