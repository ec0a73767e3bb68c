"""Targeted synthesis: mined `failure_seeds` become new candidate tasks aimed at what the policy gets wrong.

Worked out from the stored TaskSpec alone (family, params, instruction, injection, verifier, reference),
with no knowledge of any app, by the parent task's curriculum pool:
- `variant` (active, or no pool yet): the failed task with other parameters — each string parameter that
  the request names and the verifier checks is swapped, everywhere in the spec, for the value a sibling task
  of the same family uses at the same place (or, failing that, the same text with its number redrawn);
- `subgoal` (monitoring: too hard for now): the first step of a multi-step task — the verifier's first
  check, the reference up to where the next step starts (a new `goto`, or the split a chain recorded) and
  the request's first clause;
- `chain` (mastered): the task followed by another mastered task of its sandbox (same family first) —
  references joined, verifiers joined under `all_of`, requests joined with "and then".
Each candidate records its lineage in `provenance` (parent task, seed, failure kind and reason, strategy)
and goes through the same validation gate as every other pair; a seed is used once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from flows.task_synthesis.synthesis import (
    SandboxSummary,
    SynthesisPlan,
    count_gated,
    gate_batch,
    known_task_ids,
    stored_skills,
)
from flows.task_synthesis.task_spec import TaskSpec
from lake import Lake
from sandboxes.app_process import SandboxError
from sandboxes.manifest import SandboxManifest

log = logging.getLogger("flywheel.synthesis.from_failures")

AGENT = "from-failures"
VERSION = "from-failures-1"
STRATEGY_BY_POOL = {"monitoring": "subgoal", "mastered": "chain"}  # anything else: variant
_THEN = re.compile(r",? and then (?:i need you to |could you |can you |please |go ahead and )?", re.IGNORECASE)

_SEEDS = """
WITH seed AS (
    SELECT * FROM failure_seeds WHERE sandbox = $sandbox
    QUALIFY row_number() OVER (PARTITION BY seed_id ORDER BY recorded_at DESC) = 1),
used AS (
    SELECT DISTINCT json_extract_string(provenance_json, '$.seed_id') AS seed_id FROM tasks_history
    WHERE json_extract_string(provenance_json, '$.agent') = 'from-failures')
SELECT s.seed_id, s.task_id, s.kind, s.reason, tr.policy, p.pool,
       row_number() OVER (PARTITION BY s.task_id ORDER BY s.seed_id) AS nth
FROM seed s
JOIN tasks t ON t.task_id = s.task_id AND t.status = 'verified'
LEFT JOIN (SELECT trajectory_id, any_value(policy) AS policy FROM trajectories GROUP BY 1) tr
       ON tr.trajectory_id = json_extract_string(s.context_json, '$.trajectory_id')
LEFT JOIN pools p ON p.task_id = s.task_id AND p.policy = tr.policy
WHERE s.seed_id NOT IN (SELECT seed_id FROM used WHERE seed_id IS NOT NULL)
  AND ($policy IS NULL OR tr.policy = $policy)
ORDER BY nth, CASE p.pool WHEN 'monitoring' THEN 0 WHEN 'active' THEN 1 WHEN 'mastered' THEN 2 ELSE 1 END, s.seed_id
"""


def pending_seeds(lake: Lake, sandbox: str, policy: str | None = None) -> list[dict[str, Any]]:
    """Unused seeds of verified tasks, one per task before a second of any, the struggling pools first."""
    if not lake.files("failure_seeds") or not lake.files("tasks"):
        return []
    con = lake.connect()
    try:
        cur = con.execute(_SEEDS, {"sandbox": sandbox, "policy": policy})
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()


def targeted_candidates(lake: Lake, sandbox: str, count: int, policy: str | None = None) -> tuple[list[TaskSpec], Counter]:
    """Up to `count` new candidates from the pending seeds, and how each seed fared (strategy or why not)."""
    seeds = pending_seeds(lake, sandbox, policy)
    verified = [TaskSpec.from_row(r) for r in lake.query(
        "SELECT * FROM tasks WHERE status = 'verified' AND sandbox = ? ORDER BY task_id", [sandbox])]
    by_id = {t.task_id: t for t in verified}
    mastered = _mastered(lake, sandbox)
    known = known_task_ids(lake, sandbox)
    out: dict[str, TaskSpec] = {}
    tally: Counter = Counter()
    for seed in seeds:
        if len(out) >= count:
            break
        parent = by_id.get(seed["task_id"])
        if parent is None:
            continue
        rng = random.Random(int(hashlib.sha256(seed["seed_id"].encode()).hexdigest()[:12], 16))
        strategy = STRATEGY_BY_POOL.get(seed["pool"] or "", "variant")
        spec = None
        if strategy == "subgoal":
            spec = subgoal(parent)
        elif strategy == "chain":
            spec = chain(parent, [by_id[i] for i in mastered if i in by_id] + verified, rng)
        if spec is None:  # nothing smaller or longer to make from this one: a variant still targets it
            strategy, spec = "variant", variant(parent, verified, rng, known | set(out))
        if spec is None:
            tally["no_candidate"] += 1
            continue
        spec.seed = rng.randrange(10**9)
        spec.provenance = {
            "agent": AGENT, "model": None, "synthesiser_version": VERSION, "strategy": strategy,
            "parent_task_id": parent.task_id, "parent_agent": parent.provenance.get("agent"), "seed_id": seed["seed_id"],
            "failure_kind": seed["kind"], "failure_reason": seed["reason"], "parent_pool": seed["pool"],
            "policy": seed["policy"], **spec.provenance,
        }
        if spec.task_id in known or spec.task_id in out:
            tally["already_known"] += 1
            continue
        out[spec.task_id] = spec
        tally[strategy] += 1
    return list(out.values()), tally


def plan_from_failures(manifest: SandboxManifest, lake: Lake, count: int = 10, policy: str | None = None) -> SynthesisPlan:
    """Targeted candidates for one sandbox from its unused failure seeds, before the gate (which
    `synthesis.gate_batch` runs, batch by batch, like any other pairs' under the agent name AGENT)."""
    summary = SandboxSummary(manifest.name)
    new, tally = targeted_candidates(lake, manifest.name, count, policy)
    summary.candidates = len(new)
    summary.notes.append(f"{manifest.name}: from failure seeds: " + (", ".join(f"{k} {v}" for k, v in sorted(tally.items())) or "no unused seeds"))
    log.info(summary.notes[-1])
    if new:
        summary.source_commit = new[0].source_commit
    return SynthesisPlan(summary, new, stored_skills(lake, manifest.name) if new else {})


def synthesize_from_failures(manifest: SandboxManifest, lake: Lake, run_id: str, count: int = 10,
                             policy: str | None = None, progress: Any = None, workers: int = 1) -> SandboxSummary:
    """Targeted candidates for one sandbox, through the validation gate, landed like any other pairs (in this process)."""
    plan = plan_from_failures(manifest, lake, count, policy)
    summary, new = plan.summary, plan.new
    if not new:
        return summary
    bar = progress.add_task(f"{manifest.name}: validating targeted tasks", total=len(new)) if progress else None
    try:
        results = gate_batch(manifest, lake, run_id, AGENT, plan.skills, new, 0, workers,
                             on_result=(lambda _s, _r: progress.advance(bar)) if progress else None)
    except SandboxError as exc:
        summary.error = str(exc)
        return summary
    count_gated(summary, results)
    log.info("%s: %d of %d targeted candidates verified", manifest.name, summary.verified, len(new))
    return summary


# ---- the three strategies ------------------------------------------------------------------------------------


def variant(parent: TaskSpec, siblings: list[TaskSpec], rng: random.Random, known: set[str] | None = None,
            attempts: int = 4) -> TaskSpec | None:
    """The parent with other values for the parameters its request names and its verifier checks: a
    sibling's value at the same place first, the value with its number redrawn when that task exists."""
    checked = list(_strings(parent.verifier))
    everything = json.dumps(parent.to_json(), ensure_ascii=False)
    swappable = [(path, value) for path, value in _leaves(parent.params)
                 if len(value) >= 3 and value in parent.instruction and any(value in c for c in checked)]
    known = known or set()
    spec = None
    for attempt in range(attempts):
        subs: dict[str, str] = {}
        for path, value in swappable:
            if value in subs:
                continue
            options = sorted({v for s in siblings if s.family == parent.family and s.task_id != parent.task_id
                              for p, v in _leaves(s.params) if _shape(p) == _shape(path) and v != value
                              and v not in everything and v not in subs.values()})
            new = rng.choice(options) if options and attempt % 2 == 0 else _renumber(value, rng, everything)
            if new:
                subs[value] = new
        if not subs:
            return None
        swap = _substituter(subs)
        spec = TaskSpec(
            parent.sandbox, parent.source_commit, parent.family, parent.app_area, swap(parent.instruction),
            _map(parent.params, swap), parent.seed, _map(parent.injection, swap), _map(parent.verifier, swap),
            _map(parent.reference, swap), {"substituted": subs},
        )
        if spec.task_id not in known:
            return spec
    return spec  # every draw exists already: the caller counts it as known


def subgoal(parent: TaskSpec) -> TaskSpec | None:
    """The first step of a multi-step parent, when its verifier, reference and request split alike."""
    steps = _steps(parent)
    if steps is None or len(steps) < 2:
        return None
    instruction, actions, checks = steps[0]
    verifier = checks[0] if len(checks) == 1 else {"template": "all_of", "params": {"checks": checks}}
    return TaskSpec(
        parent.sandbox, parent.source_commit, "subgoal", parent.app_area, instruction,
        {"subgoal_of": parent.task_id, "step": 1}, parent.seed, parent.injection, verifier, actions,
        {"steps_of_parent": len(steps)},
    )


def chain(parent: TaskSpec, partners: list[TaskSpec], rng: random.Random) -> TaskSpec | None:
    """The parent then a partner task, one request: longer work in a family the policy has mastered."""
    if _asks_answer(parent):
        return None
    fits = [u for u in partners if u.task_id != parent.task_id and u.sandbox == parent.sandbox
            and not (parent.injection and u.injection) and not _asks_answer(u) and u.family != "chain"]
    if not fits:
        return None
    same = [u for u in fits if u.family == parent.family]
    partner = rng.choice(same or fits)
    first = [a for a in parent.reference if a.get("action") != "terminate"]
    second = [a for a in partner.reference if a.get("action") != "terminate"]
    gotos = [a for a in first if a.get("action") == "goto"]
    if second and first and second[0] == first[0] and len(gotos) == 1 and gotos[0] is first[0]:
        second = second[1:]  # still on that page: reloading it could drop page state
    checks = _checks(parent.verifier) + _checks(partner.verifier)
    parts = [parent.instruction, partner.instruction]
    return TaskSpec(
        parent.sandbox, parent.source_commit, "chain", parent.app_area, _join(parts),
        {"chain": [parent.task_id, partner.task_id]}, parent.seed, parent.injection + partner.injection,
        {"template": "all_of", "params": {"checks": checks}}, first + second,
        {"partner_task_id": partner.task_id, "steps": [
            {"instruction": parts[0], "actions": len(first), "checks": len(_checks(parent.verifier))},
            {"instruction": parts[1], "actions": len(second), "checks": len(_checks(partner.verifier))}]},
    )


# ---- pieces ------------------------------------------------------------------------------------------------


def _mastered(lake: Lake, sandbox: str) -> list[str]:
    if not lake.files("pools"):
        return []
    return [r["task_id"] for r in lake.query(
        "SELECT DISTINCT task_id FROM pools WHERE pool = 'mastered' AND sandbox = ? ORDER BY 1", [sandbox])]


def _steps(parent: TaskSpec) -> list[tuple[str, list[dict], list[dict]]] | None:
    """(request, actions, checks) per step: as a chain recorded them, else split at each `goto` and at
    "and then" in the request — used only when actions, checks and request give the same number of steps."""
    checks = _checks(parent.verifier) if parent.verifier.get("template") == "all_of" else []
    actions = [a for a in parent.reference if a.get("action") != "terminate"]
    recorded = parent.provenance.get("steps")
    if recorded:
        out, a, c = [], 0, 0
        for s in recorded:
            out.append((_sentence(s["instruction"]), actions[a:a + s["actions"]], checks[c:c + s["checks"]]))
            a, c = a + s["actions"], c + s["checks"]
        return out if c == len(checks) and all(x[1] and x[2] for x in out) else None
    starts = [i for i, x in enumerate(actions) if x.get("action") == "goto"]
    if not starts or starts[0] != 0:
        return None
    segments = [actions[i:j] for i, j in zip(starts, starts[1:] + [len(actions)])]
    parts = [p for p in _THEN.split(parent.instruction) if p.strip()]
    if not (len(segments) == len(checks) == len(parts)):
        return None
    return [(_sentence(p), s, [c]) for p, s, c in zip(parts, segments, checks)]


def _checks(verifier: dict[str, Any]) -> list[dict[str, Any]]:
    if verifier.get("template") == "all_of":
        return [c for sub in verifier["params"]["checks"] for c in _checks(sub)]
    return [verifier]


def _asks_answer(task: TaskSpec) -> bool:
    return any(c.get("template") == "answer_equals" for c in _checks(task.verifier))


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".?!, ")
    text = text[:1].upper() + text[1:]
    return text + ("?" if re.match(r"(could|can|would|will) you\b", text, re.IGNORECASE) else ".")


_POLITE = re.compile(r"^(?:i need you to|could you|can you|would you|please|go ahead and)\s+", re.IGNORECASE)


def _join(parts: list[str]) -> str:
    head = parts[0].strip().rstrip(".?! ")
    tail = _POLITE.sub("", parts[1].strip()).rstrip(".?! ")
    return _sentence(f"{head}, and then {tail[:1].lower() + tail[1:]}")


def _leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _leaves(value[k], (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    elif isinstance(value, str):
        yield path, value


def _shape(path: tuple) -> tuple:
    """A parameter's place without list positions: the `title` of any step is a sibling's `title`."""
    return tuple("[]" if isinstance(p, int) else p for p in path)


def _strings(value: Any) -> Iterator[str]:
    for _, v in _leaves(value):
        yield v


def _map(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map(v, fn) for v in value]
    return fn(value) if isinstance(value, str) else value


def _substituter(subs: dict[str, str]) -> Callable[[str], str]:
    pattern = re.compile("|".join(re.escape(k) for k in sorted(subs, key=len, reverse=True)))
    return lambda text: pattern.sub(lambda m: subs[m.group(0)], text)


def _renumber(value: str, rng: random.Random, taken: str) -> str | None:
    """The same text with its last number redrawn (same width), when it has one."""
    found = list(re.finditer(r"\d+", value))
    if not found:
        return None
    m = found[-1]
    width = len(m.group(0))
    for _ in range(20):
        n = str(rng.randrange(10 ** (width - 1) if width > 1 else 0, 10**width))
        new = value[: m.start()] + n + value[m.end():]
        if n != m.group(0) and new not in taken:
            return new
    return None
