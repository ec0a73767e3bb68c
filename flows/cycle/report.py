"""What one turn of the flywheel did, measured from the lake, and a report that compares the turns.

Per iteration: success rate per (sandbox, family) of that iteration's rollout, the tasks the curriculum
chose by pool (and the mastered ones it retired), pool movement since the previous iteration, the tasks born
from failure seeds (and, by the end, whether a later rollout solved them), coverage after exploring, and the
export it published.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.cycle.chart import iteration_chart_svg
from flows.cycle.stages import EnvProblem
from lake import Lake


@dataclass
class IterationStats:
    iteration: int
    rollout_run: str
    success: list[dict[str, Any]]  # sandbox, family, episodes, success_rate
    chosen: Counter  # pool at selection -> tasks rolled out
    left_out: Counter  # why -> tasks not rolled out (mastered, monitoring_not_due, over_budget)
    pools: dict[str, str]  # task -> pool after this iteration's curriculum
    born: list[str] = field(default_factory=list)  # verified tasks born from failure seeds in this iteration
    born_tried: int = 0  # candidates from seeds that went through the gate
    new_tasks: int = 0  # verified by synthesize-tasks and explore
    coverage: dict[str, float] = field(default_factory=dict)  # sandbox -> share of areas with a verified task
    export: str = ""
    problems: list[EnvProblem] = field(default_factory=list)  # stages the environment failed under

    @property
    def episodes(self) -> int:
        return sum(r["episodes"] for r in self.success)

    @property
    def success_rate(self) -> float:
        n = self.episodes
        return sum(r["success_rate"] * r["episodes"] for r in self.success) / n if n else 0.0


def iteration_stats(lake: Lake, iteration: int, policy: str, rolled: dict | None, targeted: dict | None,
                    synthesized: list[dict | None], explored: list[dict | None], exported: dict | None,
                    problems: list[EnvProblem] | None = None) -> IterationStats:
    """What the iteration's stages returned (None for a stage the environment failed under), measured in the lake."""
    rolled = rolled or {"run_id": "", "plan": None}
    success = lake.query(
        "SELECT tr.sandbox, k.family, count(*) AS episodes, "
        "avg(CASE WHEN v.verdict = 'pass' THEN 1.0 ELSE 0.0 END) AS success_rate "
        "FROM trajectories tr JOIN verdicts v USING (trajectory_id) JOIN tasks k ON k.task_id = tr.task_id "
        "WHERE tr.run_id = ? AND v.verdict != 'env_error' GROUP BY ALL ORDER BY ALL",
        [rolled["run_id"]],
    ) if lake.files("verdicts") and rolled["run_id"] else []
    plan = rolled.get("plan") or {"chosen": {}, "left_out": {}}
    chosen, left = Counter(), Counter()
    for c in plan["chosen"].values():
        chosen.update(c)
    for c in plan["left_out"].values():
        left.update(c)
    pools = {r["task_id"]: r["pool"] for r in lake.query("SELECT task_id, pool FROM pools WHERE policy = ?", [policy])} \
        if lake.files("pools") else {}
    born = [r["task_id"] for r in lake.query(
        "SELECT task_id FROM tasks WHERE run_id = ? AND status = 'verified' ORDER BY task_id", [targeted["run_id"]])] \
        if targeted else []
    coverage = {s["sandbox"]: s["share_after"] for r in explored if r for s in r.get("sandboxes", []) if not s.get("error")}
    new = sum(s["verified"] for r in synthesized if r for s in r.get("sandboxes", []))
    export = ""
    if exported:
        export = f"{exported.get('name')}/{exported.get('version') or '-'} ({exported.get('status')}, {exported['counts']['rows']} rows)"
    return IterationStats(iteration, rolled["run_id"], success, chosen, left, pools, born,
                          sum(s["candidates"] for s in (targeted or {}).get("sandboxes", [])), new, coverage, export,
                          list(problems or []))


def solved_later(lake: Lake, policy: str, stats: list[IterationStats]) -> dict[int, tuple[int, int, int]]:
    """Per iteration of birth: (tasks born, rolled out in a later iteration, solved in a later iteration)."""
    out = {}
    if not lake.files("verdicts"):
        return {s.iteration: (len(s.born), 0, 0) for s in stats}
    for s in stats:
        later = [x.rollout_run for x in stats if x.iteration > s.iteration and x.rollout_run]
        if not s.born or not later:
            out[s.iteration] = (len(s.born), 0, 0)
            continue
        row = lake.query(
            "SELECT count(DISTINCT v.task_id) AS tried, count(DISTINCT CASE WHEN v.verdict = 'pass' THEN v.task_id END) AS solved "
            "FROM verdicts v JOIN trajectories tr USING (trajectory_id) "
            "WHERE v.policy = ? AND list_contains(?, tr.run_id) AND list_contains(?, v.task_id)",
            [policy, later, s.born],
        )[0]
        out[s.iteration] = (len(s.born), int(row["tried"]), int(row["solved"]))
    return out


def movement(before: dict[str, str], after: dict[str, str]) -> Counter:
    """(from pool, to pool) -> tasks; a task without a pool before is `new`."""
    return Counter((before.get(t, "new"), p) for t, p in after.items() if before.get(t) != p)


def render_report(policy: str, stats: list[IterationStats], solved: dict[int, tuple[int, int, int]], chart_name: str,
                  simulator: bool) -> str:
    lines = [f"# cycle: {len(stats)} iteration(s) of {policy}", ""]
    if simulator:
        lines += ["> **`simulated-learner` is a simulator, not a model**: a scripted agent whose fault rates halve for "
                  "each published export holding a (sandbox, family) — a stand-in for training on the export, so the "
                  "loop can be shown offline. Its gains measure the flywheel's plumbing, not learning.", ""]
    lines += ["## iterations side by side", "",
              "| iteration | episodes | success | rolled out (pool at selection) | not rolled out | pools after | tasks born from failures (tried) | new tasks (synthesis + explore) | export | problems |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for s in stats:
        pools = Counter(s.pools.values())
        lines.append(
            f"| {s.iteration} | {s.episodes} | {s.success_rate:.0%} | {_counts(s.chosen)} | {_counts(s.left_out)} | "
            f"{_counts(pools)} | {len(s.born)} ({s.born_tried}) | {s.new_tasks} | {s.export or '-'} | {len(s.problems)} |")
    lines += ["", "## success rate per sandbox and family, by iteration", "", f"![success by iteration]({chart_name})", ""]
    keys = sorted({(r["sandbox"], r["family"]) for s in stats for r in s.success})
    lines += ["| sandbox | family | " + " | ".join(f"it {s.iteration}" for s in stats) + " |",
              "|---|---|" + "---|" * len(stats)]
    for key in keys:
        cells = []
        for s in stats:
            r = next((r for r in s.success if (r["sandbox"], r["family"]) == key), None)
            cells.append(f"{r['success_rate']:.0%} of {r['episodes']}" if r else "-")
        lines.append(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")
    lines += ["", "## pool movement", "", "| iteration | moves (from -> to: tasks) |", "|---|---|"]
    previous: dict[str, str] = {}
    for s in stats:
        moved = movement(previous, s.pools)
        lines.append(f"| {s.iteration} | " + (", ".join(f"{a} -> {b}: {n}" for (a, b), n in sorted(moved.items())) or "none") + " |")
        previous = s.pools
    lines += ["", "## tasks born from failure seeds", "", "| born in iteration | verified | rolled out later | solved later |",
              "|---|---|---|---|"]
    lines += [f"| {i} | {b} | {t} | {v} |" for i, (b, t, v) in sorted(solved.items())]
    sandboxes = sorted({k for s in stats for k in s.coverage})
    if sandboxes:
        lines += ["", "## coverage (share of areas with a verified task, after exploring)", "",
                  "| sandbox | " + " | ".join(f"it {s.iteration}" for s in stats) + " |", "|---|" + "---|" * len(stats)]
        for sb in sandboxes:
            lines.append(f"| {sb} | " + " | ".join(f"{s.coverage[sb]:.0%}" if sb in s.coverage else "-" for s in stats) + " |")
    problems = [p for s in stats for p in s.problems]
    lines += ["", "## problems (environment failures and skipped work; the cycle went on)", ""]
    if problems:
        lines += ["| iteration | stage | sandbox | problem |", "|---|---|---|---|"]
        lines += [f"| {p.iteration} | {p.stage} | {p.sandbox or '-'} | {p.error.replace('|', '/')} |" for p in problems]
    else:
        lines.append("none")
    return "\n".join(lines)


def chart_rows(stats: list[IterationStats]) -> list[dict[str, Any]]:
    return [r | {"iteration": s.iteration} for s in stats for r in s.success]


def summary_table(stats: list[IterationStats]) -> list[dict[str, Any]]:
    """One row per iteration, for a Prefect table artifact."""
    return [{"iteration": s.iteration, "episodes": s.episodes, "success_rate": round(s.success_rate, 3),
             "rolled_out": sum(s.chosen.values()), "mastered_not_rolled_out": s.left_out.get("mastered", 0),
             "born_from_failures": len(s.born), "export": s.export, "problems": len(s.problems)} for s in stats]


def _counts(c: Counter) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "-"


SIMULATORS = ("scripted-noisy", "simulated-learner")


def write_report(lake: Lake, run: str, policy: str, stats: list[IterationStats]) -> tuple[str, Path, Path]:
    """(markdown, report path, chart path): lake/reports/<run>.md and .svg, rewritten as iterations finish."""
    reports = lake.root / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    chart, report = reports / f"{run}.svg", reports / f"{run}.md"
    simulator = policy in SIMULATORS
    chart.write_text(iteration_chart_svg(
        chart_rows(stats), f"{policy}: success rate per sandbox and family, by iteration",
        f"{policy} is a simulator (scripted faults), not a model" if simulator else ""))
    markdown = render_report(policy, stats, solved_later(lake, policy, stats), chart.name, simulator)
    report.write_text(markdown)
    return markdown, report, chart
