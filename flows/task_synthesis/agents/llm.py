"""The LLM coding agent (`--agent llm`): a tool-use loop over flywheel.llm in which any model reads the
sandbox's source, queries its data, writes skills and verifiers (as code or template instances) and
proposes task-verifier pairs, which then face the same validation gate as the static agent's.

Budgets cap steps, tokens and cost. A malformed tool call or an unknown tool becomes an error message
to the model; an LLM call that still fails after the client's retries ends the session with a note.
Every message is a row in `agent_transcripts`; every call is a row in `llm_calls`. The conversation
depends only on the sandbox, its commit and the settings, so a re-run replays from the LLM cache with
no HTTP request.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.agents.tools import FAMILIES, SPECS, ToolError, Workbench
from flows.task_synthesis.commit_change import stale_pairs
from flywheel.llm import LLMClient, LLMSettings, configured
from lake import utcnow

SYSTEM = """You are the coding agent of a data flywheel for GUI agents. You read a sandbox web app's source
and write training tasks that a person could ask for, each with:
- an injection: skills (SQL statements with :named parameters, or Python code defining inject(db_path, args))
  that put the app's SQLite database into a known state before the task starts;
- a verifier that checks the final state: a template instance, or probes plus Python code defining
  judge(evidence, params) -> {"passed": bool, "reason": str};
- a reference solution: the actions a person takes through the real UI (goto, left_click, type, ...),
  naming targets by role and visible name or by field label.
A validation gate replays every pair in a live sandbox: the verifier must fail after injection, pass after
the reference solution (twice), and fail when the last action is dropped (validate_task runs it for you
before you submit). Code you write runs isolated, with no network and no files outside its work dir.
Use the tools; call submit when done."""


@dataclass(frozen=True)
class AgentBudget:
    max_steps: int = 40
    max_tokens: int = 400_000
    max_cost_usd: float = 5.0

    @classmethod
    def from_env(cls) -> AgentBudget:
        env = os.environ.get
        return cls(int(env("FLYWHEEL_AGENT_MAX_STEPS") or 40), int(env("FLYWHEEL_AGENT_MAX_TOKENS") or 400_000),
                   float(env("FLYWHEEL_AGENT_MAX_COST_USD") or 5.0))


class LLMAgent:
    name = "llm"

    def __init__(self, settings: LLMSettings | None = None, budget: AgentBudget | None = None) -> None:
        self.settings, self.budget = settings, budget or AgentBudget.from_env()

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        if self.settings is None and not configured():
            return AgentOutput(notes=[f"{request.manifest.name}: the llm agent needs a model: set FLYWHEEL_MODEL "
                                      "(and FLYWHEEL_API_BASE for a vLLM/Ollama server, FLYWHEEL_API_KEY for a hosted API)"])
        lake, run_id = request.lake, request.run_id or "adhoc"
        client = LLMClient(self.settings, lake=lake, run_id=run_id)
        stale = stale_pairs(lake, request.manifest.name, request.source.commit) if lake else {}
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": _brief(request, stale)}]
        prompt_hash = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]
        bench = Workbench(request, client.model, prompt_hash, stored_skills=_stored_skills(lake, request), stale=stale)
        log = _Transcript(request, client.model, run_id)
        for m in messages:
            log.add(m["role"], m["content"])
        try:
            notes = self._loop(client, bench, messages, log)
        finally:
            bench.close()
        client.flush(f"agent-{request.manifest.name}")
        if lake is not None:
            lake.write("agent_transcripts", log.rows, run_id, request.manifest.name)
        used = {inj["skill"] for c in bench.candidates.values() for inj in c.injection}
        return AgentOutput(
            skills=[s for s in bench.skills.values() if s.name in used],
            candidates=list(bench.candidates.values()), notes=notes, retired=bench.retired,
        )

    def _loop(self, client: LLMClient, bench: Workbench, messages: list[dict[str, Any]], log: _Transcript) -> list[str]:
        sandbox, tokens, cost, idle = bench.sandbox, 0, 0.0, 0
        for step in range(1, self.budget.max_steps + 1):
            result = client.complete(messages, tools=SPECS, purpose="agent", temperature=0)
            tokens += sum(result.usage.get(k, 0) for k in ("prompt_tokens", "completion_tokens"))
            cost += result.cost or 0.0
            if not result.ok:
                log.add("event", None, error=f"llm_error: {result.error}", call_id=result.call_id)
                return [f"{sandbox}: llm agent stopped at step {step}: the model call failed after retries "
                        f"({result.error}); {len(bench.candidates)} candidates go to the gate"]
            reply: dict[str, Any] = {"role": "assistant", "content": result.content or ""}
            if result.tool_calls:
                reply["tool_calls"] = result.tool_calls
            messages.append(reply)
            log.add("assistant", result.content, tool_calls=result.tool_calls, call_id=result.call_id)
            if not result.tool_calls:
                idle += 1
                if idle >= 2:
                    return [f"{sandbox}: llm agent stopped at step {step}: two replies without a tool call"]
                nudge = "Use one of the tools; call submit when you are done."
                messages.append({"role": "user", "content": nudge})
                log.add("user", nudge)
                continue
            idle = 0
            for call in result.tool_calls:
                fn = call.get("function") or {}
                name, error = str(fn.get("name")), None
                try:
                    text = bench.call(name, fn.get("arguments"))
                except ToolError as exc:
                    text, error = f"error: {exc}", str(exc)
                messages.append({"role": "tool", "tool_call_id": call.get("id") or "", "content": text})
                log.add("tool", text, tool_name=name, tool_call_id=call.get("id"), error=error)
            if bench.submitted is not None:
                return []
            over = _over_budget(self.budget, tokens, cost)
            if over:
                log.add("event", None, error=f"budget_exhausted: {over}")
                return [f"{sandbox}: llm agent stopped at step {step}: {over} budget used up"]
        log.add("event", None, error="budget_exhausted: steps")
        return [f"{sandbox}: llm agent stopped after {self.budget.max_steps} steps without submitting"]


def _over_budget(budget: AgentBudget, tokens: int, cost: float) -> str | None:
    if tokens >= budget.max_tokens:
        return f"token ({tokens} of {budget.max_tokens})"
    if cost >= budget.max_cost_usd:
        return f"cost (${cost:.2f} of ${budget.max_cost_usd:.2f})"
    return None


def _brief(request: SynthesisRequest, stale: dict[str, dict[str, Any]]) -> str:
    m = request.manifest
    lines = [
        f"Sandbox {m.name!r} ({m.sandbox.kind}): {m.sandbox.description}",
        f"Source commit: {request.source.commit}. State: {m.state.kind}.",
        f"Propose up to {request.count} task-verifier pairs across the families {', '.join(FAMILIES)}; "
        f"use seed {request.seed} for any choice you make at random.",
    ]
    sensitive = [f"{s.kind}: {s.name}" for s in getattr(m, "sensitive", []) or []]
    if sensitive:
        lines.append("Sensitive controls (a reference solution asks the user with call_user before them): "
                     + "; ".join(sensitive))
    if stale:
        commits = sorted({r["source_commit"] for r in stale.values()})
        lines.append(f"The source changed since pairs were stored at {', '.join(commits)}. Read the change with "
                     "git_diff, retire pairs it breaks (retire_task) and propose updated ones. Stored pairs:")
        for task_id, r in sorted(stale.items()):
            lines.append(f"- {task_id} [{r['family']}] {r['instruction']} | verifier {r['verifier_json']}")
    return "\n".join(lines)


def _stored_skills(lake, request: SynthesisRequest) -> dict:
    if lake is None:
        return {}
    from flows.task_synthesis.synthesis import stored_skills

    return stored_skills(lake, request.manifest.name)


class _Transcript:
    def __init__(self, request: SynthesisRequest, model: str, run_id: str) -> None:
        self.base = {"run_id": run_id, "sandbox": request.manifest.name, "source_commit": request.source.commit,
                     "agent": "llm", "model": model, "session_id": f"{run_id}-{request.manifest.name}"}
        self.rows: list[dict[str, Any]] = []

    def add(self, role: str, content: str | None, tool_calls: list | None = None, tool_name: str | None = None,
            tool_call_id: str | None = None, error: str | None = None, call_id: str | None = None) -> None:
        self.rows.append(self.base | {
            "turn": len(self.rows), "role": role, "content": content,
            "tool_calls_json": json.dumps(tool_calls) if tool_calls else None, "tool_name": tool_name,
            "tool_call_id": tool_call_id, "error": error, "llm_call_id": call_id, "recorded_at": utcnow(),
        })
