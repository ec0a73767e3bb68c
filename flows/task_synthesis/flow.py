"""Prefect wiring for `synthesize-tasks`: a plan task per sandbox (source + coding agent), then the gate as one
task per batch of candidates, mapped over the task runner (flows/engine.py); each batch lands as it finishes."""

from __future__ import annotations

import os
import uuid
from typing import Any

from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.engine import task_runner, transient_failure
from flows.task_synthesis import from_failures as targeted
from flows.task_synthesis import synthesis
from flows.task_synthesis.task_spec import TaskSpec
from lake import Lake
from lake.runs import recorded_run
from sandboxes.manifest import load_manifest
from sandboxes.registry import select
from sandboxes.skills import Skill

# Set by the CLI to show a live progress bar; flows run fine without it.
progress: Any = None
_bars: dict[str, Any] = {}  # progress bar per sandbox folder, when the gate runs in this process
GATE_BATCH = int(os.environ.get("FLYWHEEL_GATE_BATCH", "4"))  # candidates per gate task


@task(name="plan-sandbox", cache_policy=NO_CACHE, retries=1, retry_condition_fn=transient_failure)
def plan_sandbox_task(manifest_dir: str, lake_root: str, run_id: str, count: int, seed: int, agent: str,
                      workers: int, from_failures: bool = False, policy: str | None = None) -> synthesis.SynthesisPlan:
    if from_failures:  # targeted tasks from mined failure seeds (flows/task_synthesis/from_failures.py)
        plan = targeted.plan_from_failures(load_manifest(manifest_dir), Lake(lake_root), count, policy)
    else:
        plan = synthesis.plan_sandbox(load_manifest(manifest_dir), Lake(lake_root), run_id, count, seed, agent, workers)
    get_run_logger().info("%s: %d candidates, %d new to gate%s", plan.summary.sandbox, plan.summary.candidates,
                          len(plan.new), f"; error: {plan.summary.error}" if plan.summary.error else "")
    return plan


@task(name="gate-batch", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=2, retry_condition_fn=transient_failure,
      task_run_name="gate-{batch}")
def gate_batch_task(manifest_dir: str, lake_root: str, run_id: str, agent: str, skills: dict[str, Skill],
                    specs: list[TaskSpec], batch: str, workers: int) -> list[dict]:
    bar = _bars.get(manifest_dir) if progress else None
    results = synthesis.gate_batch(
        load_manifest(manifest_dir), Lake(lake_root), run_id, agent, skills, specs, batch, workers,
        on_result=(lambda _s, _r: progress.advance(bar)) if bar is not None else None,
    )
    get_run_logger().info("gate batch %s: %d candidates, %d verified", batch, len(results),
                          sum(r.status == "verified" for _, r in results))
    return [{"family": spec.family, "status": r.status, "reason": r.reason} for spec, r in results]


@flow(name="synthesize-tasks", log_prints=True, task_runner=task_runner())
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
    plans = [plan_sandbox_task.submit(str(m.folder), lake.uri, run_id, count, seed, agent, workers, from_failures, policy)
             for m in manifests]
    gate_agent = targeted.AGENT if from_failures else agent
    gated, summaries = [], []
    for m, planned in zip(manifests, plans):
        plan = _plan(m.name, planned)
        summaries.append(plan.summary)
        batches = [plan.new[i:i + GATE_BATCH] for i in range(0, len(plan.new), GATE_BATCH)]
        if progress and batches:
            _bars[str(m.folder)] = progress.add_task(f"{m.name}: validating", total=len(plan.new))
        gated.append(gate_batch_task.map(
            unmapped(str(m.folder)), unmapped(lake.uri), unmapped(run_id), unmapped(gate_agent), unmapped(plan.skills),
            batches, [str(i) for i in range(len(batches))], unmapped(workers),
        ) if batches else [])
    for summary, futures in zip(summaries, gated):
        for future in futures:
            future.wait()
            if future.state.is_completed():
                for r in future.result():
                    if r["status"] == "verified":
                        summary.verified += 1
                        summary.families[r["family"]] += 1
                    else:
                        summary.rejected[r["reason"]] += 1
            elif summary.error is None:
                summary.error = f"a gate batch failed: {future.state.message}"
    for s in summaries:
        get_run_logger().info("%s: %d candidates, %d new, %d verified%s", s.sandbox, s.candidates,
                              s.candidates - s.already_known, s.verified, f"; error: {s.error}" if s.error else "")
    lake.refresh_catalog()
    markdown = synthesis.render_summary(summaries, [str(p) for p in problems])
    create_markdown_artifact(markdown, key="synthesize-tasks-summary", description="verified / rejected per sandbox")
    return {"run_id": run_id, "lake": lake.uri, "sandboxes": [s.to_json() for s in summaries],
            "problems": [str(p) for p in problems], "markdown": markdown}


def _plan(sandbox: str, future: Any) -> synthesis.SynthesisPlan:
    """The sandbox's plan; a sandbox whose plan task crashed gets its error in the summary, the others go on."""
    try:
        return future.result()
    except Exception as exc:
        return synthesis.SynthesisPlan(synthesis.SandboxSummary(sandbox, error=f"crashed: {type(exc).__name__}: {exc}"[:1000]))
