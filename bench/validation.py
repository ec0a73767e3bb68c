"""Validation throughput: fresh app process + browser per pair vs pooled sandboxes.

    .venv/bin/python bench/validation.py [--pairs 40] [--sandbox shop]

(a) fresh: for each pair, start the app (its DB built from schema + seed), launch Chromium, validate,
    shut both down. (b) pooled: app processes started once, one Chromium for all pairs, a browser context per
    task, state reset by restoring the SQLite snapshot; with W workers, W app replicas are driven
    in parallel threads through one shared Chromium. Same pairs, same gate, same process.
Prints pairs/s for each and the ratio pooled/fresh.

    .venv/bin/python bench/validation.py --cost [--baseline-checkout DIR] [--pairs 40] [--sandbox shop]

Gate cost per verified pair, in CPU-seconds of every process involved (the gate's, the app's, Chromium's):
the same candidate pairs (synthesised once, here) gated with one worker in a child process, twice from this
checkout — the gate without its injected and counterfactual stages (the baseline: the gate before them),
then the full gate — and once more from DIR if given (e.g. a clone of main). CPU comes from the children's
resource usage, so other jobs on the machine do not count; wall time is printed too, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
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

ROOT = Path(__file__).resolve().parents[1]
# Gates the pairs in a JSON file with one worker, through the public API both checkouts share.
_GATE_CHILD = """
import json, sys
from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.pool import SandboxPool
from sandboxes.registry import select
from sandboxes.skills import Skill
data = json.load(open(sys.argv[1]))
stages = {} if sys.argv[2] == "full" else {"counterfactuals": False, "check_injection": False}
(manifest,), _ = select([data["sandbox"]])
specs = [TaskSpec.from_row(r) for r in data["tasks"]]
skills = {s["name"]: Skill(**s) for s in data["skills"]}
results = SandboxPool(manifest, 1).map(lambda d, p: ValidationGate(d, skills, **stages).validate(p), specs)
print(json.dumps([[r.status, r.reason] for r in results]))
"""


def gate_cost(checkout: Path, pairs_file: Path, stages: str = "full") -> tuple[float, float, list]:
    """(CPU-seconds of the child and everything it waited for, wall seconds, [status, reason] per pair).
    `stages`: full, or baseline (no injected or counterfactual stages)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = os.environ | {"PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", _GATE_CHILD, str(pairs_file), stages], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(out.stdout.strip().splitlines()[-1])


def cost(args, manifest) -> None:
    with AppProcess(manifest) as app:
        out = StaticAgent().synthesize(SynthesisRequest(manifest, read_source(manifest), app.snapshot_path, args.pairs, 0))
    pairs = out.candidates[: args.pairs]
    data = {"sandbox": manifest.name, "tasks": [p.to_row("candidate", None, None, "bench", None) for p in pairs],
            "skills": [{"name": s.name, "sandbox": s.sandbox, "kind": s.kind, "description": s.description, "spec": s.spec}
                       for s in out.skills]}
    print(f"{len(pairs)} candidate pairs from {manifest.name} ({Counter(p.family for p in pairs)}), gated with 1 worker")
    with tempfile.TemporaryDirectory() as tmp:
        pairs_file = Path(tmp) / "pairs.json"
        pairs_file.write_text(json.dumps(data, default=str))
        runs = [("before (no injected/counterfactual stages)", ROOT, "baseline"), ("after (full gate)", ROOT, "full")]
        if args.baseline_checkout:
            runs.append(("other checkout", Path(args.baseline_checkout).resolve(), "full"))
        measured = {}
        for label, checkout, stages in runs:
            cpu, wall, results = gate_cost(checkout, pairs_file, stages)
            verified = sum(r[0] == "verified" for r in results)
            measured[label] = (cpu, cpu / max(1, verified))
            reasons = Counter(r[1] for r in results if r[0] != "verified")
            print(f"{label:44}: {cpu:7.1f} CPU-s, {wall:6.1f} s wall, verified {verified}/{len(pairs)}, "
                  f"{cpu / max(1, verified):5.2f} CPU-s per verified pair; rejected {dict(reasons)}", flush=True)
        (before_cpu, before_per), (after_cpu, after_per) = measured[runs[0][0]], measured[runs[1][0]]
        print(f"ratio after/before: {after_per / before_per:.2f}x CPU-s per verified pair, "
              f"{after_cpu / before_cpu:.2f}x CPU-s in all")
        if args.baseline_checkout:
            print(f"ratio this/other checkout: {after_per / measured['other checkout'][1]:.2f}x CPU-s per verified pair")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=40)
    ap.add_argument("--sandbox", default="shop")
    ap.add_argument("--workers", default="1,2", help="pooled worker counts to measure (default 1,2)")
    ap.add_argument("--cost", action="store_true", help="gate cost per verified pair (CPU-seconds) instead of throughput")
    ap.add_argument("--baseline-checkout", help="with --cost: another checkout to measure the same pairs on")
    args = ap.parse_args()
    (manifest,), _ = select([args.sandbox])
    if args.cost:
        return cost(args, manifest)

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
