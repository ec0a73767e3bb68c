"""SIGKILL `flywheel run <flow>` at a random moment inside its work, run it again, and check nothing was lost,
doubled or left running, and that the rerun ends with the lake an unkilled run makes.

    nice -n 10 python bench/kill_runs.py --keep DIR [--trials 10] [--flows synthesize-tasks rollout mine-failures
                              export-sft] [--seed 0] [--server shared|ephemeral] [--prefect-home HOME]

Resumable: with `--keep DIR` each flow's trials go to DIR/results/<flow>.jsonl and a second call with the same
DIR goes on from the first trial not yet run (the base lakes, the unkilled reference and the seeded draws are
kept), so the four flows can run in separate calls. `--trials` is the total per flow. Calls at once (one per
flow, each with its own DIR) share one long-lived Prefect server with `--prefect-home HOME` after
`PREFECT_HOME=HOME flywheel server start --port P`: a server already running there is used and left running.

Material (all made here, nothing fetched): for mine-failures and export-sft a synthetic lake made by
tests/flows/export_data.py (12 tasks, 96 trajectories of 4 steps by default, PNG screens drawn with PIL); for
synthesize-tasks an empty lake (the static agent on the repo's own sandboxes/shop); for rollout, a lake of shop
pairs synthesised by the static agent first (the replay policy on 2 of them, 2 episodes each; the same
`synthesize-tasks --count 6` lake that command's reference run makes). Each flow's work is cut small so that it
is many commits at little cost: one candidate per gate batch, one episode per rollout batch, 8 trajectories per mining
shard, 1 MB export shards (the batch-size settings every run honours).

Where the kill lands: an unkilled reference run is watched first. Its progress is the number of lake commits
(Delta log entries under tables/) plus the files under the export folder (export-sft's work is files until its
one `exports` row), and each change of it is an event. A trial draws an event k uniformly from the first to the
one before last, starts the same command, waits until its own progress reaches the reference's at event k, then
sleeps a uniform fraction of the reference's gap to the next event and sends SIGKILL. Each trial prints where it
landed: the commits and export files it had made, of how many an unkilled run makes. A kill counts only when it
landed inside the work (at least one commit made and not all of them, the run still running): a draw that missed
(a loaded run ended before its moment came) is listed under `missed_draws`, its processes ended, and the trial
draws again on a fresh copy of the base lake.

Checked per trial, after the same command runs once more to completion:
  every flow     the rerun's lake equals the unkilled run's (row counts and ids of the flow's tables), the work
                 done before the kill is still there, and no process of the killed run is left after the next
                 command: by its owner tag (flywheel/orphans.py) or, independently of the tag, by this trial's lake
                 path in its environment (apps, Chromium, an ephemeral Prefect server and flow-run subprocesses
                 all inherit FLYWHEEL_LAKE); no container made by a process of the killed run outlives it;
  synthesize-tasks  no task id gated twice (tasks_history), no task with gate checks of two runs (validation_runs);
  mine-failures  no duplicate (trajectory_id, step_index) in step_rewards, every trajectory mined;
  export-sft     one published version whose files match its manifest, no build folder left, one `exports`
                 row per published version;
  rollout        every trajectory has all its steps, no duplicate (task, episode), the rerun ran only the
                 episodes the killed run had not landed.
Printed: one JSON line per trial and a summary per flow over all its trials so far.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import shutil
import signal
import socket
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
    "synthesize-tasks": ["run", "synthesize-tasks", "--sandbox", "shop", "--count", "6"],
    "rollout": ["run", "rollout", "--policy", "replay", "--sandbox", "shop", "--budget", "2", "--episodes", "2"],
    "mine-failures": ["run", "mine-failures"],
    "export-sft": ["run", "export-sft", "--name", "killed", "--negatives", "--shard-mb", "1"],
}
SMALL_BATCHES = {"FLYWHEEL_GATE_BATCH": "1", "FLYWHEEL_EPISODE_BATCH": "1", "FLYWHEEL_MINING_BATCH_STEPS": "32"}
TASKS, TRAJECTORIES = 12, 96
POLL_S = 0.05


# ---- material ------------------------------------------------------------------------------------
def base_lake(folder: Path, flow: str, prefect_home: Path) -> Path:
    """The lake a flow's runs start from, made once per DIR (built under a temporary name, then renamed)."""
    name = {"synthesize-tasks": "empty", "rollout": "with-pairs"}.get(flow, f"plain-{TRAJECTORIES}")
    final = folder / name / "lake"
    if final.exists():
        return final
    building = folder / f".{name}-building"
    shutil.rmtree(building, ignore_errors=True)
    if name == "empty":
        (building / "lake").mkdir(parents=True)
    elif name.startswith("plain"):
        _plain_lake(building / "lake")
    else:
        (building / "lake").mkdir(parents=True)
        run_cli(["run", "synthesize-tasks", "--sandbox", "shop", "--count", "6"], building / "lake", prefect_home)
        Lake(building / "lake").refresh_catalog()
    building.rename(final.parent)
    return final


def _plain_lake(root: Path) -> None:
    from lake import store as lake_store
    from tests.flows.export_data import DONE, add_task, add_trajectory, click

    lake_store.COMPACT_EVERY = 0  # a steps file per trajectory, as rollouts leave them: mining cuts them into shards
    lake = Lake(root)
    for t in range(TASKS):
        add_task(lake, f"task-{t:02d}")
    for i in range(TRAJECTORIES):
        add_trajectory(lake, f"t{i:03d}", task_id=f"task-{i % TASKS:02d}",
                       turns=[[click(f"A{i}")], [click(f"B{i}")], [click(f"C{i}")], [DONE]],
                       screens=[4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3], minutes=i, rewards=False,
                       verdict="failed" if i % 3 == 0 else "pass")
    lake.refresh_catalog()


# ---- running and watching ------------------------------------------------------------------------
def env_for(lake_root: Path, prefect_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != orphans.OWNER_ENV and not k.startswith("PREFECT_API")}
    return env | SMALL_BATCHES | {
        "FLYWHEEL_LAKE": str(lake_root), "FLYWHEEL_EXPORTS": str(lake_root.parent / "exports"),
        "PREFECT_HOME": str(prefect_home), "PYTHONPATH": str(ROOT), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}


def start_cli(args: list[str], lake_root: Path, prefect_home: Path, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "flywheel.cli", *args], env=env_for(lake_root, prefect_home),
                                cwd=lake_root.parent, stdout=out, stderr=subprocess.STDOUT)


def run_cli(args: list[str], lake_root: Path, prefect_home: Path, log: Path | None = None) -> float:
    t0, log = time.monotonic(), log or lake_root.parent / "run.log"
    proc = start_cli(args, lake_root, prefect_home, log)
    if proc.wait() != 0:
        raise RuntimeError(f"`flywheel {' '.join(args)}` exited with {proc.returncode}; see {log}")
    return time.monotonic() - t0


def progress(lake_root: Path) -> tuple[int, int]:
    """(lake commits, files under the export folder): what a run has done so far."""
    commits = 0
    tables = lake_root / "tables"
    if tables.exists():
        for table in os.scandir(tables):
            log = Path(table.path) / "_delta_log"
            if log.is_dir():
                commits += sum(1 for e in os.scandir(log) if e.name.endswith(".json") and e.name[0].isdigit())
    exports = lake_root.parent / "exports"
    files = sum(len(names) for _, _, names in os.walk(exports)) if exports.exists() else 0
    return commits, files


def watch(proc: subprocess.Popen, lake_root: Path) -> list[tuple[float, int, int]]:
    """The run's events until it exits: (seconds since start, commits, export files) at each change."""
    t0, base, events = time.monotonic(), progress(lake_root), []
    last = base
    while proc.poll() is None:
        now = progress(lake_root)
        if now != last:
            events.append((round(time.monotonic() - t0, 3), now[0] - base[0], now[1] - base[1]))
            last = now
        time.sleep(POLL_S)
    now = progress(lake_root)
    if now != last:
        events.append((round(time.monotonic() - t0, 3), now[0] - base[0], now[1] - base[1]))
    return events


def left_running(tag: str | None, lake_root: Path) -> list[int]:
    """Processes of the killed run: its owner tag, or (independent of the tag) its lake path in their environment."""
    found = {pid for pid, t in orphans._tagged().items() if tag and t == tag}
    marker = f"FLYWHEEL_LAKE={lake_root}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0") and orphans.process_start_time(int(entry)):
                    found.add(int(entry))
            except OSError:
                pass
    return sorted(found)


def containers_of(pids: set[int], started: dt.datetime) -> list[str] | None:
    """Containers flywheel labelled as made by one of `pids` on this host since `started` that still exist (None:
    no Docker engine). Other sessions' containers on a shared engine are not this trial's."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        found = client.containers.list(all=True, filters={"label": "flywheel.owner"})
    except Exception:
        return None
    out = []
    for c in found:
        created = dt.datetime.fromisoformat(c.attrs["Created"][:26].rstrip("Z")).replace(tzinfo=dt.UTC)
        host, _, pid = c.labels.get("flywheel.owner", "").rpartition(":")
        if created >= started and host == socket.gethostname() and pid.isdigit() and int(pid) in pids:
            out.append(c.name)
    return out


# ---- what the lake holds -------------------------------------------------------------------------
def facts(flow: str, lake_root: Path) -> dict:
    """The flow's work in the lake: what must survive a kill, and what must equal an unkilled run's."""
    lake = Lake(lake_root)

    def rows(table: str, sql: str) -> list[dict]:
        return lake.query(sql) if lake.files(table) else []

    if flow == "synthesize-tasks":
        history = rows("tasks", "SELECT task_id, status FROM tasks_history")
        ids = [r["task_id"] for r in history]
        checks = rows("validation_runs", "SELECT task_id, count(DISTINCT run_id) AS runs, count(*) AS n "
                                         "FROM validation_runs GROUP BY 1")
        twice = [r["task_id"] for r in checks if r["runs"] > 1]  # a killed batch's checks beside the rerun's
        return {"done": sorted(set(ids)), "duplicates": len(ids) - len(set(ids)) + len(twice),
                "same": {"gated": sorted((r["task_id"], r["status"]) for r in history),
                         "skills": len(rows("skills", "SELECT skill_id FROM skills")),
                         "checked_tasks": sorted(r["task_id"] for r in checks)},
                "checks": sum(r["n"] for r in checks), "checked_by_two_runs": len(twice)}
    if flow == "mine-failures":
        # the step_rewards view holds every mined step (written sparse: its clean rows come from `mined`)
        rewards = rows("mined", "SELECT trajectory_id, step_index FROM step_rewards")
        keys = [(r["trajectory_id"], r["step_index"]) for r in rewards]
        mined = rows("mined", "SELECT trajectory_id FROM mined")
        return {"done": sorted({r["trajectory_id"] for r in mined}), "duplicates": len(keys) - len(set(keys)),
                "same": {"step_rewards": sorted(keys), "mined": sorted(r["trajectory_id"] for r in mined),
                         "failures": sorted(f"{r['trajectory_id']}/{r['first_step']}/{r['kind']}" for r in rows(
                             "failures", "SELECT trajectory_id, first_step, kind FROM failures")),
                         "failure_seeds": len(rows("failure_seeds", "SELECT 1 FROM failure_seeds"))}}
    if flow == "export-sft":
        name_dir = lake_root.parent / "exports" / "killed"
        published = sorted(p.name for p in name_dir.glob("v*")) if name_dir.exists() else []
        builds = sorted(p.name for p in name_dir.glob(".build-*")) if name_dir.exists() else []
        exported = rows("exports", "SELECT path, version FROM exports WHERE gate_success")
        counts = [json.loads((name_dir / v / "manifest.json").read_text()).get("counts", {}) for v in published]
        return {"done": published, "duplicates": len(exported) - len({r["path"] for r in exported}),
                "builds": builds, "intact": all(_matches_manifest(name_dir / v) for v in published),
                "same": {"published": len(published), "exports_rows": len(exported),
                         "counts": [{k: v for k, v in c.items() if isinstance(v, int)} for c in counts]}}
    trajectories = rows("trajectories", "SELECT trajectory_id, task_id, episode, num_steps FROM trajectories")
    steps = {r["trajectory_id"]: r["n"] for r in rows("steps", "SELECT trajectory_id, count(*) AS n FROM steps GROUP BY 1")}
    episodes = [(r["task_id"], r["episode"]) for r in trajectories]
    return {"done": sorted(r["trajectory_id"] for r in trajectories), "duplicates": len(episodes) - len(set(episodes)),
            "incomplete": [r["trajectory_id"] for r in trajectories if steps.get(r["trajectory_id"], 0) != r["num_steps"]],
            "same": {"episodes": sorted(episodes), "steps": sum(steps.get(r["trajectory_id"], 0) for r in trajectories)}}


def _matches_manifest(folder: Path) -> bool:
    manifest = json.loads((folder / "manifest.json").read_text())
    return all(hashlib.sha256((folder / f["path"]).read_bytes()).hexdigest() == f["sha256"] for f in manifest["files"])


def check(flow: str, before: dict, after: dict, unkilled: dict) -> list[str]:
    after, unkilled = json.loads(json.dumps(after)), json.loads(json.dumps(unkilled))  # as a kept reference reads
    # back: (id, step) pairs become lists
    problems = []
    if after["duplicates"]:
        problems.append(f"{after['duplicates']} duplicates")
    if set(before["done"]) - set(after["done"]):
        problems.append(f"finished work lost: {sorted(set(before['done']) - set(after['done']))[:5]}")
    for key, value in after["same"].items():
        if value != unkilled["same"][key]:
            shown = (len(value), len(unkilled["same"][key])) if isinstance(value, list) else (value, unkilled["same"][key])
            problems.append(f"{key} differs from an unkilled run's: {shown[0]} vs {shown[1]}")
    if flow == "mine-failures" and len(after["done"]) != TRAJECTORIES:
        problems.append(f"{TRAJECTORIES - len(after['done'])} trajectories not mined")
    if flow == "export-sft":
        if len(after["done"]) != 1 or not after["intact"]:
            problems.append(f"published {after['done']} (intact: {after['intact']})")
        if after["builds"]:
            problems.append(f"build folders left: {after['builds']}")
    if flow == "rollout" and after["incomplete"]:
        problems.append(f"trajectories without all their steps: {after['incomplete'][:5]}")
    return problems


# ---- one trial -----------------------------------------------------------------------------------
def reference(flow: str, base: Path, folder: Path, prefect_home: Path, warmups: int) -> dict:
    """An unkilled run's events and facts (kept in DIR, so a resumed call reuses them)."""
    saved = folder / "results" / f"{flow}-reference.json"
    if saved.exists():
        return json.loads(saved.read_text())
    for i in range(warmups + 1):  # an ephemeral server's first run also migrates Prefect's DB: watch the last
        clean = folder / f"{flow}-clean-{i}"
        shutil.rmtree(clean, ignore_errors=True)
        shutil.copytree(base, clean / "lake")
        t0 = time.monotonic()
        proc = start_cli(COMMANDS[flow], clean / "lake", prefect_home, clean / "run.log")
        events = watch(proc, clean / "lake")
        if proc.returncode != 0:
            raise RuntimeError(f"the unkilled {flow} run exited with {proc.returncode}; see {clean / 'run.log'}")
    ref = {"events": events, "run_s": round(time.monotonic() - t0, 1), "facts": facts(flow, clean / "lake")}
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(ref))
    return ref


def trial(flow: str, index: int, base: Path, work: Path, prefect_home: Path, ref: dict, rng: random.Random,
          attempts: int = 6) -> dict:
    """One kill inside the work and its check. A draw whose kill missed the work (the run had made no commit yet,
    or all of them, or had ended on its own) is not counted: its processes are ended, the lake is put back, and
    the next draw is tried, up to `attempts` in all."""
    events, missed = ref["events"], []
    for _ in range(attempts):
        killed = kill_once(flow, base, work, prefect_home, events, rng)
        if killed["inside"]:
            break
        missed.append({k: killed[k] for k in ("kill_after_event", "commits_at_kill", "finished_before_kill")})
        orphans._kill(left_running(killed["tag"], killed["lake_root"]))
    else:
        raise RuntimeError(f"{flow} trial {index}: {attempts} kills in a row missed the work: {missed}")
    lake_root, tag, seen, started = killed["lake_root"], killed["tag"], killed["seen"], killed["started"]
    before = facts(flow, lake_root)
    mid = progress(lake_root)
    run_cli(COMMANDS[flow], lake_root, prefect_home, work / "next.log")
    rerun = progress(lake_root)
    left_after_next = left_running(tag, lake_root)
    containers = containers_of(seen, started)
    after = facts(flow, lake_root)
    problems = check(flow, before, after, ref["facts"])
    if left_after_next:
        problems.append(f"{len(left_after_next)} processes of the killed run still running")
        orphans._kill(left_after_next)
    if containers:
        problems.append(f"containers left: {containers}")
    if flow == "rollout" and len(after["done"]) - len(before["done"]) != len(ref["facts"]["done"]) - len(before["done"]):
        problems.append("the rerun did not run just the episodes the killed run had not landed")
    return {"flow": flow, "trial": index, **{k: killed[k] for k in (
                "kill_after_event", "killed_at_s", "commits_at_kill", "export_files_at_kill", "finished_before_kill",
                "left_after_kill")},
            "missed_draws": missed, "work_done_before_kill": len(before["done"]),
            "work_of_unkilled_run": len(ref["facts"]["done"]), "rerun_commits": rerun[0] - mid[0],
            "gate_checks": f"{after['checks']} (unkilled {ref['facts']['checks']})" if flow == "synthesize-tasks" else None,
            "left_after_next_command": len(left_after_next), "problems": problems}


def kill_once(flow: str, base: Path, work: Path, prefect_home: Path, events: list, rng: random.Random) -> dict:
    """Start the command on a fresh copy of the base lake, SIGKILL it at a drawn moment, and say where it landed."""
    k = rng.randrange(0, len(events) - 1)  # kill after event k, before the last event (the run's final commit)
    _, commits_k, files_k = events[k]
    gap = events[k + 1][0] - events[k][0]
    extra = rng.uniform(0, gap)
    shutil.rmtree(work, ignore_errors=True)
    lake_root = work / "lake"
    shutil.copytree(base, lake_root)
    started = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=2)
    base_progress = progress(lake_root)
    t0 = time.monotonic()
    proc = start_cli(COMMANDS[flow], lake_root, prefect_home, work / "killed.log")
    tag, seen, last_scan = None, {proc.pid}, 0.0
    while proc.poll() is None:
        tag = tag if tag and not tag.endswith(":None") else orphans.owner_tag(proc.pid)
        if time.monotonic() - last_scan > 1:  # the killed run's processes, whose containers are the trial's
            seen |= set(left_running(tag, lake_root))
            last_scan = time.monotonic()
        now = progress(lake_root)
        if now[0] - base_progress[0] >= commits_k and now[1] - base_progress[1] >= files_k:
            break
        time.sleep(POLL_S)
    time.sleep(extra)
    finished_first = proc.poll() is not None
    at_kill = progress(lake_root)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = round(time.monotonic() - t0, 2)
    time.sleep(0.5)
    left_after_kill = left_running(tag, lake_root)
    seen |= set(left_after_kill)
    made, unkilled_commits = at_kill[0] - base_progress[0], events[-1][1]
    return {"lake_root": lake_root, "tag": tag, "seen": seen, "started": started,
            "inside": not finished_first and 0 < made < unkilled_commits,
            "kill_after_event": f"{k + 1}/{len(events)}", "killed_at_s": killed_at,
            "commits_at_kill": f"{made}/{unkilled_commits}",
            "export_files_at_kill": f"{at_kill[1] - base_progress[1]}/{events[-1][2]}",
            "finished_before_kill": finished_first, "left_after_kill": len(left_after_kill)}


# ---- driver --------------------------------------------------------------------------------------
def main() -> int:
    global TRAJECTORIES
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=10, help="trials per flow in all (a resumed call runs the rest)")
    parser.add_argument("--flows", nargs="+", default=["mine-failures", "export-sft", "rollout", "synthesize-tasks"],
                        choices=list(COMMANDS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trajectories", type=int, default=TRAJECTORIES,
                        help=f"trajectories in the synthetic lake of mine-failures and export-sft (default {TRAJECTORIES})")
    parser.add_argument("--server", choices=["shared", "ephemeral"], default="shared",
                        help="shared: one `flywheel server` for every command (fast); ephemeral: each command starts "
                        "its own Prefect server, so a kill can also orphan that server")
    parser.add_argument("--prefect-home", type=Path,
                        help="the shared server's PREFECT_HOME (default DIR/prefect); a server already running there "
                        "(e.g. `PREFECT_HOME=… flywheel server start`) is used and left running, so calls at once share it")
    parser.add_argument("--keep", type=Path, help="keep everything here, and resume the trials already run here")
    args = parser.parse_args()
    TRAJECTORIES = args.trajectories
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # clean up as on Ctrl-C
    folder = (args.keep or Path(tempfile.mkdtemp(prefix="flywheel-kill-"))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    prefect_home, ours = (args.prefect_home or folder / "prefect").resolve(), False
    if args.server == "shared":
        from flywheel import prefect_server

        _, ours = prefect_server.start(port=_free_port(), home=prefect_home)
    try:
        return _trials(args, folder, prefect_home)
    finally:
        if ours:  # a server that was already running (another call's, `flywheel server start`) is left running
            prefect_server.stop(prefect_home)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _trials(args: argparse.Namespace, folder: Path, prefect_home: Path) -> int:
    failures = 0
    for flow in args.flows:
        base = base_lake(folder / "base", flow, prefect_home)
        ref = reference(flow, base, folder, prefect_home, warmups=1 if args.server == "ephemeral" else 0)
        results_file = folder / "results" / f"{flow}.jsonl"
        results = [json.loads(line) for line in results_file.read_text().splitlines()] if results_file.exists() else []
        for i in range(len(results), args.trials):
            rng = random.Random(f"{args.seed}/{flow}/{i}")  # the same draws when a call resumes
            result = trial(flow, i, base, folder / f"{flow}-{i}", prefect_home, ref, rng)
            print(json.dumps(result), flush=True)
            with open(results_file, "a") as out:
                out.write(json.dumps(result) + "\n")
            results.append(result)
            if not args.keep:
                shutil.rmtree(folder / f"{flow}-{i}", ignore_errors=True)
        bad = [r for r in results if r["problems"]]
        failures += len(bad)
        print(json.dumps({
            "flow": flow, "trials": len(results), "with_problems": len(bad), "unkilled_run_s": ref["run_s"],
            "unkilled_events": len(ref["events"]), "unkilled_commits": ref["events"][-1][1],
            "killed_mid_run": sum(not r["finished_before_kill"] for r in results),
            "missed_draws_retried": sum(len(r.get("missed_draws", [])) for r in results),
            "kill_moments": [r["commits_at_kill"] for r in results],
            "processes_left_after_kill": sum(r["left_after_kill"] for r in results),
            "processes_left_after_next_command": sum(r["left_after_next_command"] for r in results),
            "problems": sorted({p for r in bad for p in r["problems"]})}), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
