"""explore as plain library code: measure a sandbox's coverage, pick its thinnest areas, explore the
live app towards them, turn state-changing transitions there into candidates, gate and store them
like synthesis does, and measure again. The Prefect flow only wires this up."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import Any

from flows.exploration.coverage import (
    AppAreas,
    AreaCoverage,
    coverage_rows,
    explored_areas,
    measure,
    pick_targets,
)
from flows.exploration.explorer import ExploreConfig, Explorer, Transition
from flows.exploration.reverse import derive, rewrite_with
from flows.task_synthesis.discovery.agent import drag_peers, draw, replay_skill
from flows.task_synthesis.discovery.families import REPLAY_SKILL, families_from
from flows.task_synthesis.discovery.walk import DiscoveryWalk, WalkResult
from flows.task_synthesis.gate import GateResult, ValidationGate
from flows.task_synthesis.source import read_source
from flows.task_synthesis.synthesis import known_task_ids, land
from flows.task_synthesis.task_spec import TaskSpec
from flywheel import llm
from lake import Lake, utcnow
from sandboxes.app_process import SandboxError
from sandboxes.drivers import open_driver
from sandboxes.manifest import SandboxManifest
from sandboxes.pool import SandboxPool

WALK_SHARE = 2  # the discovery walk takes half as many steps as the abstract-state search, on top of it
WALK_MIN_SECONDS = 600.0  # its wall-clock cap (at least): reached only on a machine too slow for it, an environment error


@dataclass
class ExploreSummary:
    sandbox: str
    areas_before: int = 0
    covered_before: int = 0
    areas_after: int = 0
    covered_after: int = 0
    targets: list[str] = field(default_factory=list)
    states: int = 0
    steps: int = 0
    seconds: float = 0.0
    revisit_share: float = 0.0
    transitions: int = 0
    state_changing: int = 0
    skipped_sensitive: int = 0
    candidates: int = 0
    verified: int = 0
    verified_in_empty_areas: int = 0  # new verified tasks in areas that had no verified task before
    rejected: dict[str, int] = field(default_factory=dict)
    walked: int = 0  # steps of the discovery walk (web apps)
    walk_kinds: dict[str, int] = field(default_factory=dict)  # of them, per kind: form, enter, item, drag, edit, page_button
    error: str | None = None

    @property
    def share_before(self) -> float:
        return self.covered_before / self.areas_before if self.areas_before else 0.0

    @property
    def share_after(self) -> float:
        return self.covered_after / self.areas_after if self.areas_after else 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"share_before": self.share_before, "share_after": self.share_after}


def current_areas(lake: Lake, manifest: SandboxManifest) -> AppAreas:
    """The areas the source shows plus those earlier explore runs found."""
    areas = AppAreas.from_source(manifest)
    for key, kind in explored_areas(lake, manifest.name):
        areas.add_explored(key, kind)
    return areas


def explore_sandbox(
    manifest: SandboxManifest, lake: Lake, run_id: str, areas_k: int = 8, steps: int = 200, minutes: float = 2.0,
    seed: int = 0, workers: int = 1, sensitive: str = "skip", variants: int = 3, per_area: int = 4,
) -> ExploreSummary:
    """Everything for one sandbox; a sandbox that cannot start ends up in the summary, not raised."""
    summary = ExploreSummary(manifest.name)
    areas = current_areas(lake, manifest)
    before = measure(lake, manifest.name, areas)
    summary.areas_before, summary.covered_before = len(before), sum(1 for c in before if c.verified_tasks)
    summary.targets = pick_targets(before, areas_k)
    web = manifest.sandbox.kind == "web"
    config = ExploreConfig(max_steps=steps, max_seconds=minutes * 60, seed=seed, sensitive=sensitive, variants=variants)
    walk = None
    try:
        with open_driver(manifest) as driver:
            covered = {c.area for c in before if c.verified_tasks}
            explorer = Explorer(driver, manifest, areas, set(summary.targets), config, covered=covered)
            result = explorer.run()
            if web:  # a person's walk: every form filled by type and submitted, records ticked, cards dragged
                walk = DiscoveryWalk(driver, manifest, seed, max(minutes * 60, WALK_MIN_SECONDS), max(10, steps // WALK_SHARE)).run()
    except SandboxError as exc:
        summary.error = str(exc)
        return summary
    if walk is not None and walk.capped:  # the machine's fault, not the app's: said as an error, not as a small yield
        summary.error = f"{manifest.name}: {walk.notes[-1]}"
    walked = walk_transitions(walk, areas) if walk else []
    summary.walked, summary.walk_kinds = len(walked), dict(Counter(t.kind for t in walk.transitions)) if walk else {}
    now = utcnow()
    lake.write("transitions", [t.to_row(run_id, manifest.name, now) for t in result.transitions + walked], run_id, manifest.name)
    summary.states, summary.steps, summary.seconds = len(result.states), result.steps, result.seconds
    summary.revisit_share, summary.transitions = result.revisit_share, len(result.transitions)
    summary.state_changing = sum(1 for t in result.transitions if t.changed_state)
    summary.skipped_sensitive = sum(1 for t in result.transitions if t.outcome == "skipped_sensitive")

    had = {c.area: c.verified_tasks for c in before}
    thin = set(summary.targets) | {k for k in areas.areas if not had.get(k)}
    try:
        commit = read_source(manifest).commit
    except Exception:
        commit = "unknown"
    client = llm.LLMClient(lake=lake, run_id=run_id) if llm.configured() else None
    initial = explorer.initial if explorer.reader.kind == "sqlite" else {}
    specs = derive(result.transitions, manifest.name, commit, thin, initial, per_area=per_area, seed=seed,
                   rewrite=rewrite_with(client) if client else None, expression=manifest.state.page_expression())
    if client:
        client.flush()
    if walk is not None:
        specs += walk_candidates(walk, manifest, commit, seed, 2 * per_area)
    known = known_task_ids(lake, manifest.name)
    seen: set[str] = set()
    specs = [s for s in specs if s.task_id not in known and not (s.task_id in seen or seen.add(s.task_id))]
    summary.candidates = len(specs)
    results: list[tuple[TaskSpec, GateResult]] = []
    skills = {REPLAY_SKILL: replay_skill(manifest.name)} if any(s.injection for s in specs) else {}
    if specs:
        try:
            gated = SandboxPool(manifest, workers).map(lambda d, spec: ValidationGate(d, skills).validate(spec), specs)
        except SandboxError as exc:
            summary.error = str(exc)
            gated = []
        results = list(zip(specs, gated))
        land(lake, run_id, manifest.name, "explore", list(skills.values()), results)
    for spec, r in results:
        if r.status == "verified":
            summary.verified += 1
            summary.verified_in_empty_areas += reaches_an_empty_area(areas, spec, had)
        else:
            summary.rejected[r.reason] = summary.rejected.get(r.reason, 0) + 1
    after = measure(lake, manifest.name, areas)
    summary.areas_after, summary.covered_after = len(after), sum(1 for c in after if c.verified_tasks)
    now = utcnow()
    lake.write("coverage", coverage_rows(before, run_id, manifest.name, "before", now)
               + coverage_rows(after, run_id, manifest.name, "after", now), run_id, manifest.name)
    return summary


def reaches_an_empty_area(areas: AppAreas, spec: TaskSpec, verified_before: dict[str, int]) -> bool:
    """Whether a task touches an area that had no verified task: by the areas coverage measures it in (its
    reference and verifier, as `measure` counts them), not by the area it was derived for. A candidate aimed at
    an empty area whose steps land in covered ones covers nothing new."""
    return any(not verified_before.get(key) for key in areas.task_areas(spec.reference, spec.verifier))


def walk_transitions(walk: WalkResult, areas: AppAreas) -> list[Transition]:
    """The discovery walk's steps as explore's transition rows (what was typed, pressed or dragged, and
    which state sources it changed)."""
    out = []
    for t in walk.transitions:
        changed = {"sources": t.diff.sources()} if t.diff else {}
        screen = areas.screen(t.page)
        fills = {s.field.spoken: s.value for s in t.slots}
        submit = "drag" if t.kind == "drag" else "enter" if t.kind == "enter" else "button"
        out.append(Transition(f"walk {t.kind} {t.page}", t.page, t.path, t.actions, None, t.url_after or None, changed, screen,
                              fills=fills, form_label=t.heading, button=t.button or t.control.get("name", ""), submit=submit))
    return out


def walk_candidates(walk: WalkResult, manifest: SandboxManifest, commit: str, seed: int, count: int) -> list[TaskSpec]:
    """Candidates from the walk's state-changing steps, as discovery synthesis makes them (families varied,
    chained, verified from the observed diff)."""
    fams, _ = families_from(walk, manifest.state.page_expression())
    for f in fams:
        if f.transition.kind == "drag":
            f.extra["peers"] = drag_peers(walk, f)
    specs = draw(fams, walk, SimpleNamespace(seed=seed, count=count), manifest.name, commit)
    for spec in specs:  # born of explore's walk: its provenance says so, like the reversed transitions'
        spec.provenance = {**spec.provenance, "agent": "explore", "path": "discovery-walk"}
    return specs


def render_summary(summaries: list[ExploreSummary], problems: list[str], charts: dict[str, str]) -> str:
    lines = [
        "# explore", "",
        "| sandbox | areas covered before | after | states | steps | states/min | revisits | state changes | "
        "skipped sensitive | candidates | verified | verified in empty areas |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        rate = s.states / (s.seconds / 60) if s.seconds else 0.0
        lines.append(
            f"| {s.sandbox} | {s.covered_before}/{s.areas_before} ({s.share_before:.0%}) | "
            f"{s.covered_after}/{s.areas_after} ({s.share_after:.0%}) | {s.states} | {s.steps} | {rate:.0f} | "
            f"{s.revisit_share:.0%} | {s.state_changing} | {s.skipped_sensitive} | {s.candidates} | {s.verified} | "
            f"{s.verified_in_empty_areas} |"
        )
    for s in summaries:
        if s.targets:
            lines += ["", f"**{s.sandbox}** targets: " + ", ".join(f"`{t}`" for t in s.targets)]
        if s.walked:
            lines.append(f"discovery walk: {s.walked} steps ({', '.join(f'{k} {v}' for k, v in sorted(s.walk_kinds.items()))})")
        if s.rejected:
            lines.append(f"rejected by the gate: {', '.join(f'{k} {v}' for k, v in sorted(s.rejected.items()))}")
        if s.sandbox in charts:
            lines.append(f"\n![coverage of {s.sandbox}]({charts[s.sandbox]})")
    errors = [f"- {s.error}" if s.error.startswith(f"{s.sandbox}:") else f"- {s.sandbox}: {s.error}"
              for s in summaries if s.error] + [f"- {p}" for p in problems]
    if errors:
        lines += ["", "## Problems", *errors]
    return "\n".join(lines)


def coverage_now(lake: Lake, manifest: SandboxManifest) -> list[AreaCoverage]:
    return measure(lake, manifest.name, current_areas(lake, manifest))

