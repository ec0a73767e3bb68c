"""The discovery agent: walks the live app, turns what it saw into families, varies and chains them,
and hands candidates to the gate like every agent. Its notes say what each discovery step found,
and, where it found little, which step came up empty and what the manifest could add."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.discovery.families import (
    MULTI_SHARE,
    REPLAY_SKILL,
    Family,
    Instance,
    chain,
    chain_on_document,
    counted_after_making,
    document_leaves,
    families_from,
    follows,
    instance,
    made_then,
    observed_chain,
    observed_on_record,
    observed_reorder,
    on_other_record,
    retrieve_instances,
    to_spec,
)
from flows.task_synthesis.discovery.walk import MAX_SECONDS, MAX_STEPS, DiscoveryWalk, WalkResult
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.actions import parse_actions
from sandboxes.app_process import SandboxError
from sandboxes.skills import Skill
from verifier_templates.base import normalise

TRIES_PER_FAMILY = 8
MAX_THIRD_STEP_TRIES = 3  # replays of a chain that held with a third step, until one holds
RETRIEVE_SHARE = 0.3  # at most this share of the candidates are questions when other families can fill the rest
OBSERVE_SECONDS = 600.0  # a wall-clock cap on the replays (each call site bounds how many it makes): reaching it is the machine's slowness
Observe = Callable[..., "tuple[Any, Any] | None"]  # (actions, expression=None): the state before and after them


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

        def walk_app() -> tuple[WalkResult, list[Family], Any, list[TaskSpec]]:
            with open_driver(manifest) as driver:
                walk = DiscoveryWalk(driver, manifest, request.seed, self.max_seconds, self.max_steps).run()
                fams, dropped = families_from(walk, manifest.state.page_expression())
                for f in fams:
                    if f.transition.kind == "drag":
                        f.extra["peers"] = drag_peers(walk, f)
                observe = replayer(driver, walk, manifest.state.page_expression(), OBSERVE_SECONDS)
                home = manifest.start.home_path if manifest.start else "/"
                again = observe([{"action": "goto", "url": home}]) if observe else None
                walk.volatile = per_load(walk.initial.manifest if walk.initial else None, again[0] if again else None)
                drawn = draw(fams, walk, request, manifest.name, request.source.commit, observe)
                if observe is not None:
                    walk.notes.append(f"{observe.calls} replays from a reset to see what steps do ({observe.seconds:.0f} s)"
                                      + (f"; the {OBSERVE_SECONDS:.0f} s cap ended them: the machine was too slow (an environment "
                                         "limit), fewer chains on one document" if observe.capped else ""))
                return walk, fams, dropped, drawn

        try:  # in a thread of its own: Playwright's sync API allows one instance per thread
            with ThreadPoolExecutor(1) as pool:
                walk, fams, dropped, out.candidates = pool.submit(walk_app).result()
        except SandboxError as exc:
            out.notes.append(f"{manifest.name}: discovery could not run the app: {exc}")
            return out
        if any(c.injection for c in out.candidates):
            out.skills.append(replay_skill(manifest.name))
        out.notes.extend(notes(manifest, walk, fams, dropped, out.candidates, request.count))
        return out


class Replayer:
    """Replays actions from a reset app (signed in as the walk was) and returns the manifest's state before and
    after them (after the first page opens); None when a step fails, or once the wall-clock cap is reached
    (`capped`: the machine's slowness, said in the notes). The callers bound how many replays they ask for;
    `calls` and `seconds` say what they cost."""

    def __init__(self, driver: Any, walk: WalkResult, expression: str, seconds: float) -> None:
        self.driver, self.walk, self.expression, self.cap = driver, walk, expression, seconds
        self.started = time.monotonic()
        self.calls, self.capped = 0, False

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def _read(self, expression: str | None = None) -> Any:
        from verifier_templates.base import Probe

        return self.driver.probe(Probe("state", "js", expression or self.expression))

    def __call__(self, actions: list[dict[str, Any]], expression: str | None = None) -> tuple[Any, Any] | None:
        """`expression` reads another view of the state than the manifest's (its items, as a check reads them)."""
        if self.seconds > self.cap:
            self.capped = True
            return None
        if not actions:
            return None
        self.calls += 1
        opening = 1 if actions[0].get("action") == "goto" else 0
        try:
            self.driver.reset(new_context=False)
            for act in parse_actions(self.walk.sign_in + actions[:opening]):
                if not self.driver.act(act).ok:
                    return None
            before = self._read(expression)
            for act in parse_actions(actions[opening:]):
                if not self.driver.act(act).ok:
                    return None
            return before, self._read(expression)
        except Exception:  # a step the page would not take: no observation, no candidate
            return None


def replayer(driver: Any, walk: WalkResult, expression: str | None, seconds: float) -> Replayer | None:
    return Replayer(driver, walk, expression, seconds) if expression else None


def per_load(first: Any, second: Any) -> set[str]:
    """Values the app makes up on each load (random titles): those one reading of a fresh app holds and
    another does not. A task that names one cannot be set up again, so none does."""
    if first is None or second is None:
        return set()
    one, two = ({normalise(v) for v in document_leaves(x).values() if isinstance(v, str) and len(v.strip()) >= 4} for x in (first, second))
    return one ^ two


def drag_peers(walk: WalkResult, fam: Family) -> list[str]:
    scan = walk.scans.get(fam.transition.page)
    if scan is None:
        return []
    for z in scan.zones:
        if fam.transition.item in z.get("named", []):
            return [c for c in z["named"] if c != fam.transition.item and c != fam.transition.actions[0].get("to", {}).get("text")]
    return []


def draw(fams: list[Family], walk: WalkResult, request: SynthesisRequest, sandbox: str, commit: str,
         observe: Observe | None = None) -> list[TaskSpec]:
    """Round-robin over families with fresh values each turn, a share of chains, and retrieve tasks;
    never two candidates with the same request and verifier. Steps on one document whose effects meet
    are chained only when `observe` can replay them (the check is what they did together)."""
    rng = random.Random(request.seed)
    count = request.count
    singles: dict[str, list[Instance]] = {}
    for f in fams:
        got = [i for i in [instance(f, random.Random(f"{request.seed}-{f.key}-0"), fresh=False)] if i]
        for k in range(1, TRIES_PER_FAMILY if f.variable else 1):
            inst = instance(f, random.Random(f"{request.seed}-{f.key}-{k}"), fresh=True)
            if inst is not None:
                got.append(inst)
        if got and f.extra.get("document") and f.transition.slots and (
                _typing_is_enough(got[0], observe) if observe is not None else _typed_state_holds(got[0])):
            for inst in got:  # the press after typing is not needed (a field the app reads as you type): left out
                inst.reference, inst.dropped = inst.reference[:-1], inst.reference[-1:]
        if f.name == "reorder":  # another card lands where its own drop puts it: known only by replaying it
            got = got[:1] + ([made for made in (_reordered(inst, observe) for inst in got[1:]) if made is not None] if observe else [])
        if observe is not None and f.extra.get("records"):  # the same step on other records, each replayed
            records = list(f.extra["records"])
            random.Random(f"{request.seed}-{f.key}-records").shuffle(records)
            for rec in records[: TRIES_PER_FAMILY - 1]:
                inst = on_other_record(f, rec)
                seen_change = observe(inst.reference)
                made = observed_on_record(inst, *seen_change) if seen_change else None
                if made is not None:
                    got.append(made)
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
        c = None if observe and a.family.extra.get("document") and b.family.extra.get("document") else chain(a, b)
        if c:
            chains.append(c)
    if observe is not None:
        chains += observed_chains(plain, rng, count, observe)
    made_chains = [c for c in chains if c.family.setup is not None]
    other = [c for c in chains if c.family.setup is None]
    rng.shuffle(made_chains)
    chains = [c for pair in zip(made_chains, other) for c in pair] + made_chains[len(other):] + other[len(made_chains):]
    seen: set[str] = set()
    picked: list[TaskSpec] = []

    volatile = getattr(walk, "volatile", set())

    def take(inst: Instance, multi: bool) -> bool:
        if volatile and names_per_load(inst, volatile):
            walk.left_out = getattr(walk, "left_out", 0) + 1
            return False
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


def _reordered(inst: Instance, observe: Observe) -> Instance | None:
    seen = observe(inst.reference, inst.verifier.get("params", {}).get("expression"))
    return observed_reorder(inst, *seen) if seen else None


def _typing_is_enough(inst: Instance, observe: Observe) -> bool:
    """Whether the step's check already holds before its last action (Enter, or the form's button), with the
    records it acts on made first (its setup)."""
    from verifier_templates import js_state_matches
    from verifier_templates.base import Evidence

    last = inst.reference[-1] if inst.reference else {}
    if last.get("action") not in ("key", "left_click") or len(inst.setup + inst.reference) < 3:
        return False
    seen = observe(inst.setup + inst.reference[:-1])
    return bool(seen) and js_state_matches.judge(Evidence({}, {"state": seen[1]}), inst.verifier["params"]).passed


def _typed_state_holds(inst: Instance) -> bool:
    """Without a replayer (explore's walk): whether the step's check held on the state the walk read once the fields
    were filled, before the press that ended the step."""
    from verifier_templates import js_state_matches
    from verifier_templates.base import Evidence

    state = inst.family.transition.typed_state
    last = inst.reference[-1] if inst.reference else {}
    return (state is not None and last.get("action") in ("key", "left_click") and not inst.setup
            and inst.verifier.get("template") == "js_state_matches"
            and js_state_matches.judge(Evidence({}, {"state": state}), inst.verifier["params"]).passed)


def names_per_load(inst: Instance, volatile: set[str]) -> bool:
    said = normalise(inst.request + " " + json.dumps(inst.verifier, ensure_ascii=False))
    return any(v in said for v in volatile)


def observed_chains(plain: list[Instance], rng: random.Random, count: int, observe: Observe) -> list[Instance]:
    """Chains of steps on one document, replayed to see what they do together: the second may set what the
    first checks (Next, then Next: step 2), and a chain that holds is extended by a third step the same way.
    Two kinds of step that did not compose once are not tried again (what a step changes from a reset says little:
    an app may recompute its whole document on the first change), nor a request already had."""
    docs = [i for i in plain if i.family.extra.get("document")]
    failed: set[tuple[str, str]] = set()

    def joins(a: Instance, b: Instance) -> bool:
        return (a.family.transition.page == b.family.transition.page and (a is not b or not a.values)
                and (a.family.key, b.family.key) not in failed and follows(a, b))

    pairs = [(a, b) for a in docs for b in docs if joins(a, b)]
    rng.shuffle(pairs)
    pairs.sort(key=lambda ab: ab[0].family.key == ab[1].family.key)  # two kinds of step first
    want = round(count * MULTI_SHARE * 1.25)  # the draw's share of chains, and a few for the gate to reject
    out: list[Instance] = []
    asked: set[str] = set()
    kinds: dict[int, set[str]] = {}  # a chain's kinds of step (a chain is its first step's family)
    tried = 0

    def attempt(a: Instance, b: Instance) -> bool | None:
        """Whether the pair held when replayed; None when it was not replayed."""
        nonlocal tried
        joined = chain_on_document(a, b)
        if joined is None or joined.request.casefold() in asked or not joins(a, b):
            return None
        tried += 1
        seen = observe(joined.reference)
        made = observed_chain(joined, *seen, [a.verifier, b.verifier]) if seen else None
        if made:
            out.append(made)
            asked.add(made.request.casefold())
            kinds[id(made)] = kinds.get(id(a), {a.family.key}) | {b.family.key}
        elif seen:
            failed.add((a.family.key, b.family.key))
        return made is not None

    for a, b in pairs:  # two thirds of the replays at most: a chain that held is worth a third step
        if len(out) >= want or tried >= 2 * want:
            break
        attempt(a, b)
    for c in list(out):  # three steps: a chain that held, then one more (kinds it has not had first), a few tries each
        replayed = 0
        for b in sorted(rng.sample(docs, len(docs)), key=lambda b: b.family.key in kinds[id(c)]):
            if len(out) >= want or tried >= 3 * want:
                return out
            held = attempt(c, b)
            replayed += held is not None
            if held or replayed >= MAX_THIRD_STEP_TRIES:
                break
    return out


def _looks_like_sign_in(group: Any) -> bool:
    """A password with at most a name or email and a "remember me" beside it; a sign-up or a wizard step
    that asks for a new password also asks for more (names, email, the password again)."""
    passwords = [f for f in group.fields if f.type == "password"]
    others = [f for f in group.fields if f.type not in ("password", "checkbox", "hidden", "submit")]
    return len(passwords) == 1 and len(others) <= 1


def notes(manifest: Any, walk: WalkResult, fams: list[Family], dropped: Any, picked: list[TaskSpec], count: int = 20) -> list[str]:
    name = manifest.name
    groups = sum(len(s.groups) for s in walk.scans.values())
    fields = sum(len(g.fields) for s in walk.scans.values() for g in s.groups)
    items = sum(len(s.on_items) for s in walk.scans.values())
    cards = sum(len(s.cards) for s in walk.scans.values())
    out = [
        f"{name}: discovery walked {len(walk.pages)} page(s) in {walk.seconds:.0f}s ({walk.steps} steps): {groups} form(s) with {fields} field(s), "
        f"{items} control(s) on records, {cards} draggable card(s); {len(walk.transitions)} transitions, "
        f"{len(walk.changing)} changed state",
        f"{name}: state found: {walk.state.describe() if walk.state else '-'}",
        f"{name}: families: " + (", ".join(sorted({f.name for f in fams})) or "none")
        + (f" (transitions without a family: {', '.join(f'{k} {v}' for k, v in dropped.items())})" if dropped else ""),
    ]
    out += [f"{name}: {n}" for n in walk.notes]
    volatile = getattr(walk, "volatile", set())
    if volatile:
        out.append(f"{name}: the state differs between two loads of the app ({len(volatile)} values made up per load, e.g. "
                   f"{sorted(volatile)[0][:40]!r}): {getattr(walk, 'left_out', 0)} candidates that named one were left out")
    kinds = {f.name for f in fams} | {p.family for p in picked}  # chains (multi_step) and retrieves are families too
    if len(kinds) < 4 or len(picked) < min(20, count):
        hints = []
        if not groups and not items and not cards:
            hints.append("the page showed no fields, record controls or cards: set [start] home_path to the app's main page"
                         " (and [auth] when it needs a login)")
        if walk.state and not walk.state.found:
            hints.append("no state change was seen: name the state in [state] (kind = \"sqlite\" with its path, "
                         "\"local_storage\" with its key, or \"js\" with an expression that returns the records)")
        if not walk.sign_in and any(_looks_like_sign_in(g) for s in walk.scans.values() for g in s.groups):
            hints.append("a sign-in form was seen: give an account in [auth] (login_path, username, password)")
        initial = walk.initial.manifest if walk.initial else None
        leaves = document_leaves(initial) if isinstance(initial, dict) else {}
        if 0 < len(leaves) <= 3:
            hints.append(f"the [state] expression gives one object of {len(leaves)} value(s) ({', '.join(leaves)}), so a step can only set "
                         "those and tasks are few: an expression that returns more of what the app holds (its fields' values, its records) gives more")
        if dropped.get("change without a checkable value"):
            hints.append("some changes named no typed value: a [state] expression returning the records makes them checkable")
        out.append(f"{name}: few families or pairs — " + ("; ".join(hints) or "the app offers few state-changing controls"))
    return out
