"""Data that does not depend on a run's port: the same cycle twice, on two ports, exports byte-identical shards.

    nice -n 10 .venv/bin/python bench/stable_origins.py [--sandbox shop]... [--count 8] [--explore-steps 20]

Each run is one iteration of `cycle` in plain library code (the flow's stages, no Prefect): synthesize-tasks
(the static agent, seed 0), a scripted-noisy rollout the curriculum's pools choose, judge, mine-failures,
curriculum, synthesize-tasks --from-failures, explore (bounded by steps, not minutes, so both runs explore
alike) and export-sft (route sft, images by reference, as the cycle exports), into its own lake with fixed
run ids. The two runs go at once, so their apps are served on different local ports. Prints the ports, the local-port strings
found in each lake (tasks, validation runs, steps, trajectories, transitions, UI-tree blobs) and in each
export, whether the export shards are byte-identical, and for screenshots that differ where their pixels do.
"""

from __future__ import annotations

import argparse
import builtins
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sandboxes.app_process as app_process
from flows.curriculum.curriculum import update_pools
from flows.exploration.exploration import explore_sandbox
from flows.failure_mining.mining import mine
from flows.judging.judge import judge_pending
from flows.rollout.rollout import rollout
from flows.sft_export.config import ExportConfig
from flows.sft_export.export import export_sft
from flows.task_synthesis.from_failures import plan_from_failures
from flows.task_synthesis.synthesis import count_gated, gate_batch, synthesize_sandbox
from lake import Lake
from lake.quality import LOCAL_PORT
from sandboxes.registry import select

TEXT_COLUMNS = {
    "tasks": ("instruction", "reference_json", "params_json", "reason_detail"),
    "validation_runs": ("evidence_json", "error", "verdict_reason"),
    "steps": ("url", "actions_json", "error", "outputs_json"),
    "trajectories": ("end_detail", "evidence_json", "final_answer"),
    "transitions": ("*",),
}


def port_strings_in_lake(lake: Lake) -> int:
    pattern = re.compile(LOCAL_PORT)
    hits = 0
    for table, columns in TEXT_COLUMNS.items():
        if not lake.files(table):
            continue
        for row in lake.query(f"SELECT {', '.join(columns)} FROM {table}"):
            hits += sum(len(pattern.findall(str(v))) for v in row.values() if v is not None)
    for blob in lake.query("SELECT DISTINCT ui_tree_sha FROM steps WHERE ui_tree_sha IS NOT NULL"):
        hits += len(pattern.findall(lake.read_blob(blob["ui_tree_sha"]).decode("utf-8", "replace")))
    return hits


def one_cycle(manifests, root: Path, run: int) -> tuple[Lake, Path]:
    def print(*parts: str) -> None:  # the two runs print at once: each line says whose it is
        builtins.print(f"run {run}:", *parts, flush=True)

    lake = Lake(root / "lake")
    for m in manifests:
        summary = synthesize_sandbox(m, lake, "origins-synth", count=ARGS.count, seed=0)
        print(f"{m.name}: verified {summary.verified} of {summary.candidates}")
    lake.refresh_catalog()
    rolled = rollout(lake, "origins-rollout", "scripted-noisy", [m.name for m in manifests])
    judge_pending(lake, "origins-judge")
    lake.refresh_catalog()
    mine(lake, "origins-mine", write_report=False)
    lake.refresh_catalog()
    update_pools(lake, "origins-pools")
    lake.refresh_catalog()
    for m in manifests:
        plan = plan_from_failures(m, lake, 4, "scripted-noisy")
        if plan.new:
            count_gated(plan.summary, gate_batch(m, lake, "origins-targeted", "from-failures", plan.skills, plan.new, 0))
        print(f"{m.name}: {len(plan.new)} targeted candidates, verified {plan.summary.verified}")
        lake.refresh_catalog()
        explored = explore_sandbox(m, lake, "origins-explore", areas_k=2, steps=ARGS.explore_steps, minutes=60, seed=1)
        print(f"{m.name}: explore verified {explored.to_json().get('verified')}")
        lake.refresh_catalog()
    result = export_sft(lake, ExportConfig(name="origins", images="ref"), out=root / "exports", run_id="origins-export")
    print(f"rollout {sum(sum(e.values()) for e in rolled.sandboxes.values())} episodes; export {result.status}, "
          f"{result.counts.get('rows')} rows")
    return lake, Path(result.path)


def main() -> None:
    ports: list[int] = []
    real = app_process.free_port

    def recorded() -> int:
        ports.append(real())
        return ports[-1]

    app_process.free_port = recorded  # to print the ports the apps were served on
    manifests, _ = select(ARGS.sandbox or ["shop"])
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(2) as pool:
        tmp = ARGS.keep or scratch
        # both runs at once: their apps are live together, so they cannot share a port, and the bench takes
        # as long as one run (each is also loaded by the other: timing differs between them all the more)
        futures = [pool.submit(one_cycle, manifests, Path(tmp) / f"run{i}", i) for i in (1, 2)]
        runs = [f.result() for f in futures]
        print(f"app ports (both runs, apps live at the same time): {sorted(set(ports))}")
        pattern = re.compile(LOCAL_PORT.encode())
        for i, (lake, export) in enumerate(runs, 1):
            in_export = sum(len(pattern.findall(f.read_bytes())) for f in sorted((export / "data").glob("*.parquet")))
            print(f"run {i}: local-port strings in the lake {port_strings_in_lake(lake)}, in the export shards {in_export}")
        (_, a), (_, b) = runs
        files_a, files_b = sorted((a / "data").glob("*.parquet")), sorted((b / "data").glob("*.parquet"))
        same = [fa.name == fb.name and fa.read_bytes() == fb.read_bytes() for fa, fb in zip(files_a, files_b)]
        print(f"export shards byte-identical: {all(same) and len(files_a) == len(files_b)} "
              f"({sum(same)}/{max(len(files_a), len(files_b))} shards)")
        for fa, fb, ok in zip(files_a, files_b, same):
            if not ok:
                print(f"  {fa.name} vs {fb.name}: " + "; ".join(shard_differences(fa, fb)))
        (lake_a, _), (lake_b, _) = runs
        for line in screenshot_differences(lake_a, lake_b):
            print("  " + line)


def screenshot_differences(a: Lake, b: Lake) -> list[str]:
    """The screenshots of the same step (trajectory id and step index) that differ between two lakes, and
    where their pixels do: the bounding box of the differing pixels and how many there are."""
    import io

    from PIL import Image, ImageChops

    query = "SELECT trajectory_id, step_index, screenshot_sha, url FROM steps WHERE screenshot_sha IS NOT NULL"
    shots_b = {(r["trajectory_id"], r["step_index"]): r["screenshot_sha"] for r in b.query(query)}
    rows = sorted(a.query(query), key=lambda r: (r["trajectory_id"], r["step_index"]))
    common = [r for r in rows if (r["trajectory_id"], r["step_index"]) in shots_b]
    out = []
    for r in common:
        other = shots_b[(r["trajectory_id"], r["step_index"])]
        if other == r["screenshot_sha"]:
            continue
        ia, ib = (Image.open(io.BytesIO(lake.read_blob(sha))).convert("RGB") for lake, sha in ((a, r["screenshot_sha"]), (b, other)))
        if ia.size != ib.size:
            out.append(f"{r['trajectory_id']}#{r['step_index']} {r['url']}: sizes {ia.size} vs {ib.size}")
            continue
        diff = ImageChops.difference(ia, ib)
        box = diff.getbbox()
        changed = sum(1 for px in diff.convert("L").getdata() if px)
        out.append(f"{r['trajectory_id']}#{r['step_index']} {r['url']}: " + (
            f"{changed} pixels differ in box {box}" if box else "same pixels, different bytes"))
    return [f"screenshots of the same step that differ: {len(out)} of {len(common)} "
            f"({len(rows) - len(common)} steps only in run 1)", *out]


def shard_differences(a: Path, b: Path) -> list[str]:
    """What tells two shards apart: row counts, then each column whose values differ, with the first such row."""
    import pyarrow.parquet as pq

    ta, tb = pq.read_table(a), pq.read_table(b)
    if ta.num_rows != tb.num_rows or ta.schema != tb.schema:
        return [f"{ta.num_rows} vs {tb.num_rows} rows, schemas {'equal' if ta.schema == tb.schema else 'differ'}"]
    out = []
    for name in ta.column_names:
        va, vb = ta.column(name).to_pylist(), tb.column(name).to_pylist()
        if va != vb:
            i = next(i for i, (x, y) in enumerate(zip(va, vb)) if x != y)
            out.append(f"column {name!r} differs in {sum(x != y for x, y in zip(va, vb))} rows "
                       f"(row {i}: {str(va[i])[:120]!r} vs {str(vb[i])[:120]!r})")
    return out or ["same values, different bytes (encoding or metadata)"]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sandbox", action="append", help="a shipped sandbox (repeatable; default shop)")
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--explore-steps", type=int, default=20)
    ap.add_argument("--keep", help="a folder to keep both runs' lakes and exports in (default: a temporary one)")
    ARGS = ap.parse_args()
    main()
