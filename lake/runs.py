"""A `runs` row for every flow run: one when it starts (running), one when it ends (completed | failed).

    @flow(name="judge")
    @recorded_run("judge")
    def judge(lake_root: str | None = None) -> dict: ...

The decorator is plain Python (flows stay the only importers of prefect): it binds the flow's parameters,
writes them with the start time, and at the end writes the status, the error of a failed run, the run id
the flow's rows carry (a result's `run_id`) and the numbers its result reports (`counts_json`). A flow
called by another flow (a cycle's stages) names its caller in `parent_invocation_id`.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import uuid
from collections.abc import Callable
from typing import Any

from lake.store import Lake, utcnow

_CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar("flywheel_flow_invocation", default=None)


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
            row = {
                "invocation_id": f"{flow}-{uuid.uuid4().hex[:12]}", "parent_invocation_id": _CALLER.get(),
                "run_id": None, "flow": flow, "status": "running",
                "parameters_json": json.dumps(params, default=str, sort_keys=True), "counts_json": None,
                "error": None, "started_at": utcnow(), "finished_at": None, "recorded_at": utcnow(),
            }
            lake.write("runs", [row], row["invocation_id"], "start")
            token = _CALLER.set(row["invocation_id"])
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                _finish(lake, row, "failed", error=f"{type(exc).__name__}: {exc}"[:2000])
                raise
            finally:
                _CALLER.reset(token)
            run_id = result.get("run_id") if isinstance(result, dict) else None
            _finish(lake, row, "completed", counts=result_counts(result), run_id=run_id if isinstance(run_id, str) else None)
            return result

        return run

    return wrap


def _finish(lake: Lake, row: dict[str, Any], status: str, error: str | None = None,
            counts: dict[str, Any] | None = None, run_id: str | None = None) -> None:
    now = utcnow()
    final = row | {"status": status, "error": error, "run_id": run_id,
                   "counts_json": json.dumps(counts, sort_keys=True) if counts is not None else None,
                   "finished_at": now, "recorded_at": now}
    lake.write("runs", [final], row["invocation_id"], "end")
