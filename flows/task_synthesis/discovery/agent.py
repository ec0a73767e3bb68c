"""The discovery agent: walks the live app, turns what it saw into families, varies and chains them,
and hands candidates to the gate like every agent. Its notes say what each discovery step found,
and, where it found little, which step came up empty and what the manifest could add."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.discovery.families import (
    MULTI_SHARE,
    REPLAY_SKILL,
    Family,
    Instance,
    chain,
    counted_after_making,
    families_from,
    instance,
    made_then,
    retrieve_instances,
    to_spec,
)
from flows.task_synthesis.discovery.walk import MAX_SECONDS, MAX_STEPS, DiscoveryWalk, WalkResult
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.app_process import SandboxError
from sandboxes.skills import Skill

TRIES_PER_FAMILY = 8
RETRIEVE_SHARE = 0.3  # at most this share of the candidates are questions when other families can fill the rest


def replay_skill(sandbox: str) -> Skill:
    return Skill(REPLAY_SKILL, sandbox, "ui_replay",
                 "Sets up records by replaying UI actions recorded while exploring (args.actions), then checks "
                 "that they took effect (args.check, a verifier that must pass)", {"replays": "args.actions"})


class DiscoveryAgent:
    name = "static"

    def __init__(self, max_seconds: float = MAX_SECONDS, max_steps: int = MAX_STEPS) -> None:
        self.max_seconds, self.max_steps = max_seconds, max_steps  # steps bound the walk; the wall clock only caps it

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        from sandboxes.drivers import open_driver

        out = AgentOutput()
        manifest = request.manifest
        def walk_app() -> WalkResult:
            with open_driver(manifest) as driver:
                return DiscoveryWalk(driver, manifest, request.seed, self.max_seconds, self.max_steps).run()

        try:  # in a thread of its own: Playwright's sync API allows one instance per thread
            with ThreadPoolExecutor(1) as pool:
                walk = pool.submit(walk_app).result()
        except SandboxError as exc:
            out.notes.append(f"{manifest.name}: discovery could not run the app: {exc}")
            return out
        fams, dropped = families_from(walk, manifest.state.page_expression())
        for f in fams:
            if f.transition.kind == "drag":
                f.extra["peers"] = drag_peers(walk, f)
        out.candidates = draw(fams, walk, request, manifest.name, request.source.commit)
        if any(c.injection for c in out.candidates):
            out.skills.append(replay_skill(manifest.name))
        out.notes.extend(notes(manifest, walk, fams, dropped, out.candidates, request.count))
        return out


def drag_peers(walk: WalkResult, fam: Family) -> list[str]:
    scan = walk.scans.get(fam.transition.page)
    if scan is None:
        return []
    for z in scan.zones:
        if fam.transition.item in z.get("named", []):
            return [c for c in z["named"] if c != fam.transition.item and c != fam.transition.actions[0].get("to", {}).get("text")]
    return []


def draw(fams: list[Family], walk: WalkResult, request: SynthesisRequest, sandbox: str, commit: str) -> list[TaskSpec]:
    """Round-robin over families with fresh values each turn, a share of chains, and retrieve tasks;
    never two candidates with the same request and verifier."""
    rng = random.Random(request.seed)
    count = request.count
    singles: dict[str, list[Instance]] = {}
    for f in fams:
        got = [i for i in [instance(f, random.Random(f"{request.seed}-{f.key}-0"), fresh=False)] if i]
        for k in range(1, TRIES_PER_FAMILY if f.variable else 1):
            inst = instance(f, random.Random(f"{request.seed}-{f.key}-{k}"), fresh=True)
            if inst is not None:
                got.append(inst)
        singles[f.key] = got
    retrieve = retrieve_instances(walk) + counted_after_making(fams, walk, request.seed)
    if retrieve:
        singles["retrieve"] = retrieve
    chains: list[Instance] = []
    for insts in singles.values():
        for inst in insts:
            made = made_then(inst)
            if made:
                chains.append(made)
    plain = [i for insts in singles.values() for i in insts if not i.setup and i.family.name != "retrieve"]
    pairs = [(a, b) for a in plain for b in plain if a is not b]
    rng.shuffle(pairs)
    mixed = sorted(pairs[: count * 6], key=lambda ab: ab[0].family.key == ab[1].family.key)  # two kinds of step first
    for a, b in mixed[: count * 2]:
        c = chain(a, b)
        if c:
            chains.append(c)
    made_chains = [c for c in chains if c.family.setup is not None]
    other = [c for c in chains if c.family.setup is None]
    rng.shuffle(made_chains)
    chains = [c for pair in zip(made_chains, other) for c in pair] + made_chains[len(other):] + other[len(made_chains):]
    seen: set[str] = set()
    picked: list[TaskSpec] = []

    def take(inst: Instance, multi: bool) -> bool:
        spec = to_spec(inst, sandbox, commit, request.seed, walk.sign_in, multi)
        key = inst.request.casefold() + repr(sorted(str(inst.verifier)))
        if key in seen or any(p.task_id == spec.task_id for p in picked):
            return False
        seen.add(key)
        picked.append(spec)
        return True

    queues = {k: list(v) for k, v in singles.items()}
    for k in list(queues):  # one of each family first
        if queues[k] and len(picked) < count:
            take(queues[k].pop(0), False)
    n_multi = max(1, round(count * MULTI_SHARE)) if chains else 0
    for c in chains:
        if sum(1 for p in picked if p.family == "multi_step") >= n_multi:
            break
        take(c, True)
    asks = queues.pop("retrieve", [])  # questions fill what the state-changing families leave, up to a share
    while len(picked) < count and any(queues.values()):
        for k in list(queues):
            if queues[k] and len(picked) < count:
                take(queues[k].pop(0), False)
    for c in chains:  # then more chains
        if len(picked) >= count - min(len(asks), round(count * RETRIEVE_SHARE)):
            break
        take(c, True)
    while len(picked) < count and asks:
        take(asks.pop(0), False)
    for c in chains:  # room left: more chains
        if len(picked) >= count:
            break
        take(c, True)
    return picked[:count]


def notes(manifest: Any, walk: WalkResult, fams: list[Family], dropped: Any, picked: list[TaskSpec], count: int = 20) -> list[str]:
    name = manifest.name
    groups = sum(len(s.groups) for s in walk.scans.values())
    fields = sum(len(g.fields) for s in walk.scans.values() for g in s.groups)
    items = sum(len(s.on_items) for s in walk.scans.values())
    cards = sum(len(s.cards) for s in walk.scans.values())
    out = [
        f"{name}: discovery walked {len(walk.pages)} page(s) in {walk.seconds:.0f}s: {groups} form(s) with {fields} field(s), "
        f"{items} control(s) on records, {cards} draggable card(s); {len(walk.transitions)} transitions, "
        f"{len(walk.changing)} changed state",
        f"{name}: state found: {walk.state.describe() if walk.state else '-'}",
        f"{name}: families: " + (", ".join(sorted({f.name for f in fams})) or "none")
        + (f" (transitions without a family: {', '.join(f'{k} {v}' for k, v in dropped.items())})" if dropped else ""),
    ]
    out += [f"{name}: {n}" for n in walk.notes]
    kinds = {f.name for f in fams} | ({"retrieve"} if any(p.family == "retrieve" for p in picked) else set())
    if len(kinds) < 4 or len(picked) < min(20, count):
        hints = []
        if not groups and not items and not cards:
            hints.append("the page showed no fields, record controls or cards: set [start] home_path to the app's main page"
                         " (and [auth] when it needs a login)")
        if walk.state and not walk.state.found:
            hints.append("no state change was seen: name the state in [state] (kind = \"sqlite\" with its path, "
                         "\"local_storage\" with its key, or \"js\" with an expression that returns the records)")
        if not walk.sign_in and any(f.type == "password" for s in walk.scans.values() for g in s.groups for f in g.fields):
            hints.append("a password field was seen: give an account in [auth] (login_path, username, password)")
        if dropped.get("change without a checkable value"):
            hints.append("some changes named no typed value: a [state] expression returning the records makes them checkable")
        out.append(f"{name}: few families or pairs — " + ("; ".join(hints) or "the app offers few state-changing controls"))
    return out
