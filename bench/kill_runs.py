"""SIGKILL `flywheel run <flow>` at random moments, run it again, and check nothing was lost, doubled or
left running.

    python bench/kill_runs.py [--trials 10] [--flows synthesize-tasks rollout mine-failures export-sft] [--seed 0]
                              [--server shared|ephemeral] [--keep DIR]

Material: a synthetic lake made by tests/flows/export_data.py (48 trajectories of 4 steps, PNG screens
drawn with PIL, made here) for mine-failures and export-sft; an empty lake for synthesize-tasks (the static
agent on the repo's own sandboxes/shop); for rollout, shop pairs synthesised by the static agent first. Each trial copies the base lake, starts
the real CLI (`python -m flywheel.cli`, real apps and Chromium; with `--server shared` one long-lived
`flywheel server` for every command, with `--server ephemeral` each command's own in-process Prefect server),
kills it with SIGKILL after a delay drawn from a seeded RNG uniformly in [0, the duration of a warm unkilled run],
then runs the same command to completion and checks, per flow:
  synthesize-tasks  no task id gated twice (tasks_history), every pair that landed before the kill still there,
                 and the rerun ends with the same pairs as an unkilled run;
  mine-failures  every trajectory mined once: no duplicate (trajectory_id, step_index) in step_rewards,
                 none without rewards, and what was mined before the kill is still there;
  export-sft     one published version whose files match its manifest, no build folder left, one
                 `exports` row per published path;
  rollout        every trajectory row has all its steps, no duplicate trajectory_id, and the trajectories
                 landed before the kill are still there;
and for all: no process left after the next command that carries the killed run's owner tag
(flywheel/orphans.py) or, independently of that tag, this trial's lake path in its environment (apps, Chromium,
the ephemeral Prefect server, flow-run subprocesses all inherit FLYWHEEL_LAKE).
Printed: one JSON line per trial and a summary per flow (trials, failures, kill delays, reaped processes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flywheel import orphans  # noqa: E402
from lake import Lake  # noqa: E402

COMMANDS = {
    "synthesize-tasks": ["run", "synthesize-tasks", "--sandbox", "shop", "--count", "3"],
    "rollout": ["run", "rollout", "--policy", "replay", "--sandbox", "shop", "--budget", "2"],
    "mine-failures": ["run", "mine-failures"],
    "export-sft": ["run", "export-sft", "--name", "killed", "--negatives"],
}


def base_lakes(folder: Path, flows: list[str]) -> dict[str, Path]:
    """The lake each flow starts from: the synthetic one, or an empty one for synthesize-tasks."""
    plain = _plain_lake(folder / "plain")
    bases = {flow: plain for flow in flows}
    if "synthesize-tasks" in flows:  # an empty lake: every pair in it is this flow's
        (folder / "empty" / "lake").mkdir(parents=True)
        bases["synthesize-tasks"] = folder / "empty" / "lake"
    return bases


def rollout_base(folder: Path, plain: Path, prefect_home: Path) -> Path:
    """The synthetic lake plus shop pairs synthesised by the static agent (made when rollout's turn comes)."""
    shutil.copytree(plain, folder / "with-pairs" / "lake")
    run_cli(["run", "synthesize-tasks", "--sandbox", "shop", "--count", "6"], folder / "with-pairs" / "lake", prefect_home)
    Lake(folder / "with-pairs" / "lake").refresh_catalog()
    return folder / "with-pairs" / "lake"


def _plain_lake(folder: Path) -> Path:
    from tests.flows.export_data import DONE, add_task, add_trajectory, click

    lake = Lake(folder / "lake")
    add_task(lake, "task-a")
    for i in range(48):
        add_trajectory(lake, f"t{i:03d}", turns=[[click(f"A{i}")], [click(f"B{i}")], [click(f"C{i}")], [DONE]],
                       screens=[4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3], minutes=i, rewards=False,
                       verdict="failed" if i % 3 == 0 else "pass")
    lake.refresh_catalog()
    return lake.root


def env_for(lake_root: Path, prefect_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != orphans.OWNER_ENV and not k.startswith("PREFECT_API")}
    return env | {"FLYWHEEL_LAKE": str(lake_root), "FLYWHEEL_EXPORTS": str(lake_root.parent / "exports"),
                  "PREFECT_HOME": str(prefect_home), "PYTHONPATH": str(ROOT),
                  "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}


def run_cli(args: list[str], lake_root: Path, prefect_home: Path, log: Path | None = None) -> float:
    t0 = time.monotonic()
    log = log or lake_root.parent / "run.log"
    with open(log, "ab") as out:
        done = subprocess.run([sys.executable, "-m", "flywheel.cli", *args], env=env_for(lake_root, prefect_home),
                              cwd=lake_root.parent, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"`flywheel {' '.join(args)}` exited with {done.returncode}; see {log}")
    return time.monotonic() - t0


def left_running(tag: str, lake_root: Path) -> list[int]:
    """Processes of the killed run: its owner tag, or (independent of the tag) its lake path in their environment."""
    found = {pid for pid, t in orphans._tagged().items() if t == tag}
    marker = f"FLYWHEEL_LAKE={lake_root}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0") and orphans._start_time(int(entry)):
                    found.add(int(entry))
            except OSError:
                pass
    return sorted(found)


def facts(flow: str, lake_root: Path) -> dict:
    lake = Lake(lake_root)
    if flow == "synthesize-tasks":
        rows = lake.query("SELECT task_id, status FROM tasks_history") if lake.files("tasks") else []
        ids = [r["task_id"] for r in rows]
        return {"gated": sorted(set(ids)), "duplicates": len(ids) - len(set(ids)),
                "verified": sorted({r["task_id"] for r in rows if r["status"] == "verified"})}
    if flow == "mine-failures":
        rows = lake.query("SELECT trajectory_id, step_index FROM step_rewards") if lake.files("step_rewards") else []
        keys = [(r["trajectory_id"], r["step_index"]) for r in rows]
        return {"mined": sorted({k[0] for k in keys}), "duplicates": len(keys) - len(set(keys))}
    if flow == "export-sft":
        name_dir = lake_root.parent / "exports" / "killed"
        published = sorted(p.name for p in name_dir.glob("v*")) if name_dir.exists() else []
        builds = sorted(p.name for p in name_dir.glob(".build-*")) if name_dir.exists() else []
        rows = lake.query("SELECT path FROM exports WHERE gate_success") if lake.files("exports") else []
        intact = all(_matches_manifest(name_dir / v) for v in published)
        return {"published": published, "builds": builds, "rows": len(rows),
                "row_paths": len({r["path"] for r in rows}), "intact": intact}
    trajectories = lake.query("SELECT trajectory_id, num_steps FROM trajectories") if lake.files("trajectories") else []
    steps = {r["trajectory_id"]: r["n"] for r in lake.query(
        "SELECT trajectory_id, count(*) AS n FROM steps GROUP BY 1")} if lake.files("steps") else {}
    ids = [r["trajectory_id"] for r in trajectories]
    return {"landed": sorted(set(ids)), "duplicates": len(ids) - len(set(ids)),
            "incomplete": [r["trajectory_id"] for r in trajectories if steps.get(r["trajectory_id"], 0) != r["num_steps"]]}


def _matches_manifest(folder: Path) -> bool:
    import hashlib

    manifest = json.loads((folder / "manifest.json").read_text())
    return all(hashlib.sha256((folder / f["path"]).read_bytes()).hexdigest() == f["sha256"] for f in manifest["files"])


def check(flow: str, before: dict, after: dict, unkilled: dict) -> list[str]:
    problems = []
    if flow == "synthesize-tasks":
        if after["duplicates"]:
            problems.append(f"{after['duplicates']} task ids gated twice")
        if set(before["gated"]) - set(after["gated"]):
            problems.append("gated pairs lost")
        if after["gated"] != unkilled["gated"] or after["verified"] != unkilled["verified"]:
            problems.append(f"ends with {len(after['gated'])} gated / {len(after['verified'])} verified, an unkilled run "
                            f"with {len(unkilled['gated'])} / {len(unkilled['verified'])}")
    elif flow == "mine-failures":
        if after["duplicates"]:
            problems.append(f"{after['duplicates']} duplicate step_rewards rows")
        if len(after["mined"]) != 48:
            problems.append(f"{48 - len(after['mined'])} trajectories not mined")
        if set(before["mined"]) - set(after["mined"]):
            problems.append("mined work lost")
    elif flow == "export-sft":
        if len(after["published"]) != 1 or not after["intact"]:
            problems.append(f"published {after['published']} (intact: {after['intact']})")
        if after["builds"]:
            problems.append(f"build folders left: {after['builds']}")
        if after["rows"] != after["row_paths"] or after["row_paths"] != len(after["published"]):
            problems.append(f"{after['rows']} exports rows for {len(after['published'])} versions")
    else:
        if after["duplicates"] or after["incomplete"]:
            problems.append(f"{after['duplicates']} duplicate trajectories, incomplete: {after['incomplete'][:5]}")
        if set(before["landed"]) - set(after["landed"]):
            problems.append("landed trajectories lost")
    return problems


def trial(flow: str, base: Path, work: Path, delay: float, prefect_home: Path, unkilled: dict) -> dict:
    lake_root = work / "lake"
    shutil.copytree(base, lake_root)
    env = env_for(lake_root, prefect_home)
    with open(work / "killed.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "flywheel.cli", *COMMANDS[flow]], env=env, cwd=work,
                                stdout=log, stderr=subprocess.STDOUT)
    tag = None
    while tag is None or tag.endswith(":None"):
        tag = orphans.owner_tag(proc.pid)
        if proc.poll() is not None:
            break
    time.sleep(delay)
    finished_first = proc.poll() is not None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)
    left_after_kill = left_running(tag, lake_root)
    before = facts(flow, lake_root)
    run_cli(COMMANDS[flow], lake_root, prefect_home, work / "next.log")
    left_after_next = left_running(tag, lake_root)
    problems = check(flow, before, facts(flow, lake_root), unkilled)
    if left_after_next:
        problems.append(f"{len(left_after_next)} processes of the killed run still running")
        orphans._kill(left_after_next)
    return {"flow": flow, "delay_s": round(delay, 2), "finished_before_kill": finished_first,
            "left_after_kill": len(left_after_kill), "left_after_next_command": len(left_after_next),
            "problems": problems}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--flows", nargs="+", default=["mine-failures", "export-sft", "rollout", "synthesize-tasks"], choices=list(COMMANDS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--server", choices=["shared", "ephemeral"], default="shared",
                        help="shared: one `flywheel server` for every command (fast); ephemeral: each command starts "
                        "its own Prefect server, so a kill can also orphan that server")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # clean up as on Ctrl-C
    folder = args.keep or Path(tempfile.mkdtemp(prefix="flywheel-kill-"))
    folder.mkdir(parents=True, exist_ok=True)
    prefect_home = folder / "prefect"
    if args.server == "shared":
        from flywheel import prefect_server

        prefect_server.start(port=_free_port(), home=prefect_home)
    try:
        return _trials(args, folder, prefect_home)
    finally:
        if args.server == "shared":
            prefect_server.stop(prefect_home)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _trials(args: argparse.Namespace, folder: Path, prefect_home: Path) -> int:
    rng = random.Random(args.seed)
    bases = base_lakes(folder / "base", args.flows)
    failures = 0
    for flow in args.flows:
        if flow == "rollout":
            bases[flow] = rollout_base(folder / "base", bases[flow], prefect_home)
        full, runs = 0.0, (["cold", "warm"] if args.server == "ephemeral" else ["warm"])
        for warm in runs:  # an ephemeral server's first run also migrates Prefect's DB: time the second
            clean = folder / f"{flow}-clean-{warm}"
            shutil.copytree(bases[flow], clean / "lake")
            full = run_cli(COMMANDS[flow], clean / "lake", prefect_home)
        unkilled = facts(flow, clean / "lake")
        results = []
        for i in range(args.trials):
            (folder / f"{flow}-{i}").mkdir()
            result = trial(flow, bases[flow], folder / f"{flow}-{i}", rng.uniform(0, full), prefect_home, unkilled)
            print(json.dumps(result), flush=True)
            results.append(result)
        bad = [r for r in results if r["problems"]]
        failures += len(bad)
        print(json.dumps({"flow": flow, "trials": len(results), "failed": len(bad), "unkilled_run_s": round(full, 1),
                          "killed_mid_run": sum(not r["finished_before_kill"] for r in results),
                          "processes_left_after_kill": sum(r["left_after_kill"] for r in results),
                          "processes_left_after_next_command": sum(r["left_after_next_command"] for r in results)}),
              flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
