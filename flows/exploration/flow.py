"""Prefect wiring for `explore`: one task per sandbox (mapped over the task runner, flows/engine.py), coverage
pictures, a summary artifact, a catalog refresh."""

from __future__ import annotations

import uuid

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.engine import task_runner
from flows.exploration import exploration
from flows.exploration.chart import coverage_chart_svg
from lake import Lake
from lake.runs import recorded_run
from sandboxes.manifest import load_manifest
from sandboxes.registry import select


@task(name="explore-sandbox", cache_policy=NO_CACHE, retries=0)
def explore_sandbox_task(
    manifest_dir: str, lake_root: str, run_id: str, areas: int, steps: int, minutes: float, seed: int, workers: int,
    sensitive: str,
) -> dict:
    summary = exploration.explore_sandbox(
        load_manifest(manifest_dir), Lake(lake_root), run_id, areas_k=areas, steps=steps, minutes=minutes, seed=seed,
        workers=workers, sensitive=sensitive,
    )
    r = summary.to_json()
    get_run_logger().info("%s: coverage %.0f%% -> %.0f%%, %d new verified tasks%s", r["sandbox"], 100 * r["share_before"],
                          100 * r["share_after"], r["verified"], f"; error: {r['error']}" if r.get("error") else "")
    return r


@flow(name="explore", log_prints=True, task_runner=task_runner())
@recorded_run("explore")
def explore(
    sandboxes: list[str] | None = None,
    areas: int = 8,
    steps: int = 200,
    minutes: float = 2.0,
    seed: int = 0,
    workers: int = 1,
    sensitive: str = "skip",
    lake_root: str | None = None,
) -> dict:
    lake = Lake(lake_root)
    run_id = f"explore-{uuid.uuid4().hex[:12]}"
    manifests, problems = select(sandboxes or None)
    futures = [
        explore_sandbox_task.submit(str(m.folder), lake.uri, run_id, areas, steps, minutes, seed, workers, sensitive)
        for m in manifests
    ]
    results = [f.result() for f in futures]
    get_run_logger().info("explored %d sandboxes: %d new verified tasks", len(results), sum(r["verified"] for r in results))
    lake.refresh_catalog()
    charts = {}
    reports = lake.root / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    for m in manifests:
        chart = reports / f"{run_id}-coverage-{m.name}.svg"
        chart.write_text(coverage_chart_svg(m.name, exploration.coverage_now(lake, m)))
        charts[m.name] = chart.name
    summaries = [exploration.ExploreSummary(**{k: v for k, v in r.items() if not k.startswith("share_")}) for r in results]
    markdown = exploration.render_summary(summaries, [str(p) for p in problems], charts)
    report = reports / f"{run_id}.md"
    report.write_text(markdown)
    create_markdown_artifact(markdown, key="explore-summary", description="coverage before/after and new verified tasks")
    return {"run_id": run_id, "lake": lake.uri, "sandboxes": results, "problems": [str(p) for p in problems],
            "markdown": markdown, "report": str(report), "charts": {k: str(reports / v) for k, v in charts.items()}}
