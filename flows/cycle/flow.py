"""Prefect wiring for `cycle`: per iteration synthesize -> rollout (by the curriculum's pools) -> judge -> mine
-> curriculum -> targeted synthesis from failure seeds -> explore -> export, then a report comparing iterations."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.curriculum.flow import curriculum
from flows.cycle import report as cycle_report
from flows.cycle.chart import iteration_chart_svg
from flows.exploration.flow import explore
from flows.failure_mining.flow import mine_failures
from flows.judging.flow import judge
from flows.rollout.flow import rollout
from flows.sft_export.flow import export_sft
from flows.task_synthesis.flow import synthesize_tasks
from lake import Lake
from lake.runs import recorded_run


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
    root = str(lake.root)
    name = export_name or f"cycle-{policy}"
    stats = []
    for i in range(1, iterations + 1):
        log.info("iteration %d/%d: synthesize-tasks (count %d)", i, iterations, count)
        synth = synthesize_tasks(sandboxes=sandboxes, count=count, seed=seed, lake_root=root)
        log.info("iteration %d/%d: rollout of %s (curriculum pools, budget %s per sandbox)", i, iterations, policy, budget or "none")
        rolled = rollout(policy=policy, sandboxes=sandboxes, episodes=episodes, lake_root=root, budget=budget)
        log.info("iteration %d/%d: judge", i, iterations)
        judge(lake_root=root)
        log.info("iteration %d/%d: mine-failures", i, iterations)
        mine_failures(lake_root=root)
        log.info("iteration %d/%d: curriculum", i, iterations)
        curriculum(lake_root=root)
        log.info("iteration %d/%d: synthesize-tasks --from-failures (up to %d per sandbox)", i, iterations, targeted)
        born = synthesize_tasks(sandboxes=sandboxes, count=targeted, lake_root=root, from_failures=True, policy=policy)
        log.info("iteration %d/%d: explore (%.1f min per sandbox)", i, iterations, explore_minutes)
        try:  # a stage that crashes (e.g. a browser timeout on a loaded machine) must not end the whole cycle
            explored = explore(sandboxes=sandboxes, areas=explore_areas, steps=explore_steps, minutes=explore_minutes,
                               seed=seed + i, lake_root=root)
        except Exception as exc:
            log.warning("iteration %d/%d: explore failed, the cycle goes on: %s", i, iterations, str(exc).splitlines()[0])
            explored = None
        log.info("iteration %d/%d: export-sft --route sft --name %s", i, iterations, name)
        exported = export_sft(name=name, route="sft", images="ref", lake_root=root)
        stats.append(cycle_report.iteration_stats(lake, i, policy, rolled, born, [synth, explored], explored, exported))
        s = stats[-1]
        log.info("iteration %d/%d done: %d episodes, success %.0f%%, %d born from failures, %d mastered not rolled out",
                 i, iterations, s.episodes, 100 * s.success_rate, len(s.born), s.left_out.get("mastered", 0))
    solved = cycle_report.solved_later(lake, policy, stats)
    run = f"cycle-{uuid.uuid4().hex[:12]}"
    reports = lake.root / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    chart = reports / f"{run}.svg"
    simulator = policy in ("scripted-noisy", "simulated-learner")
    chart.write_text(iteration_chart_svg(
        cycle_report.chart_rows(stats), f"{policy}: success rate per sandbox and family, by iteration",
        f"{policy} is a simulator (scripted faults), not a model" if simulator else ""))
    markdown = cycle_report.render_report(policy, stats, solved, chart.name, simulator)
    report = reports / f"{run}.md"
    report.write_text(markdown)
    create_markdown_artifact(markdown, key="cycle-report")
    create_table_artifact(cycle_report.summary_table(stats), key="cycle-iterations", description="one row per iteration")
    log.info("report: %s (chart %s)", report, chart)
    return {"markdown": markdown, "report": str(report), "chart": str(chart),
            "iterations": cycle_report.summary_table(stats)}
