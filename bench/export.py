"""Benchmark `export-sft`: throughput and peak RSS for synthetic lakes of N steps.

    python bench/export.py [--steps 100000 --steps 1000000] [--format messages|action-rl] [--keep DIR]

The lake follows the real schemas: trajectories of 4-16 steps over 400 tasks in two sandboxes (six
families, three difficulties), 90% judged pass and 10% failed, step rewards for every step, steps
written as rollouts write them (files of at most 100k steps, whole trajectories), and a screenshot on
one step in ten (a PNG blob from a pool of 500 distinct 64x40 noise images, ~8 KB each, embedded in
the export). Actions mix clicks on named targets (grounded through their recorded point), typing with
text unique to the trajectory, scrolls, a goto and a terminate; about 1% of trajectories are exact
copies of another (de-duplication has work to do).

Each size is generated, then exported, in its own child process, so the peak RSS printed
(resource.getrusage of the exporting process: curation, formatting, scrubbing, shard writing and the
Great Expectations gate) belongs to the export alone. Printed per size: one JSON line with steps/s, rows,
shards, bytes, seconds and peak RSS; at the end the RSS ratio between the largest and smallest size
against the targets (<= 1.5x, and <= 2 GB at 1M steps). Timings move with the machine's load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lake import Lake  # noqa: E402
from lake.schemas import schema_for  # noqa: E402

FILE_STEPS = 100_000
IMAGE_POOL = 500
FAMILIES = ["create", "update", "delete", "retrieve", "search", "multi_step"]
DIFFICULTIES = ["easy", "medium", "hard"]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _table(name: str, columns: dict[str, list]) -> pa.Table:
    schema = schema_for(name)
    n = len(next(iter(columns.values())))
    return pa.Table.from_arrays(
        [pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema], schema=schema
    )


def _write(root: Path, name: str, columns: dict[str, list], part: int) -> None:
    (root / "tables" / name).mkdir(parents=True, exist_ok=True)
    pq.write_table(_table(name, columns), root / "tables" / name / f"bench-{part:04d}.parquet", compression="zstd")


def _images(lake: Lake, rng: random.Random) -> list[str]:
    from PIL import Image

    shas = []
    for _ in range(IMAGE_POOL):
        buf = io.BytesIO()
        Image.frombytes("RGB", (64, 40), rng.randbytes(64 * 40 * 3)).save(buf, format="PNG")
        shas.append(lake.put_blob(buf.getvalue()))
    return shas


def _actions(t: int, i: int, last: bool, rng: random.Random) -> tuple[str, str]:
    if last:
        return json.dumps([{"action": "terminate", "status": "success"}]), "[null]"
    kind = rng.random()
    if i == 0:
        return json.dumps([{"action": "goto", "url": f"/orders/{t % 97}"}]), "[null]"
    if kind < 0.45:
        name = rng.choice(["Save", "Orders", "Next", "Add to cart", "Inbox", "Send"])
        return (json.dumps([{"action": "left_click", "target": {"role": "button", "name": name}}]),
                json.dumps([[rng.randrange(1000), rng.randrange(1000)]]))
    if kind < 0.8:
        text = f"Order {t}-{i} for customer {t % 1013}"
        return (json.dumps([{"action": "type", "text": text, "target": {"label": "Notes"}}]),
                json.dumps([[rng.randrange(1000), rng.randrange(1000)]]))
    if kind < 0.9:
        return json.dumps([{"action": "scroll", "pixels": -300}]), "[null]"
    return json.dumps([{"action": "left_click", "x": rng.randrange(1000), "y": rng.randrange(1000)}]), "[null]"


def synthetic_lake(root: Path, n_steps: int, seed: int = 0) -> dict:
    """Write about n_steps steps (and their trajectories, verdicts, tasks, rewards) as a lake at root."""
    rng = random.Random(seed)
    lake = Lake(root)
    images = _images(lake, rng)
    tasks = {k: [] for k in ("task_id", "version", "sandbox", "source_commit", "family", "difficulty", "instruction",
                             "status", "verifier_json", "provenance_json", "run_id", "recorded_at")}
    for k in range(400):
        sandbox = "shop" if k % 2 else "mail"
        for col, v in (("task_id", f"task-{k}"), ("version", 1), ("sandbox", sandbox), ("source_commit", f"c-{sandbox}"),
                       ("family", FAMILIES[k % 6]), ("difficulty", DIFFICULTIES[k % 3]),
                       ("instruction", f"Do task {k} in the {sandbox} app"), ("status", "verified"),
                       ("verifier_json", '{"template": "row_exists", "params": {}}'),
                       ("provenance_json", '{"agent": "static", "synthesiser_version": "bench"}'), ("run_id", "bench"),
                       ("recorded_at", T0)):
            tasks[col].append(v)
    _write(root, "tasks", tasks, 0)
    step_cols = ("trajectory_id", "step_index", "screenshot_sha", "screen_width", "screen_height", "url", "raw_output",
                 "actions_json", "ok", "points_json", "run_id")
    traj_cols = ("trajectory_id", "task_id", "task_version", "sandbox", "source_commit", "policy", "num_steps", "ended",
                 "run_id", "recorded_at")
    verdict_cols = ("trajectory_id", "task_id", "sandbox", "policy", "verdict", "votes_json", "judge_version", "run_id",
                    "recorded_at")
    reward_cols = ("trajectory_id", "step_index", "ct", "qt", "st", "lt", "reward", "weights_json", "detector_version", "run_id")
    steps, trajs, verdicts, rewards = ({c: [] for c in cols} for cols in (step_cols, traj_cols, verdict_cols, reward_cols))
    written = part = t = 0
    previous: list[tuple] = []
    while written < n_steps:
        tid = f"bench-{t:08d}"
        task = rng.randrange(400)
        copy = previous and rng.random() < 0.01
        length = len(previous) if copy else rng.randint(4, 16)
        sandbox = "shop" if task % 2 else "mail"
        rows = []
        for i in range(length):
            if copy:
                actions, points, sha = previous[i]
            else:
                actions, points = _actions(t, i, i == length - 1, rng)
                sha = images[rng.randrange(IMAGE_POOL)] if rng.random() < 0.1 else None
            rows.append((actions, points, sha))
            for col, v in (("trajectory_id", tid), ("step_index", i), ("screenshot_sha", sha), ("screen_width", 1280),
                           ("screen_height", 800), ("url", f"http://127.0.0.1:8000/page/{i}"), ("raw_output", actions),
                           ("actions_json", actions), ("ok", True), ("points_json", points), ("run_id", "bench")):
                steps[col].append(v)
            for col, v in (("trajectory_id", tid), ("step_index", i), ("ct", 1.0), ("qt", 1.0), ("st", 0.0),
                           ("lt", 0.0), ("reward", 1.0), ("weights_json", "{}"), ("detector_version", "mining-1"),
                           ("run_id", "bench")):
                rewards[col].append(v)
        previous = rows
        verdict = "failed" if rng.random() < 0.1 else "pass"
        for col, v in (("trajectory_id", tid), ("task_id", f"task-{task}"), ("task_version", 1), ("sandbox", sandbox),
                       ("source_commit", f"c-{sandbox}"), ("policy", "scripted-noisy"), ("num_steps", length),
                       ("ended", "terminated"), ("run_id", "bench"), ("recorded_at", T0 + dt.timedelta(seconds=t))):
            trajs[col].append(v)
        for col, v in (("trajectory_id", tid), ("task_id", f"task-{task}"), ("sandbox", sandbox), ("policy", "scripted-noisy"),
                       ("verdict", verdict), ("votes_json", '[{"voter": "verifier:row_exists", "vote": "x"}]'),
                       ("judge_version", "autojudge-1"), ("run_id", "bench"), ("recorded_at", T0)):
            verdicts[col].append(v)
        written += length
        t += 1
        if len(steps["trajectory_id"]) >= FILE_STEPS or written >= n_steps:
            _write(root, "steps", steps, part)
            _write(root, "step_rewards", rewards, part)
            for cols in (steps, rewards):
                for v in cols.values():
                    v.clear()
            part += 1
    _write(root, "trajectories", trajs, 0)
    _write(root, "verdicts", verdicts, 0)
    return {"steps": written, "trajectories": t, "step_files": part}


def measure(root: Path, out: Path, fmt: str) -> dict:
    """In a fresh process: export the lake; the peak RSS is this process's alone."""
    from flows.sft_export.config import ExportConfig
    from flows.sft_export.export import export_sft

    t0 = time.perf_counter()
    result = export_sft(Lake(root), ExportConfig(name="bench", format=fmt, negatives=True), out=out)
    seconds = time.perf_counter() - t0
    return {
        "status": result.status, "steps": result.counts["steps"], "rows": result.counts["rows"],
        "trajectories": result.counts["trajectories"], "images": result.counts["images"],
        "dropped": result.counts["dropped"], "shards": len(result.files),
        "export_mb": round(sum(f["bytes"] for f in result.files) / 1e6, 1), "export_s": round(seconds, 1),
        "steps_per_s": round(result.counts["steps"] / seconds), "gate_failed": result.gate_failed,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, action="append", help="steps to generate and export (repeatable; "
                        "default 100000 and 1000000)")
    parser.add_argument("--format", default="messages", choices=["messages", "action-rl"])
    parser.add_argument("--keep", type=Path, help="write lakes and exports here and keep them (default: a temp dir)")
    parser.add_argument("--generate", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--into", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.generate:
        t0 = time.perf_counter()
        print(json.dumps(synthetic_lake(args.into, args.generate) | {"generate_s": round(time.perf_counter() - t0, 1)}))
        return 0
    if args.measure:
        print(json.dumps(measure(args.into / "lake", args.into / "exports", args.format)))
        return 0
    sizes = args.steps or [100_000, 1_000_000]
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="bench-export-"))
    peaks = {}
    try:
        for n in sizes:
            where = workdir / f"steps-{n}"
            shutil.rmtree(where, ignore_errors=True)
            generated = _child("--generate", str(n), "--into", str(where / "lake"))
            measured = _child("--measure", "--into", str(where), "--format", args.format)
            peaks[n] = measured["peak_rss_mb"]
            print(json.dumps({"requested": n, "format": args.format, **generated, **measured}), flush=True)
            if not args.keep:
                shutil.rmtree(where, ignore_errors=True)
        if len(peaks) > 1:
            small, large = min(peaks), max(peaks)
            ratio = peaks[large] / peaks[small]
            print(json.dumps({
                "rss_ratio": round(ratio, 2), "of": f"{large} vs {small} steps", "target_ratio": 1.5,
                "ratio_ok": ratio <= 1.5, "peak_rss_mb_largest": peaks[large],
                "under_2gb": peaks[large] <= 2048,
            }))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
