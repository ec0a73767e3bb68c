"""What the offline flywheel gets out of apps no one here wrote: the corpus in corpus/ (third-party apps
fetched at pinned versions from npm and PyPI, each with only a sandbox.toml), run through the real flows.

    .venv/bin/python bench/foreign.py [--apps optuna-dashboard,django-admin] [--count 40] [--steps 200] [--minutes 2]

Per app: `synthesize-tasks` with the default (static) agent, then `explore`, into one fresh lake; then
from the lake: candidates, verified pairs, families among them, the multi-step share, duplicate pairs
(same request and verifier), rejections by reason, explore's recorded steps and how many changed the
app's state, and CPU-seconds per verified pair (this process and
the app servers, browsers and helpers it started and reaped; the Prefect server is not counted). A
baseline for the next change is the same command on the commit before it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


@dataclass
class AppYield:
    """One app's figures after synthesize-tasks and explore."""

    app: str
    candidates: int = 0
    verified: int = 0
    families: Counter = field(default_factory=Counter)  # verified pairs per family
    multi_step: int = 0
    duplicates: int = 0  # verified pairs whose (request, verifier) another verified pair already has
    rejected: Counter = field(default_factory=Counter)
    walk_kinds: Counter = field(default_factory=Counter)  # explore's discovery-walk steps per kind (form, enter, item, drag, ...)
    explored_steps: int = 0  # transitions explore recorded
    state_changes: int = 0  # of them, steps that changed the app's state
    cpu_s: float = 0.0
    wall_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def multi_step_share(self) -> float:
        return self.multi_step / self.verified if self.verified else 0.0

    @property
    def cpu_per_verified(self) -> float | None:
        return self.cpu_s / self.verified if self.verified else None


def is_multi_step(family: str, params: dict) -> bool:
    """A pair that chains two or more state changes: the multi_step family, or params listing its steps."""
    return family == "multi_step" or len(params.get("steps") or []) >= 2


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(folder: Path, lake_root: Path, count: int = 40, steps: int = 200, minutes: float = 2.0, seed: int = 0) -> AppYield:
    """synthesize-tasks then explore on one app folder, and its figures read back from the lake."""
    from flows.exploration.flow import explore
    from flows.task_synthesis.flow import synthesize_tasks
    from lake import Lake
    from sandboxes.manifest import load_manifest

    name = load_manifest(folder).name
    out = AppYield(name)
    cpu0, wall0 = _cpu_s(), time.monotonic()
    synth = synthesize_tasks(sandboxes=[str(folder)], count=count, seed=seed, lake_root=str(lake_root))
    explored = explore(sandboxes=[str(folder)], steps=steps, minutes=minutes, seed=seed, lake_root=str(lake_root))
    out.cpu_s, out.wall_s = _cpu_s() - cpu0, time.monotonic() - wall0
    for result in (synth, explored):
        out.errors += [str(p) for p in result.get("problems", [])]
        for s in result["sandboxes"]:
            out.errors += [s["error"]] if s.get("error") else []
            out.notes += list(s.get("notes") or [])
            out.walk_kinds.update(s.get("walk_kinds") or {})
    lake = Lake(lake_root)
    if lake.files("transitions"):
        (row,) = lake.query("SELECT count(*) AS n, count(*) FILTER (WHERE changed_state) AS changed FROM transitions "
                            "WHERE sandbox = ?", [name])
        out.explored_steps, out.state_changes = row["n"], row["changed"]
    if not lake.files("tasks"):
        return out
    rows = lake.query("SELECT task_id, family, status, reason, instruction, verifier_json, params_json FROM tasks_history "
                      "WHERE sandbox = ? QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY recorded_at) = 1", [name])
    out.candidates = len(rows)
    latest = {r["task_id"]: r for r in lake.query("SELECT task_id, family, status, reason, instruction, verifier_json, "
                                                  "params_json FROM tasks WHERE sandbox = ?", [name])}
    seen: set[tuple[str, str]] = set()
    for r in latest.values():
        if r["status"] == "rejected":
            out.rejected[r["reason"] or "unknown"] += 1
        if r["status"] != "verified":
            continue
        out.verified += 1
        out.families[r["family"]] += 1
        out.multi_step += is_multi_step(r["family"], json.loads(r["params_json"] or "{}"))
        key = (" ".join((r["instruction"] or "").lower().split()), r["verifier_json"] or "")
        out.duplicates += key in seen
        seen.add(key)
    return out


def corpus_apps(names: list[str] | None = None) -> list[Path]:
    """The corpus folders, all or the named ones (an unknown name is an error naming the known ones)."""
    known = {p.name: p for p in sorted(CORPUS.iterdir()) if (p / "sandbox.toml").exists()}
    if not names:
        return list(known.values())
    missing = [n for n in names if n not in known]
    if missing:
        raise SystemExit(f"no corpus app named {', '.join(missing)}; known: {', '.join(known)}")
    return [known[n] for n in names]


def table(results: list[AppYield]) -> str:
    head = (f"{'app':16} {'cand':>5} {'verif':>5} {'fam':>4} {'multi':>6} {'dup':>4} {'CPU-s/verif':>11} "
            f"{'explored':>8} {'changed':>7}  rejected by reason")
    lines = [head, "-" * len(head)]
    for r in results:
        cpv = f"{r.cpu_per_verified:.1f}" if r.cpu_per_verified is not None else f"({r.cpu_s:.0f} s)"
        rej = ", ".join(f"{k} {v}" for k, v in r.rejected.most_common()) or "-"
        lines.append(f"{r.app:16} {r.candidates:5d} {r.verified:5d} {len(r.families):4d} {r.multi_step_share:6.0%} "
                     f"{r.duplicates:4d} {cpv:>11} {r.explored_steps:8d} {r.state_changes:7d}  {rej}")
    cand, ver = sum(r.candidates for r in results), sum(r.verified for r in results)
    multi, cpu = sum(r.multi_step for r in results), sum(r.cpu_s for r in results)
    fams = len({f for r in results for f in r.families})
    lines.append("-" * len(head))
    lines.append(f"{'total':16} {cand:5d} {ver:5d} {fams:4d} {multi / ver if ver else 0:6.0%} "
                 f"{sum(r.duplicates for r in results):4d} {f'{cpu / ver:.1f}' if ver else f'({cpu:.0f} s)':>11} "
                 f"{sum(r.explored_steps for r in results):8d} {sum(r.state_changes for r in results):7d}")
    lines.append("(CPU-s/verif in parentheses: all the CPU-seconds spent, when nothing was verified)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", help="comma-separated corpus app names (default: all in corpus/)")
    ap.add_argument("--count", type=int, default=40, help="synthesize-tasks candidates per app (default 40)")
    ap.add_argument("--steps", type=int, default=200, help="explore steps per app (default 200)")
    ap.add_argument("--minutes", type=float, default=2.0, help="explore minutes per app (default 2)")
    ap.add_argument("--lake", help="lake folder (default: a fresh temporary one)")
    args = ap.parse_args()
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    apps = corpus_apps([a for a in (args.apps or "").split(",") if a])
    lake_root = Path(args.lake or tempfile.mkdtemp(prefix="flywheel-foreign-"))
    print(f"{len(apps)} corpus apps; synthesize-tasks --count {args.count}, explore --steps {args.steps} "
          f"--minutes {args.minutes:g}; lake {lake_root}; {os.cpu_count()} CPUs")
    results = []
    for folder in apps:
        r = measure(folder, lake_root / folder.name, args.count, args.steps, args.minutes)
        results.append(r)
        print(f"  {r.app}: {r.verified} verified of {r.candidates} candidates in {r.wall_s:.0f} s"
              + f"; explore's walk: {dict(r.walk_kinds) or '-'}"
              + (f"; errors: {' | '.join(r.errors)[:300]}" if r.errors else "")
              , flush=True)
        for note in r.notes:  # what each discovery step found, and where it found little, what the manifest could add
            print(f"    {note[:400]}")
    print()
    print(table(results))


if __name__ == "__main__":
    main()
