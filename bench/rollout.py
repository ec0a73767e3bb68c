"""Replay-policy rollout throughput with 1, 2 and 4 concurrent sandboxes sharing one Chromium.

    .venv/bin/python bench/rollout.py [--sandbox shop] [--tasks 12] [--workers 1,2,4]

Synthesises and gates `--tasks` pairs into a temporary lake, then replays them with each worker count
(every worker: its own app replica and browser context, all in one shared Chromium; every step
observed with a screenshot and stored as a blob, as in real rollouts). Prints episodes/min for each
and the scaling ratio of the largest worker count against 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flows.rollout.rollout import rollout  # noqa: E402
from flows.task_synthesis.synthesis import synthesize_sandbox  # noqa: E402
from lake import Lake  # noqa: E402
from sandboxes.registry import select  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sandbox", default="shop")
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--workers", default="1,2,4")
    args = ap.parse_args()
    (manifest,), _ = select([args.sandbox])
    lake = Lake(tempfile.mkdtemp(prefix="flywheel-bench-"))
    s = synthesize_sandbox(manifest, lake, "bench-synth", count=args.tasks, seed=0)
    print(f"{s.verified} verified tasks on {manifest.name} (of {s.candidates}); {os.cpu_count()} CPUs")
    base = None
    for w in [int(x) for x in args.workers.split(",")]:
        t0 = time.perf_counter()
        summary = rollout(lake, f"bench-w{w}", "replay", [manifest.name], workers=w)
        secs = time.perf_counter() - t0
        rate = summary.episodes / secs * 60
        base = base or rate
        print(f"{w} worker{'s' if w > 1 else ' '}: {rate:6.1f} episodes/min  ({summary.episodes} episodes in {secs:5.1f} s, "
              f"ended {dict(summary.sandboxes.get(manifest.name, {}))})  scaling vs 1: {rate / base:4.2f}x")


if __name__ == "__main__":
    main()
