"""The curriculum: success rates per (policy, task) from verdicts put each task in a pool.

active — the rate is inside the learnable band (default 0.2–0.8): spend rollouts here;
monitoring — below the band, too hard for now; mastered — above it. env_error verdicts are left out
of the rates. A pool row is written only when membership or the rate changes (an event table).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from lake import Lake, utcnow


@dataclass(frozen=True)
class Band:
    low: float = 0.2
    high: float = 0.8
    min_episodes: int = 1

    def pool(self, rate: float) -> str:
        if rate < self.low:
            return "monitoring"
        if rate > self.high:
            return "mastered"
        return "active"


def update_pools(lake: Lake, run_id: str, band: Band = Band()) -> Counter:
    """Recompute pools from all verdicts; returns how many tasks moved into each pool."""
    if not lake.files("verdicts"):
        return Counter()
    rates = lake.query(
        "SELECT v.policy, v.task_id, any_value(t.sandbox) AS sandbox, any_value(t.family) AS family, "
        "avg(CASE WHEN v.verdict = 'pass' THEN 1.0 ELSE 0.0 END) AS rate, count(*) AS n "
        "FROM verdicts v JOIN tasks t ON t.task_id = v.task_id WHERE v.verdict != 'env_error' "
        "GROUP BY v.policy, v.task_id HAVING count(*) >= ?",
        [band.min_episodes],
    )
    current = {}
    if lake.files("pools"):
        current = {(r["policy"], r["task_id"]): r for r in lake.query("SELECT * FROM pools")}
    now, rows, moved = utcnow(), [], Counter()
    for r in rates:
        pool = band.pool(r["rate"])
        old = current.get((r["policy"], r["task_id"]))
        if old and old["pool"] == pool and abs(old["success_rate"] - r["rate"]) < 1e-9 and old["episodes"] == r["n"]:
            continue
        if not old or old["pool"] != pool:
            moved[pool] += 1
        rows.append({
            "policy": r["policy"], "task_id": r["task_id"], "sandbox": r["sandbox"], "family": r["family"],
            "pool": pool, "success_rate": r["rate"], "episodes": r["n"], "run_id": run_id, "recorded_at": now,
        })
    if rows:
        lake.write("pools", rows, run_id, "curriculum")
    return moved


def pool_report(lake: Lake, policy: str | None = None) -> list[dict]:
    if not lake.files("pools"):
        return []
    where, args = ("WHERE policy = ?", [policy]) if policy else ("", [])
    return lake.query(
        f"SELECT policy, sandbox, family, pool, count(*) AS tasks, round(avg(success_rate), 2) AS mean_rate "
        f"FROM pools {where} GROUP BY ALL ORDER BY policy, sandbox, family, pool",
        args,
    )
