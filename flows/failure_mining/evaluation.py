"""Precision and recall of the detectors per failure kind, against labelled trajectories.

Labels come from either
- the simulator: trajectories whose `injected_faults_json` is set (the scripted-noisy policy records every
  fault it injects as {"step": i, "kind": k}); fault kinds map to failure kinds with FAULT_KINDS, and the
  consecutive steps of one loop fault make one label; or
- a JSONL file (`labels=`), one object per line: {"trajectory_id": str, "kind": str, "step": int} and
  optionally "last_step" (default: step) for a labelled range. `kind` is a failure kind (loop, bad_args,
  sensitive, premature) or a scripted fault kind (mapped as above). A line with "kind": null labels a
  trajectory as clean, so false findings on it count against precision. Only trajectories named in the file
  are evaluated.

A finding matches a label when the kinds are equal, the trajectory is the same and the step ranges overlap
within +-1 step. Precision = matched findings / findings; recall = matched labels / labels, per kind.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import polars as pl

from flows.failure_mining.detectors import detect_all
from flows.failure_mining.features import attach_trajectories, step_features
from flows.failure_mining.mining import trajectory_context
from lake import Lake

FAULT_KINDS = {
    "loop": "loop",
    "bad_args": "bad_args",
    "premature": "premature",
    "unconfirmed_sensitive": "sensitive",
    "overcautious": "sensitive",
}
KINDS = ("loop", "bad_args", "sensitive", "premature")
TOLERANCE = 1
LABEL_SCHEMA = {"trajectory_id": pl.String, "kind": pl.String, "first_step": pl.Int32, "last_step": pl.Int32}


def _merge_loop_steps(labels: pl.DataFrame) -> pl.DataFrame:
    """One label per fault: consecutive loop steps are one loop; other kinds stay one label per step."""
    labels = labels.sort("trajectory_id", "kind", "first_step")
    same = (pl.col("trajectory_id") == pl.col("trajectory_id").shift(1)) & (
        pl.col("kind") == pl.col("kind").shift(1)
    )
    starts = ~(same & (pl.col("kind") == "loop") & (pl.col("first_step") <= pl.col("last_step").shift(1) + 1))
    return (
        labels.with_columns(_group=starts.fill_null(True).cum_sum())
        .group_by("_group")
        .agg(
            pl.col("trajectory_id").first(),
            pl.col("kind").first(),
            pl.col("first_step").min(),
            pl.col("last_step").max(),
        )
        .drop("_group")
        .select(list(LABEL_SCHEMA))
    )


def labels_from_faults(trajectories: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """Labels and labelled trajectory ids from the simulator's recorded faults."""
    recorded = trajectories.filter(pl.col("injected_faults_json").is_not_null())
    rows = [
        {
            "trajectory_id": r["trajectory_id"],
            "kind": FAULT_KINDS.get(f["kind"], f["kind"]),
            "first_step": f["step"],
            "last_step": f["step"],
        }
        for r in recorded.select("trajectory_id", "injected_faults_json").iter_rows(named=True)
        for f in json.loads(r["injected_faults_json"] or "[]")
    ]
    labels = pl.DataFrame(rows, schema=LABEL_SCHEMA)
    return _merge_loop_steps(labels), recorded["trajectory_id"].to_list()


def label_lines(path: str | Path, id_key: str, kinds: tuple[str, ...]) -> Iterator[tuple[str, str, str | None, int, int]]:
    """(where, id, kind, first step, last step) per line of a labels JSONL file ({id_key, "kind", "step"[,
    "last_step"]}; kind null marks a run with no label, its steps -1). A line that is no such label is a
    ValueError naming the file, the line and the shape."""
    shape = f'a label is one JSON line: {{"{id_key}": ..., "kind": {" | ".join(map(json.dumps, kinds))} | null, "step": N, "last_step": M}}'
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            rec = json.loads(line)
            key, kind = rec[id_key], rec.get("kind")
            first = int(rec["step"]) if kind else -1
            last = int(rec.get("last_step", first)) if kind else -1
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{where}: not a label ({type(exc).__name__}: {exc}); {shape}") from None
        if kind not in (*kinds, None):
            raise ValueError(f"{where}: kind {kind!r} is none of {', '.join(kinds)} or null; {shape}")
        yield where, key, kind, first, last


def labels_from_jsonl(path: str | Path) -> tuple[pl.DataFrame, list[str]]:
    """Labels from a JSONL file of {trajectory_id, kind, step[, last_step]}; kind null marks a clean one."""
    rows, ids = [], []
    for _, trajectory_id, kind, first, last in label_lines(path, "trajectory_id", tuple(dict.fromkeys((*KINDS, *FAULT_KINDS)))):
        ids.append(trajectory_id)
        if kind:
            rows.append({"trajectory_id": trajectory_id, "kind": FAULT_KINDS.get(kind, kind), "first_step": first,
                         "last_step": last})
    return _merge_loop_steps(pl.DataFrame(rows, schema=LABEL_SCHEMA)), sorted(set(ids))


def _matched(left: pl.DataFrame, right: pl.DataFrame, tolerance: int) -> pl.Series:
    """For each row of `left`, whether some row of `right` (same trajectory and kind) overlaps it."""
    pairs = (
        left.with_row_index("_i")
        .join(
            right.select("trajectory_id", "kind", r_first="first_step", r_last="last_step"),
            on=["trajectory_id", "kind"],
            how="inner",
        )
        .filter(
            (pl.col("first_step") <= pl.col("r_last") + tolerance)
            & (pl.col("r_first") <= pl.col("last_step") + tolerance)
        )
    )
    return left.with_row_index("_i")["_i"].is_in(pairs["_i"].implode())


def score(findings: pl.DataFrame, labels: pl.DataFrame, tolerance: int = TOLERANCE) -> dict:
    """Precision and recall per kind (plus how many findings of each reason matched)."""
    findings = findings.select("trajectory_id", "kind", "reason", "first_step", "last_step")
    f = findings.with_columns(matched=_matched(findings, labels, tolerance))
    lab = labels.with_columns(matched=_matched(labels, findings, tolerance))
    out: dict = {"kinds": {}, "reasons": {}}
    for kind in KINDS:
        fk, lk = f.filter(pl.col("kind") == kind), lab.filter(pl.col("kind") == kind)
        out["kinds"][kind] = {
            "findings": fk.height,
            "labels": lk.height,
            "precision": round(fk["matched"].mean(), 4) if fk.height else None,
            "recall": round(lk["matched"].mean(), 4) if lk.height else None,
        }
    for r in (
        f.group_by("reason")
        .agg(n=pl.len(), matched=pl.col("matched").sum())
        .sort("reason")
        .iter_rows(named=True)
    ):
        out["reasons"][r["reason"]] = {"findings": r["n"], "matched": r["matched"]}
    return out


def _lake_frames(lake: Lake, trajectory_ids: list[str] | None) -> dict[str, pl.DataFrame]:
    """Steps and trajectories (with the `trajectory_context` the miner reads: sandbox, verdict, reference
    length, instruction) of the given trajectories, or of every trajectory a simulator recorded faults for,
    read through DuckDB. Holds them all in memory."""
    wanted = (
        "SELECT trajectory_id FROM wanted"
        if trajectory_ids is not None
        else "SELECT trajectory_id FROM trajectories WHERE injected_faults_json IS NOT NULL"
    )
    con = lake.connect()
    try:
        con.register(
            "wanted",
            pl.DataFrame({"trajectory_id": trajectory_ids or []}, schema={"trajectory_id": pl.String}),
        )
        trajectories = trajectory_context(con, f"t.trajectory_id IN ({wanted})")
        steps = con.sql(f"SELECT * FROM steps WHERE trajectory_id IN ({wanted})").pl()
    finally:
        con.close()
    return {"trajectories": trajectories, "steps": steps}


def evaluate(
    source: Lake | Mapping[str, pl.DataFrame], labels: str | Path | None = None, tolerance: int = TOLERANCE
) -> dict:
    """Run the detectors on labelled trajectories and score them per kind.

    `source` is a Lake, or frames {"steps", "trajectories"[, "verdicts"]}; trajectories may carry
    `verdict` and `reference_len` columns (or verdicts come as their own frame), which premature needs.
    `labels` is a JSONL path (see the module docstring); by default the simulator's recorded faults are
    the labels. Returns {"kinds": {kind: {findings, labels, precision, recall}}, "reasons": {...},
    "trajectories", "steps", "labels_source"} - JSON-ready.
    """
    if labels is not None:
        label_frame, ids = labels_from_jsonl(labels)
        frames = _lake_frames(source, ids) if isinstance(source, Lake) else dict(source)
    else:
        frames = _lake_frames(source, None) if isinstance(source, Lake) else dict(source)
        label_frame, ids = labels_from_faults(frames["trajectories"])
    trajectories = frames["trajectories"].filter(pl.col("trajectory_id").is_in(ids))
    if frames.get("verdicts") is not None:
        trajectories = trajectories.drop("verdict", strict=False).join(
            frames["verdicts"].select("trajectory_id", "verdict"), on="trajectory_id", how="left"
        )
    steps = frames["steps"].filter(pl.col("trajectory_id").is_in(ids))
    features = attach_trajectories(step_features(steps), trajectories)
    result = score(detect_all(features), label_frame, tolerance)
    result |= {
        "trajectories": len(ids),
        "steps": steps.height,
        "labels_source": str(labels) if labels is not None else "injected_faults_json",
    }
    return result
