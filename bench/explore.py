"""Exploration speed: distinct abstract states discovered per minute on a sandbox, and the share of
steps that landed on a state already seen (revisits).

    .venv/bin/python bench/explore.py [--sandbox shop] [--minutes 1] [--steps 400]

Runs the explorer with no targets (pure discovery: one link per URL pattern, each form once) until
its frontier is empty or the budget ends, then a naive baseline in the same process — the same
explorer following every distinct URL — and prints both and their ratio. Target on a 2-core machine:
>= 60 distinct states/min with < 20% revisits.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flows.exploration.coverage import AppAreas  # noqa: E402
from flows.exploration.explorer import ExploreConfig, Explorer  # noqa: E402
from sandboxes.drivers import open_driver  # noqa: E402
from sandboxes.registry import select  # noqa: E402


def run(manifest, links: str, minutes: float, steps: int):
    with open_driver(manifest) as driver:
        config = ExploreConfig(max_steps=steps, max_seconds=minutes * 60, variants=1, links=links)
        return Explorer(driver, manifest, AppAreas.from_source(manifest), config=config).run()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sandbox", default="shop")
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=400)
    args = ap.parse_args()
    (manifest,), _ = select([args.sandbox])
    print(f"{manifest.name}: exploring for up to {args.minutes:g} min / {args.steps} steps; {os.cpu_count()} CPUs")
    rates = {}
    for label, links in (("explorer (one link per URL pattern)", "pattern"), ("baseline (every distinct URL)", "url")):
        r = run(manifest, links, args.minutes, args.steps)
        rates[links] = r.states_per_minute
        ended = "frontier empty" if r.steps < args.steps and r.seconds < args.minutes * 60 else "budget used"
        print(f"{label:38} {len(r.states):4d} states in {r.seconds:5.1f} s ({r.steps} steps, {ended}): "
              f"{r.states_per_minute:6.1f} states/min, revisits {r.revisit_share:5.1%}, "
              f"state-changing steps {sum(t.changed_state for t in r.performed)}")
    print(f"ratio explorer / baseline: {rates['pattern'] / rates['url']:.2f}x states per minute"
          if rates["url"] else "baseline found no states")


if __name__ == "__main__":
    main()
