"""Prefect wiring for `rollout`."""

from __future__ import annotations

import uuid
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact

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
) -> dict:
    lake = Lake(lake_root)
    run_id = f"rollout-{uuid.uuid4().hex[:12]}"
    summary = run_rollout(lake, run_id, policy, sandboxes, tasks, episodes, workers, noise, progress, profile)
    lake.refresh_catalog()
    lines = [f"# rollout ({policy}{f', {profile} profile' if profile else ''})", "", "| sandbox | episodes | ended |", "|---|---|---|"]
    lines += [f"| {s} | {sum(c.values())} | {', '.join(f'{k} {v}' for k, v in c.most_common())} |" for s, c in summary.sandboxes.items()]
    lines += [f"- problem: {e}" for e in summary.errors]
    markdown = "\n".join(lines)
    create_markdown_artifact(markdown, key="rollout-summary")
    return {"run_id": run_id, "episodes": summary.episodes, "errors": summary.errors,
            "ended": {s: dict(c) for s, c in summary.sandboxes.items()}, "markdown": markdown}
