"""Validation throughput: fresh app process + browser per pair vs pooled sandboxes.

    .venv/bin/python bench/validation.py [--pairs 40] [--sandbox shop]

(a) fresh: for each pair, start the app (its DB built from schema + seed), launch Chromium, validate,
    shut both down. (b) pooled: app processes started once, one Chromium for all pairs, a browser context per
    task, state reset by restoring the SQLite snapshot; with W workers, W app replicas are driven
    in parallel threads through one shared Chromium. Same pairs, same gate, same process.
Prints pairs/s for each and the ratio pooled/fresh.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.static import StaticAgent
from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.source import read_source
from sandboxes.app_process import AppProcess
from sandboxes.pool import SandboxPool
from sandboxes.registry import select
from sandboxes.web import BrowserHost, WebDriver


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--sandbox", default="shop")
    ap.add_argument("--workers", default="1,2", help="pooled worker counts to measure (default 1,2)")
    args = ap.parse_args()
    (manifest,), _ = select([args.sandbox])

    with AppProcess(manifest) as app:
        out = StaticAgent().synthesize(SynthesisRequest(manifest, read_source(manifest), app.snapshot_path, args.pairs, 0))
    pairs, skills = out.candidates[: args.pairs], {s.name: s for s in out.skills}
    print(f"{len(pairs)} candidate pairs from {manifest.name} ({Counter(p.family for p in pairs)})")

    pooled = {}
    for w in [int(x) for x in args.workers.split(",")]:
        t0 = time.perf_counter()
        statuses = SandboxPool(manifest, workers=w).map(lambda d, p: ValidationGate(d, skills).validate(p).status, pairs)
        pooled[w] = (time.perf_counter() - t0, statuses)

    t0 = time.perf_counter()
    fresh = []
    for p in pairs:
        with AppProcess(manifest) as app, BrowserHost() as host:
            driver = WebDriver(app, host)
            fresh.append(ValidationGate(driver, skills).validate(p).status)
            driver.close()
    fresh_s = time.perf_counter() - t0

    print(f"fresh            : {len(pairs) / fresh_s:6.2f} pairs/s  ({fresh_s:6.1f} s, verified {fresh.count('verified')})")
    for w, (secs, statuses) in pooled.items():
        agree = sum(a == b for a, b in zip(statuses, fresh))
        print(
            f"pooled, {w} worker{'s' if w > 1 else ' '}: {len(pairs) / secs:6.2f} pairs/s  ({secs:6.1f} s, verified "
            f"{statuses.count('verified')})  ratio vs fresh {fresh_s / secs:5.2f}x  verdicts agree {agree}/{len(pairs)}"
        )


if __name__ == "__main__":
    main()
