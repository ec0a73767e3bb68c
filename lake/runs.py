"""A `runs` row for every flow run: one when it starts (running), one when it ends (completed | failed).

    @flow(name="judge")
    @recorded_run("judge")
    def judge(lake_root: str | None = None) -> dict: ...

The decorator is plain Python (flows stay the only importers of prefect): it binds the flow's parameters,
writes them with the start time, and at the end writes the status, the error of a failed run, the run id
the flow's rows carry (a result's `run_id`) and the numbers its result reports (`counts_json`). A flow
called by another flow (a cycle's stages) names its caller in `parent_invocation_id`. The catalog's views
list each table's files when they are built, so the outermost run refreshes the catalog once more after its
final row: an analyst's `runs` then says how the run ended, not `running`.

A run whose process was SIGKILLed (or crashed hard) never writes its end: its row names its process
(`owner`: host, pid and the pid's start time), and the next outermost flow run on that host writes the end of
every `running` run whose process is gone, as `killed`.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import socket
import uuid
from collections.abc import Callable
from typing import Any

from flywheel.orphans import owner_alive, owner_tag
from lake.store import Lake, utcnow

_CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("flywheel_flow_invocation", default=None)


class _Caller:
    """The running flow's invocation id, reached through an importable name: a task runner that ships the flow
    to other processes (Dask) pickles the wrapper below by value, and a ContextVar cannot be pickled."""

    get = staticmethod(_CALLER.get)
    set = staticmethod(_CALLER.set)
    reset = staticmethod(_CALLER.reset)


def result_counts(result: Any) -> dict[str, Any]:
    """The numbers in a flow's result: numbers, flat dicts of numbers, and the length of lists."""
    if not isinstance(result, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in result.items():
        if isinstance(value, bool) or isinstance(value, int | float):
            out[key] = value
        elif isinstance(value, dict) and value and all(isinstance(v, int | float) for v in value.values()):
            out[key] = value
        elif isinstance(value, list):
            out[key] = len(value)
    return out


def recorded_run(flow: str, lake_parameter: str = "lake_root") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            params = dict(bound.arguments)
            lake = Lake(params.get(lake_parameter))
            if _Caller.get() is None:
                close_killed_runs(lake)
            row = {
                "invocation_id": f"{flow}-{uuid.uuid4().hex[:12]}", "parent_invocation_id": _Caller.get(),
                "run_id": None, "flow": flow, "status": "running",
                "parameters_json": json.dumps(params, default=str, sort_keys=True), "counts_json": None,
                "error": None, "started_at": utcnow(), "finished_at": None, "recorded_at": utcnow(),
                "owner": f"{socket.gethostname()}:{owner_tag()}",
            }
            lake.write("runs", [row], row["invocation_id"], "start")
            token = _Caller.set(row["invocation_id"])
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _finish(lake, row, "failed", error=f"{type(exc).__name__}: {exc}"[:2000])
                raise
            finally:
                _Caller.reset(token)
            run_id = result.get("run_id") if isinstance(result, dict) else None
            _finish(lake, row, "completed", counts=result_counts(result), run_id=run_id if isinstance(run_id, str) else None)
            return result

        return run

    return wrap


_NOW = object()


def _finish(lake: Lake, row: dict[str, Any], status: str, error: str | None = None,
            counts: dict[str, Any] | None = None, run_id: str | None = None, finished: Any = _NOW) -> None:
    now = utcnow()
    final = row | {"status": status, "error": error, "run_id": run_id if run_id is not None else row.get("run_id"),
                   "counts_json": json.dumps(counts, sort_keys=True) if counts is not None else row.get("counts_json"),
                   "finished_at": now if finished is _NOW else finished, "recorded_at": now}
    lake.write("runs", [final], row["invocation_id"], "end")
    if row["parent_invocation_id"] is None:
        lake.refresh_catalog()


def close_killed_runs(lake: Lake) -> list[str]:
    """Writes `killed` for each run still `running` whose process, on this host, is gone; their invocation ids."""
    host = socket.gethostname()
    try:
        rows = lake.query("SELECT * FROM runs WHERE status = 'running' AND starts_with(owner, ?)", [f"{host}:"])
    except Exception:  # a lake without runs yet (or written before `owner`): nothing to close
        return []
    closed = []
    for row in rows:
        tag = row["owner"][len(host) + 1:]
        if owner_alive(tag):
            continue
        pid = tag.partition(":")[0]
        row = {k: v for k, v in row.items() if k != "_batch_key"}
        _finish(lake, row, "killed", error=f"its process (pid {pid} on {host}) ended without recording how the run "
                                            "ended: killed (SIGKILL, out of memory) or crashed", finished=None)
        closed.append(row["invocation_id"])
    return closed
