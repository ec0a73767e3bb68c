"""What isolation costs per call of generated code: a code verifier's judge run in-process (the baseline,
which flywheel never does with generated code), in the subprocess runner and in the container runner.

    .venv/bin/python bench/isolation.py [--runs 20]

Prints the median and p90 milliseconds per call and each runner's ratio to the in-process baseline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flywheel.isolation import ContainerRunner, Job, SubprocessRunner
from sandboxes.docker_images import engine_available

JUDGE = "def judge(evidence, params):\n    n = evidence['final']['n']\n    return {'passed': n > 0, 'reason': f'{n} rows'}\n"
EVIDENCE = {"initial": {"n": 0}, "final": {"n": 1}}


def timings(call, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    return sorted(out)


def in_process() -> None:
    namespace: dict = {}
    exec(compile(JUDGE, "judge", "exec"), namespace)  # the baseline only: generated code never runs like this
    namespace["judge"](EVIDENCE, {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    job = Job(JUDGE, "judge", [EVIDENCE, {}])
    rows = [("in-process (baseline)", timings(in_process, args.runs))]
    sub = SubprocessRunner()
    rows.append((f"subprocess (network namespace: {sub.network_isolated})", timings(lambda: sub.run(job), args.runs)))
    ok, why = engine_available()
    if ok:
        con = ContainerRunner()
        rows.append(("container", timings(lambda: con.run(job), args.runs)))
    else:
        print(f"container runner skipped: {why}")
    base = statistics.median(rows[0][1])
    print(f"{'runner':<40} {'median ms':>10} {'p90 ms':>10} {'x baseline':>12}")
    for name, t in rows:
        med, p90 = statistics.median(t), t[int(0.9 * (len(t) - 1))]
        print(f"{name:<40} {med:>10.2f} {p90:>10.2f} {med / base:>12.0f}")


if __name__ == "__main__":
    main()
