"""Verdicts that do not depend on machine load: the gate and rollouts while a CPU hog runs.

    nice -n 10 .venv/bin/python bench/under_load.py [--pairs 40] [--sandbox shop] [--episodes 20]

A hog (a Python busy loop per core) runs throughout. The same candidate pairs are gated with 1 and with 4
workers, both passes at once (each is loaded by the hog and by the other, and the run takes as long as the
slower pass, not both; each verdict is printed as it lands); the verdicts (status and reason per pair) must
be identical. As soon as the 4-worker pass ends, a replay rollout of its verified pairs, `--episodes`
episodes at 4 workers, runs beside the 1-worker pass: env_error episodes are counted, and those caused by
a timeout named. Prints figures only (no thresholds): on a shared machine other jobs add to the load.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flows.rollout.rollout import rollout
from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.static import StaticAgent
from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.source import read_source
from flows.task_synthesis.synthesis import land
from lake import Lake
from sandboxes.app_process import AppProcess
from sandboxes.pool import SandboxPool
from sandboxes.registry import select


def _spin() -> None:
    while True:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--sandbox", default="shop")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--passes", default="1,4", help="which gate passes to run: 1, 4 (the rollout follows the 4-worker one)")
    args = ap.parse_args()
    (manifest,), _ = select([args.sandbox])
    with AppProcess(manifest) as app:
        out = StaticAgent().synthesize(SynthesisRequest(manifest, read_source(manifest), app.snapshot_path, args.pairs, 0))
    pairs, skills = out.candidates[: args.pairs], {s.name: s for s in out.skills}
    hog = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 1)]
    for p in hog:
        p.start()
    print(f"hog: {len(hog)} busy loops; load average at start {os.getloadavg()[0]:.1f}")
    try:
        runs: dict[int, list] = {}
        index = {spec.task_id: i for i, spec in enumerate(pairs)}

        def gate(workers: int) -> None:
            def tick(spec, result):  # each verdict as it lands, so a stopped run still shows what it compared
                print(f"  {workers}w #{index[spec.task_id]:02d} {result.status} {result.reason or ''} {(result.detail or '')[:200]}",
                      flush=True)

            t0 = time.perf_counter()
            runs[workers] = SandboxPool(manifest, workers).map(
                lambda d, p: ValidationGate(d, skills).validate(p), pairs, on_result=tick)
            verdicts = Counter(r.reason or "verified" for r in runs[workers])
            print(f"gate, {workers} worker(s): {time.perf_counter() - t0:6.1f} s, load {os.getloadavg()[0]:.1f}, "
                  f"{dict(verdicts)}", flush=True)

        def gate_then_roll_out() -> None:  # the rollout needs verified pairs: the 4-worker pass's, as soon as it ends
            gate(args.workers)
            roll_out(manifest, pairs, runs[args.workers], skills, args)

        wanted = args.passes.split(",")
        passes = ([threading.Thread(target=gate, args=(1,))] if "1" in wanted else []) + (
            [threading.Thread(target=gate_then_roll_out)] if str(args.workers) in wanted or "4" in wanted else [])
        for t in passes:
            t.start()
        for t in passes:
            t.join()
        if len(runs) < 2:
            print("a gate pass failed; see above")
            return
        one, many = ([(r.status, r.reason) for r in runs[w]] for w in (1, args.workers))
        same = sum(a == b for a, b in zip(one, many))
        print(f"identical verdicts 1 vs {args.workers} workers: {same}/{len(pairs)}")
        for spec, a, b in zip(pairs, one, many):
            if a != b:
                print(f"  differs: {spec.task_id}: {a} vs {b}")
    finally:
        for p in hog:
            p.terminate()


def roll_out(manifest, pairs, results, skills, args) -> None:
    """A replay rollout of the verified pairs, `--episodes` episodes at `--workers`, into a throwaway lake."""
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(Path(tmp) / "lake")
        land(lake, "load-gate", manifest.name, "static", list(skills.values()), list(zip(pairs, results)))
        lake.refresh_catalog()
        verified = [s.task_id for s, r in zip(pairs, results) if r.status == "verified"]
        if not verified:
            print("no verified pair to roll out")
            return
        chosen = verified[: args.episodes]
        per_task = math.ceil(args.episodes / len(chosen))
        t0 = time.perf_counter()
        summary = rollout(lake, "load-rollout", "replay", [manifest.name], task_ids=chosen, episodes=per_task,
                          workers=args.workers)
        rows = lake.query("SELECT ended, end_detail FROM trajectories")
        env = [r for r in rows if r["ended"] == "env_error"]
        timeouts = [r for r in env if "timed out" in (r["end_detail"] or "").lower() or "timeout" in (r["end_detail"] or "").lower()]
        print(f"rollout, {args.workers} workers: {len(rows)} episodes in {time.perf_counter() - t0:6.1f} s, load "
              f"{os.getloadavg()[0]:.1f}; ended {dict(Counter(r['ended'] for r in rows))}; env_error {len(env)}, "
              f"from timeouts {len(timeouts)}{'; errors: ' + '; '.join(summary.errors) if summary.errors else ''}", flush=True)
        for r in env[:5]:
            print(f"  env_error: {(r['end_detail'] or '')[:160]}")


if __name__ == "__main__":
    main()
