"""Which trajectories an export keeps, and why each other one was dropped; then their steps, streamed.

Selection (one SQL query over trajectories, the latest verdict, the task version, human reviews), in
this order of reasons: `before_since`, `not_judged`, `env_error` (verdict or ended), `review_rejected`
(the latest decision on the trajectory or its task is `reject`; a `relabel` replaces the verdict),
`task_retired`, `no_task`, `no_sandbox` (an imported trajectory that names no app: every exported row says
which sandbox it is from), `failed` (unless negatives are asked for), `not_mined` (action-rl needs
step_rewards), `no_steps`. Then de-duplication over each trajectory's steps: `duplicate_exact` (same
actions and same screens, step for step) and `duplicate_near` (same task; same actions once coordinates
are bucketed to a 25-unit grid, text case and spacing normalised, waits dropped, and immediate repeats on
an unchanged screen collapsed); the shortest, then earliest, trajectory of a group is kept. Then balance
caps in a seeded order: `cap_sandbox`, `cap_family`, `cap_difficulty`.

Routing by quality (`route`, as UI-TARS-2 routes its data): `sft` keeps passed trajectories of tasks that
are still verified (`task_not_verified` otherwise); `rl` keeps trajectories, passed or failed, of tasks in
the curriculum's `active` pool for the trajectory's policy (`not_active`); `negatives` keeps failed
trajectories with at least one mined failure (`passed`, `no_failure_mined`), their kinds and reasons in
`failure_reasons`. Without a route, the selection above is all there is.

Memory stays bounded: per-trajectory facts are held (one small row each), steps never are. Steps are
read a batch of whole trajectories at a time, only from the step files that hold that batch (writers land
a trajectory's steps in one file; a trajectory spread over several files is read from all of them).
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from flows.sft_export.config import ExportConfig
from lake import Lake
from lake.schemas import step_rewards_sql

BATCH_STEPS = 100_000
_IN_BATCH = "(SELECT trajectory_id FROM kept WHERE ord BETWEEN $a AND $b)"  # a streamed batch's trajectories
DUCKDB_MEMORY = "1GB"
NEAR_GRID = 25
DROP_REASONS = (
    "before_since", "not_judged", "env_error", "review_rejected", "task_retired", "no_task", "no_sandbox", "failed",
    "not_mined", "task_not_verified", "not_active", "passed", "no_failure_mined", "no_steps", "duplicate_exact",
    "duplicate_near", "cap_sandbox", "cap_family", "cap_difficulty",
)

_CANDIDATES = """
WITH traj AS (
    SELECT * FROM trajectories
    QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY recorded_at DESC) = 1),
v AS (
    SELECT trajectory_id, arg_max(verdict, recorded_at) AS judged, arg_max(judge_version, recorded_at) AS judge_version,
           arg_max(votes_json, recorded_at) AS votes_json
    FROM verdicts GROUP BY 1),
task AS (
    SELECT * FROM tasks_history
    QUALIFY row_number() OVER (PARTITION BY task_id, version ORDER BY recorded_at DESC) = 1),
rev AS (
    SELECT item_kind, item_id, arg_max(decision, decided_at) AS decision, arg_max(label, decided_at) AS label
    FROM reviews GROUP BY 1, 2),
mined AS (SELECT DISTINCT trajectory_id FROM step_rewards),
pool AS (SELECT policy, task_id, pool FROM pools),
fl AS (SELECT trajectory_id, string_agg(DISTINCT kind || ':' || reason, ',' ORDER BY kind || ':' || reason) AS failure_reasons
       FROM failures GROUP BY 1),
j AS (
    SELECT t.trajectory_id, t.task_id, t.task_version, t.sandbox, t.source_commit, t.policy, t.model, t.ended,
           t.recorded_at, t.run_id, v.judged, v.judge_version, v.votes_json,
           coalesce(k.family, l.family) AS family, coalesce(k.difficulty, l.difficulty) AS difficulty,
           coalesce(k.instruction, l.instruction) AS instruction, l.status AS task_status,
           json_extract_string(coalesce(k.verifier_json, l.verifier_json), '$.template') AS verifier_template,
           coalesce(k.provenance_json, l.provenance_json) AS provenance_json,
           rt.decision AS trajectory_review, rk.decision AS task_review,
           CASE WHEN rt.decision = 'relabel' AND rt.label IS NOT NULL THEN rt.label ELSE v.judged END AS verdict,
           m.trajectory_id IS NOT NULL AS mined, pl.pool, fl.failure_reasons
    FROM traj t
    LEFT JOIN v USING (trajectory_id)
    LEFT JOIN task k ON k.task_id = t.task_id AND k.version = t.task_version
    LEFT JOIN tasks l ON l.task_id = t.task_id
    LEFT JOIN rev rt ON rt.item_kind = 'trajectory' AND rt.item_id = t.trajectory_id
    LEFT JOIN rev rk ON rk.item_kind = 'task' AND rk.item_id = t.task_id
    LEFT JOIN mined m USING (trajectory_id)
    LEFT JOIN pool pl ON pl.task_id = t.task_id AND pl.policy = t.policy
    LEFT JOIN fl ON fl.trajectory_id = t.trajectory_id)
SELECT *, CASE
    WHEN $since IS NOT NULL AND recorded_at < $since::TIMESTAMPTZ THEN 'before_since'
    WHEN judged IS NULL THEN 'not_judged'
    WHEN judged = 'env_error' OR verdict = 'env_error' OR ended = 'env_error' THEN 'env_error'
    WHEN trajectory_review = 'reject' OR task_review = 'reject' THEN 'review_rejected'
    WHEN task_status = 'retired' THEN 'task_retired'
    WHEN instruction IS NULL THEN 'no_task'
    WHEN sandbox IS NULL THEN 'no_sandbox'
    WHEN verdict <> 'pass' AND NOT $negatives THEN 'failed'
    WHEN $needs_rewards AND NOT mined THEN 'not_mined'
    WHEN $route = 'sft' AND task_status IS DISTINCT FROM 'verified' THEN 'task_not_verified'
    WHEN $route = 'rl' AND pool IS DISTINCT FROM 'active' THEN 'not_active'
    WHEN $route = 'negatives' AND verdict = 'pass' THEN 'passed'
    WHEN $route = 'negatives' AND failure_reasons IS NULL THEN 'no_failure_mined'
END AS drop_reason
FROM j ORDER BY trajectory_id
"""


@dataclass
class Curation:
    """The kept trajectories (with `ord`, their streaming order) and the count of every drop reason."""

    kept: pl.DataFrame
    dropped: dict[str, int] = field(default_factory=dict)
    considered: int = 0
    step_files: list[str] = field(default_factory=list)


def connect(lake: Lake) -> duckdb.DuckDBPyConnection:
    con = lake.connect()
    # batches are sorted whole in DuckDB: cap its memory (it spills to a temp dir beyond) so it stays bounded
    con.execute(f"SET memory_limit = '{DUCKDB_MEMORY}'")
    return con


def curate(lake: Lake, con: duckdb.DuckDBPyConnection, config: ExportConfig,
           on_steps: Callable[[int, int], None] | None = None) -> Curation:
    """Select, de-duplicate and balance; `on_steps(n, total)` reports the de-duplication scan's progress."""
    if not lake.files("trajectories"):
        return Curation(kept=pl.DataFrame(), considered=0)
    rows = pl.from_arrow(con.sql(
        _CANDIDATES, params={"since": config.since, "negatives": config.negatives, "needs_rewards": config.format == "action-rl",
                             "route": config.route}
    ).to_arrow_table())
    dropped = Counter({r: n for r, n in rows.group_by("drop_reason").len().iter_rows() if r})
    chosen = rows.filter(pl.col("drop_reason").is_null()).drop("drop_reason")
    files = sorted(str(f) for f in lake.files("steps"))  # sorted: batches bisect on file names (Delta lists them unordered)
    located = locate_steps(con, files, chosen.select("trajectory_id"))
    chosen = chosen.join(located, on="trajectory_id", how="left")
    dropped["no_steps"] += chosen.filter(pl.col("steps").is_null()).height
    chosen = chosen.filter(pl.col("steps").is_not_null())
    chosen = _with_order(chosen)
    keys = _dedup_keys(con, files, chosen, on_steps)
    chosen = chosen.join(keys, on="trajectory_id", how="left").sort("steps", "recorded_at", "trajectory_id")
    exact = chosen.select(pl.col("exact_key").is_first_distinct()).to_series()
    dropped["duplicate_exact"] += int((~exact).sum())
    chosen = chosen.filter(exact)
    if config.near_dedup:
        near = chosen.select(pl.col("near_key").is_first_distinct()).to_series()
        dropped["duplicate_near"] += int((~near).sum())
        chosen = chosen.filter(near)
    chosen, capped = _balance(chosen, config)
    dropped.update(capped)
    kept = _with_order(chosen.drop("ord", "exact_key", "near_key"))
    return Curation(kept=kept, dropped={r: dropped[r] for r in DROP_REASONS if dropped[r]}, considered=rows.height,
                    step_files=files)


def locate_steps(con: duckdb.DuckDBPyConnection, files: list[str], ids: pl.DataFrame) -> pl.DataFrame:
    """Per trajectory: how many steps, and the first and last step file holding them (only ids are read)."""
    schema = {"trajectory_id": pl.String, "first_file": pl.String, "last_file": pl.String, "steps": pl.Int64}
    if not files or ids.is_empty():
        return pl.DataFrame(schema=schema)
    con.register("wanted", ids.to_arrow())
    try:
        found = con.sql(
            "SELECT trajectory_id, min(filename) AS first_file, max(filename) AS last_file, count(*) AS steps "
            "FROM read_parquet($files, filename = true) WHERE trajectory_id IN (SELECT trajectory_id FROM wanted) "
            "GROUP BY 1",
            params={"files": files},
        ).to_arrow_table()
    finally:
        con.unregister("wanted")
    return pl.from_arrow(found).cast(schema) if found.num_rows else pl.DataFrame(schema=schema)


def _with_order(frame: pl.DataFrame) -> pl.DataFrame:
    """`ord`: the streaming order, by step file then id, so a batch reads few files (and is deterministic)."""
    return frame.sort("first_file", "trajectory_id").with_row_index("ord").with_columns(pl.col("ord").cast(pl.Int64))


def stream_trajectories(
    con: duckdb.DuckDBPyConnection,
    files: list[str],
    kept: pl.DataFrame,
    columns: tuple[str, ...],
    rewards: bool = False,
    batch_steps: int = BATCH_STEPS,
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(trajectory_id, steps in order) for every kept trajectory, in `ord` order, a batch at a time.

    With `rewards`, each step carries ct, qt, st, lt and reward (the latest mining run's, from the lake's
    `step_rewards` view: mining writes only the steps with a finding, the view fills in the clean ones)."""
    if kept.is_empty():
        return
    con.register("kept", kept.select("trajectory_id", "ord").to_arrow())
    try:
        for a, b, batch_files in _batches(files, kept, batch_steps):
            cols = ", ".join(f"s.{c}" for c in columns)
            joined = ""
            params: dict[str, Any] = {"files": batch_files, "a": a, "b": b}
            if rewards:
                cols += ", r.ct, r.qt, r.st, r.lt, r.reward"
                joined = (
                    "LEFT JOIN (SELECT trajectory_id, step_index, arg_max(ct, run_id) AS ct, arg_max(qt, run_id) AS qt, "
                    "arg_max(st, run_id) AS st, arg_max(lt, run_id) AS lt, arg_max(reward, run_id) AS reward "
                    f"FROM ({step_rewards_sql('read_parquet($files)', _IN_BATCH)}) GROUP BY 1, 2) r "
                    "USING (trajectory_id, step_index) "
                )
            reader = con.sql(
                f"SELECT {cols} FROM read_parquet($files) s JOIN kept k USING (trajectory_id) {joined}"
                "WHERE k.ord BETWEEN $a AND $b ORDER BY k.ord, s.step_index",
                params=params,
            ).to_arrow_reader(20_000)
            yield from _group(reader)
    finally:
        con.unregister("kept")


def _batches(files: list[str], kept: pl.DataFrame, batch_steps: int) -> Iterator[tuple[int, int, list[str]]]:
    """Consecutive `ord` ranges of about batch_steps steps, each with the step files that hold them."""
    ords, firsts, lasts, steps = (kept.sort("ord")[c].to_list() for c in ("ord", "first_file", "last_file", "steps"))
    start, total, lo, hi = 0, 0, len(files), -1
    for i, (first, last, n) in enumerate(zip(firsts, lasts, steps)):
        lo = min(lo, bisect.bisect_left(files, first))
        hi = max(hi, bisect.bisect_left(files, last))
        total += n
        if total >= batch_steps or i == len(ords) - 1:
            yield ords[start], ords[i], files[lo : hi + 1]
            start, total, lo, hi = i + 1, 0, len(files), -1


def _group(reader: pa.RecordBatchReader) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    current: str | None = None
    steps: list[dict[str, Any]] = []
    for batch in reader:
        for row in batch.to_pylist():
            if row["trajectory_id"] != current:
                if current is not None:
                    yield current, steps
                current, steps = row["trajectory_id"], []
            steps.append(row)
    if current is not None:
        yield current, steps


# ---- de-duplication keys --------------------------------------------------------------------------------


def _dedup_keys(con, files, chosen: pl.DataFrame, on_steps) -> pl.DataFrame:
    tasks = dict(chosen.select("trajectory_id", "task_id").iter_rows())
    total = int(chosen["steps"].sum()) if not chosen.is_empty() else 0
    out: list[tuple[str, str, str]] = []
    for tid, steps in stream_trajectories(con, files, chosen, ("trajectory_id", "step_index", "actions_json", "screenshot_sha")):
        exact = hashlib.sha256()
        tokens: list[str] = []
        for s in steps:
            exact.update(f"{s['actions_json']}\x1e{s['screenshot_sha']}\x1f".encode())
            norm = normalised_actions(s["actions_json"] or "")
            token = f"{norm}\x1e{s['screenshot_sha']}"
            if norm and (not tokens or tokens[-1] != token):
                tokens.append(token)
        near = hashlib.sha256(f"{tasks[tid]}\x1d{chr(0x1f).join(tokens)}".encode()).hexdigest()
        out.append((tid, exact.hexdigest(), near))
        if on_steps:
            on_steps(len(steps), total)
    return pl.DataFrame(out, schema={"trajectory_id": pl.String, "exact_key": pl.String, "near_key": pl.String},
                        orient="row")


@lru_cache(maxsize=16384)
def normalised_actions(actions_json: str) -> str:
    """An action list as it matters for near-duplicates: coarse coordinates, normalised text, no waits."""
    try:
        actions = json.loads(actions_json)
    except ValueError:
        return actions_json
    norm = []
    for a in actions if isinstance(actions, list) else [actions]:
        if not isinstance(a, dict) or a.get("action") in ("wait", "screenshot"):
            continue
        a = {k: (v // NEAR_GRID if k in ("x", "y", "x2", "y2") and isinstance(v, int) else v) for k, v in a.items()}
        if isinstance(a.get("text"), str):
            a["text"] = " ".join(a["text"].lower().split())
        norm.append(a)
    return json.dumps(norm, sort_keys=True) if norm else ""


# ---- balance --------------------------------------------------------------------------------------------


def _balance(chosen: pl.DataFrame, config: ExportConfig) -> tuple[pl.DataFrame, Counter]:
    caps = [("sandbox", config.max_per_sandbox), ("family", config.max_per_family),
            ("difficulty", config.max_per_difficulty)]
    caps = [(col, cap) for col, cap in caps if cap]
    if not caps:
        return chosen, Counter()
    order = chosen.with_columns(
        draw=pl.concat_str(pl.lit(f"{config.seed}:"), pl.col("trajectory_id")).hash(0)
    ).sort("draw", "trajectory_id")
    seen: dict[str, Counter] = {col: Counter() for col, _ in caps}
    keep, dropped = [], Counter()
    for row in order.select("trajectory_id", *[c for c, _ in caps]).iter_rows(named=True):
        over = next((col for col, cap in caps if seen[col][row[col]] >= cap), None)
        if over:
            dropped[f"cap_{over}"] += 1
            continue
        for col, _ in caps:
            seen[col][row[col]] += 1
        keep.append(row["trajectory_id"])
    return chosen.filter(pl.col("trajectory_id").is_in(keep)), dropped
