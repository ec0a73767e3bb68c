"""Benchmark `mine-failures`: generate N synthetic steps, write them as a lake, mine them, print figures.

    python bench/mining.py --steps 1000000 [--steps 10000000 ...] [--keep DIR]

The steps follow a realistic mix: trajectories of 3-12 reference actions ending in terminate, mostly good
steps that change the screen, and injected faults - loops (a type/select repeated 2-3 times on an unchanged
screen, or a click repeated and failing), bad coordinate clicks in an empty corner, format errors, zero
scrolls, sensitive clicks with and without a call_user first, over-cautious call_users, premature
terminations (with a failed verdict). 3% of trajectories have a screenshot but no UI tree, 1% no screen.
They are written as the lake holds them: one Parquet file per write batch (about 1M steps, whole
trajectories), plus trajectories and verdicts, generated and committed a batch at a time (10M steps: ten
chunks, memory of one).

Printed per N (one JSON line): steps/s of `mine()` (findings, rewards, seeds and mined rows all written),
peak RSS of the mining process (resource.getrusage; generation and the baseline run in other processes),
the time of a plain DuckDB scan that reads the same Parquet columns into Arrow (best of 3), and the ratio
of mining time to that scan (the lake's writer puts a file's 1M rows in one row group, and DuckDB
splits a Parquet scan by row groups). Precision and recall per kind against the injected faults are printed as a
sanity check up to 2M steps. Timings on a shared machine move with its load: run it on a quiet one.

Also printed: `floor_s`, what `mine()` would take if every detector and feature cost nothing - the same
bookkeeping (pending, locate, batches), every batch's step files read on the same miner threads, and
outputs of the size mining wrote (its own rows, batch by batch) committed on the same writer thread - and
`floor_to_scan`, its ratio to the scan: no mining of these steps, and no change to the rules, can go below it;
`mine_to_floor` (`mine()` over the floor) and `rules_in_scans` (what features and rules cost above the floor, in
scans): the two forms the 2x bar could be restated in.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flows.failure_mining.features import STEP_COLUMNS  # noqa: E402
from lake import Lake  # noqa: E402
from lake.schemas import schema_for  # noqa: E402

FILE_STEPS = 1_000_000
TARGETED_CLICKS = 8  # the first GOOD_ACTIONS
GOOD_ACTIONS = [
    *(
        json.dumps([{"action": "left_click", "target": {"role": r, "name": n}}])
        for r, n in [
            ("link", "Orders"),
            ("link", "Cart"),
            ("button", "Search"),
            ("link", "Next"),
            ("button", "Save"),
            ("link", "Inbox"),
            ("button", "Add to cart"),
            ("link", "Account"),
        ]
    ),
    *(json.dumps([{"action": "goto", "url": u}]) for u in ["/", "/orders", "/cart", "/settings", "/inbox"]),
    json.dumps([{"action": "scroll", "pixels": -300}]),
    json.dumps([{"action": "key", "keys": ["Enter"]}]),
    json.dumps([{"action": "left_click", "x": 412, "y": 318}]),
]
FIELDS = {"Email": "{}@example.com", "City": "City {}", "Body": "Hello {}, see you soon", "Quantity": "{}"}
REPEATABLE = [  # repeating these leaves the screen as it was (the field already holds the value)
    *(
        json.dumps([{"action": "type", "text": text.format(k), "target": {"label": label}}])
        for label, text in FIELDS.items()
        for k in range(50)
    ),
    *(
        json.dumps([{"action": "select", "target": {"label": "Country"}, "option": c}])
        for c in ["France", "Spain", "Chile", "Japan", "Kenya"]
    ),
    json.dumps([{"action": "check", "target": {"label": "Gift wrap"}, "checked": True}]),
]
SENSITIVE = json.dumps([{"action": "left_click", "target": {"role": "button", "name": "Place order"}}])
CALL_USER = json.dumps([{"action": "call_user", "reason": "This will pay. Shall I go ahead?"}])
ASK = json.dumps([{"action": "call_user", "reason": "Is it all right if I continue?"}])
ZERO_SCROLL = json.dumps([{"action": "scroll", "pixels": 0}])
TERMINATE = json.dumps([{"action": "terminate", "status": "success"}])
RATES = {
    "loop": 0.05,
    "bad_args": 0.04,
    "format": 0.01,
    "zero_scroll": 0.005,
    "sensitive": 0.03,
    "unconfirmed": 0.5,
    "overcautious": 0.01,
    "premature": 0.05,
}
# row roles
GOOD, REPEAT, BAD, FORMAT, ZERO, CONFIRM, OVERCAUTIOUS, SENS, TERM = range(9)
TARGETED_CLICKS = (
    8  # the first GOOD_ACTIONS are clicks on a target: repeating them fails (the element is gone)
)
BAD_CLICKS = [
    json.dumps([{"action": "left_click", "x": x, "y": y}]) for x in range(900, 1000) for y in (960, 975, 990)
]
VOCAB = GOOD_ACTIONS + REPEATABLE + [SENSITIVE, CALL_USER, ASK, ZERO_SCROLL, TERMINATE, "[]"] + BAD_CLICKS


def _u(seed: int, col: str = "i") -> pl.Expr:
    """A uniform draw in [0, 1) per row, from a seeded hash (vectorised, reproducible)."""
    return (pl.col(col).hash(seed) % 1_000_003).cast(pl.Float64) / 1_000_003


def _pick(seed: int, k: int, col: str = "i") -> pl.Expr:
    return (pl.col(col).hash(seed) % k).cast(pl.Int32)


def _digest(col: str, seed: int) -> pl.Expr:
    """A 64-character stand-in for a sha256 hex digest, unique per value of `col`."""
    parts = [pl.col(col).hash(seed + k).cast(pl.String).str.zfill(20) for k in range(4)]
    return pl.concat_str(parts).str.slice(0, 64)


STEPS_PER_TRAJECTORY = 9.76  # the mean of the mix below


def _bases(first_t: int, n_trajectories: int) -> pl.DataFrame:
    """The reference actions of trajectories first_t.. (premature ones cut at half), with their planned
    faults. Draws hash the trajectory number and the row's place in the chunk, so chunks are independent."""
    trajs = (
        pl.select(t=pl.int_range(first_t, first_t + n_trajectories))
        .with_columns(
            length=3 + _pick(1, 10, "t"),
            premature=_u(2, "t") < RATES["premature"],
        )
        .with_columns(kept=pl.when("premature").then((pl.col("length") // 2).clip(1)).otherwise("length") + 1)
    )
    bases = trajs.select("t", "premature", i=pl.int_ranges(0, "kept")).explode("i").with_row_index(
        "b", offset=first_t * 16
    )
    last = pl.col("t") != pl.col("t").shift(-1).fill_null(-1)
    bases = bases.with_columns(i=pl.col("b"), last=last).with_columns(
        sensitive=~pl.col("last") & (_u(3) < RATES["sensitive"]),
        repeatable=~pl.col("last") & (_u(4) < 0.3),
        u_pre=_u(5),
        u_other=_u(6),
        u_confirm=_u(7),
        loops=pl.when(~pl.col("last") & (_u(8) < RATES["loop"])).then(2 + _pick(9, 2)).otherwise(0),
    )
    pre = (
        pl.when(pl.col("sensitive") & (pl.col("u_confirm") >= RATES["unconfirmed"]))
        .then(CONFIRM)
        .when(pl.col("last"))
        .then(None)
        .when(pl.col("u_pre") < RATES["bad_args"])
        .then(BAD)
        .when(pl.col("u_pre") > 1 - RATES["format"])
        .then(FORMAT)
        .when(pl.col("sensitive"))
        .then(None)
        .when(pl.col("u_other") < RATES["zero_scroll"])
        .then(ZERO)
        .when(pl.col("u_other") > 1 - RATES["overcautious"])
        .then(OVERCAUTIOUS)
    )
    return bases.with_columns(
        pre=pre,
        loops=pl.when(pl.col("sensitive")).then(0).otherwise("loops"),
        base_act=pl.when(pl.col("repeatable"))
        .then(len(GOOD_ACTIONS) + _pick(10, len(REPEATABLE)))
        .otherwise(_pick(11, len(GOOD_ACTIONS))),
    )


def synthetic_steps(n_steps: int, first_t: int = 0) -> pl.DataFrame:
    """~n_steps rows of the steps table plus `role` (what the row is) and `t` (trajectory number), for the
    trajectories numbered from first_t."""
    b = _bases(first_t, max(1, round(n_steps / STEPS_PER_TRAJECTORY)))
    rows = b.with_columns(
        offset=pl.int_ranges(0, pl.col("pre").is_not_null().cast(pl.Int32) + 1 + pl.col("loops"))
    )
    rows = rows.explode("offset").with_row_index("r").with_columns(i=pl.col("r") + first_t * 64)
    has_pre = pl.col("pre").is_not_null().cast(pl.Int64)
    at_base = pl.col("offset") == has_pre
    role = (
        pl.when(at_base & pl.col("last"))
        .then(TERM)
        .when(at_base & pl.col("sensitive"))
        .then(SENS)
        .when(at_base)
        .then(GOOD)
        .when(pl.col("offset") < has_pre)
        .then(pl.col("pre"))
        .otherwise(REPEAT)
    )
    rows = rows.with_columns(role=role, at_base=at_base).with_columns(
        step_index=(
            pl.col("r") - pl.when(pl.col("t") != pl.col("t").shift(1).fill_null(-1)).then("r").forward_fill()
        ).cast(pl.Int32),
        screen=pl.col("at_base").cast(pl.Int64).cum_sum().shift(1).fill_null(0) + pl.col("t"),
        act=pl.when(pl.col("role") == TERM)
        .then(VOCAB.index(TERMINATE))
        .when(pl.col("role") == SENS)
        .then(VOCAB.index(SENSITIVE))
        .when(pl.col("role") == CONFIRM)
        .then(VOCAB.index(CALL_USER))
        .when(pl.col("role") == OVERCAUTIOUS)
        .then(VOCAB.index(ASK))
        .when(pl.col("role") == ZERO)
        .then(VOCAB.index(ZERO_SCROLL))
        .when(pl.col("role") == FORMAT)
        .then(VOCAB.index("[]"))
        .when(pl.col("role") == BAD)
        .then(len(VOCAB) - len(BAD_CLICKS) + _pick(12, len(BAD_CLICKS)))
        .otherwise("base_act"),
        no_tree=_u(13, "t") < 0.04,
    )
    fails = (pl.col("role") == REPEAT) & (pl.col("base_act") < TARGETED_CLICKS)
    actions = pl.lit(pl.Series(VOCAB)).gather(pl.col("act"))
    return rows.with_columns(no_shot=pl.col("no_tree") & (_u(14, "t") < 0.25)).select(
        "t",
        "role",
        "premature",
        trajectory_id=_digest("t", 20).str.slice(0, 20),
        step_index="step_index",
        screenshot_sha=pl.when(~pl.col("no_shot")).then(_digest("screen", 30)),
        screen_width=pl.lit(1280, pl.Int32),
        screen_height=pl.lit(800, pl.Int32),
        ui_tree_sha=pl.when(~pl.col("no_tree")).then(_digest("screen", 40)),
        url=pl.format("http://127.0.0.1:8000/page/{}", pl.col("screen") % 97),
        raw_output=actions,
        actions_json=actions,
        format_error=pl.when(pl.col("role") == FORMAT).then(
            pl.lit("unparseable_json: Expecting value: line 1")
        ),
        ok=~fails,
        error=pl.when(fails).then(pl.lit("left_click: Timeout 5000ms exceeded")),
        points_json=pl.when(pl.col("role") == BAD).then(pl.lit("[[950, 980]]")).otherwise(pl.lit("[null]")),
        sensitive=pl.when(pl.col("role") == SENS).then(pl.lit("pay")),
    )


def _labels(steps: pl.DataFrame) -> pl.DataFrame:
    """Per trajectory, the injected faults as the scripted-noisy policy records them, and the verdict."""
    kinds = {
        REPEAT: "loop",
        BAD: "bad_args",
        FORMAT: "bad_args",
        ZERO: "bad_args",
        OVERCAUTIOUS: "overcautious",
    }
    unconfirmed = (pl.col("role") == SENS) & (pl.col("role").shift(1) != CONFIRM).fill_null(True)
    premature = (pl.col("role") == TERM) & pl.col("premature")
    kind = (
        pl.when(unconfirmed)
        .then(pl.lit("unconfirmed_sensitive"))
        .when(premature)
        .then(pl.lit("premature"))
        .otherwise(pl.col("role").replace_strict(kinds, default=None, return_dtype=pl.String))
    )
    fault = pl.format('{{"step": {}, "kind": "{}"}}', "step_index", "kind")
    return (
        steps.with_columns(kind=kind)
        .group_by("trajectory_id", maintain_order=True)
        .agg(
            faults=pl.format("[{}]", fault.filter(pl.col("kind").is_not_null()).str.join(", ")),
            num_steps=pl.len().cast(pl.Int32),
            failed=pl.col("premature").first(),
            t=pl.col("t").first(),
        )
    )


def _cast(frame: pl.DataFrame, table: str) -> pa.Table:
    """The frame as the lake table's exact schema; columns it lacks are null."""
    schema = schema_for(table)
    n = frame.height
    arrow = frame.to_arrow()
    cols = [arrow[f.name].cast(f.type) if f.name in frame.columns else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def synthetic_lake(root: Path, n_steps: int) -> tuple[int, int]:
    """Write ~n_steps synthetic steps (+ trajectories with their faults, verdicts) as a lake at root, one
    chunk of about FILE_STEPS steps at a time (a commit each, as rollouts write: whole trajectories per
    file), so memory stays at one chunk's and 10M steps take minutes."""
    lake = Lake(root)
    now = dt.datetime.now(dt.UTC)
    per_chunk = max(1, round(FILE_STEPS / STEPS_PER_TRAJECTORY))
    wanted = max(1, round(n_steps / STEPS_PER_TRAJECTORY))
    total_steps = total_trajectories = 0
    for chunk, first_t in enumerate(range(0, wanted, per_chunk)):
        n = min(per_chunk, wanted - first_t)
        steps = synthetic_steps(round(n * STEPS_PER_TRAJECTORY), first_t)
        labels = _labels(steps)
        lake.write_arrow("steps", _cast(steps.drop("t", "role", "premature"), "steps"), "bench", chunk)
        trajectories = labels.select(
            "trajectory_id",
            "num_steps",
            task_id=pl.format("bench-task-{}", pl.col("t") % 500),
            sandbox=pl.when(pl.col("t") % 2 == 0).then(pl.lit("mail")).otherwise(pl.lit("shop")),
            policy=pl.lit("scripted-noisy"),
            ended=pl.lit("terminated"),
            injected_faults_json="faults",
            run_id=pl.lit("bench"),
            recorded_at=pl.lit(now),
        )
        verdicts = trajectories.select(
            "trajectory_id",
            "task_id",
            "sandbox",
            "policy",
            "run_id",
            "recorded_at",
            verdict=pl.when(labels["failed"]).then(pl.lit("failed")).otherwise(pl.lit("pass")),
        )
        for name, frame in (("trajectories", trajectories), ("verdicts", verdicts)):
            lake.write_arrow(name, _cast(frame, name), "bench", chunk)
        total_steps += steps.height
        total_trajectories += trajectories.height
    return total_steps, total_trajectories


def duckdb_scan_seconds(lake: Lake, repeats: int = 3) -> float:
    """A plain DuckDB scan of the steps columns the miner reads, materialised as Arrow (best of `repeats`)."""
    import duckdb

    files = [f.as_posix() for f in lake.files("steps")]
    best = float("inf")
    for _ in range(repeats):
        con = duckdb.connect()
        t0 = time.perf_counter()
        con.sql(f"SELECT {', '.join(STEP_COLUMNS)} FROM read_parquet($files)", params={"files": files}).to_arrow_table()
        best = min(best, time.perf_counter() - t0)
        con.close()
    return best


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024  # KiB on Linux


def measure(root: Path, quality_up_to: int = 2_000_000) -> dict:
    """In a fresh process: mine, then mine again (must add nothing). Peak RSS is this process's, so it is
    mining's alone (generation and the baseline scan run in other processes)."""
    from flows.failure_mining.mining import mine

    lake = Lake(root)
    t0 = time.perf_counter()
    summary = mine(lake, "bench-mine", write_report=False)
    seconds = time.perf_counter() - t0
    again = mine(lake, "bench-mine-again", write_report=False)
    out = {
        "steps": summary.steps,
        "trajectories": summary.trajectories,
        "mine_s": round(seconds, 2),
        "steps_per_s": round(summary.steps / seconds),
        "peak_rss_gb": round(peak_rss_gb(), 2),
        "failures": summary.failures,
        "batches": summary.batches,
        "rerun_trajectories": again.trajectories,
    }
    if summary.steps <= quality_up_to:  # evaluate() holds every step in memory: a sanity check on small runs
        from flows.failure_mining.evaluation import evaluate

        out["quality"] = {k: (v["precision"], v["recall"]) for k, v in evaluate(lake)["kinds"].items()}
    return out


def io_floor(root: Path, mined_root: Path) -> dict:
    """In a fresh process, on an unmined copy of the lake at `root`: `mine()`'s work without features and
    detectors. The rows to write are those `mine()` wrote to `mined_root`, split by the batch that wrote them
    (read before the clock starts); the reads and writes run on mine's threads (MINERS readers, one writer)."""
    from concurrent.futures import ThreadPoolExecutor

    from flows.failure_mining import mining
    from lake.store import BATCH_KEY

    mined, lake = Lake(mined_root), Lake(root)
    tables = ("failures", "step_rewards", "failure_seeds", "mined")
    written = {t: pl.read_parquet([str(f) for f in mined.files(t)]) for t in tables}
    keys = sorted(written["mined"][BATCH_KEY].unique().to_list())
    outputs = [{t: written[t].filter(pl.col(BATCH_KEY) == k).drop(BATCH_KEY) for t in tables} for k in keys]
    t0 = time.perf_counter()
    files = mining.step_files(lake)
    pending = mining.pending_trajectories(lake)
    batches = mining.step_batches(lake, pending, mining.BATCH_STEPS, (files, mining.file_trajectories(lake, files)))
    with ThreadPoolExecutor(max_workers=1) as writer, ThreadPoolExecutor(max_workers=mining.MINERS) as readers:
        reads = [readers.submit(lambda f: mining.read_steps(lake, [f]).height, f) for b in batches for f in b.files]
        writes = [writer.submit(mining._write_batch, lake, out, "floor", f"floor-{i}") for i, out in enumerate(outputs)]
        read_rows = sum(done.result() for done in reads)
        for done in writes:
            done.result()
    return {"floor_s": round(time.perf_counter() - t0, 2), "floor_steps": read_rows, "floor_batches": len(outputs)}


def _child(*args: str) -> str:
    result = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return result.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, action="append", help="steps to generate and mine (repeatable)")
    parser.add_argument("--keep", type=Path, help="write the lakes here and keep them (default: a temp dir)")
    parser.add_argument("--generate", type=int, help=argparse.SUPPRESS)  # child: write a lake of N steps
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # child: mine the lake
    parser.add_argument("--scan", action="store_true", help=argparse.SUPPRESS)  # child: the DuckDB baseline
    parser.add_argument("--floor", type=Path, help=argparse.SUPPRESS)  # child: the I/O floor, given the mined lake
    parser.add_argument("--into", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.generate:
        t0 = time.perf_counter()
        steps, trajectories = synthetic_lake(args.into, args.generate)
        print(
            json.dumps(
                {
                    "steps": steps,
                    "trajectories": trajectories,
                    "generate_s": round(time.perf_counter() - t0, 2),
                }
            )
        )
        return 0
    if args.measure:
        print(json.dumps(measure(args.into)))
        return 0
    if args.scan:
        print(json.dumps({"scan_s": round(duckdb_scan_seconds(Lake(args.into)), 2)}))
        return 0
    if args.floor:
        print(json.dumps(io_floor(args.into, args.floor)))
        return 0
    if not args.steps:
        parser.error("give --steps N (repeatable)")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-mining-"))
    try:
        for n in args.steps:
            root = workdir / f"lake-{n}"
            shutil.rmtree(root, ignore_errors=True)
            generated = json.loads(_child("--generate", str(n), "--into", str(root)))
            scan = json.loads(_child("--scan", "--into", str(root)))["scan_s"]
            unmined = workdir / f"lake-{n}-unmined"  # hard links: the floor's run starts from the same files
            shutil.rmtree(unmined, ignore_errors=True)
            shutil.copytree(root, unmined, copy_function=os.link)
            measured = json.loads(_child("--measure", "--into", str(root)))
            floor = json.loads(_child("--floor", str(root), "--into", str(unmined)))
            shutil.rmtree(unmined, ignore_errors=True)
            ratio = round(measured["mine_s"] / scan, 2)
            print(
                json.dumps(
                    {
                        "requested": n,
                        "generate_s": generated["generate_s"],
                        "scan_s": scan,
                        "ratio_to_scan": ratio,
                        **measured,
                        "floor_s": floor["floor_s"],
                        "floor_to_scan": round(floor["floor_s"] / scan, 2),
                        # the two restatements of the 2x bar (DESIGN_NOTES, eighteenth pass): mine() against
                        # the floor, and what the rules cost above the floor, in scans
                        "mine_to_floor": round(measured["mine_s"] / floor["floor_s"], 2),
                        "rules_in_scans": round((measured["mine_s"] - floor["floor_s"]) / scan, 2),
                    }
                ),
                flush=True,
            )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
