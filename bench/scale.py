"""Scale figures: the lake after many commits (with and without compaction), commit rates from 1 and 2
writer processes, and the work rate of gate batches, episodes and mined steps through the engine at 1 and 2
workers. Prints figures and ratios; never a pass/fail.

Material: lake rows are synthetic (made here: trajectories of 20 steps each, as rollouts write them); the
engine part drives the shipped shop sandbox (this repo's own app) and the miner's synthetic steps.

    nice -n 10 python bench/scale.py lake [--commits 10,1000,5000]
    nice -n 10 python bench/scale.py iceberg [--commits 200]     # the alternative, for DESIGN_NOTES
    nice -n 10 python bench/scale.py engine [--pairs 24] [--episodes 24] [--runner dask|threads]
    python bench/scale.py startup [--runs 3]                  # with `flywheel server start` up
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lake.schemas import TABLES, TS  # noqa: E402

STEPS_PER_BATCH = 20
JOIN = ("SELECT t.policy, count(*) AS steps, avg(s.step_index) AS mean_index FROM steps s "
        "JOIN trajectories t USING (trajectory_id) GROUP BY 1 ORDER BY 1")


def steps_batch(i: int) -> pa.Table:
    n = STEPS_PER_BATCH
    now = pa.scalar(time.time_ns() // 1000, pa.int64()).cast(TS)
    cols = {"trajectory_id": pa.array([f"traj-{i}"] * n), "step_index": pa.array(range(n), pa.int32()),
            "actions_json": pa.array(['[{"action": "left_click", "x": 10, "y": 20}]'] * n), "ok": pa.array([True] * n),
            "started_at": pa.array([now] * n), "run_id": pa.array(["bench"] * n)}
    return pa.table({f.name: cols.get(f.name, pa.nulls(n, f.type)).cast(f.type) for f in TABLES["steps"]})


def trajectories(n: int) -> pa.Table:
    return pa.table({"trajectory_id": [f"traj-{i}" for i in range(n)],
                     "policy": [("replay", "scripted-noisy")[i % 2] for i in range(n)]})


def best_of(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def lake_figures(marks: list[int], compact_every: int) -> list[dict]:
    """Commit `max(marks)` step batches; at each mark, time the join through Lake.query (views + read)."""
    os.environ["FLYWHEEL_LAKE_COMPACT_EVERY"] = str(compact_every)
    import lake.store as store

    store.COMPACT_EVERY = compact_every
    from lake import Lake

    rows, done, commit_s = [], 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(tmp)
        lake.write_arrow("trajectories", trajectories(max(marks)), "bench", "all")
        for mark in marks:
            t0 = time.perf_counter()
            while done < mark:
                lake.write_arrow("steps", steps_batch(done), "bench", done)
                done += 1
            commit_s += time.perf_counter() - t0
            query_s = best_of(lambda: lake.query(JOIN))
            rows.append({"commits": mark, "compact_every": compact_every, "files": len(lake.files("steps")),
                         "query_s": round(query_s, 4), "commit_ms": round(1000 * commit_s / done, 1)})
            print(json.dumps(rows[-1]), flush=True)
        lake.compact()
        compacted = best_of(lambda: lake.query(JOIN))
        rows.append({"commits": done, "compact_every": compact_every, "files": len(lake.files("steps")),
                     "query_s": round(compacted, 4), "after": "lake.compact()"})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def file_layout_figures(batches: int, compact_every: int = 10) -> dict:
    """The join over the file layouts `batches` commits leave, written directly with pyarrow (quick where
    commits are slow): one file per batch (no compaction, as the old lake had), what compaction every
    `compact_every` commits leaves at its worst (one merged file + compact_every - 1 small ones), and one
    file. Read as the catalog's views read them: read_parquet over the listed files."""
    import duckdb
    import pyarrow.parquet as pq

    compact_every = min(compact_every, batches)
    with tempfile.TemporaryDirectory() as tmp:
        small = [steps_batch(i) for i in range(batches)]
        for i, t in enumerate(small):
            pq.write_table(t, f"{tmp}/b{i:05d}.parquet")
        pq.write_table(pa.concat_tables(small[: batches - compact_every + 1]), f"{tmp}/merged.parquet")
        pq.write_table(pa.concat_tables(small), f"{tmp}/all.parquet")
        pq.write_table(trajectories(batches), f"{tmp}/traj.parquet")
        layouts = {"one file per batch": [f"{tmp}/b{i:05d}.parquet" for i in range(batches)],
                   f"auto-compacted every {compact_every} (worst case)":
                       [f"{tmp}/merged.parquet"] + [f"{tmp}/b{i:05d}.parquet" for i in range(batches - compact_every + 1, batches)],
                   "compacted": [f"{tmp}/all.parquet"]}
        sql = JOIN.replace("steps s", "read_parquet($f, union_by_name = true) s").replace("trajectories t", "read_parquet($t) t")
        out = {}
        for name, files in layouts.items():
            con = duckdb.connect()
            con.execute("SET enable_progress_bar = false")
            out[name] = round(best_of(lambda files=files, con=con: con.execute(sql, {"f": files, "t": [f"{tmp}/traj.parquet"]}).fetchall()), 4)
        print(json.dumps({"batches": batches, "files": {k: len(v) for k, v in layouts.items()}, "query_s": out}), flush=True)
        return out


def lake_worst_case(batches: int, compact_every: int = 10, repeats: int = 40) -> dict:
    """Lake.query (views over every table + the join) on a real Delta lake holding `batches` step batches, at the
    worst point of the compaction cycle: what the last compaction merged (one file, written here in one commit so
    thousands of commits need not run) plus `compact_every - 1` real commits since. Then the same rows after
    `lake.compact()`. Also the bare join over the same files (DuckDB read_parquet), without the views."""
    import duckdb
    from deltalake import write_deltalake

    from lake import Lake
    from lake.store import BATCH_KEY

    def bare(lake):
        files, t = [str(f) for f in lake.files("steps")], [str(f) for f in lake.files("trajectories")]
        sql = JOIN.replace("steps s", "read_parquet($f, union_by_name = true) s").replace("trajectories t", "read_parquet($t) t")
        con = duckdb.connect()
        return lambda: con.execute(sql, {"f": files, "t": t}).fetchall()

    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(f"{tmp}/worst")
        lake.write_arrow("trajectories", trajectories(batches), "bench", "all")
        merged = batches - compact_every + 1
        old = pa.concat_tables([steps_batch(i) for i in range(merged)])
        old = old.append_column(BATCH_KEY, pa.array([f"bench-{i}" for i in range(merged) for _ in range(STEPS_PER_BATCH)]))
        write_deltalake(lake.table_uri("steps"), old)  # the state a compaction leaves: one file
        for i in range(merged, batches):  # real commits since, none reaching the next compaction
            lake.write_arrow("steps", steps_batch(i), "bench", i)
        shutil.copytree(f"{tmp}/worst", f"{tmp}/compacted")
        compacted = Lake(f"{tmp}/compacted")
        compacted.compact()
        files_before = len(lake.files("steps"))
        assert lake.query("SELECT count(*) AS n FROM steps") == compacted.query("SELECT count(*) AS n FROM steps") == [
            {"n": batches * STEPS_PER_BATCH}]
        # interleaved, best of each: on a loaded machine both sides see the same load
        work = {"lake_query_s": lambda: lake.query(JOIN), "compacted_lake_query_s": lambda: compacted.query(JOIN),
                "bare_join_s": bare(lake), "compacted_bare_join_s": bare(compacted)}
        best = dict.fromkeys(work, float("inf"))
        for _ in range(repeats):
            for name, fn in work.items():
                t0 = time.perf_counter()
                fn()
                best[name] = min(best[name], time.perf_counter() - t0)
    out = {"batches": batches, "compact_every": compact_every, "files": files_before} | {
        k: round(v, 4) for k, v in best.items()} | {
        "ratio": round(best["lake_query_s"] / best["compacted_lake_query_s"], 2),
        "bare_ratio": round(best["bare_join_s"] / best["compacted_bare_join_s"], 2)}
    print(json.dumps(out), flush=True)
    return out


def writer_rate(processes: int, commits_each: int) -> float:
    """Commits per second from N processes writing one lake at once (row counts checked)."""
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r}); import bench.scale as s; from lake import Lake; lake = Lake(sys.argv[1]); "
            "[lake.write_arrow('steps', s.steps_batch(int(sys.argv[2]) * 100000 + i), 'w' + sys.argv[2], i) "
            "for i in range(int(sys.argv[3]))]")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", code, tmp, str(p), str(commits_each)]) for p in range(processes)]
        assert all(p.wait() == 0 for p in procs)
        elapsed = time.perf_counter() - t0
        from lake import Lake

        n = Lake(tmp).query("SELECT count(*) AS n FROM steps")[0]["n"]
        assert n == processes * commits_each * STEPS_PER_BATCH, f"lost rows: {n}"
    return processes * commits_each / elapsed


def iceberg_figures(commits: int) -> dict:
    """pyiceberg 0.12 with a SQLite catalog, the same batches: commit time and the join over its files."""
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog

    with tempfile.TemporaryDirectory() as tmp:
        catalog = SqlCatalog("bench", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")
        catalog.create_namespace("lake")
        steps = catalog.create_table("lake.steps", schema=TABLES["steps"])
        trajs = catalog.create_table("lake.trajectories", schema=pa.schema([("trajectory_id", pa.string()), ("policy", pa.string())]))
        trajs.append(trajectories(commits))
        t0 = time.perf_counter()
        for i in range(commits):
            steps.append(steps_batch(i))  # an idempotent retry would be steps.overwrite(data, overwrite_filter=...)
        commit_ms = 1000 * (time.perf_counter() - t0) / commits

        def join():
            con = duckdb.connect()
            files = [t.file.file_path.removeprefix("file://") for t in catalog.load_table("lake.steps").scan().plan_files()]
            tfiles = [t.file.file_path.removeprefix("file://") for t in catalog.load_table("lake.trajectories").scan().plan_files()]
            con.execute(JOIN.replace("steps s", "read_parquet($f) s").replace("trajectories t", "read_parquet($t) t"),
                        {"f": files, "t": tfiles}).fetchall()

        return {"commits": commits, "commit_ms": round(commit_ms, 1), "query_s": round(best_of(join), 4),
                "files": len(list(steps.scan().plan_files()))}


def _tree_cpu_s() -> float:
    """CPU seconds of this process, its reaped children and its live descendants (apps, Playwright, Chromium)."""
    import psutil

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    live = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            live += t.user + t.system
        except psutil.Error:
            pass
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + live


def _machine_busy_s() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine so far, from /proc/stat: on a quiet machine this also counts what
    the process-tree meter misses (Chromium's re-parented helpers, the Prefect server, Dask's scheduler)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - ticks[3] - ticks[4]) / hz, sum(ticks) / hz


def _task_phase_s(flow_run_id, prefix: str) -> float:
    """Wall seconds from the first `prefix` task run's start to the last one's end (the mapped, parallel part)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    runs = [r for r in runs if r.name.startswith(prefix) and r.start_time and r.end_time]
    return (max(r.end_time for r in runs) - min(r.start_time for r in runs)).total_seconds() if runs else float("nan")


def _runner(kind: str, workers: int):
    """The engine's task runner at `workers` (flows/engine.py), plus a CPU meter over everything that runs the work."""
    if kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=workers), _tree_cpu_s, (lambda: None)
    from distributed import Client, LocalCluster
    from prefect_dask import DaskTaskRunner

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)

    def cpu() -> float:  # the workers' trees and this process itself (the flow and the scheduler)
        me = resource.getrusage(resource.RUSAGE_SELF)
        return sum(client.run(_tree_cpu_s).values()) + me.ru_utime + me.ru_stime

    def close() -> None:
        client.close()
        cluster.close()

    return DaskTaskRunner(address=cluster.scheduler_address), cpu, close


def engine_figures(pairs: int, episodes: int, runner_kind: str = "dask") -> list[dict]:
    """synthesize-tasks (gate batches) and rollout (episode batches) on the shop sandbox through the engine at 1 and
    2 workers: pairs/s and episodes/s (whole flow, and the mapped phase alone), CPU-s per pair and per episode (all
    processes doing the work: workers, their apps and browsers, the flow process), and how many cores were busy."""
    from flywheel.prefect_server import use_running_server

    server = use_running_server()  # a `flywheel server start` server if one runs: no ephemeral start-up
    from prefect.testing.utilities import prefect_test_harness

    from flows.rollout import flow as rollout_flow
    from flows.task_synthesis import flow as synth_flow

    out = []
    harness = contextlib.nullcontext() if server else prefect_test_harness(server_startup_timeout=600)
    with harness, tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            runner, cpu_s, close = _runner(runner_kind, workers)
            root = f"{tmp}/lake-{workers}"
            try:
                cpu0, t0, m0 = cpu_s(), time.perf_counter(), _machine_busy_s()[0]
                state = synth_flow.synthesize_tasks.with_options(task_runner=runner)(
                    sandboxes=["shop"], count=pairs, seed=5, lake_root=root, return_state=True)
                wall, cpu, machine = time.perf_counter() - t0, cpu_s() - cpu0, _machine_busy_s()[0] - m0
                syn = state.result()
                gated = sum(s["candidates"] - s["already_known"] for s in syn["sandboxes"])
                phase = _task_phase_s(state.state_details.flow_run_id, "gate-")
                out.append({"work": "pairs", "runner": runner_kind, "workers": workers, "units": gated,
                            "per_s": round(gated / wall, 3), "gate_phase_per_s": round(gated / phase, 3),
                            "cpu_s_per_unit": round(cpu / max(gated, 1), 2), "cores_busy": round(cpu / wall, 2),
                            "machine_cores_busy": round(machine / wall, 2), "wall_s": round(wall, 1)})
                print(json.dumps(out[-1]), flush=True)
                if episodes:
                    cpu0, t0, m0 = cpu_s(), time.perf_counter(), _machine_busy_s()[0]
                    state = rollout_flow.rollout.with_options(task_runner=runner)(
                        policy="replay", sandboxes=["shop"], episodes=max(1, episodes // max(1, gated)), lake_root=root,
                        all_tasks=True, return_state=True)
                    wall, cpu, machine = time.perf_counter() - t0, cpu_s() - cpu0, _machine_busy_s()[0] - m0
                    ro = state.result()
                    phase = _task_phase_s(state.state_details.flow_run_id, "episodes-")
                    out.append({"work": "episodes", "runner": runner_kind, "workers": workers, "units": ro["episodes"],
                                "per_s": round(ro["episodes"] / wall, 3),
                                "batch_phase_per_s": round(ro["episodes"] / phase, 3),
                                "cpu_s_per_unit": round(cpu / max(ro["episodes"], 1), 2),
                                "cores_busy": round(cpu / wall, 2), "machine_cores_busy": round(machine / wall, 2),
                                "wall_s": round(wall, 1)})
                    print(json.dumps(out[-1]), flush=True)
            finally:
                close()
    for work in ("pairs", "episodes"):
        rows = [r for r in out if r["work"] == work]
        if len(rows) == 2:
            one, two = rows
            phase = "gate_phase_per_s" if work == "pairs" else "batch_phase_per_s"
            print(f"{work}: 2 workers {two['per_s'] / one['per_s']:.2f}x the {work}/s of 1 (whole flow), "
                  f"{two[phase] / one[phase]:.2f}x in the mapped phase; CPU-s per unit {one['cpu_s_per_unit']} / "
                  f"{two['cpu_s_per_unit']}")
    return out


_PREFECT_PART = """
import json, resource, sys, time
t0 = time.perf_counter()
from prefect import flow, task
t1 = time.perf_counter()

@task
def one_task() -> int:
    return 1

@flow
def one_flow() -> int:
    return one_task()

one_flow()
t2 = time.perf_counter()
one_flow()
t3 = time.perf_counter()
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_prefect_s": round(t1 - t0, 2), "first_flow_run_s": round(t2 - t1, 2),
                  "next_flow_run_s": round(t3 - t2, 2), "cpu_s": round(me.ru_utime + me.ru_stime, 2)}))
"""


def startup_figures(runs: int = 3) -> None:
    """What a `flywheel run` pays for Prefect with a server up (`flywheel server start`; PREFECT_HOME set): the
    import and a flow of one task (a fresh process each time), then whole `flywheel run judge` commands on an
    empty lake, and how fast a bad sandbox name fails (before Prefect is imported)."""
    from flywheel.prefect_server import prefect_home, running

    state = running(prefect_home())
    if state is None:
        raise SystemExit("start a server first: flywheel server start (with the same PREFECT_HOME)")
    env = os.environ | {"PREFECT_API_URL": state.api_url, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _PREFECT_PART], env=env, capture_output=True, text=True, check=True)
        print(json.dumps({"part": "prefect alone"} | json.loads(out.stdout.strip().splitlines()[-1])), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for argv, part in ((["run", "judge"], "flywheel run judge (empty lake)"),
                           (["run", "rollout", "--policy", "replay", "--sandbox", "no-such-app"], "bad sandbox name")):
            for _ in range(runs):
                t0 = time.perf_counter()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                done = subprocess.run([sys.executable, "-m", "flywheel.cli", *argv], env=env | {"FLYWHEEL_LAKE": f"{tmp}/lake"},
                                      capture_output=True, text=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                print(json.dumps({"part": part, "exit": done.returncode, "wall_s": round(time.perf_counter() - t0, 2),
                                  "cpu_s": round(cpu, 2)}), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    lk = sub.add_parser("lake")
    lk.add_argument("--commits", default="10,1000,5000")
    lk.add_argument("--writer-commits", type=int, default=100)
    lk.add_argument("--layouts", type=lambda v: [int(x) for x in v.split(",")], default=[1000, 5000],
                    help="batch counts for the file-layout part (written directly, quick)")
    ice = sub.add_parser("iceberg")
    ice.add_argument("--commits", type=int, default=200)
    eng = sub.add_parser("engine")
    eng.add_argument("--pairs", type=int, default=24)
    eng.add_argument("--episodes", type=int, default=24, help="0: pairs only")
    eng.add_argument("--runner", choices=("dask", "threads"), default="dask",
                     help="dask: a LocalCluster of worker processes; threads: the in-process default")
    st = sub.add_parser("startup")
    st.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.part == "lake":
        marks = [int(x) for x in args.commits.split(",")]
        for n in args.layouts:
            for every in (10, 5):
                lake_worst_case(n, every)
        for n in args.layouts:
            layout = file_layout_figures(n)
            print(f"{n} batches: one file per batch {layout['one file per batch'] / layout['compacted']:.1f}x compacted, "
                  f"auto-compacted worst case {layout['auto-compacted every 10 (worst case)'] / layout['compacted']:.2f}x")
        raw = lake_figures(marks, compact_every=0)
        auto = lake_figures(marks, compact_every=10)
        compacted = raw[-1]["query_s"]
        print(f"\nquery after {marks[-1]} commits: {raw[-2]['query_s']} s without compaction "
              f"({raw[-2]['query_s'] / compacted:.1f}x compacted), {auto[-2]['query_s']} s with compaction every 10 "
              f"({auto[-2]['query_s'] / compacted:.2f}x compacted = {compacted} s)")
        one = writer_rate(1, args.writer_commits)
        two = writer_rate(2, args.writer_commits)
        print(f"commits/s: 1 writer process {one:.1f}, 2 at once {two:.1f} ({two / one:.2f}x); rows checked")
    elif args.part == "iceberg":
        print(json.dumps(iceberg_figures(args.commits)))
        print(json.dumps(lake_figures([args.commits], compact_every=0)[0] | {"format": "delta"}))
    elif args.part == "startup":
        startup_figures(args.runs)
    else:
        engine_figures(args.pairs, args.episodes, args.runner)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
