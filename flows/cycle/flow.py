"""Prefect wiring for `cycle`: synthesize -> rollout -> judge -> curriculum, with an iteration report."""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.curriculum.curriculum import pool_report
from flows.curriculum.flow import curriculum
from flows.cycle.chart import success_chart_svg
from flows.failure_mining.flow import mine_failures
from flows.judging.flow import judge
from flows.rollout.flow import rollout
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
) -> dict:
    lake = Lake(lake_root)
    synth = synthesize_tasks(sandboxes=sandboxes, count=count, seed=seed, lake_root=str(lake.root))
    rolled = rollout(policy=policy, sandboxes=sandboxes, episodes=episodes, lake_root=str(lake.root))
    judged = judge(lake_root=str(lake.root))
    mined = mine_failures(lake_root=str(lake.root))
    pools = curriculum(lake_root=str(lake.root))
    rates = lake.query(
        "SELECT v.sandbox, t.family, count(*) AS episodes, "
        "round(avg(CASE WHEN v.verdict = 'pass' THEN 1.0 ELSE 0.0 END), 2) AS success_rate "
        "FROM verdicts v JOIN tasks t USING (task_id) WHERE v.policy = ? AND v.verdict != 'env_error' "
        "GROUP BY ALL ORDER BY ALL",
        [policy],
    ) if lake.files("verdicts") else []
    lines = [
        f"# cycle ({policy})", "", synth["markdown"], "", rolled["markdown"], "", judged["markdown"], "",
        mined["markdown"], "",
        "## success rate per sandbox and family", "", "| sandbox | family | episodes | success rate |", "|---|---|---|---|",
        *[f"| {r['sandbox']} | {r['family']} | {r['episodes']} | {r['success_rate']} |" for r in rates],
        "", "## curriculum pools", "", "| policy | sandbox | family | pool | tasks | mean rate |", "|---|---|---|---|---|---|",
        *[f"| {r['policy']} | {r['sandbox']} | {r['family']} | {r['pool']} | {r['tasks']} | {r['mean_rate']} |" for r in pool_report(lake, policy)],
    ]
    report = lake.root / "reports" / f"{rolled['run_id']}.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    chart = report.with_suffix(".svg")
    chart.write_text(success_chart_svg(rates, f"{policy}: success rate per sandbox and family"))
    lines.insert(lines.index("## success rate per sandbox and family") + 1, f"\n![success rate]({chart.name})  ({chart})")
    markdown = "\n".join(lines)
    report.write_text(markdown)
    create_markdown_artifact(markdown, key="cycle-report")
    return {"markdown": markdown, "report": str(report), "chart": str(chart), "pools": pools, "verdicts": judged["verdicts"]}
