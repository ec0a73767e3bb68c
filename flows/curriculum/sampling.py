"""Which verified tasks a rollout spends its episodes on, read from the curriculum's pools.

Active tasks first (a task with no pool row for the policy yet is new and counts as active), nearest a
50% success rate first; tasks in `monitoring` (too hard for now) are re-checked on a schedule — when
`recheck_every` rollouts of the policy have run since one last rolled the task out, or sooner when a sandbox
has nothing else to roll out (a run that rolls out nothing would never bring the schedule closer);
`mastered` tasks are retired from rollouts. `budget` caps the tasks chosen per sandbox. Everything is read from the lake, so
the same lake gives the same plan.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from flows.task_synthesis.task_spec import TaskSpec
from lake import Lake

log = logging.getLogger("flywheel.curriculum")

RECHECK_EVERY = 2


@dataclass
class RolloutPlan:
    tasks: list[TaskSpec]
    chosen: dict[str, Counter] = field(default_factory=dict)  # sandbox -> pool at selection -> tasks chosen
    left_out: dict[str, Counter] = field(default_factory=dict)  # sandbox -> why -> tasks left out

    def to_json(self) -> dict:
        return {"chosen": {s: dict(c) for s, c in self.chosen.items()},
                "left_out": {s: dict(c) for s, c in self.left_out.items()}}


def plan_rollout(lake: Lake, policy: str, tasks: list[TaskSpec], budget: int | None = None,
                 recheck_every: int = RECHECK_EVERY) -> RolloutPlan:
    """Pick from `tasks` (verified ones) by their pool for `policy`; see the module docstring."""
    if budget is not None and budget < 1:
        raise ValueError(f"rollout budget must be at least 1 task per sandbox, got {budget}")
    pools = _pools(lake, policy)
    since = _rollouts_since(lake, policy)
    plan = RolloutPlan([])
    by_sandbox: dict[str, list[TaskSpec]] = {}
    for t in tasks:
        by_sandbox.setdefault(t.sandbox, []).append(t)
    for sandbox, specs in by_sandbox.items():
        ranked: list[tuple[tuple, str, TaskSpec]] = []
        waiting: list[tuple[tuple, str, TaskSpec]] = []
        left = Counter()
        for t in specs:
            pool, rate = pools.get(t.task_id, ("new", 0.5))
            order = (1 if pool == "monitoring" else 0, -since.get(t.task_id, 10**6), abs(rate - 0.5), t.task_id)
            if pool == "mastered":
                left["mastered"] += 1
            elif pool == "monitoring" and since.get(t.task_id, recheck_every) < recheck_every:
                waiting.append((order, pool, t))
            else:
                ranked.append((order, pool, t))
        if not ranked:  # nothing else to spend the run on: re-check early (an empty run would count for nothing)
            ranked, waiting = waiting, []
        left["monitoring_not_due"] += len(waiting)
        left = +left
        ranked.sort(key=lambda x: x[0])
        if budget is not None and len(ranked) > budget:
            left["over_budget"] += len(ranked) - budget
            ranked = ranked[:budget]
        plan.tasks.extend(t for _, _, t in ranked)
        plan.chosen[sandbox] = Counter(p for _, p, _ in ranked)
        plan.left_out[sandbox] = left
        log.info("%s: %d tasks chosen (%s); left out: %s", sandbox, len(ranked),
                 ", ".join(f"{k} {v}" for k, v in sorted(plan.chosen[sandbox].items())) or "none",
                 ", ".join(f"{k} {v}" for k, v in sorted(left.items())) or "none")
    return plan


def _pools(lake: Lake, policy: str) -> dict[str, tuple[str, float]]:
    if not lake.files("pools"):
        return {}
    rows = lake.query("SELECT task_id, pool, success_rate FROM pools WHERE policy = ?", [policy])
    return {r["task_id"]: (r["pool"], r["success_rate"]) for r in rows}


def _rollouts_since(lake: Lake, policy: str) -> dict[str, int]:
    """Per task: how many rollout runs of `policy` have started since (and including) the one that last
    rolled it out; the next run is that many runs later."""
    if not lake.files("trajectories"):
        return {}
    rows = lake.query(
        "WITH runs AS (SELECT run_id, min(recorded_at) AS started FROM trajectories WHERE policy = ? GROUP BY run_id), "
        "ranked AS (SELECT run_id, row_number() OVER (ORDER BY started, run_id) AS idx FROM runs), "
        "last AS (SELECT t.task_id, max(r.idx) AS idx FROM trajectories t JOIN ranked r USING (run_id) "
        "         WHERE t.policy = ? GROUP BY t.task_id) "
        "SELECT task_id, (SELECT count(*) FROM ranked) - idx + 1 AS since FROM last",
        [policy, policy],
    )
    return {r["task_id"]: int(r["since"]) for r in rows}
