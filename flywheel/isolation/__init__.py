"""Isolation for code the LLM agent writes: it never runs in the orchestrator process."""

from flywheel.isolation.runners import (
    ContainerRunner,
    IsolationUnavailable,
    Job,
    Runner,
    RunResult,
    SubprocessRunner,
    default_runner,
)

__all__ = ["ContainerRunner", "IsolationUnavailable", "Job", "RunResult", "Runner", "SubprocessRunner", "default_runner"]
