"""The validation gate: every candidate pair, whatever wrote it, proves itself in a live sandbox.

reset + inject; the verifier must not pass on the initial state; the reference solution, replayed
through the real driver, must make it pass, again on a repeat; the reference with its last actions
dropped must not. Anything else is a rejection with a reason code, recorded as rows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from flows.task_synthesis.task_spec import TaskSpec
from flywheel.isolation.generated import GeneratedCodeFailed
from sandboxes.actions import parse_actions
from sandboxes.app_process import SandboxError
from sandboxes.driver import Driver
from sandboxes.skills import InjectionError, Skill
from verifier_templates import get_template
from verifier_templates.base import Evidence

REASONS = (
    "passes_initially",
    "fails_after_reference",
    "flaky",
    "passes_truncated",
    "inject_error",
    "probe_error",
    "bad_verifier",
    "bad_reference",
    "timeout",
    "sandbox_error",
    "unsafe_code",  # generated code (a code verifier, a python skill) tried something forbidden or ran out of memory
    "code_timeout",  # generated code did not finish in time
)


@dataclass
class Check:
    check: str  # initial | reference | repeat | truncated
    passed: bool | None
    expected: bool
    verdict_reason: str
    evidence: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.passed == self.expected


@dataclass
class GateResult:
    task_id: str
    status: str  # verified | rejected
    reason: str | None
    detail: str | None
    checks: list[Check]

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "status": self.status,
            "reason": self.reason,
            "detail": self.detail,
            "checks": [
                {"check": c.check, "passed": c.passed, "expected": c.expected, "reason": c.verdict_reason, "error": c.error}
                for c in self.checks
            ],
        }


class _Rejected(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        if reason not in REASONS:  # reason codes are a closed set that analysts group by
            raise ValueError(f"unknown rejection reason {reason!r}")
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class ValidationGate:
    def __init__(self, driver: Driver, skills: dict[str, Skill], repeats: int = 1, truncate: int = 1, time_limit_s: float = 120.0) -> None:
        self.driver = driver
        self.skills = skills
        self.repeats = repeats
        self.truncate = truncate
        self.time_limit_s = time_limit_s

    def validate(self, spec: TaskSpec) -> GateResult:
        checks: list[Check] = []
        self._deadline = time.monotonic() + self.time_limit_s
        try:
            template, params, probes = self._verifier(spec)
            try:
                actions = parse_actions(spec.reference)
            except ValidationError as exc:
                raise _Rejected("bad_reference", f"reference solution does not parse: {exc.errors()[0]['msg']}") from None
            if not actions:
                raise _Rejected("bad_reference", "empty reference solution")

            initial, final = self._episode(spec, probes, actions, checks, "reference")
            first = self._judge(template, params, initial, initial, "initial", expected=False)
            checks.insert(0, first)
            if first.passed and not template.HOLDS_INITIALLY:
                raise _Rejected("passes_initially", f"verifier passes before any action: {first.verdict_reason}")
            ref = self._judge(template, params, initial, final, "reference", expected=True)
            checks.append(ref)
            if not ref.passed:
                raise _Rejected("fails_after_reference", f"verifier fails after the reference solution: {ref.verdict_reason}")
            for _ in range(self.repeats):
                initial, final = self._episode(spec, probes, actions, checks, "repeat")
                rep = self._judge(template, params, initial, final, "repeat", expected=True)
                checks.append(rep)
                if not rep.passed:
                    raise _Rejected("flaky", f"same reference, different outcome on a repeat: {rep.verdict_reason}")
            if self.truncate:
                cut = actions[: max(0, len(actions) - self.truncate)]
                initial, final = self._episode(spec, probes, cut, checks, "truncated", allow_action_errors=True)
                trunc = self._judge(template, params, initial, final, "truncated", expected=False)
                checks.append(trunc)
                if trunc.passed:
                    raise _Rejected(
                        "passes_truncated", f"verifier passes with the last {self.truncate} action(s) dropped: {trunc.verdict_reason}"
                    )
        except _Rejected as rej:
            return GateResult(spec.task_id, "rejected", rej.reason, rej.detail, checks)
        return GateResult(spec.task_id, "verified", None, None, checks)

    # ---- pieces ---------------------------------------------------------------------------------
    def _verifier(self, spec: TaskSpec):
        try:
            template = get_template(spec.verifier["template"])
            params = spec.verifier["params"]
            return template, params, template.probes(params)
        except (KeyError, ValueError, TypeError) as exc:
            raise _Rejected("bad_verifier", f"verifier cannot be built: {exc}") from None

    def _episode(self, spec: TaskSpec, probes, actions, checks: list[Check], label: str, allow_action_errors: bool = False):
        start = time.monotonic()
        try:
            self.driver.reset(new_context=label == "reference")  # one browser context per task
        except SandboxError as exc:
            raise _Rejected("sandbox_error", str(exc)) from None
        for inj in spec.injection:
            skill = self.skills.get(inj.get("skill", ""))
            if skill is None:
                raise _Rejected("inject_error", f"unknown skill {inj.get('skill')!r}")
            try:
                self.driver.inject(skill, inj.get("args", {}))
            except InjectionError as exc:
                raise _Rejected(exc.reason, str(exc)) from None
        initial = self._observe(probes)
        for i, action in enumerate(actions):
            if time.monotonic() > self._deadline:
                raise _Rejected("timeout", f"gate exceeded {self.time_limit_s:.0f}s during the {label} replay")
            result = self.driver.act(action)
            if not result.ok and not allow_action_errors:
                checks.append(Check(label, None, True, "", error=f"step {i + 1}: {result.error}", duration_s=time.monotonic() - start))
                raise _Rejected("fails_after_reference", f"reference step {i + 1} failed: {result.error}")
        final = self._observe(probes)
        self._last_duration = time.monotonic() - start
        return initial, final

    def _observe(self, probes) -> dict[str, Any]:
        values = {}
        for p in probes:
            try:
                values[p.name] = self.driver.probe(p)
            except SandboxError as exc:
                raise _Rejected("sandbox_error", str(exc)) from None
            except Exception as exc:  # a probe that cannot run is a property of the verifier
                raise _Rejected("probe_error", f"probe {p.name} ({p.kind}) failed: {str(exc).splitlines()[0]}") from None
        return values

    def _judge(self, template, params, initial, final, label: str, expected: bool) -> Check:
        try:
            verdict = template.judge(Evidence(initial, final), params)
        except GeneratedCodeFailed as exc:  # a code verifier, run in isolation, misbehaved
            raise _Rejected(exc.gate_reason("bad_verifier"), str(exc)) from None
        return Check(
            label, verdict.passed, expected, verdict.reason, {"initial": initial, "final": final},
            duration_s=getattr(self, "_last_duration", 0.0),
        )
