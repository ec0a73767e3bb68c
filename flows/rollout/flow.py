"""Prefect wiring for `rollout`: episodes in batches, one Prefect task per batch mapped over the task runner
(flows/engine.py); each batch lands its trajectories and steps as it finishes."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.engine import task_runner, transient_failure
from flows.rollout.rollout import RolloutSummary, plan_or_resume, render_summary, rollout_batch
from flows.task_synthesis.task_spec import TaskSpec
from lake import Lake, resume
from lake.runs import recorded_run
from sandboxes.manifest import load_manifest

progress: Any = None  # set by the CLI for a live progress bar
_bars: dict[str, Any] = {}
EPISODE_BATCH = int(os.environ.get("FLYWHEEL_EPISODE_BATCH", "8"))  # episodes per rollout task


@task(name="rollout-batch", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2, retry_condition_fn=transient_failure,
      task_run_name="episodes-{batch}")
def rollout_batch_task(manifest_dir: str, lake_root: str, run_id: str, policy: str, jobs: list[tuple[TaskSpec, int]],
                       batch: str, workers: int, noise: str | None, profile: str | None) -> dict[str, int]:
    bar = _bars.get(manifest_dir) if progress else None
    ended = rollout_batch(Lake(lake_root), run_id, policy, load_manifest(manifest_dir), jobs, batch, workers, noise,
                          profile, on_result=(lambda *_: progress.advance(bar)) if bar is not None else None)
    get_run_logger().info("episodes %s: %s", batch, ", ".join(f"{k} {v}" for k, v in ended.most_common()))
    return dict(ended)


@flow(name="rollout", task_runner=task_runner())
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
    work = plan_or_resume(lake, sandboxes, tasks, episodes, policy, profile, all_tasks, budget, recheck_every,
                          EPISODE_BATCH, noise)  # a killed run of this command: its plan, less what it landed
    run_id = work.run_id
    summary = RolloutSummary(errors=work.problems, plan=work.plan, landed_before=work.landed_before,
                             resumed=run_id if work.claim and work.claim.resumed else None)
    running = {}
    for folder, labelled in work.batches.items():
        if progress:
            _bars[folder] = progress.add_task(f"{load_manifest(folder).name}: {policy}",
                                              total=sum(len(items) for _, items in labelled))
        running[folder] = rollout_batch_task.map(
            unmapped(folder), unmapped(lake.uri), unmapped(run_id), unmapped(policy), [items for _, items in labelled],
            [label for label, _ in labelled], unmapped(workers), unmapped(noise), unmapped(profile))
    for folder, futures in running.items():
        name, ended = load_manifest(folder).name, Counter()
        for future in futures:
            future.wait()
            if future.state.is_completed():
                ended.update(future.result())
            else:
                summary.errors.append(f"{name}: a batch of episodes failed: {future.state.message}")
        if ended:
            summary.sandboxes[name] = ended
    if work.claim:
        resume.finish(work.claim)  # ended (a failed batch is reported, not resumed): the next run plans anew
    lake.refresh_catalog()
    markdown = render_summary(summary, policy, profile)
    create_markdown_artifact(markdown, key="rollout-summary")
    if summary.sandboxes:
        create_table_artifact([{"sandbox": s, "episodes": sum(c.values()), **dict(c)} for s, c in summary.sandboxes.items()],
                              key="rollout-episodes", description="episodes per sandbox and how they ended")
    return {"run_id": run_id, "episodes": summary.episodes, "errors": summary.errors, "resumed": summary.resumed,
            "landed_before": summary.landed_before,
            "ended": {s: dict(c) for s, c in summary.sandboxes.items()}, "markdown": markdown,
            "plan": summary.plan.to_json() if summary.plan else None}
