"""Policies that act in a sandbox: `replay` (the reference solution), `scripted-noisy`, a clearly
named simulator of an imperfect agent that follows the reference with injected, recorded faults, and
`simulated-learner`, the same simulator whose fault rates fall for the task families it was "trained"
on (the families in the lake's published exports) — a stand-in for training, so a whole flywheel turn
can be shown offline. Neither simulator is a model."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.actions import Action, CallUser, Click, Goto, Terminate, parse_actions
from sandboxes.driver import Observation

if TYPE_CHECKING:
    from lake import Lake

POLICIES = ("replay", "scripted-noisy", "simulated-learner", "llm")


@dataclass
class PolicyTurn:
    raw_output: str  # what the model (or simulator) said, kept verbatim
    actions: list[Action]
    faults: list[str] = field(default_factory=list)  # faults injected on purpose in this turn


class Policy(Protocol):
    name: str
    model: str | None

    def start(self, task: TaskSpec, episode: int) -> None: ...

    def next_turn(self, observation: Observation) -> PolicyTurn: ...


def episode_rng(task_id: str, episode: int, salt: str) -> random.Random:
    digest = hashlib.sha256(f"{salt}|{task_id}|{episode}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _raw(actions: list[Action]) -> str:
    return json.dumps([a.model_dump(exclude_none=True) for a in actions])


class ReplayPolicy:
    """The task's reference solution, one action per turn, then terminate."""

    name = "replay"
    model = None

    def start(self, task: TaskSpec, episode: int) -> None:
        self._todo = parse_actions(task.reference)
        if not self._todo or not isinstance(self._todo[-1], Terminate):
            self._todo.append(Terminate(status="success"))

    def next_turn(self, observation: Observation) -> PolicyTurn:
        action = self._todo.pop(0) if self._todo else Terminate(status="success")
        return PolicyTurn(_raw([action]), [action])


@dataclass
class NoiseRates:
    loop: float = 0.15  # repeat the last action several times (a repetition loop)
    bad_args: float = 0.15  # click on a point where nothing is (a wrong argument)
    premature: float = 0.10  # give up half-way (premature termination)
    unconfirmed: float = 0.5  # do a sensitive action without asking the user first
    overcautious: float = 0.05  # ask the user when nothing sensitive is pending

    @classmethod
    def parse(cls, text: str | None) -> NoiseRates:
        if not text:
            return cls()
        values: dict[str, Any] = {}
        for part in text.split(","):
            key, _, value = part.partition("=")
            if key.strip() not in cls.__dataclass_fields__:
                raise ValueError(f"unknown noise kind {key!r}; use {', '.join(cls.__dataclass_fields__)}")
            values[key.strip()] = float(value)
        return cls(**values)


class ScriptedNoisyPolicy:
    """Simulates an imperfect agent so the flywheel can be exercised and measured offline.
    Every fault it injects is recorded per step, as ground truth for failure mining."""

    name = "scripted-noisy"
    model = None

    def __init__(self, rates: NoiseRates | None = None, sensitive_kind: Callable[[str], str | None] | None = None) -> None:
        self.rates = rates or NoiseRates()
        self.sensitive_kind = sensitive_kind or (lambda name: None)  # the sandbox manifest's declaration

    def start(self, task: TaskSpec, episode: int) -> None:
        self._rng = episode_rng(task.task_id, episode, self.name)
        self._todo = self._with_confirmations(parse_actions(task.reference))
        self._half = max(1, len(self._todo) // 2)
        self._done = 0
        self._last: Action | None = None
        self._looping = 0
        self._stop_early = self._rng.random() < self.rates.premature
        self._unconfirmed = False

    def _kind(self, action: Action) -> str | None:
        if isinstance(action, Click) and action.target and action.target.name:
            return self.sensitive_kind(action.target.name)
        return None

    def _with_confirmations(self, actions: list[Action]) -> list[Action]:
        """The careful plan: every sensitive action right after a call_user (the reference may have it)."""
        out: list[Action] = []
        for a in actions:
            kind = self._kind(a)
            if kind and not (out and isinstance(out[-1], CallUser)):
                out.append(CallUser(reason=f"This will {kind}: {a.target.name}. Shall I go ahead?"))
            out.append(a)
        return out

    def next_turn(self, observation: Observation) -> PolicyTurn:
        rng = self._rng
        if self._looping:
            self._looping -= 1
            return PolicyTurn(_raw([self._last]), [self._last], ["loop"])
        if self._stop_early and self._done >= self._half:
            action = Terminate(status="success")
            self._todo = []
            return PolicyTurn(_raw([action]), [action], ["premature"])
        if not self._todo:
            action = Terminate(status="success")
            return PolicyTurn(_raw([action]), [action])
        nxt = self._todo[0]
        confirming = isinstance(nxt, CallUser) and len(self._todo) > 1 and self._kind(self._todo[1])
        if confirming and rng.random() < self.rates.unconfirmed:
            self._todo.pop(0)  # skip the confirmation: the sensitive action follows unasked
            self._unconfirmed = True
            nxt = self._todo[0]
        kind = self._kind(nxt)
        plain = not kind and not isinstance(nxt, (CallUser, Goto, Terminate))
        if plain and rng.random() < self.rates.overcautious:
            ask = CallUser(reason="Is it all right if I continue?")
            return PolicyTurn(_raw([ask]), [ask], ["overcautious"])
        if plain and rng.random() < self.rates.bad_args:
            action = Click(x=rng.randint(900, 999), y=rng.randint(960, 999))  # the empty bottom-right corner
            return PolicyTurn(_raw([action]), [action], ["bad_args"])
        action = self._todo.pop(0)
        self._done += 1
        self._last = action
        faults = []
        if kind and self._unconfirmed:
            faults.append("unconfirmed_sensitive")
            self._unconfirmed = False
        elif plain and rng.random() < self.rates.loop:
            self._looping = rng.randint(2, 3)
        return PolicyTurn(_raw([action]), [action], faults)


class SimulatedLearnerPolicy(ScriptedNoisyPolicy):
    """A SIMULATOR standing in for a policy that is retrained on each export: scripted-noisy, with every
    fault rate multiplied by `decay` once per published export that held passing data of the task's
    (sandbox, family). It learns nothing; it lets the flywheel's loop be run and measured offline."""

    name = "simulated-learner"
    decay = 0.5
    # an untrained learner errs more than scripted-noisy's defaults, so there is room to improve
    UNTRAINED = NoiseRates(loop=0.3, bad_args=0.3, premature=0.25, unconfirmed=0.6, overcautious=0.1)

    def __init__(self, rates: NoiseRates | None = None, sensitive_kind: Callable[[str], str | None] | None = None,
                 exposure: dict[tuple[str, str], int] | None = None) -> None:
        super().__init__(rates or self.UNTRAINED, sensitive_kind)
        self.base = self.rates
        self.exposure = exposure or {}

    def start(self, task: TaskSpec, episode: int) -> None:
        factor = self.decay ** self.exposure.get((task.sandbox, task.family), 0)
        self.rates = replace(self.base, **{k: getattr(self.base, k) * factor for k in NoiseRates.__dataclass_fields__})
        super().start(task, episode)


def training_exposure(lake: Lake) -> dict[tuple[str, str], int]:
    """(sandbox, family) -> in how many published export versions it appears: what simulated-learner
    "was trained on". Read from the exports' own data files, so it is whatever export-sft published."""
    if not lake.files("exports"):
        return {}
    from pathlib import Path

    folders = [r["path"] for r in lake.query("SELECT DISTINCT path FROM exports WHERE gate_success AND path IS NOT NULL")]
    files = [str(Path(f) / "data" / "*.parquet") for f in folders if list((Path(f) / "data").glob("*.parquet"))]
    if not files:
        return {}
    rows = lake.query(
        "SELECT sandbox, family, count(DISTINCT regexp_extract(filename, '(.*)/data/', 1)) AS n "
        "FROM read_parquet(?, filename = true, union_by_name = true) WHERE verdict = 'pass' GROUP BY ALL",
        [files],
    )
    return {(r["sandbox"], r["family"]): int(r["n"]) for r in rows}


def get_policy(name: str, noise: str | None = None, sensitive_kind: Callable[[str], str | None] | None = None,
               exposure: dict[tuple[str, str], int] | None = None) -> Policy:
    if name == "replay":
        return ReplayPolicy()
    if name == "scripted-noisy":
        return ScriptedNoisyPolicy(NoiseRates.parse(noise), sensitive_kind)
    if name == "simulated-learner":
        return SimulatedLearnerPolicy(NoiseRates.parse(noise) if noise else None, sensitive_kind, exposure)
    raise ValueError(f"unknown policy {name!r}; available: {', '.join(POLICIES)}")
