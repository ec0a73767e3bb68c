"""`mine-failures` as plain library code: run the detectors over every trajectory not yet mined with this
DETECTOR_VERSION and land failures, step_rewards, failure_seeds and mined rows in the lake.

What is mined: trajectories rows (steps without one are not: task, sandbox and policy come from it).
Incremental: a trajectory is pending until it has a `mined` row for DETECTOR_VERSION; the `mined` rows of a
batch are written last, so a crash leaves the batch pending and a re-run mines it again (failure ids are
deterministic, so a reader can drop the duplicates such a crash could leave). Re-running adds nothing.

Memory bounded: steps are read a batch of Parquet files at a time (at most `batch_steps` rows, whole
files; writers land a trajectory's steps in one file, as rollouts and importers do; a trajectory found in
several files has its files read together). A single file larger than `batch_steps` is read alone. While a
batch is mined the next one is read and the previous one written: at most three batches are held.
Outputs go through `write_frame`, which writes the lake's own schema in the lake's file layout from Arrow
with the lake's atomic writer (Lake.write validates row by row, too slow for one reward row per step at
10M steps); a background thread writes batch i while batch i+1 is mined.

Seeds: one row per (task, kind, reason) and batch, with a deterministic seed_id; a later run that sees
the weakness again writes a newer row with the same seed_id, so readers keep the latest per seed_id.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
import time
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa

from flows.failure_mining.detectors import UNDECIDABLE_CHECKS, run_checks
from flows.failure_mining.features import ENGINE, STEP_COLUMNS, attach_trajectories, prev, step_features
from flows.failure_mining.report import failures_chart_svg, summary_markdown
from flows.failure_mining.rewards import DEFAULT_WEIGHTS, RewardWeights, marked_step_rewards
from lake import Lake, utcnow
from lake.schemas import schema_for

# mining-15 (issue 15, seventeenth pass): "the last step" is this turn's; a button named, then clicked as "it";
# an OK or Done given the change it makes right after it ("点击“OK”按钮确认保存"); a narrator's press named unquoted,
# in brackets, or as a task done ("The task to click on the 'Delete' option ... is complete");
# mining-14 (issue 15, sixteenth pass): an Enter runs the command the turn before typed; a command retyped word for
# word after an entry that did not fail is a retry, not a new side effect; git clone / init, tar c, office conversions;
# mining-13 (issue 15, fifteenth pass): the unlock / home gesture retried between other tries is a loop;
# mining-12 (issue 15, fourteenth pass): a change the model reports after a press, and the control a narration
# after a wordless press names, are side effects (evidence: reasoning);
# mining-11 (issue 15, thirteenth pass): failing stretches count tries the words call failed, scroll searches,
# idle turns of a finished agent, forms opened without URLs, tool calls judged by the tool's name;
# mining-10 (issue 15, twelfth pass): repeats from actions alone that the instruction asks for are no loop;
# mining-9 (issue 15, eleventh pass): coordinate actions no longer share one aim (a hashed null);
# mining-5 (issue 15, sixth pass): cycles the model reports failing, agents' verdict words, unmapped actions
# repeat, stepping controls, repeated typing needs two typings that did not take, links and bare Submits;
# mining-4: first attempts, planned repeats, new content
DETECTOR_VERSION = "mining-15"
BATCH_STEPS = int(os.environ.get("FLYWHEEL_MINING_BATCH_STEPS", "2000000"))  # steps per mine-shard task
MINERS = int(os.environ.get("FLYWHEEL_MINING_THREADS", "2"))  # batches mined at once by one `mine()`
_SAFE = re.compile(r"[^A-Za-z0-9_.=-]+")
# Per trajectory in `mined.undecidable_json`: each check's undecidable cases, and the steps missing a screen.
MINED_COUNTS = (*UNDECIDABLE_CHECKS, "missing_ui_tree", "missing_screenshot")


# how the summary names the sandbox of imported runs: they come from no sandbox of ours (and have no manifest)
NO_SANDBOX = "(none: imported)"


@dataclass
class MiningSummary:
    """What one mining run did: counts per kind, reason, sandbox and policy, and where its report is."""

    run_id: str
    detector_version: str = DETECTOR_VERSION
    trajectories: int = 0
    steps: int = 0
    failures: int = 0
    failed_trajectories: int = 0
    seeds: int = 0
    batches: int = 0
    waiting: int = 0  # pending trajectories whose steps are not in the lake yet
    seconds: float = 0.0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_reason: dict[str, int] = field(default_factory=dict)  # "kind/reason" -> n
    by_sandbox: dict[str, int] = field(default_factory=dict)
    by_policy: dict[str, int] = field(default_factory=dict)
    undecidable: dict[str, int] = field(default_factory=dict)
    report: str | None = None
    chart: str | None = None

    def add(self, failures: pl.DataFrame, undecided: dict[str, int]) -> None:
        groups = failures.group_by("kind", "reason", "sandbox", "policy").len()  # one pass; few groups
        for kind, reason, sandbox, policy, n in groups.iter_rows():
            for into, key, missing in (
                (self.by_kind, kind, "?"),
                (self.by_sandbox, sandbox, NO_SANDBOX),
                (self.by_policy, policy, "(none given)"),
            ):
                key = missing if key is None else key
                into[key] = into.get(key, 0) + n
            key = None if kind is None or reason is None else f"{kind}/{reason}"
            self.by_reason[key] = self.by_reason.get(key, 0) + n
        self.undecidable = dict(Counter(self.undecidable) + Counter(undecided))
        self.failures += failures.height
        self.failed_trajectories += failures["trajectory_id"].n_unique()

    def markdown(self) -> str:
        return summary_markdown(self)

    def to_json(self) -> dict:
        return asdict(self)


# ---- what to mine -----------------------------------------------------------------------------------------


def trajectory_context(con, where: str, params: dict | None = None, faults: bool = True) -> pl.DataFrame:
    """Trajectories matching `where` (SQL over `t`, the trajectories table) with what the detectors need to
    know about them: the sandbox (its manifest then decides what is sensitive), the latest verdict, the task's
    reference length in non-terminate actions, the instruction (the task's where the trajectory has none),
    `num_steps` and the simulator's `injected_faults_json`. The miner and `evaluation.evaluate` read the
    same, so a lake scores as it is mined. Without `faults`, the faults column is not read (the miner never
    needs it: 1M bench trajectories' faults are ~100 MB of strings)."""
    # a lake whose trajectory files all predate the instruction column has none: the task's then
    names = con.sql("SELECT * FROM trajectories LIMIT 0").columns
    instruction = "t.instruction" if "instruction" in names else "NULL"
    sql = f"""
        WITH v AS (SELECT trajectory_id, arg_max(verdict, recorded_at) AS verdict FROM verdicts GROUP BY 1),
             r AS (SELECT task_id, len(list_filter(json_extract_string(reference_json, '$[*].action'),
                                                   lambda a: a <> 'terminate'))::INTEGER AS reference_len,
                          instruction AS task_instruction
                   FROM tasks)
        SELECT t.trajectory_id, t.task_id, t.sandbox, t.policy, t.num_steps, v.verdict, r.reference_len,
               coalesce({instruction}, r.task_instruction) AS instruction{", t.injected_faults_json" if faults else ""}
        FROM trajectories t LEFT JOIN v USING (trajectory_id) LEFT JOIN r USING (task_id)
        WHERE {where}
    """
    return con.sql(sql, params=params).pl() if params else con.sql(sql).pl()


def pending_trajectories(
    lake: Lake,
    policy: str | None = None,
    since: dt.datetime | str | None = None,
    detector_version: str = DETECTOR_VERSION,
) -> pl.DataFrame:
    """Trajectories with no `mined` row for this detector version, with their `trajectory_context`. No step
    file is read here: `step_batches` decides how to find their steps."""
    if not lake.files("trajectories"):
        return pl.DataFrame(schema={"trajectory_id": pl.String, "num_steps": pl.Int32})
    where = """($policy IS NULL OR t.policy = $policy)
          AND ($since IS NULL OR t.recorded_at >= CAST($since AS TIMESTAMPTZ))
          AND t.trajectory_id NOT IN (SELECT trajectory_id FROM mined WHERE detector_version = $version)"""
    params = {
        "policy": policy,
        "since": str(since) if since is not None else None,
        "version": detector_version,
    }
    con = lake.connect()
    try:
        return trajectory_context(con, where, params, faults=False)
    finally:
        con.close()


@dataclass
class StepBatch:
    """Step files to read together and the pending trajectories whose steps they hold."""

    files: list[str]  # as `lake.files("steps")` names them: paths, or URIs on object storage
    trajectories: pl.DataFrame
    # no trajectory has steps in two of `files` (step_batches found every id in one file): the files can be
    # read and mined one at a time (`mine_files`), with what that batch produces unchanged
    apart: bool = False


def step_files(lake: Lake) -> list[str]:
    """The step files in the order batches take them."""
    return sorted(str(f) for f in lake.files("steps"))


def step_batches(
    lake: Lake, pending: pl.DataFrame, batch_steps: int = BATCH_STEPS, located: tuple[list[str], pl.DataFrame] | None = None
) -> list[StepBatch]:
    """Groups of step files holding pending trajectories, each about `batch_steps` rows, never splitting
    a trajectory across groups; files with nothing pending are not read at all. `located`: the step files and
    their `file_trajectories`, when the caller already has them (mine() reads them while pending is queried)."""
    files, held = located if located is not None else (step_files(lake), None)
    if pending.is_empty() or not files:
        return []
    if held is None:
        held = file_trajectories(lake, files)
    at = _lookup(held["trajectory_id"], pending["trajectory_id"])
    if at is None:  # a trajectory held by several files (rare: writers land one in one file)
        return _spanning_batches(lake, files, held, pending, batch_steps)
    file = held["file"].gather(at)  # each pending trajectory's file, null for those without steps
    groups = [[i] for i in file.drop_nulls().unique().sort().to_list()]
    batches = _batched(lake, files, groups, pending.with_columns(_file=file), batch_steps)
    for batch in batches:  # every id of every file is in that file alone (_lookup found no shared hash)
        batch.apart = True
    return batches


def _batched(
    lake: Lake, files: list[str], groups: list[list[int]], pending: pl.DataFrame, batch_steps: int
) -> list[StepBatch]:
    """Groups of files packed into batches; `pending` rows (with `_file`, the lowest file holding their
    steps, null for none) go to their file's batch, in their order."""
    rows = lake.file_rows("steps")
    batches = _packed(groups, [rows.get(f, 0) for f in files], batch_steps)
    which = {i: b for b, batch in enumerate(batches) for i in batch}
    parts = (
        pending.with_columns(_batch=pl.col("_file").replace_strict(which, default=None, return_dtype=pl.Int32))
        .filter(pl.col("_batch").is_not_null())
        .drop("_file")
        .partition_by("_batch", as_dict=True, include_key=False)
    )
    return [StepBatch([files[i] for i in batch], parts[(b,)]) for b, batch in enumerate(batches) if (b,) in parts]


def _spanning_batches(
    lake: Lake, files: list[str], held: pl.DataFrame, pending: pl.DataFrame, batch_steps: int
) -> list[StepBatch]:
    """`step_batches` when some trajectory's steps are in several files: those files are read together."""
    found = held.join(pending.select("trajectory_id"), on="trajectory_id", how="semi")
    first = found.group_by("trajectory_id").agg(pl.col("file").min(), spans=pl.len())
    spanning = first.filter(pl.col("spans") > 1)["trajectory_id"]
    lists = (
        found.filter(pl.col("trajectory_id").is_in(spanning.implode()))
        .group_by("trajectory_id")
        .agg(pl.col("file").sort())["file"]
        .to_list()
    )
    groups = _files_read_together([[i] for i in first["file"].unique().to_list()] + lists)
    pending = pending.join(first.select("trajectory_id", _file="file"), on="trajectory_id", how="left", maintain_order="left")
    return _batched(lake, files, groups, pending, batch_steps)


def file_trajectories(lake: Lake, files: list[str], stop: threading.Event | None = None) -> pl.DataFrame | None:
    """(trajectory_id, file): the distinct trajectory ids of each step file, `file` its number in `files`.
    Reads the trajectory_id column alone, a file at a time (a DISTINCT over (trajectory_id, filename) of
    every row cost about one scan); a file's steps come in runs per trajectory, so only run starts are
    de-duplicated. None when `stop` is set before the last file (nothing is pending: the rest is not read)."""
    tid = pl.col("trajectory_id")
    parts = []
    for i, f in enumerate(files):
        if stop is not None and stop.is_set():
            return None
        ids = _read(lake, [f], ["trajectory_id"]).filter((tid != tid.shift(1)).fill_null(True)).unique()
        parts.append(ids.with_columns(file=pl.lit(i, pl.UInt32)))
    if not parts:
        return pl.DataFrame(schema={"trajectory_id": pl.String, "file": pl.UInt32})
    return pl.concat(parts)


def _lookup(keys: pl.Series, wanted: pl.Series) -> pl.Series | None:
    """For each wanted value, the position of the equal key (null if none), by a search over the keys'
    sorted 64-bit hashes, then compared exactly; None when two keys share a hash (the same id in two files,
    or a collision): then the caller joins. Hash joins of 1M x 1M ids cost ~0.4-2 CPU-s each here (10M bench
    steps, string or hash keys), a binary search of each id in turn 0.3; the wanted hashes are searched in
    sorted order (~0.15) and put back in theirs."""
    if keys.is_empty():
        return pl.repeat(None, wanted.len(), dtype=pl.UInt32, eager=True)
    keys, wanted = keys.rechunk(), wanted.rechunk()  # a gather over a file's chunks each costs 20x one chunk's
    hashes = keys.hash()
    order = hashes.arg_sort()
    ordered = hashes.gather(order)
    if (ordered.slice(1) == ordered.slice(0, keys.len() - 1)).any():
        return None
    wanted_hashes = wanted.hash()
    by_hash = wanted_hashes.arg_sort()
    searched = wanted_hashes.gather(by_hash)
    pos = ordered.search_sorted(searched, side="left").clip(upper_bound=keys.len() - 1)
    n = wanted.len()
    at = pl.repeat(0, n, dtype=order.dtype, eager=True).scatter(by_hash, order.gather(pos))
    same_hash = pl.repeat(False, n, eager=True).scatter(by_hash, ordered.gather(pos) == searched)
    hit = same_hash & (keys.gather(at) == wanted)
    return pl.DataFrame({"at": at, "hit": hit}).select(pl.when("hit").then("at")).to_series()


def _packed(groups: list[list[int]], sizes: list[int], batch_steps: int) -> list[list[int]]:
    """Groups of file numbers, in file order, packed into batches of at most `batch_steps` rows (a larger
    group alone)."""
    batches: list[list[int]] = [[]]
    for group in sorted(groups):
        if batches[-1] and sum(sizes[i] for i in batches[-1] + group) > batch_steps:
            batches.append([])
        batches[-1].extend(group)
    return [b for b in batches if b]


def _files_read_together(file_lists: list[list[int]]) -> list[list[int]]:
    """Files that share a trajectory must be read together: union them (usually every file stands alone)."""
    parent: dict[int, int] = {}

    def root(f: int) -> int:
        while parent.setdefault(f, f) != f:
            parent[f] = parent[parent[f]]
            f = parent[f]
        return f

    for group in file_lists:
        for other in group[1:]:
            parent[root(other)] = root(group[0])
        root(group[0])
    groups: dict[int, list[int]] = {}
    for f in sorted(parent):
        groups.setdefault(root(f), []).append(f)
    return list(groups.values())


def read_steps(lake: Lake, files: list[str]) -> pl.DataFrame:
    """The miner's columns of these step files (a file missing a column gets nulls), wherever the lake is,
    each in one chunk: a batch of two files reads as two, and mining its 2M steps cost 15% more CPU so
    (the gathers and filters of features and detectors work chunk by chunk)."""
    return _read(lake, files, STEP_COLUMNS).rechunk()


_STEP_SCHEMA = pl.from_arrow(schema_for("steps").empty_table()).schema


def _read(lake: Lake, files: list[str], columns: list[str] | tuple[str, ...]) -> pl.DataFrame:
    """Columns of step files in the lake's types, files in the order given. On disk through polars' own
    Parquet reader (several times faster here than pyarrow's or DuckDB's on a file of one large row group);
    on object storage, or for a file whose types differ from the lake's, through the lake (pyarrow)."""
    if not lake.remote:
        schema = {c: _STEP_SCHEMA[c] for c in columns}
        try:
            return pl.scan_parquet(files, schema=schema, missing_columns="insert", extra_columns="ignore").collect()
        except pl.exceptions.SchemaError:  # a file in other types than the lake's: pyarrow casts
            pass
    return pl.from_arrow(lake.read_files("steps", files, columns))


# ---- mining one batch --------------------------------------------------------------------------------------


def failure_rows(
    findings: pl.DataFrame, trajectories: pl.DataFrame, run_id: str, now: dt.datetime
) -> pl.DataFrame:
    """Findings as `failures` rows; the id is deterministic (trajectory, kind, reason, range, version)."""
    return findings.join(
        trajectories.select("trajectory_id", "task_id", "sandbox", "policy"), on="trajectory_id", how="left"
    ).select(
        failure_id=pl.concat_str(
            "trajectory_id",
            "kind",
            "reason",
            "first_step",
            "last_step",
            pl.lit(DETECTOR_VERSION),
            separator=":",
        ),
        trajectory_id="trajectory_id",
        task_id="task_id",
        sandbox="sandbox",
        policy="policy",
        first_step="first_step",
        last_step="last_step",
        kind="kind",
        reason="reason",
        severity="severity",
        evidence_json="evidence",
        evidence_level="evidence_level",
        confidence="confidence",
        detector_version=pl.lit(DETECTOR_VERSION),
        run_id=pl.lit(run_id),
        recorded_at=pl.lit(now),
    )


def _first_seeds(failures: pl.DataFrame, features: pl.DataFrame) -> pl.DataFrame:
    """Seeds before shaping (`_seed_frame`): per (task, kind, reason) in order of first occurrence, the first one's
    sandbox, trajectory, steps, evidence and step context, and the occurrences."""
    first = (
        failures.lazy()
        .filter(
            pl.col("task_id").is_not_null() & (pl.col("kind") != "side_effect")
        )  # not a weakness by itself
        .group_by("task_id", "kind", "reason", maintain_order=True)
        .agg(
            pl.col("sandbox", "trajectory_id", "first_step", "last_step", "evidence_json").first(),
            occurrences=pl.len(),
        )
    )
    # the seeds' trajectories by number (each trajectory is one run of rows): an integer filter over the steps
    starts = features.select("trajectory_id", "traj_no", "same_prev").filter(~pl.col("same_prev"))
    wanted = starts.join(first.select("trajectory_id").collect(engine=ENGINE), on="trajectory_id", how="semi")
    context = (
        features.lazy()
        .filter(pl.col("traj_no").is_in(wanted["traj_no"].implode()))
        .select(
            "trajectory_id",
            "step_index",
            "url",
            "act",
            before_1=prev(pl.col("act")),
            before_2=prev(pl.col("act"), 2),
        )
    )
    return first.join(
        context, left_on=["trajectory_id", "first_step"], right_on=["trajectory_id", "step_index"], how="left"
    ).collect(engine=ENGINE)


def _merged_seeds(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """`_first_seeds` of a batch from those of its parts (parts hold disjoint trajectories): the batch's first
    occurrence of a weakness is the earliest of its parts' firsts in the failures' order (trajectory, step,
    kind, reason), its occurrences the parts' sum; weaknesses in order of their first occurrence."""
    keys = ["task_id", "kind", "reason"]
    merged = pl.concat(parts).sort("trajectory_id", "first_step", "kind", "reason", maintain_order=True)
    rest = [c for c in merged.columns if c not in keys and c != "occurrences"]
    return merged.group_by(keys, maintain_order=True).agg(pl.col(rest).first(), pl.col("occurrences").sum()).select(
        parts[0].columns
    )


def _seed_frame(first: pl.DataFrame, run_id: str, now: dt.datetime) -> pl.DataFrame:
    """`failure_seeds` rows from `_first_seeds`."""
    first = first.lazy()
    plain = pl.struct("trajectory_id", "first_step", "last_step", "url", "occurrences").struct.json_encode()
    previous = pl.concat_list("before_2", "before_1").list.drop_nulls().list.join(",")
    return first.select(
        seed_id=pl.concat_str("task_id", "kind", "reason", pl.lit(DETECTOR_VERSION), separator=":"),
        task_id="task_id",
        sandbox="sandbox",
        kind="kind",
        reason="reason",
        context_json=pl.concat_str(  # action, previous actions and evidence are JSON already: spliced in as is
            plain.str.head(-1),
            pl.lit(',"action":'),
            pl.col("act").fill_null("null"),
            pl.lit(',"previous_actions":['),
            previous,
            pl.lit('],"evidence":'),
            pl.col("evidence_json"),
            pl.lit("}"),
        ),
        run_id=pl.lit(run_id),
        recorded_at=pl.lit(now),
    ).collect(engine=ENGINE)


def _undecidable_json(counts: pl.DataFrame) -> pl.DataFrame:
    """(trajectory_id, undecidable_json) for the trajectories with any count; the rest get NOTHING_UNDECIDABLE."""
    wide = counts.pivot(on="check", index="trajectory_id", values="n", aggregate_function="sum")
    fields = [
        (pl.col(c) if c in wide.columns else pl.lit(None)).fill_null(0).cast(pl.Int64).alias(c)
        for c in MINED_COUNTS
    ]
    return wide.select("trajectory_id", undecidable_json=pl.struct(fields).struct.json_encode())


NOTHING_UNDECIDABLE = _undecidable_json(
    pl.DataFrame({"trajectory_id": ["-"], "check": [MINED_COUNTS[0]], "n": [0]})
)["undecidable_json"][0]


def mined_rows(
    trajectory_ids: pl.Series,
    features: pl.DataFrame | None,
    counts: pl.DataFrame | None,
    run_id: str,
    now: dt.datetime,
    weights: RewardWeights = DEFAULT_WEIGHTS,
) -> pl.DataFrame:
    """One row per mined trajectory, with every check's undecidable count (0 when it could decide), how
    many of its steps had no UI tree or no screenshot, and the weights of its steps' rewards (the lake's
    `step_rewards` view gives its steps without a written row a clean step's reward under them)."""
    parts = [counts] if counts is not None else []
    if features is not None:
        missing = (
            features.lazy()
            .filter(pl.col("tree").is_null() | pl.col("shot").is_null())
            .group_by("trajectory_id")
            .agg(missing_ui_tree=pl.col("tree").null_count(), missing_screenshot=pl.col("shot").null_count())
        )
        parts.append(missing.unpivot(index="trajectory_id", variable_name="check", value_name="n").collect(engine=ENGINE))
    parts = [p.select("trajectory_id", "check", pl.col("n").cast(pl.Int64)) for p in parts]
    listed = _undecidable_json(pl.concat(parts).filter(pl.col("n") > 0)) if parts else None
    rows = pl.DataFrame({"trajectory_id": trajectory_ids})
    if listed is not None and listed.height:
        rows = rows.join(listed, on="trajectory_id", how="left")
    else:
        rows = rows.with_columns(undecidable_json=pl.lit(None, dtype=pl.String))
    return rows.select(
        "trajectory_id",
        detector_version=pl.lit(DETECTOR_VERSION),
        undecidable_json=pl.col("undecidable_json").fill_null(NOTHING_UNDECIDABLE),
        run_id=pl.lit(run_id),
        recorded_at=pl.lit(now),
        weights_json=pl.lit(weights.to_json()),
    )


def mine_frame(
    steps: pl.DataFrame,
    trajectories: pl.DataFrame,
    run_id: str,
    weights: RewardWeights = DEFAULT_WEIGHTS,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Everything mining produces for the steps of `trajectories` (trajectory_id, task_id, sandbox, policy,
    verdict, reference_len) found in `steps`, as frames shaped like the lake tables (no I/O), and `steps`,
    how many steps were mined. `step_rewards` holds the steps whose reward differs from a clean step's only
    (`rewards.marked_step_rewards`; the lake's view fills in the rest from the `mined` rows' weights)."""
    now = now or utcnow()
    return _combined([_mine_part(steps, trajectories, run_id, weights, now)], run_id, now)


def _mine_part(
    steps: pl.DataFrame, trajectories: pl.DataFrame, run_id: str, weights: RewardWeights, now: dt.datetime
) -> dict[str, Any]:
    """`mine_frame` of some of a batch's steps, whole trajectories, with seeds not yet shaped (`_combined`)."""
    features = attach_trajectories(step_features(steps), trajectories)
    firsts = features.select("trajectory_id", "same_prev").filter(~pl.col("same_prev"))
    trajectories = trajectories.join(firsts, on="trajectory_id", how="semi")
    findings, undecidable = run_checks(features)
    failures = failure_rows(findings, trajectories, run_id, now)
    rewards = marked_step_rewards(features, findings, weights).with_columns(
        weights_json=pl.lit(weights.to_json()),
        detector_version=pl.lit(DETECTOR_VERSION),
        run_id=pl.lit(run_id),
    )
    return {
        "failures": failures,
        "step_rewards": rewards,
        "first_seeds": _first_seeds(failures, features),
        "mined": mined_rows(trajectories["trajectory_id"], features, undecidable, run_id, now, weights),
        "undecidable": undecidable,
        "steps": features.height,
    }


def _combined(parts: list[dict[str, Any]], run_id: str, now: dt.datetime) -> dict[str, Any]:
    """A batch's output from its parts' (`_mine_part` of steps holding disjoint trajectories): the rows of
    each table together, failures in the order one part of all the steps gives them, seeds per batch."""
    if len(parts) == 1:
        out = dict(parts[0])
        out["failure_seeds"] = _seed_frame(out.pop("first_seeds"), run_id, now)
        return out
    return {
        "failures": pl.concat([p["failures"] for p in parts]).sort(
            "trajectory_id", "first_step", "kind", "reason", maintain_order=True
        ),
        "step_rewards": pl.concat([p["step_rewards"] for p in parts]),
        "failure_seeds": _seed_frame(_merged_seeds([p["first_seeds"] for p in parts]), run_id, now),
        "mined": pl.concat([p["mined"] for p in parts]),
        "undecidable": pl.concat([p["undecidable"] for p in parts]),
        "steps": sum(p["steps"] for p in parts),
    }


def mine_files(
    lake: Lake, batch: StepBatch, run_id: str, weights: RewardWeights = DEFAULT_WEIGHTS, now: dt.datetime | None = None
) -> dict[str, Any]:
    """`mine_frame` of a batch's steps. Files that share no trajectory (`StepBatch.apart`) are read and mined
    one at a time, their outputs put together (`_combined`): the same rows, without the copy that putting two
    files' steps into one chunk costs (~0.3 CPU-s per 2M steps) and with one file's steps and features held
    at a time; a batch whose files share trajectories is read whole."""
    now = now or utcnow()
    if not batch.apart or len(batch.files) < 2:
        return mine_frame(read_steps(lake, batch.files), batch.trajectories, run_id, weights, now)
    parts = [_mine_part(read_steps(lake, [f]), batch.trajectories, run_id, weights, now) for f in batch.files]
    return _combined(parts, run_id, now)


# ---- writing ----------------------------------------------------------------------------------------------


def write_frame(lake: Lake, table: str, frame: pl.DataFrame, run_id: str, batch: str) -> str | None:
    """Commit a frame as the (run, batch) rows of `table` in the table's exact schema (a retry
    replaces its rows). Columns are checked against lake.schemas; a mismatch raises instead of guessing."""
    if frame.is_empty():
        return None
    schema = schema_for(table)
    unknown = set(frame.columns) - set(schema.names)
    if unknown:
        raise ValueError(f"{table}: columns {sorted(unknown)} are not in lake.schemas")
    arrow = frame.to_arrow()
    columns = [
        arrow[f.name].cast(f.type) if f.name in frame.columns else pa.nulls(frame.height, f.type)
        for f in schema
    ]
    return lake.write_arrow(table, pa.Table.from_arrays(columns, schema=schema), run_id, batch)


def _write_batch(lake: Lake, out: dict[str, Any], run_id: str, batch: str) -> None:
    """The batch's rows keyed by detector version and trajectories, not by run: a run killed between these
    commits leaves the batch pending, and the re-run's same batch replaces what it had landed."""
    run = f"mine-{DETECTOR_VERSION}"
    # the three tables at once (delta-rs leaves the GIL; ~1.5 s of a 2M batch's writes when nothing else
    # runs, as for the last batches of a run), then mined: it commits the batch
    with ThreadPoolExecutor(max_workers=3) as tables:
        for done in [tables.submit(write_frame, lake, t, out[t], run, batch) for t in ("failures", "step_rewards", "failure_seeds")]:
            done.result()
    write_frame(lake, "mined", out["mined"], run, batch)


def _batch_name(index: int, trajectory_ids: pl.Series) -> str:
    """Named by its trajectories alone (not its place in the run), so a re-run's batch of the same
    trajectories replaces a killed run's rows, and batches of other trajectories never overwrite it."""
    return f"mine-{trajectory_ids.hash().sum() % 10**10:010d}"


# ---- the run ----------------------------------------------------------------------------------------------


def mine(
    lake: Lake,
    run_id: str,
    policy: str | None = None,
    since: dt.datetime | str | None = None,
    *,
    weights: RewardWeights = DEFAULT_WEIGHTS,
    batch_steps: int = BATCH_STEPS,
    write_report: bool = True,
) -> MiningSummary:
    """Mine every trajectory not yet mined with DETECTOR_VERSION - only `policy`'s if given, only those whose
    trajectories row was recorded at or after `since` (a datetime or ISO string) if given - and write
    failures, step_rewards, failure_seeds and mined rows, batch by batch. With `write_report`, the summary
    and its SVG chart go to <lake>/reports/mine-failures-<run_id>.md/.svg. The catalog is not refreshed
    here: the flow does that at its end, as every flow does."""
    t0 = time.perf_counter()
    summary = MiningSummary(run_id=run_id)
    # the step files' trajectory ids are read while DuckDB finds what is pending (both take about a second
    # per 1M; each leaves the GIL); when nothing is, the read stops at the file it is on
    files, nothing_pending = step_files(lake), threading.Event()
    with ThreadPoolExecutor(max_workers=1) as locator:
        held = locator.submit(file_trajectories, lake, files, nothing_pending)
        try:
            pending = pending_trajectories(lake, policy, since)
        except BaseException:
            nothing_pending.set()
            raise
        if pending.is_empty():
            nothing_pending.set()
        located = held.result()
    if pending.is_empty():
        summary.seconds = time.perf_counter() - t0
        return summary
    batches = step_batches(lake, pending, batch_steps, (files, located))
    # MINERS parts of batches are read and mined at once while the batch before them is written (polars and
    # delta-rs leave the GIL): most of a part's work runs on one core, so two of them keep both cores of a
    # small machine busy. A part is one file of a batch whose files share no trajectory (`StepBatch.apart`),
    # else the whole batch: a run's last batch of two files is two parts on two cores, not two files one after
    # the other on one (at 10M bench steps, 5 batches of 2 files, that left a core idle for the last 1.3 s).
    # Batches are put together from their parts, summed and written in order. The next batch's parts wait in
    # the miners' queue, so a miner done before the part ahead of it starts the next one at once; held at once:
    # MINERS parts being mined, the mined parts of unfinished batches, one batch written.
    writing: list = []

    def landed(out: dict[str, Any]) -> None:  # batches come here in order
        here = out["mined"]["trajectory_id"]
        if writing:
            writing.pop().result()  # one batch written at a time: memory stays bounded
        writing.append(writer.submit(_write_batch, lake, out, run_id, _batch_name(summary.batches, here)))
        summary.add(out["failures"], _undecided_totals(out["undecidable"]))
        summary.trajectories += here.len()
        summary.steps += out["steps"]
        summary.seeds += out["failure_seeds"].height
        summary.batches += 1

    def together(parts: list, now: dt.datetime) -> dict[str, Any]:
        return _combined([part.result() for part in parts], run_id, now)

    with ThreadPoolExecutor(max_workers=1) as writer, ThreadPoolExecutor(max_workers=MINERS) as miners:
        in_flight: deque = deque()
        for batch in batches:
            now = utcnow()
            files = [[f] for f in batch.files] if batch.apart else [batch.files]
            parts = [miners.submit(_read_and_mine_part, lake, f, batch.trajectories, run_id, weights, now) for f in files]
            in_flight.append((parts, now))
            while sum(len(p) for p, _ in in_flight) > MINERS and len(in_flight) > 1:
                landed(together(*in_flight.popleft()))
        while in_flight:
            landed(together(*in_flight.popleft()))
        if writing:
            writing.pop().result()
    _mark_stepless(lake, pending, batches, run_id, summary)
    summary.seconds = time.perf_counter() - t0
    if summary.trajectories and write_report:
        _write_report(lake, summary)
    return summary


def _read_and_mine_part(
    lake: Lake, files: list[str], trajectories: pl.DataFrame, run_id: str, weights: RewardWeights, now: dt.datetime
) -> dict[str, Any]:
    return _mine_part(read_steps(lake, files), trajectories, run_id, weights, now)


def mine_batch(lake: Lake, run_id: str, batch: StepBatch, index: int, weights: RewardWeights = DEFAULT_WEIGHTS) -> MiningSummary:
    """Mine one shard of steps and land it as its own (run, batch) rows; its part of the run's summary
    (`merge_summary`). For engines that spread shards over workers."""
    out = mine_files(lake, batch, run_id, weights)
    here = out["mined"]["trajectory_id"]
    _write_batch(lake, out, run_id, _batch_name(index, here))
    part = MiningSummary(run_id=run_id, trajectories=here.len(), steps=out["steps"],
                         seeds=out["failure_seeds"].height, batches=1)
    part.add(out["failures"], _undecided_totals(out["undecidable"]))
    return part


def merge_summary(into: MiningSummary, part: MiningSummary) -> None:
    for name in ("trajectories", "steps", "failures", "failed_trajectories", "seeds", "batches"):
        setattr(into, name, getattr(into, name) + getattr(part, name))
    for name in ("by_kind", "by_reason", "by_sandbox", "by_policy", "undecidable"):
        setattr(into, name, dict(Counter(getattr(into, name)) + Counter(getattr(part, name))))


def finish_run(
    lake: Lake, pending: pl.DataFrame, batches: list[StepBatch], summary: MiningSummary, started: float,
    write_report: bool = True,
) -> None:
    """After the shards: mark trajectories without steps, time the run, write its report."""
    _mark_stepless(lake, pending, batches, summary.run_id, summary)
    summary.seconds = time.perf_counter() - started
    if summary.trajectories and write_report:
        _write_report(lake, summary)


def _undecided_totals(undecidable: pl.DataFrame) -> dict[str, int]:
    return {c: int(n) for c, n in undecidable.group_by("check").agg(pl.col("n").sum()).iter_rows()}


def _mark_stepless(
    lake: Lake, pending: pl.DataFrame, batches: list[StepBatch], run_id: str, summary: MiningSummary
) -> None:
    """Trajectories that ended before any step (in no batch) are mined as they are; others without steps
    keep waiting (a rollout writes trajectories just before their steps)."""
    rest = pending
    # batches hold disjoint rows of `pending` (step_batches): when they hold as many, none is left over
    if sum(batch.trajectories.height for batch in batches) == pending.height:
        rest = pending.clear()
    for batch in batches if rest.height else ():
        rest = rest.join(batch.trajectories.select("trajectory_id"), on="trajectory_id", how="anti")
    empty = rest.filter(pl.col("num_steps").fill_null(-1) == 0)
    summary.waiting = rest.height - empty.height
    if empty.height:
        rows = mined_rows(empty["trajectory_id"], None, None, run_id, utcnow())
        write_frame(lake, "mined", rows, run_id, _batch_name(9999, empty["trajectory_id"]))
        summary.trajectories += empty.height


def _write_report(lake: Lake, summary: MiningSummary) -> None:
    """The summary as markdown with its SVG chart beside it, under <lake>/reports/."""
    report = lake.root / "reports" / f"mine-failures-{_SAFE.sub('_', summary.run_id)}.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    chart = report.with_suffix(".svg")
    chart.write_text(
        failures_chart_svg(summary.by_reason, f"failures per kind and reason ({summary.run_id})")
    )
    summary.report, summary.chart = str(report), str(chart)
    report.write_text(summary.markdown())
