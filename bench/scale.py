"""Scale figures: the lake after many commits (with and without compaction), commit rates from 1 and 2
writer processes, and the work rate of gate batches, episodes and mined steps through the engine at 1 and 2
workers. Prints figures and ratios; never a pass/fail.

Material: lake rows are synthetic (made here: trajectories of 20 steps each, as rollouts write them); the
engine part drives the shipped shop sandbox (this repo's own app) and the miner's synthetic steps.

    nice -n 10 python bench/scale.py lake [--commits 10,1000,5000]
    nice -n 10 python bench/scale.py iceberg [--commits 200]     # the alternative, for DESIGN_NOTES
    nice -n 10 python bench/scale.py engine [--pairs 24] [--episodes 24]
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


def _worker_cpu_s(client) -> float:
    """CPU seconds the cluster's worker processes and their reaped children (apps, Chromium) used so far."""
    def cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    return sum(client.run(cpu).values())


def engine_figures(pairs: int, episodes: int) -> list[dict]:
    """synthesize-tasks (gate batches) and rollout (episode batches) on the shop sandbox through a local Dask
    cluster of 1 and 2 worker processes: work per second and worker CPU-s per unit."""
    from distributed import Client, LocalCluster
    from prefect.testing.utilities import prefect_test_harness
    from prefect_dask import DaskTaskRunner

    from flows.rollout import flow as rollout_flow
    from flows.task_synthesis import flow as synth_flow

    out = []
    with prefect_test_harness(server_startup_timeout=300), tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
            runner = DaskTaskRunner(address=cluster.scheduler_address)
            root = f"{tmp}/lake-{workers}"
            try:
                cpu0, t0 = _worker_cpu_s(client), time.perf_counter()
                syn = synth_flow.synthesize_tasks.with_options(task_runner=runner)(sandboxes=["shop"], count=pairs, seed=5, lake_root=root)
                wall, cpu = time.perf_counter() - t0, _worker_cpu_s(client) - cpu0
                gated = sum(s["candidates"] - s["already_known"] for s in syn["sandboxes"])
                out.append({"work": "gate", "workers": workers, "units": gated, "per_s": round(gated / wall, 3),
                            "worker_cpu_s_per_unit": round(cpu / max(gated, 1), 2), "wall_s": round(wall, 1)})
                print(json.dumps(out[-1]), flush=True)
                cpu0, t0 = _worker_cpu_s(client), time.perf_counter()
                ro = rollout_flow.rollout.with_options(task_runner=runner)(policy="replay", sandboxes=["shop"],
                                                                           episodes=max(1, episodes // max(1, gated)), lake_root=root)
                wall, cpu = time.perf_counter() - t0, _worker_cpu_s(client) - cpu0
                out.append({"work": "episodes", "workers": workers, "units": ro["episodes"],
                            "per_s": round(ro["episodes"] / wall, 3),
                            "worker_cpu_s_per_unit": round(cpu / max(ro["episodes"], 1), 2), "wall_s": round(wall, 1)})
                print(json.dumps(out[-1]), flush=True)
            finally:
                client.close()
                cluster.close()
    for work in ("gate", "episodes"):
        one, two = (r["per_s"] for r in out if r["work"] == work)
        print(f"{work}: 2 workers {two / one:.2f}x the rate of 1")
    return out


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
    eng.add_argument("--episodes", type=int, default=24)
    args = parser.parse_args(argv)
    if args.part == "lake":
        marks = [int(x) for x in args.commits.split(",")]
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
    else:
        engine_figures(args.pairs, args.episodes)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
