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
    """The offline agent. For every web sandbox its general path is discovery (discovery/agent.py: the
    live app walked as a person would); the source readers add to it: the server-app reader (static.py),
    or the page reader (static_page.py; for a board configured in the page, board_page.py) when the
    sandbox's state lives in the page (state kind js or local_storage)."""

    name = "static"

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        read = self._from_source(request)
        if request.manifest.sandbox.kind != "web":
            return read
        from flows.task_synthesis.discovery.agent import DiscoveryAgent

        found = DiscoveryAgent().synthesize(request)
        return merge(read, found, request.count)

    def _from_source(self, request: SynthesisRequest) -> AgentOutput:
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


DISCOVERY_SHARE = 4  # discovery's floor: a quarter of the budget when the source reader fills the rest


def merge(read: AgentOutput, found: AgentOutput, count: int) -> AgentOutput:
    """Source-read candidates and discovered ones, `count` in all. Where the source reader understands
    the app, its pairs check the app's own records (on the shipped server-rendered apps about 19 in 20 verify, against
    about 1 in 4 of discovery's), so it fills the budget first; discovery always gets a quarter of it (the
    general path stays exercised and adds what the source shows no form for) and everything the reader
    leaves, which on an app the reader does not understand is all of it."""
    for_found = min(len(found.candidates), max(count // DISCOVERY_SHARE, count - len(read.candidates)))
    picked = read.candidates[: count - for_found]
    seen = {c.task_id for c in picked}
    for c in found.candidates:
        if len(picked) >= count:
            break
        if c.task_id not in seen:
            seen.add(c.task_id)
            picked.append(c)
    used = {inj["skill"] for c in picked for inj in c.injection}
    skills = [s for s in read.skills + found.skills if s.name in used]
    notes = found.notes + [n for n in read.notes if not found.candidates or "needs" not in n]
    return AgentOutput(skills, picked, notes, read.retired + found.retired)
