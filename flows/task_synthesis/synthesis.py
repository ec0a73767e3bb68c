"""synthesize-tasks as plain library code: read source, run the coding agent, gate every candidate,
land tasks, skills and validation runs in the lake. The Prefect flow only wires this up."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flows.task_synthesis.agents.base import SynthesisRequest, get_agent
from flows.task_synthesis.commit_change import handle_new_commit
from flows.task_synthesis.gate import GateResult, ValidationGate
from flows.task_synthesis.source import read_source
from flows.task_synthesis.task_spec import TaskSpec, dedupe
from lake import Lake, utcnow
from sandboxes.android import DeviceStateCopy
from sandboxes.app_process import AppProcess, SandboxError
from sandboxes.manifest import SandboxManifest
from sandboxes.pool import SandboxPool
from sandboxes.skills import Skill


@dataclass
class SandboxSummary:
    sandbox: str
    source_commit: str = ""
    candidates: int = 0
    already_known: int = 0
    verified: int = 0
    rejected: Counter = field(default_factory=Counter)
    families: Counter = field(default_factory=Counter)  # verified per family
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "sandbox": self.sandbox,
            "source_commit": self.source_commit,
            "candidates": self.candidates,
            "already_known": self.already_known,
            "verified": self.verified,
            "rejected": dict(self.rejected),
            "verified_by_family": dict(self.families),
            "error": self.error,
            "notes": self.notes,
        }


def known_task_ids(lake: Lake, sandbox: str) -> set[str]:
    if not lake.files("tasks"):
        return set()
    return {r["task_id"] for r in lake.query("SELECT task_id FROM tasks_history WHERE sandbox = ?", [sandbox])}


def stored_skills(lake: Lake, sandbox: str) -> dict[str, Skill]:
    if not lake.files("skills"):
        return {}
    rows = lake.query(
        "SELECT * FROM skills WHERE sandbox = ? QUALIFY row_number() OVER (PARTITION BY name ORDER BY recorded_at DESC) = 1",
        [sandbox],
    )
    return {r["name"]: Skill(r["name"], r["sandbox"], r["kind"], r["description"], json.loads(r["spec_json"])) for r in rows}


@dataclass
class SynthesisPlan:
    """What the coding agent proposed for one sandbox, before the gate: the new candidates and their skills."""

    summary: SandboxSummary
    new: list[TaskSpec] = field(default_factory=list)
    skills: dict[str, Skill] = field(default_factory=dict)


def plan_sandbox(
    manifest: SandboxManifest, lake: Lake, run_id: str, count: int = 40, seed: int = 0, agent_name: str = "static",
    workers: int = 1,
) -> SynthesisPlan:
    """Read the source, run the coding agent, land the new skills; the candidates not yet in the lake are left
    for `gate_batch`. Failures of the sandbox itself end up in the summary, not raised."""
    summary = SandboxSummary(manifest.name)
    plan = SynthesisPlan(summary)
    try:
        source = read_source(manifest)
    except Exception as exc:
        summary.error = f"cannot read the source of {manifest.name}: {exc}"
        return plan
    summary.source_commit = source.commit
    app = DeviceStateCopy(manifest) if manifest.sandbox.kind == "android" else AppProcess(manifest)
    try:
        if manifest.start is not None and manifest.start.isolation == "process":  # containers start in the pool
            app.start()
        output = get_agent(agent_name).synthesize(
            SynthesisRequest(manifest, source, app.snapshot_path if app.state_path else None, count, seed,
                             lake=lake, run_id=run_id)
        )
        summary.notes.extend(output.notes)
        # pairs stored at an older commit: retired by the agent, or re-gated at this one
        summary.notes.extend(handle_new_commit(manifest, lake, run_id, source.commit, output, workers))
        candidates = dedupe(output.candidates)  # two draws that ask and check the same thing are one task
        if len(candidates) < len(output.candidates):
            summary.notes.append(f"{manifest.name}: {len(output.candidates) - len(candidates)} duplicate candidates collapsed")
        summary.candidates = len(candidates)
        known = known_task_ids(lake, manifest.name)
        plan.new = [c for c in candidates if c.task_id not in known]
        summary.already_known = summary.candidates - len(plan.new)
        if not plan.new:
            return plan
        plan.skills = stored_skills(lake, manifest.name)
        fresh_skills = [s for s in output.skills if s.name not in plan.skills or plan.skills[s.name].skill_id != s.skill_id]
        plan.skills.update({s.name: s for s in output.skills})
        land(lake, run_id, manifest.name, agent_name, fresh_skills, [], batch=f"{manifest.name}-skills")
    except SandboxError as exc:
        summary.error = str(exc)
    finally:
        app.close()
    return plan


def gate_batch(
    manifest: SandboxManifest, lake: Lake, run_id: str, agent_name: str, skills: dict[str, Skill], specs: list[TaskSpec],
    batch: int | str, workers: int = 1, on_result: Any = None,
) -> list[tuple[TaskSpec, GateResult]]:
    """Gate a batch of candidates on live replicas of the app and land what the gate said, as the batch's own
    rows: a retried batch replaces them, and a run killed later keeps every batch that finished."""
    gated = SandboxPool(manifest, workers).map(
        lambda driver, spec: ValidationGate(driver, skills).validate(spec), specs, on_result=on_result)
    results = list(zip(specs, gated))
    land(lake, run_id, manifest.name, agent_name, [], results, **gate_key(manifest.name, specs))
    return results


def gate_key(sandbox: str, specs: list[TaskSpec]) -> dict[str, str]:
    """The key a gate batch lands under: its candidates, not the run. A run killed between the checks' commit and
    the pairs' leaves the batch's ids unknown, so the rerun gates the same batch again (whole batches land, so
    what is left cuts into the same batches) and replaces those checks instead of adding a second set."""
    ids = hashlib.sha256("|".join(sorted(spec.task_id for spec in specs)).encode()).hexdigest()[:16]
    return {"batch": f"{sandbox}-{ids}", "key_run": "gate"}


def count_gated(summary: SandboxSummary, results: list[tuple[TaskSpec, GateResult]]) -> None:
    for spec, result in results:
        if result.status == "verified":
            summary.verified += 1
            summary.families[spec.family] += 1
        else:
            summary.rejected[result.reason] += 1


def synthesize_sandbox(
    manifest: SandboxManifest,
    lake: Lake,
    run_id: str,
    count: int = 40,
    seed: int = 0,
    agent_name: str = "static",
    progress: Any = None,
    workers: int = 1,
) -> SandboxSummary:
    """Everything for one sandbox in this process (the flow spreads the gate's batches over the engine);
    with workers > 1 the gate runs on that many replicas of the app, sharing one Chromium."""
    plan = plan_sandbox(manifest, lake, run_id, count, seed, agent_name, workers)
    if plan.summary.error or not plan.new:
        return plan.summary
    task_bar = progress.add_task(f"{manifest.name}: validating", total=len(plan.new)) if progress else None
    try:
        results = gate_batch(manifest, lake, run_id, agent_name, plan.skills, plan.new, 0, workers,
                             on_result=(lambda _spec, _result: progress.advance(task_bar)) if progress else None)
    except SandboxError as exc:
        plan.summary.error = str(exc)
        return plan.summary
    count_gated(plan.summary, results)
    return plan.summary


def land(lake: Lake, run_id: str, sandbox: str, agent: str, skills: list[Skill], results: list[tuple[TaskSpec, GateResult]],
         batch: str | None = None, key_run: str | None = None) -> None:
    """Store gated candidates (verified and rejected), their new skills and the gate's checks as the rows of
    (run, batch) (default: the sandbox); shared by every writer of tasks (synthesis, reverse synthesis from
    exploration). Results with the same content identity land once (the first). `key_run` replaces the run in
    the rows' key (the rows still name `run_id`): another run's write of the same key replaces them."""
    batch, key = batch or sandbox, key_run or run_id
    now = utcnow()
    firsts = {id(spec) for spec in dedupe([spec for spec, _ in results])}
    results = [(spec, r) for spec, r in results if id(spec) in firsts]
    lake.write(
        "skills",
        [
            {
                "skill_id": s.skill_id, "sandbox": s.sandbox, "source_commit": None, "name": s.name, "kind": s.kind,
                "description": s.description, "spec_json": json.dumps(s.spec, sort_keys=True), "agent": agent,
                "run_id": run_id, "recorded_at": now,
            }
            for s in skills
        ],
        key,
        batch,
    )
    # the gate's checks before the pairs: a known task id is never gated again, so a run killed between the
    # two commits must not leave a pair without its checks
    lake.write("validation_runs", validation_rows(results, run_id, sandbox, now), key, batch)
    lake.write(
        "tasks", [spec.to_row(r.status, r.reason, r.detail, run_id, now) for spec, r in results], key, batch
    )


def validation_rows(results: list[tuple[TaskSpec, GateResult]], run_id: str, sandbox: str, now: Any) -> list[dict[str, Any]]:
    rows = []
    for spec, r in results:
        for c in r.checks:
            rows.append(
                {
                    "run_id": run_id, "task_id": spec.task_id, "sandbox": sandbox, "stage": c.check, "passed": c.passed,
                    "expected": c.expected, "verdict_reason": c.verdict_reason,
                    "evidence_json": json.dumps(c.evidence, default=str, sort_keys=True), "error": c.error,
                    "duration_s": c.duration_s, "recorded_at": now,
                }
            )
        rows.append(
            {
                "run_id": run_id, "task_id": spec.task_id, "sandbox": sandbox, "stage": "gate",
                "passed": r.status == "verified", "expected": True, "verdict_reason": r.reason or "verified",
                "evidence_json": None, "error": r.detail, "duration_s": sum(c.duration_s for c in r.checks),
                "recorded_at": now,
            }
        )
    return rows


def render_summary(summaries: list[SandboxSummary], problems: list[str]) -> str:
    """A markdown summary: printed at the end of the run and stored as the Prefect artifact."""
    lines = ["# synthesize-tasks", "", "| sandbox | candidates | new | verified | rejected (by reason) | verified by family |", "|---|---|---|---|---|---|"]
    for s in summaries:
        rejected = ", ".join(f"{k} {v}" for k, v in s.rejected.most_common()) or "-"
        fams = ", ".join(f"{k} {v}" for k, v in sorted(s.families.items())) or "-"
        new = s.candidates - s.already_known
        lines.append(f"| {s.sandbox} | {s.candidates} | {new} | {s.verified} | {rejected} | {fams} |")
    errors = [f"- {s.error}" if s.error.startswith(f"{s.sandbox}:") else f"- {s.sandbox}: {s.error}"
              for s in summaries if s.error] + [f"- {p}" for p in problems]
    if errors:
        lines += ["", "## Problems", *errors]
    notes = [f"- {n}" for s in summaries for n in s.notes]
    if notes:
        lines += ["", "## Agent notes", *notes]
    return "\n".join(lines)
