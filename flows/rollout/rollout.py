"""Rollouts as plain library code: policies act on verified tasks in live sandboxes through the real
drivers; every turn is a step row, every screenshot a blob, every episode a trajectory row."""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flows.curriculum.sampling import RECHECK_EVERY, RolloutPlan
from flows.curriculum.sampling import plan_rollout as choose_from_pools
from flows.rollout.policies import Policy, get_policy, training_exposure
from flows.rollout.touch import TouchPolicy
from flows.task_synthesis.synthesis import stored_skills
from flows.task_synthesis.task_spec import TaskSpec
from lake import Lake, resume, utcnow
from sandboxes.actions import Terminate
from sandboxes.app_process import SandboxError
from sandboxes.manifest import SandboxManifest, load_manifest
from sandboxes.pool import SandboxPool
from sandboxes.registry import select
from sandboxes.skills import InjectionError, Skill
from sandboxes.web import WebDriver
from verifier_templates import get_template
from verifier_templates.base import Probe

MAX_STEPS = 30
log = logging.getLogger("flywheel.rollout")


@dataclass
class Episode:
    trajectory: dict[str, Any]
    steps: list[dict[str, Any]]


@dataclass
class RolloutSummary:
    sandboxes: dict[str, Counter] = field(default_factory=dict)  # sandbox -> ended kind counts
    errors: list[str] = field(default_factory=list)
    plan: RolloutPlan | None = None  # how the curriculum's pools chose the tasks (None with --all or --tasks)
    resumed: str | None = None  # the run id of a killed run whose plan this run finished
    landed_before: int = 0  # episodes that killed run had landed (not run again)

    @property
    def episodes(self) -> int:
        return sum(sum(c.values()) for c in self.sandboxes.values())


def load_verified_tasks(lake: Lake, sandboxes: list[str] | None, task_ids: list[str] | None) -> list[TaskSpec]:
    if not lake.files("tasks"):
        return []
    rows = lake.query("SELECT * FROM tasks WHERE status = 'verified' ORDER BY sandbox, task_id")
    specs = [TaskSpec.from_row(r) for r in rows]
    if sandboxes:
        specs = [s for s in specs if s.sandbox in sandboxes]
    if task_ids:
        specs = [s for s in specs if s.task_id in task_ids]
    return specs


def run_episode(driver: WebDriver, lake: Lake, task: TaskSpec, skills: dict[str, Skill], policy: Policy,
                episode: int, run_id: str, max_steps: int = MAX_STEPS) -> Episode:
    """One episode; a sandbox that dies mid-episode ends it as env_error and is restarted for the next."""
    trajectory_id = hashlib.sha256(f"{run_id}|{task.task_id}|{policy.name}|{episode}".encode()).hexdigest()[:20]
    started, t0 = utcnow(), time.monotonic()
    steps: list[dict[str, Any]] = []
    faults: list[dict[str, Any]] = []
    ended, detail, evidence = "max_steps", None, None
    template = get_template(task.verifier["template"])
    probes = template.probes(task.verifier["params"])
    try:
        if not driver.app.healthy():
            driver.app.stop()
            driver.app.start()
        driver.reset()
        for inj in task.injection:
            driver.inject(skills[inj["skill"]], inj.get("args", {}))
        initial = _probe(driver, probes)
        policy.start(task, episode)
        for index in range(max_steps):
            health = driver.health()
            if not health.ok:
                ended, detail = "env_error", health.detail
                break
            step_start = utcnow()
            obs = driver.observe(screenshot=True)
            turn = policy.next_turn(obs)
            faults.extend({"step": index, "kind": k} for k in turn.faults)
            results = [driver.act(a) for a in turn.actions]
            if hasattr(policy, "observe_results"):  # policies that read what their actions printed
                policy.observe_results(turn.actions, results)
            failed = next((r for r in results if not r.ok), None)
            steps.append({
                "trajectory_id": trajectory_id, "step_index": index,
                "screenshot_sha": lake.put_blob(obs.screenshot) if obs.screenshot else None,
                "screen_width": obs.screen_size[0] if obs.screen_size else None,
                "screen_height": obs.screen_size[1] if obs.screen_size else None,
                "ui_tree_sha": lake.put_blob(obs.ui_tree.encode()), "url": obs.url, "raw_output": turn.raw_output,
                "actions_json": json.dumps([a.model_dump(exclude_none=True) for a in turn.actions]),
                "format_error": getattr(turn, "format_error", None), "ok": failed is None, "error": failed.error if failed else None,
                "points_json": json.dumps([r.point for r in results]),
                "outputs_json": json.dumps([r.details or None for r in results]) if any(r.details for r in results) else None,
                "sensitive": next((r.sensitive for r in results if r.sensitive), None),
                "started_at": step_start, "finished_at": utcnow(), "run_id": run_id,
            })
            if any(isinstance(a, Terminate) for a in turn.actions):
                ended = "terminated"
                break
        if ended != "env_error":
            if driver.app.healthy():
                evidence = {"initial": initial, "final": _probe(driver, probes)}
            else:
                ended, detail = "env_error", f"sandbox stopped answering; log: {driver.app.log_tail()}"
    except (SandboxError, InjectionError) as exc:
        ended, detail = "env_error", str(exc)
    except Exception as exc:  # a crashed browser or app mid-call is the environment's fault, not the policy's
        ended, detail = "env_error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    trajectory = {
        "trajectory_id": trajectory_id, "task_id": task.task_id, "task_version": task.version, "sandbox": task.sandbox,
        "source_commit": task.source_commit, "policy": policy.name, "model": policy.model, "episode": episode,
        "num_steps": len(steps), "ended": ended, "end_detail": detail, "final_answer": driver.answer,
        "evidence_json": json.dumps(evidence, default=str) if evidence is not None else None,
        "injected_faults_json": json.dumps(faults), "started_at": started, "finished_at": utcnow(),
        "duration_s": time.monotonic() - t0, "run_id": run_id, "recorded_at": utcnow(),
    }
    return Episode(trajectory, steps)


def _probe(driver: WebDriver, probes: list[Probe]) -> dict[str, Any]:
    return {p.name: driver.probe(p) for p in probes}


def plan_rollout(lake: Lake, sandboxes: list[str] | None, task_ids: list[str] | None, episodes: int,
                 policy_name: str, profile: str | None = None, all_tasks: bool = False, budget: int | None = None,
                 recheck_every: int = RECHECK_EVERY) -> tuple[dict[str, list[tuple[TaskSpec, int]]], list[str], RolloutPlan | None]:
    """(sandbox folder -> its (task, episode) jobs, problems, the pools' choice) for a rollout. Tasks come from
    the curriculum's pools (flows/curriculum/sampling.py: active first, monitoring when due, mastered retired, at
    most `budget` per sandbox) unless `all_tasks` or explicit `task_ids` ask for all."""
    problems: list[str] = []
    if sandboxes:  # a name that is no sandbox is a typo to report, not "no verified tasks"
        known, unknown = select(sandboxes)
        problems.extend(str(p) for p in unknown)
        sandboxes = [m.name for m in known]
        if not sandboxes:
            return {}, problems, None
    tasks = load_verified_tasks(lake, sandboxes, task_ids)
    if not tasks:
        return {}, problems + ["no verified tasks in the lake for this selection; run `flywheel run synthesize-tasks` first"], None
    plan = None
    if not all_tasks and not task_ids:
        plan = choose_from_pools(lake, f"{policy_name}@{profile}" if profile else policy_name, tasks, budget, recheck_every)
        tasks = plan.tasks
        if not tasks:
            return {}, problems + ["the curriculum retired every task of this selection (all mastered, or monitoring and "
                                   "not due for a re-check); `--all` rolls them out anyway, `synthesize-tasks "
                                   "--from-failures` makes new ones"], plan
    if policy_name == "llm":
        from flywheel import llm

        if not llm.configured():
            return {}, problems + ["the llm policy needs a model: set FLYWHEEL_MODEL (and FLYWHEEL_API_BASE for a local server)"], plan
    by_sandbox: dict[str, list[TaskSpec]] = {}
    for t in tasks:
        by_sandbox.setdefault(t.sandbox, []).append(t)
    manifests, missing = select(list(by_sandbox))
    jobs = {str(m.folder): [(t, e) for t in by_sandbox[m.name] for e in range(episodes)] for m in manifests}
    for m in manifests:
        log.info("%s: %d episodes of %s on %d tasks", m.name, len(jobs[str(m.folder)]), policy_name, len(by_sandbox[m.name]))
    return jobs, problems + [str(p) for p in missing], plan


@dataclass
class RolloutJobs:
    """What a rollout run does: its run id, and per sandbox folder its batches of (task, episode) jobs by label."""
    run_id: str
    batches: dict[str, list[tuple[str, list[tuple[TaskSpec, int]]]]]
    problems: list[str]
    plan: RolloutPlan | None
    claim: resume.Claim | None = None  # the kept plan: `resume.finish` it when the run ends
    landed_before: int = 0


def plan_or_resume(lake: Lake, sandboxes: list[str] | None, task_ids: list[str] | None, episodes: int,
                   policy_name: str, profile: str | None, all_tasks: bool, budget: int | None, recheck_every: int,
                   batch_size: int, noise: str | None = None) -> RolloutJobs:
    """A new rollout's batches, kept (lake/resume.py) until it ends; or, when the same command was killed before
    it ended, that run's own plan with the batches it had landed left out. The pools would choose again
    differently (the killed run's episodes count as a rollout of their tasks), so the plan is kept, not redone;
    the rest runs under the killed run's id and batch labels, so a batch it half landed (steps, no
    trajectories) replaces its own rows."""
    key = json.dumps({"policy": policy_name, "sandboxes": sorted(sandboxes or []), "tasks": sorted(task_ids or []),
                      "episodes": episodes, "profile": profile, "all": all_tasks, "budget": budget,
                      "recheck_every": recheck_every, "noise": noise}, sort_keys=True)
    claim = resume.adopt(lake, "rollout", key)
    if claim is not None:
        return _resumed(lake, claim)
    run_id = f"rollout-{uuid.uuid4().hex[:12]}"
    jobs, problems, plan = plan_rollout(lake, sandboxes, task_ids, episodes, policy_name, profile, all_tasks, budget,
                                        recheck_every)
    batches = {folder: [(str(i // batch_size), items[i:i + batch_size]) for i in range(0, len(items), batch_size)]
               for folder, items in jobs.items()}
    kept = {"run_id": run_id, "problems": problems, "plan": plan.to_json() if plan else None,
            "batches": {folder: [[label, [[t.task_id, t.version, e] for t, e in items]] for label, items in labelled]
                        for folder, labelled in batches.items()}}
    claim = resume.keep(lake, "rollout", key, kept) if batches else None
    return RolloutJobs(run_id, batches, problems, plan, claim)


def _resumed(lake: Lake, claim: resume.Claim) -> RolloutJobs:
    kept = claim.plan
    ids = sorted({job[0] for labelled in kept["batches"].values() for _, items in labelled for job in items})
    specs = {(t.task_id, t.version): t for t in load_verified_tasks(lake, None, ids)}
    landed = {(r["task_id"], r["episode"]) for r in lake.query(
        "SELECT task_id, episode FROM trajectories WHERE run_id = ?", [kept["run_id"]])} if lake.files("trajectories") else set()
    problems, batches, before = list(kept["problems"]), {}, 0
    for folder, labelled in kept["batches"].items():
        for label, items in labelled:
            if all((task_id, e) in landed for task_id, _, e in items):  # a batch's trajectories land in one commit
                before += len(items)
                continue
            gone = [task_id for task_id, version, _ in items if (task_id, version) not in specs]
            problems += [f"task {t} is no longer verified; its episodes of the resumed run are skipped" for t in sorted(set(gone))]
            left = [(specs[(task_id, version)], e) for task_id, version, e in items if (task_id, version) in specs]
            if left:
                batches.setdefault(folder, []).append((label, left))
    log.info("resuming killed rollout %s: %d episodes had landed, %d batches left", kept["run_id"], before,
             sum(len(b) for b in batches.values()))
    plan = kept["plan"]
    plan = RolloutPlan([], {s: Counter(c) for s, c in plan["chosen"].items()},
                       {s: Counter(c) for s, c in plan["left_out"].items()}) if plan else None
    return RolloutJobs(kept["run_id"], batches, problems, plan, claim, landed_before=before)


def rollout_batch(lake: Lake, run_id: str, policy_name: str, manifest: SandboxManifest, jobs: list[tuple[TaskSpec, int]],
                  batch: int | str, workers: int = 1, noise: str | None = None, profile: str | None = None,
                  on_result: Any = None) -> Counter:
    """Episodes of one sandbox on live replicas, landed as the batch's own trajectories and steps (a retried
    batch replaces them); how each episode ended. Raises SandboxError when the sandbox cannot start."""
    skills = stored_skills(lake, manifest.name)
    client = None
    if policy_name == "llm":
        from flywheel import llm

        client = llm.LLMClient(lake=lake, run_id=run_id)
    exposure = training_exposure(lake) if policy_name == "simulated-learner" else None

    def job(driver: WebDriver, item: tuple[TaskSpec, int]) -> Episode:
        task, ep = item
        if client is not None:
            from flows.rollout.llm_policy import SHELL_KINDS, LLMPolicy

            policy: Policy = LLMPolicy(client, shell=driver.manifest.sandbox.kind in SHELL_KINDS)
        else:
            policy = get_policy(policy_name, noise, driver.manifest.sensitive_kind, exposure)
        if profile or driver.manifest.sandbox.kind == "android":  # a phone acts by touch: clicks become taps
            policy = TouchPolicy(policy, driver, profile or "touch")
        return run_episode(driver, lake, task, skills, policy, ep, run_id)

    results = SandboxPool(manifest, workers, profile=profile).map(job, jobs, on_result=on_result)
    key = f"{manifest.name}-{batch}"
    # steps first: the trajectories row is what readers start from, so a run killed between the two commits
    # leaves steps nobody reads rather than a trajectory without its steps (the importers' order too)
    lake.write("steps", [s for r in results for s in r.steps], run_id, key)
    lake.write("trajectories", [r.trajectory for r in results], run_id, key)
    if client is not None:
        client.flush(batch=f"rollout-{key}")
    ended = Counter(r.trajectory["ended"] for r in results)
    log.info("%s batch %s: %s", manifest.name, batch, ", ".join(f"{k} {v}" for k, v in ended.most_common()))
    return ended


def rollout(lake: Lake, run_id: str, policy_name: str, sandboxes: list[str] | None = None,
            task_ids: list[str] | None = None, episodes: int = 1, workers: int = 1, noise: str | None = None,
            progress: Any = None, profile: str | None = None, all_tasks: bool = False, budget: int | None = None,
            recheck_every: int = RECHECK_EVERY) -> RolloutSummary:
    """Every episode in this process (the flow spreads batches over the engine). `profile` (e.g. "phone") runs
    web sandboxes under a device profile and the policy through touch; see plan_rollout for how tasks are chosen."""
    summary = RolloutSummary()
    jobs, problems, summary.plan = plan_rollout(lake, sandboxes, task_ids, episodes, policy_name, profile, all_tasks,
                                                budget, recheck_every)
    summary.errors.extend(problems)
    for folder, items in jobs.items():
        manifest = load_manifest(folder)
        bar = progress.add_task(f"{manifest.name}: {policy_name}", total=len(items)) if progress else None
        try:
            ended = rollout_batch(lake, run_id, policy_name, manifest, items, 0, workers, noise, profile,
                                  on_result=(lambda *_, bar=bar: progress.advance(bar)) if progress else None)
        except SandboxError as exc:
            summary.errors.append(str(exc))
            continue
        summary.sandboxes[manifest.name] = ended
    return summary


def render_summary(summary: RolloutSummary, policy: str, profile: str | None = None) -> str:
    """Markdown: episodes per sandbox and how they ended, and which pools the curriculum chose from."""
    lines = [f"# rollout ({policy}{f', {profile} profile' if profile else ''})", "",
             "| sandbox | episodes | ended | tasks chosen by pool | left out |", "|---|---|---|---|---|"]
    plan = summary.plan
    for s, c in summary.sandboxes.items():
        chosen = ", ".join(f"{k} {v}" for k, v in sorted(plan.chosen.get(s, {}).items())) if plan else "all (--all)"
        left = ", ".join(f"{k} {v}" for k, v in sorted(plan.left_out.get(s, {}).items())) if plan else "-"
        lines.append(f"| {s} | {sum(c.values())} | {', '.join(f'{k} {v}' for k, v in c.most_common())} | {chosen} | {left or '-'} |")
    if summary.resumed:
        lines.append(f"- resumed the killed run {summary.resumed}: {summary.landed_before} of its episodes had landed "
                     "and were not run again")
    lines += [f"- problem: {e}" for e in summary.errors]
    return "\n".join(lines)
