"""The coding-agent interface: source in, skills and candidate task-verifier pairs out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from flows.task_synthesis.source import SourceSnapshot
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.manifest import SandboxManifest
from sandboxes.skills import Skill


@dataclass
class SynthesisRequest:
    manifest: SandboxManifest
    source: SourceSnapshot
    app_db: Path | None  # a read-only copy of the app's initial state, for drawing realistic params
    count: int
    seed: int
    lake: Any = None  # the run's Lake, for agents that keep a ledger and transcripts (the llm agent)
    run_id: str = ""


@dataclass
class AgentOutput:
    skills: list[Skill] = field(default_factory=list)
    candidates: list[TaskSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the agent could not use, and why
    retired: list[dict[str, Any]] = field(default_factory=list)  # [{task_id, reason, detail}] stored pairs a new commit broke


class CodingAgent(Protocol):
    name: str

    def synthesize(self, request: SynthesisRequest) -> AgentOutput: ...


def get_agent(name: str) -> CodingAgent:
    if name == "static":
        return _StaticByAppShape()
    if name == "llm":
        from flows.task_synthesis.agents.llm import LLMAgent

        return LLMAgent()
    raise ValueError(f"unknown agent {name!r}; available: static, llm")


class _StaticByAppShape:
    """The offline agent: the server-app reader (static.py), or the page reader (static_page.py; for a
    board configured in the page, board_page.py) when the sandbox's state lives in the page (state kind
    js or local_storage)."""

    name = "static"

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        if request.manifest.sandbox.kind == "android":
            from flows.task_synthesis.agents.static_android import StaticAndroidAgent

            return StaticAndroidAgent().synthesize(request)
        if request.manifest.state.in_page:
            from flows.task_synthesis.agents.board_page import BoardPageAgent, read_board_page

            if read_board_page(request.source.files).boards:  # a kanban-style board configured in the page
                return BoardPageAgent().synthesize(request)
            from flows.task_synthesis.agents.static_page import StaticPageAgent

            return StaticPageAgent().synthesize(request)
        from flows.task_synthesis.agents.static import StaticAgent

        return StaticAgent().synthesize(request)
