"""Which items a reviewer sees: verified pairs and judged trajectories, stratified by sandbox and family,
plus every judge case whose voters disagreed."""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass

from lake import Lake

# A verdict whose voters agree less than this is always reviewed (5 of 6 voters agreeing is 0.83).
LOW_AGREEMENT = 0.8


@dataclass(frozen=True)
class SampleItem:
    kind: str  # task | trajectory
    item_id: str
    sandbox: str
    family: str
    why: str  # stratified | low_agreement


@dataclass(frozen=True)
class Sample:
    sample_id: str
    items: tuple[SampleItem, ...]


def candidates(lake: Lake) -> tuple[list[SampleItem], list[tuple[SampleItem, float]]]:
    """Every reviewable item, and the judged trajectories with their agreement."""
    tasks: list[SampleItem] = []
    if lake.files("tasks"):
        tasks = [
            SampleItem("task", r["task_id"], r["sandbox"], r["family"] or "", "stratified")
            for r in lake.query("SELECT task_id, sandbox, family FROM tasks WHERE status = 'verified' ORDER BY task_id")
        ]
    judged: list[tuple[SampleItem, float]] = []
    if lake.files("verdicts") and lake.files("tasks"):
        rows = lake.query(
            "SELECT v.trajectory_id, v.sandbox, coalesce(t.family, '') AS family, v.agreement FROM verdicts v "
            "LEFT JOIN tasks_history t ON t.task_id = v.task_id "
            "QUALIFY row_number() OVER (PARTITION BY v.trajectory_id ORDER BY v.recorded_at DESC, t.recorded_at DESC) = 1 "
            "ORDER BY v.trajectory_id"
        )
        judged = [(SampleItem("trajectory", r["trajectory_id"], r["sandbox"], r["family"], "stratified"),
                   r["agreement"] if r["agreement"] is not None else 1.0) for r in rows]
    return tasks, judged


def draw_sample(lake: Lake, size: int, seed: int = 0) -> Sample:
    """Every low-agreement verdict, then up to `size` items round-robin over (kind, sandbox, family) strata,
    each shuffled by the seed. The same lake and seed give the same sample."""
    if size < 0:
        raise ValueError(f"--sample must be 0 or more, got {size}")
    tasks, judged = candidates(lake)
    low = [SampleItem(i.kind, i.item_id, i.sandbox, i.family, "low_agreement")
           for i, agreement in judged if agreement < LOW_AGREEMENT]
    rng = random.Random(seed)
    strata: dict[tuple[str, str, str], list[SampleItem]] = defaultdict(list)
    for item in tasks + [item for item, agreement in judged if agreement >= LOW_AGREEMENT]:
        strata[(item.kind, item.sandbox, item.family)].append(item)
    # Interleave so a small sample still covers every (kind, sandbox): each group's first family, then its second...
    rank = {}
    for kind, sandbox, family in sorted(strata):
        rank[(kind, sandbox, family)] = sum(1 for k in rank if k[:2] == (kind, sandbox))
    queues = []
    for key in sorted(strata, key=lambda k: (rank[k], k[1], k[0], k[2])):
        members = strata[key][:]
        rng.shuffle(members)
        queues.append(members)
    drawn: list[SampleItem] = []
    while len(drawn) < size and any(queues):
        for q in queues:
            if q and len(drawn) < size:
                drawn.append(q.pop(0))
    items = tuple(low + drawn)
    digest = hashlib.sha256("\n".join(f"{i.kind}:{i.item_id}" for i in items).encode()).hexdigest()[:10]
    return Sample(sample_id=f"sample-{seed}-{digest}", items=items)
