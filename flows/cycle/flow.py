"""Prefect wiring for `cycle`: per iteration synthesize -> rollout (by the curriculum's pools) -> judge -> mine
-> curriculum -> targeted synthesis from failure seeds -> explore -> export, then a report comparing iterations."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.curriculum.flow import curriculum
from flows.cycle import report as cycle_report
from flows.cycle.stages import reported_problems, run_stage
from flows.exploration.flow import explore
from flows.failure_mining.flow import mine_failures
from flows.judging.flow import judge
from flows.rollout.flow import rollout
from flows.sft_export.flow import export_sft
from flows.task_synthesis.flow import synthesize_tasks
from lake import Lake
from lake.runs import recorded_run
from sandboxes.registry import select


@flow(name="cycle")
@recorded_run("cycle")
def cycle(
    policy: str = "scripted-noisy",
    sandboxes: list[str] | None = None,
    count: int = 40,
    episodes: int = 1,
    seed: int = 0,
    lake_root: str | None = None,
    iterations: int = 1,
    budget: int | None = None,
    targeted: int = 8,
    explore_minutes: float = 0.5,
    explore_steps: int = 60,
    explore_areas: int = 4,
    export_name: str | None = None,
) -> dict:
    log = get_run_logger()
    lake = Lake(lake_root)
    root = lake.uri
    name = export_name or f"cycle-{policy}"
    stats, problems = [], []
    run = f"cycle-{uuid.uuid4().hex[:12]}"

    def stage(i: int, stage_name: str, detail: str, fn, sandbox: str = "", **kw):
        log.info("iteration %d/%d: %s%s%s", i, iterations, stage_name, f" {detail}" if detail else "",
                 f" ({sandbox})" if sandbox else "")
        result = run_stage(problems, i, stage_name, fn, sandbox, **kw)
        problems.extend(reported_problems(i, stage_name, result))
        return result

    for i in range(1, iterations + 1):
        synth = stage(i, "synthesize-tasks", f"(count {count})", synthesize_tasks, sandboxes=sandboxes, count=count,
                      seed=seed, lake_root=root)
        rolled = stage(i, "rollout", f"of {policy} (curriculum pools, budget {budget or 'none'} per sandbox)", rollout,
                       policy=policy, sandboxes=sandboxes, episodes=episodes, lake_root=root, budget=budget)
        stage(i, "judge", "", judge, lake_root=root)
        stage(i, "mine-failures", "", mine_failures, lake_root=root)
        stage(i, "curriculum", "", curriculum, lake_root=root)
        born = stage(i, "synthesize-tasks --from-failures", f"(up to {targeted} per sandbox)", synthesize_tasks,
                     sandboxes=sandboxes, count=targeted, lake_root=root, from_failures=True, policy=policy)
        # one explore run per sandbox: a sandbox that times out costs its own exploration, not the others'
        explored = [stage(i, "explore", f"({explore_minutes:.1f} min)", explore, m.name, sandboxes=[m.name],
                          areas=explore_areas, steps=explore_steps, minutes=explore_minutes, seed=seed + i, lake_root=root)
                    for m in select(sandboxes or None)[0]]
        exported = stage(i, "export-sft", f"--route sft --name {name}", export_sft, name=name, route="sft", images="ref",
                         lake_root=root)
        stats.append(cycle_report.iteration_stats(lake, i, policy, rolled, born, [synth, *explored], explored, exported,
                                                  [p for p in problems if p.iteration == i]))
        s = stats[-1]
        log.info("iteration %d/%d done: %d episodes, success %.0f%%, %d born from failures, %d mastered not rolled out, "
                 "%d problems", i, iterations, s.episodes, 100 * s.success_rate, len(s.born), s.left_out.get("mastered", 0),
                 len(s.problems))
        # the report so far, after every iteration: a long cycle that is stopped still leaves its comparison
        markdown, report, chart = cycle_report.write_report(lake, run, policy, stats)
        log.info("report after iteration %d: %s", i, report)
    create_markdown_artifact(markdown, key="cycle-report")
    create_table_artifact(cycle_report.summary_table(stats), key="cycle-iterations", description="one row per iteration")
    if problems:
        create_table_artifact([p.to_row() for p in problems], key="cycle-problems",
                              description="stages the environment failed under; the cycle went on")
    log.info("report: %s (chart %s)", report, chart)
    return {"markdown": markdown, "report": str(report), "chart": str(chart),
            "iterations": cycle_report.summary_table(stats), "problems": [p.to_row() for p in problems]}
