"""A cycle's stages run one after another; a stage the environment fails under (a sandbox or browser timeout, a
dead app, a lost connection) is an environment problem: it is recorded with its iteration, stage and sandbox and
the cycle goes on. Anything else is a bug and stops the cycle."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flows.engine import TRANSIENT

log = logging.getLogger("flywheel.cycle")


@dataclass(frozen=True)
class EnvProblem:
    iteration: int
    stage: str
    sandbox: str  # "" when the whole stage failed
    error: str

    def to_row(self) -> dict[str, Any]:
        return {"iteration": self.iteration, "stage": self.stage, "sandbox": self.sandbox or "-", "error": self.error}


def is_env_problem(exc: BaseException) -> bool:
    """True when the exception, a class it derives from, or one it was raised from is a sandbox, browser or
    network failure (the names flows/engine.py retries), or an OSError."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) or any(k.__name__ in TRANSIENT for k in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def run_stage(problems: list[EnvProblem], iteration: int, stage: str, fn: Callable[..., Any], sandbox: str = "",
              **kwargs: Any) -> Any:
    """fn(**kwargs), or None after recording an environment problem; other errors propagate."""
    try:
        return fn(**kwargs)
    except Exception as exc:
        if not is_env_problem(exc):
            raise
        problems.append(EnvProblem(iteration, stage, sandbox, first_line(exc)))
        log.warning("iteration %d: %s%s failed in the environment, the cycle goes on: %s", iteration, stage,
                    f" ({sandbox})" if sandbox else "", problems[-1].error)
        return None


def reported_problems(iteration: int, stage: str, result: dict | None) -> list[EnvProblem]:
    """Problems a stage finished with but did not raise: sandboxes it could not run, batches that failed."""
    if not result:
        return []
    out = [EnvProblem(iteration, stage, s.get("sandbox", ""), str(s["error"]).splitlines()[0][:300])
           for s in result.get("sandboxes", []) if isinstance(s, dict) and s.get("error")]
    out += [EnvProblem(iteration, stage, "", str(e).splitlines()[0][:300]) for e in result.get("errors", [])]
    return out
