"""Every sub-check passes (multi-step tasks): probes are namespaced per check, judges all must pass."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict

NAME = "all_of"
HOLDS_INITIALLY = False


def _sub(params: dict[str, Any]):
    from verifier_templates import get_template

    return [(i, get_template(c["template"]), c["params"]) for i, c in enumerate(params["checks"])]


def probes(params: dict[str, Any]) -> list[Probe]:
    out = []
    for i, tmpl, p in _sub(params):
        for pr in tmpl.probes(p):
            out.append(Probe(f"{i}.{pr.name}", pr.kind, pr.query, pr.args, pr.shape))
    return out


def _slice(values: dict[str, Any], i: int) -> dict[str, Any]:
    prefix = f"{i}."
    return {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    reasons = []
    for i, tmpl, p in _sub(params):
        v = tmpl.judge(Evidence(_slice(evidence.initial, i), _slice(evidence.final, i)), p)
        if not v.passed:
            return Verdict(False, f"step {i + 1} not done: {v.reason}")
        reasons.append(v.reason)
    return Verdict(True, "; ".join(reasons))
