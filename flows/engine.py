"""Where the flows' Prefect tasks run, chosen by setting; with flow.py files, the one module that imports prefect.

- `FLYWHEEL_TASK_RUNNER=threads` (default): a thread pool in the flow's process, `FLYWHEEL_TASK_WORKERS`
  threads (default 1: on 2 cores Chromium's CPU is the bottleneck, more threads only add contention).
- `FLYWHEEL_TASK_RUNNER=dask`: Prefect's Dask task runner (prefect-dask). With `FLYWHEEL_DASK_ADDRESS`
  (e.g. tcp://scheduler:8786) tasks go to an existing cluster; otherwise a local cluster of
  `FLYWHEEL_TASK_WORKERS` worker processes, one thread each (Playwright's sync API wants its own thread,
  and each worker opens its own browser). A worker that dies mid-task has its task rerun elsewhere by
  Dask; every batch task is idempotent (it replaces its own (run, batch) rows), so nothing lands twice.
"""

from __future__ import annotations

import os
from typing import Any

TRANSIENT = ("SandboxError", "TimeoutError", "ConnectionError", "BrokenPipeError", "TargetClosedError")


def task_runner() -> Any:
    kind = os.environ.get("FLYWHEEL_TASK_RUNNER", "threads")
    workers = int(os.environ.get("FLYWHEEL_TASK_WORKERS", "1"))
    if kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=workers)
    if kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise RuntimeError("FLYWHEEL_TASK_RUNNER=dask needs prefect-dask and distributed: "
                               "pip install 'flywheel[dask]'") from None
        if os.environ.get("FLYWHEEL_DASK_ADDRESS"):
            return DaskTaskRunner(address=os.environ["FLYWHEEL_DASK_ADDRESS"])
        return DaskTaskRunner(cluster_class="distributed.LocalCluster",
                              cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True})
    raise RuntimeError(f"FLYWHEEL_TASK_RUNNER={kind!r}: use threads (one machine) or dask (a cluster)")


def transient_failure(task: Any, task_run: Any, state: Any) -> bool:
    """Retry a batch when the sandbox, browser or network failed under it, not when our code is wrong."""
    try:
        state.result()
    except Exception as exc:  # the task's exception, re-raised by its state
        return type(exc).__name__ in TRANSIENT or isinstance(exc, OSError)
    return False
