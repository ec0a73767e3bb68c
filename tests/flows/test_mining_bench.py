"""bench/mining.py's I/O floor: mine()'s own bookkeeping, reads and writes with no rule run (a benchmark's
figures are printed, never asserted; this checks the floor does the work it claims to stand for)."""

import os
import shutil

import polars as pl

from bench.mining import io_floor, synthetic_lake
from flows.failure_mining.mining import mine
from lake import Lake


def test_the_floor_reads_every_pending_step_and_writes_what_mining_wrote(tmp_path):
    mined, unmined = tmp_path / "mined", tmp_path / "unmined"
    steps, _ = synthetic_lake(mined, 3_000)
    shutil.copytree(mined, unmined, copy_function=os.link)
    summary = mine(Lake(mined), "bench-test", write_report=False)

    floor = io_floor(unmined, mined)

    assert floor["floor_steps"] == steps == summary.steps
    assert floor["floor_batches"] == summary.batches
    for table in ("failures", "step_rewards", "failure_seeds", "mined"):
        wrote = pl.read_parquet([str(f) for f in Lake(mined).files(table)]).height
        assert pl.read_parquet([str(f) for f in Lake(unmined).files(table)]).height == wrote > 0
    # its mined rows mark every trajectory as mine()'s do (a second mine finds none pending), and the hard-linked
    # copy left the mined lake's rows as they were
    assert mine(Lake(unmined), "after", write_report=False).trajectories == 0
    assert pl.read_parquet([str(f) for f in Lake(mined).files("failures")]).height == summary.failures
