"""Per-step reward signals for Action-RL, derived from the findings with vectorised joins.

    Ct  action-type correctness, 1 or 0: 0 when the step is inside a bad_args finding (format errors and
        wrong arguments included, as the issue asks) or is a premature terminate (the wrong action type);
    Qt  argument quality in 0..1: 1 - the worst bad_args severity covering the step (a format error or an
        out-of-range coordinate gives 0, a click on nothing 0.3, a zero scroll 0.5);
    St  sensitive-action penalty in -1..0: minus the worst sensitive severity (unconfirmed -1, over-cautious
        call_user -0.3);
    Lt  repetition penalty in -1..0: minus the worst loop severity covering the step (exact repeat -1,
        short cycle -0.8, no progress and repeated typing -0.6).
    reward = ct*Ct + qt*Qt + st*St + lt*Lt with RewardWeights: by default a clean step earns 1.0, a format
        error 0, an unconfirmed payment 0, a looping repeat 0.5.
Severities live in detectors.SEVERITY; weights are stored with every row (weights_json).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import polars as pl

from flows.failure_mining.features import ENGINE

REWARD_KINDS = ("bad_args", "sensitive", "loop", "premature")


@dataclass(frozen=True)
class RewardWeights:
    """How much each signal counts in the combined reward (see the module docstring for the scales)."""

    ct: float = 0.5
    qt: float = 0.5
    st: float = 1.0
    lt: float = 0.5

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


DEFAULT_WEIGHTS = RewardWeights()


def _spread(findings: pl.DataFrame) -> pl.DataFrame:
    """One row per (finding, step it covers): trajectory_id, step_index, kind, severity."""
    return findings.select(
        "trajectory_id",
        "kind",
        "severity",
        step_index=pl.int_ranges(pl.col("first_step"), pl.col("last_step") + 1, dtype=pl.Int32),
    ).explode("step_index")


def step_severities(findings: pl.DataFrame) -> pl.DataFrame:
    """The worst severity per (trajectory, step) and failure kind, findings spread over their step range."""
    return (
        _spread(findings)
        .group_by("trajectory_id", "step_index")
        .agg(**{f"sev_{k}": pl.col("severity").filter(pl.col("kind") == k).max() for k in REWARD_KINDS})
    )


def _by_join(steps: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame:
    """Severities per step by a join on (trajectory hash, step): works whatever the step numbering."""
    sev = step_severities(findings).with_columns(_traj=pl.col("trajectory_id").hash()).drop("trajectory_id")
    return (
        steps.select("trajectory_id", "step_index", _traj=pl.col("trajectory_id").hash())
        .join(sev, on=["_traj", "step_index"], how="left")
        .drop("_traj")
    )


def _placed(steps: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame | None:
    """(kind, severity, row): each finding spread over the rows of the steps it covers, when every trajectory
    is contiguous with steps numbered without gaps (as rollouts write them); None when that does not hold."""
    tid, step = pl.col("trajectory_id"), pl.col("step_index")
    # features say where a trajectory starts (`same_prev`: each one is a run of rows, features.in_trajectory_order)
    new = ~pl.col("same_prev") if "same_prev" in steps.columns else (tid != tid.shift(1)).fill_null(True)
    marks = steps.select(new=new, gapless=(new | (step - step.shift(1) == 1)).fill_null(True))
    if not marks["gapless"].all():
        return None
    at = marks["new"].arg_true()
    starts = steps.select("trajectory_id", first=step).gather(at).with_columns(row=at.cast(pl.Int64))
    if starts["trajectory_id"].n_unique() != starts.height:
        return None
    offset = pl.col("row") - pl.col("first")
    return (
        findings.select("trajectory_id", "kind", "severity", "first_step", "last_step")
        .join(starts, on="trajectory_id", how="inner")
        .select("kind", "severity", row=pl.int_ranges(offset + pl.col("first_step"), offset + pl.col("last_step") + 1))
        .explode("row")
    )


def _by_position(steps: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame | None:
    """Severities per step by row position, when every trajectory is contiguous with steps numbered
    without gaps (as rollouts write them): no join over every step. None when that does not hold.
    Findings (not their spread steps) are joined to the trajectory starts, so only integers are spread."""
    placed = _placed(steps, findings)
    if placed is None:
        return None
    columns = {}
    for k in REWARD_KINDS:
        worst = placed.filter(pl.col("kind") == k).group_by("row").agg(pl.col("severity").max())
        full = pl.repeat(None, steps.height, dtype=pl.Float64, eager=True)
        columns[f"sev_{k}"] = full.scatter(worst["row"], worst["severity"]) if worst.height else full
    return steps.select("trajectory_id", "step_index").with_columns(**columns)


def step_rewards(
    steps: pl.DataFrame | pl.LazyFrame, findings: pl.DataFrame, weights: RewardWeights = DEFAULT_WEIGHTS
) -> pl.DataFrame:
    """Ct, Qt, St, Lt and the combined reward for every step of `steps` (trajectory_id, step_index)."""
    steps = (steps.collect(engine=ENGINE) if isinstance(steps, pl.LazyFrame) else steps).select(
        "trajectory_id", "step_index"
    )
    severities = _by_position(steps, findings)
    if severities is None:
        severities = _by_join(steps, findings)
    return _combined(severities, weights)


def marked_step_rewards(
    steps: pl.DataFrame, findings: pl.DataFrame, weights: RewardWeights = DEFAULT_WEIGHTS
) -> pl.DataFrame:
    """The rows of `step_rewards(steps, findings, weights)` that differ from a clean step's (ct 1, qt 1, st 0,
    lt 0), in step order: what mining writes (the lake's `step_rewards` view fills in the clean steps). Only
    the steps that findings of a rewarded kind cover are looked at, not every step."""
    findings = findings.filter(pl.col("kind").is_in(REWARD_KINDS) & (pl.col("severity") > 0))
    steps = steps.select("trajectory_id", "step_index", *(["same_prev"] if "same_prev" in steps.columns else []))
    severities = _marked_by_position(steps, findings)
    if severities is None:
        severities = _by_join(steps, findings).filter(
            pl.any_horizontal(pl.col(f"sev_{k}").is_not_null() for k in REWARD_KINDS)
        )
    clean = (pl.col("ct") == 1.0) & (pl.col("qt") == 1.0) & (pl.col("st") == 0.0) & (pl.col("lt") == 0.0)
    return _combined(severities, weights).filter(~clean)


def _marked_by_position(steps: pl.DataFrame, findings: pl.DataFrame) -> pl.DataFrame | None:
    """`_by_position` for the covered steps only: (trajectory_id, step_index, sev_*) in row order."""
    placed = _placed(steps, findings)
    if placed is None:
        return None
    # the worst severity per (row, kind) by one integer key (a group_by with a filtered max per kind cost
    # twice as much), then one column per kind over the rows covered, in row order
    kinds = len(REWARD_KINDS)
    number = pl.col("kind").replace_strict({k: i for i, k in enumerate(REWARD_KINDS)}, return_dtype=pl.Int64)
    worst = (
        placed.group_by(key=pl.col("row") * kinds + number).agg(pl.col("severity").max()).sort("key")
        .with_columns(row=pl.col("key") // kinds, kind=pl.col("key") % kinds)
    )
    rows = worst["row"]
    at = ((rows != rows.shift(1)).fill_null(True).cum_sum() - 1).cast(pl.UInt32)  # the row's place among them
    covered = rows.unique(maintain_order=True)
    columns = {}
    for i, k in enumerate(REWARD_KINDS):
        mine = worst["kind"] == i
        empty = pl.repeat(None, covered.len(), dtype=pl.Float64, eager=True)
        columns[f"sev_{k}"] = empty.scatter(at.filter(mine), worst["severity"].filter(mine)) if mine.any() else empty
    return steps.select("trajectory_id", "step_index").gather(covered).with_columns(**columns)


def _combined(severities: pl.DataFrame, weights: RewardWeights) -> pl.DataFrame:
    """Ct, Qt, St, Lt and the reward from the worst severity per kind (`sev_*`, null for none)."""
    bad, loop = pl.col("sev_bad_args").fill_null(0.0), pl.col("sev_loop").fill_null(0.0)
    sensitive, premature = pl.col("sev_sensitive").fill_null(0.0), pl.col("sev_premature").fill_null(0.0)
    return severities.select(
        "trajectory_id",
        "step_index",
        ct=pl.when((bad > 0) | (premature > 0)).then(0.0).otherwise(1.0),
        qt=1.0 - bad,
        st=pl.when(sensitive > 0).then(-sensitive).otherwise(0.0),  # never -0.0
        lt=pl.when(loop > 0).then(-loop).otherwise(0.0),
    ).with_columns(
        reward=weights.ct * pl.col("ct")
        + weights.qt * pl.col("qt")
        + weights.st * pl.col("st")
        + weights.lt * pl.col("lt")
    )
