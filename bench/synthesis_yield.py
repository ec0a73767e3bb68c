"""How many synthesised pairs survive the full gate, per sandbox, and what rejected the rest.

    nice -n 10 .venv/bin/python bench/synthesis_yield.py [--sandbox mail]... [--count 40] [--seed 0] [--workers 1]

Per sandbox: `synthesize-tasks` with the static agent (plain library code, no Prefect) into a fresh lake,
then from the lake: candidates, verified (per family), rejections by reason, and how many of them the
checks that make a verifier hard to fool gave (injected, counterfactual, other record, navigation detour).
Every verified pair has passed each of its single-value perturbations: that is what verified means.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flows.task_synthesis.synthesis import synthesize_sandbox
from lake import Lake
from sandboxes.registry import select

HARD_TO_FOOL = ("inject_no_effect", "underspecified_verifier", "passes_on_other_record", "brittle_verifier")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sandbox", action="append", help="a shipped sandbox (repeatable; default shop and mail)")
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    manifests, missing = select(args.sandbox or ["shop", "mail"])
    if missing:
        raise SystemExit(f"unknown sandbox(es): {missing}")
    for m in manifests:
        with tempfile.TemporaryDirectory() as tmp:
            lake = Lake(Path(tmp) / "lake")
            t0 = time.perf_counter()
            s = synthesize_sandbox(m, lake, "yield", count=args.count, seed=args.seed, workers=args.workers)
            if s.error:
                print(f"{m.name}: failed: {s.error}")
                continue
            lake.refresh_catalog()
            rows = lake.query("SELECT status, reason, family FROM tasks")
            rejected = Counter(r["reason"] for r in rows if r["status"] != "verified")
            print(f"{m.name} (count {args.count}, seed {args.seed}, {args.workers} worker(s), "
                  f"{time.perf_counter() - t0:.0f} s): {s.candidates} candidates, verified {s.verified} "
                  f"{dict(Counter(r['family'] for r in rows if r['status'] == 'verified'))}; rejected {dict(rejected)}; "
                  f"by the hard-to-fool checks {sum(rejected[r] for r in HARD_TO_FOOL)}", flush=True)


if __name__ == "__main__":
    main()
