"""The validation gate: every candidate pair, whatever wrote it, proves itself in a live sandbox.

reset + inject; the app must show every injected record; the verifier must not pass on the initial
state; the reference solution, replayed through the real driver, must make it pass, again on a repeat;
the reference with its last actions dropped must not; nor may the reference with any value the request
names replaced by another, or acting on another record than the named one; and the reference followed
by harmless navigation must still pass (`counterfactual.py`). Anything else is a rejection with a
reason code, recorded as rows. A sandbox that times out or dies is `sandbox_error`, never a verdict.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from flows.task_synthesis import counterfactual, injection_check
from flows.task_synthesis.task_spec import TaskSpec
from flywheel.isolation.generated import GeneratedCodeFailed
from sandboxes.actions import parse_actions
from sandboxes.app_process import SandboxError
from sandboxes.driver import Driver
from sandboxes.skills import InjectionError, Skill
from verifier_templates import get_template
from verifier_templates.base import Evidence, Probe

REASONS = (
    "passes_initially",
    "fails_after_reference",
    "flaky",
    "passes_truncated",
    "inject_error",
    "probe_error",
    "bad_verifier",
    "bad_reference",
    "timeout",  # older rows only: a replay over its time limit is now sandbox_error (load is no verdict)
    "sandbox_error",
    "unsafe_code",  # generated code (a code verifier, a python skill) tried something forbidden or ran out of memory
    "code_timeout",  # generated code did not finish in time
    "inject_no_effect",  # after injection the app does not show a record the injection claims to have put there
    "underspecified_verifier",  # passes with a value the request names replaced by another of the same type
    "passes_on_other_record",  # passes when the reference acts on another record than the one the request names
    "brittle_verifier",  # fails when the reference is followed by harmless unrelated navigation
)


@dataclass
class Check:
    check: str  # initial | injected | reference | repeat | truncated | counterfactual | other_record | unrelated_navigation
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
class _Replay:
    """The probes observed in one episode: before acting, after all actions, and the optional extras."""

    initial: dict[str, Any]
    final: dict[str, Any] = field(default_factory=dict)
    midway: dict[str, Any] | None = None  # after the first k actions (the truncated reference)
    midway_s: float = 0.0
    after: dict[str, Any] | None = None  # after further actions (the navigation detour)
    after_s: float = 0.0
    after_error: _Rejected | None = None


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
    """`time_limit_s` bounds each replay, generously; since each action is bounded (by the driver's cap, a wait
    by its schema), only a slow machine meets it: that is `sandbox_error`, never a verdict. `counterfactuals` runs the near-miss replays, `check_injection`
    the injected stage (both off: the gate as it was before them, for cost baselines)."""

    def __init__(self, driver: Driver, skills: dict[str, Skill], repeats: int = 1, truncate: int = 1,
                 time_limit_s: float = 300.0, counterfactuals: bool = True, check_injection: bool = True) -> None:
        self.driver = driver
        self.skills = skills
        self.repeats = repeats
        self.truncate = truncate
        self.time_limit_s = time_limit_s
        self.counterfactuals = counterfactuals
        self.check_injection = check_injection

    def validate(self, spec: TaskSpec) -> GateResult:
        """The gate's verdict; a pair whose sandbox failed under it (twice-timed-out pages, a dead app) is
        gated once more from the start, since a sandbox_error says nothing of the pair and a loaded machine
        must not change what the gate says. A second sandbox_error stands."""
        result = self._validate(spec)
        if result.reason == "sandbox_error":
            result = self._validate(spec)
        return result

    def _validate(self, spec: TaskSpec) -> GateResult:
        """Episodes are shared where one is a prefix of another: the truncated state is observed inside the
        reference episode (before its last actions), and the navigation detour continues the repeat episode.
        Each check is judged in the same order as if it had its own episode, so verdicts are the same."""
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
            cut = max(0, len(actions) - self.truncate) if self.truncate else None

            ref_run = self._episode(spec, probes, actions, checks, "reference", check_injection=self.check_injection,
                                    observe_after=cut)
            initial, final = ref_run.initial, ref_run.final
            first = self._judge(template, params, initial, initial, "initial", expected=False)
            checks.insert(sum(c.check == "injected" for c in checks), first)  # after the injection check
            if first.passed and not template.HOLDS_INITIALLY:
                raise _Rejected("passes_initially", f"verifier passes before any action: {first.verdict_reason}")
            ref = self._judge(template, params, initial, final, "reference", expected=True)
            checks.append(ref)
            if not ref.passed:
                raise _Rejected("fails_after_reference", f"verifier fails after the reference solution: {ref.verdict_reason}")
            detour = self._detour() if self.counterfactuals else None
            detour_run = None
            for k in range(self.repeats):
                last = k == self.repeats - 1
                run = self._episode(spec, probes, actions, checks, "repeat", then=detour if last else None)
                detour_run = run if last and detour else None
                rep = self._judge(template, params, run.initial, run.final, "repeat", expected=True)
                checks.append(rep)
                if not rep.passed:
                    raise _Rejected("flaky", f"same reference, different outcome on a repeat: {rep.verdict_reason}")
            if cut is not None:
                trunc = self._judge(template, params, ref_run.initial, ref_run.midway, "truncated", expected=False)
                trunc.duration_s = ref_run.midway_s
                checks.append(trunc)
                if trunc.passed:
                    raise _Rejected(
                        "passes_truncated", f"verifier passes with the last {self.truncate} action(s) dropped: {trunc.verdict_reason}"
                    )
            if self.counterfactuals:
                self._near_misses(spec, template, params, probes, checks, detour, detour_run)
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

    def _detour(self) -> list[dict[str, Any]] | None:
        """Harmless unrelated navigation (home page, then back), where the app keeps its state across it."""
        manifest = getattr(self.driver, "manifest", None)
        navigable = (manifest is not None and manifest.sandbox.kind in ("web", "desktop") and manifest.start is not None
                     and manifest.state.kind != "js")  # a js-state page keeps nothing across a reload, by design
        return counterfactual.detour(manifest.start.home_path) if navigable else None

    def _near_misses(self, spec: TaskSpec, template, params, probes, checks: list[Check], detour: list[dict[str, Any]] | None,
                     detour_run: _Replay | None) -> None:
        """Counterfactual replays: one per value the request names, one per injected record the reference
        acts on; then the navigation detour (run at the end of the repeat episode when there was one)."""
        for variant in counterfactual.variants(spec.instruction, spec.reference, spec.injection):
            try:
                actions = parse_actions(variant.reference)
            except ValidationError:
                continue  # a value that does not fit the action (cannot happen for text) is not a near miss
            try:
                outcome = self._episode(spec, probes, actions, checks, variant.stage, allow_action_errors=True,
                                        injection=variant.injection, swap_option_at=variant.other_option_at)
            except _Rejected as rej:
                if rej.reason == "sandbox_error":
                    raise
                # the variant could not be set up (a twin record the app refuses): not evidence either way
                checks.append(Check(variant.stage, None, variant.expect_pass, f"not run: {rej.detail}", {"changed": variant.describe}))
                continue
            if outcome is None:  # e.g. the select's chosen option is not one the request names
                continue
            check = self._judge(template, params, outcome.initial, outcome.final, variant.stage, expected=variant.expect_pass)
            check.evidence["changed"] = self._swapped or variant.describe
            checks.append(check)
            if check.passed != variant.expect_pass:
                what = "fails" if variant.expect_pass else "still passes"
                raise _Rejected(variant.reason, f"verifier {what} when {check.evidence['changed']}: {check.verdict_reason}")
        if detour is None:
            return
        if detour_run is None:  # no repeat episode to continue: the detour gets its own
            detour_run = self._episode(spec, probes, parse_actions(spec.reference), checks, "unrelated_navigation",
                                       then=detour)
        if detour_run.after_error is not None:
            raise detour_run.after_error
        check = self._judge(template, params, detour_run.initial, detour_run.after, "unrelated_navigation", expected=True)
        check.duration_s = detour_run.after_s
        check.evidence["changed"] = f"the reference, then {json.dumps(detour)}"
        checks.append(check)
        if not check.passed:
            raise _Rejected("brittle_verifier", f"verifier fails when {check.evidence['changed']}: {check.verdict_reason}")

    def _episode(self, spec: TaskSpec, probes, actions, checks: list[Check], label: str, allow_action_errors: bool = False,
                 check_injection: bool = False, injection: list[dict[str, Any]] | None = None,
                 swap_option_at: int | None = None, observe_after: int | None = None,
                 then: list[dict[str, Any]] | None = None) -> _Replay | None:
        """reset, inject, observe, act, observe. `observe_after` k also observes after the first k actions
        (a truncated replay is a prefix of this one); `then` continues after the final observation with
        more actions (errors allowed) and observes again; a sandbox failure there is kept for its check."""
        start = time.monotonic()
        self._deadline = start + self.time_limit_s
        self._swapped = None
        try:
            self.driver.reset(new_context=label == "reference")  # one browser context per task
        except SandboxError as exc:
            raise _Rejected("sandbox_error", str(exc)) from None
        claims: list[injection_check.Claim] = []
        for k, inj in enumerate(spec.injection if injection is None else injection):
            skill = self.skills.get(inj.get("skill", ""))
            if skill is None:
                raise _Rejected("inject_error", f"unknown skill {inj.get('skill')!r}")
            try:
                self.driver.inject(skill, inj.get("args", {}))
            except SandboxError as exc:
                raise _Rejected("sandbox_error", str(exc)) from None
            except InjectionError as exc:
                raise _Rejected(exc.reason, str(exc)) from None
            if check_injection:
                claims += injection_check.claims(skill, inj.get("args", {}), self._page_expression(), k, self._columns_of)
        if check_injection and claims:
            self._check_injected(claims, checks, time.monotonic() - start)
        run = _Replay(self._observe(probes))
        if observe_after == 0:
            run.midway, run.midway_s = run.initial, time.monotonic() - start
        for i, action in enumerate(actions):
            if i == swap_option_at:
                action = self._other_option(spec, action)
                if action is None:
                    return None
            self._act(action, i, label, allow_action_errors, checks, start)
            if observe_after == i + 1 and i + 1 < len(actions):
                run.midway, run.midway_s = self._observe(probes), time.monotonic() - start
        run.final = self._observe(probes)
        if observe_after is not None and observe_after >= len(actions):
            run.midway, run.midway_s = run.final, time.monotonic() - start
        self._last_duration = time.monotonic() - start
        if then:
            try:
                for j, action in enumerate(parse_actions(then)):
                    self._act(action, len(actions) + j, label, True, checks, start)
                run.after, run.after_s = self._observe(probes), time.monotonic() - start
            except _Rejected as rej:
                run.after_error = rej
        return run

    def _act(self, action, i: int, label: str, allow_errors: bool, checks: list[Check], start: float) -> None:
        if time.monotonic() > self._deadline:  # every action is bounded, so only a slow machine or app gets here
            raise _Rejected("sandbox_error", f"the {label} replay exceeded {self.time_limit_s:.0f}s; the machine or the "
                                             "app is too slow for this reference (a verdict must not depend on load)")
        try:
            result = self.driver.act(action)
        except SandboxError as exc:  # the sandbox timed out or died: never a verdict on the task
            raise _Rejected("sandbox_error", str(exc)) from None
        if not result.ok and not allow_errors:
            checks.append(Check(label, None, True, "", error=f"step {i + 1}: {result.error}", duration_s=time.monotonic() - start))
            raise _Rejected("fails_after_reference", f"reference step {i + 1} failed: {result.error}")

    def _other_option(self, spec: TaskSpec, action):
        """The select switched to another option read off the live page, when the request names the
        reference's option; None when it does not (then the select is not a named value)."""
        from sandboxes.actions import Select

        expression = counterfactual.options_expression(action.target.model_dump(exclude_none=True))
        try:
            options = self.driver.probe(Probe("options", "js", expression))
        except SandboxError as exc:
            raise _Rejected("sandbox_error", str(exc)) from None
        except Exception:
            return None  # a driver without page scripts: the select cannot be varied
        picked = counterfactual.other_option(options or [], action.model_dump(exclude_none=True))
        if picked is None or not counterfactual.names(spec.instruction, picked[1]):
            return None
        changed, text = picked
        self._swapped = f"the select {action.target.describe()} picks option value {changed['value']!r} instead of {text!r}"
        return Select.model_validate(changed)

    def _page_expression(self) -> str | None:
        manifest = getattr(self.driver, "manifest", None)
        return manifest.state.page_expression() if manifest is not None else None

    def _columns_of(self, table: str) -> set[str]:
        try:
            rows = self.driver.probe(Probe("columns", "sql", "SELECT name FROM pragma_table_info(?)", (table,), "rows"))
        except SandboxError as exc:
            raise _Rejected("sandbox_error", str(exc)) from None
        except Exception:
            return set()
        return {r[0] for r in rows or []}

    def _check_injected(self, claims: list[injection_check.Claim], checks: list[Check], duration_s: float) -> None:
        observed = self._observe([c.probe for c in claims])
        missing = [m for c in claims if (m := injection_check.unmet(c, observed[c.probe.name]))]
        reason = "; ".join(missing) if missing else f"the app shows all {len(claims)} injected claim(s)"
        checks.append(Check("injected", not missing, True, reason, {"claims": [c.describe for c in claims], "observed": observed},
                            duration_s=duration_s))
        if missing:
            raise _Rejected("inject_no_effect", f"injection did not take effect: {reason}")

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
