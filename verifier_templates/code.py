"""A verifier the LLM agent wrote as code: probes are data (what to observe), the judge is Python that
runs through flywheel.isolation (never in this process) and turns the evidence JSON into a verdict."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict

NAME = "code"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    """params["probes"]: [{"name", "kind": sql|url|page_text|js|answer, "query", "args", "shape"}]."""
    out = []
    for p in params["probes"]:
        out.append(Probe(str(p["name"]), p["kind"], p.get("query", ""), tuple(p.get("args", ())), p.get("shape", "scalar")))
    if not out:
        raise ValueError("a code verifier must observe something: give it probes")
    return out


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    """params["code"] defines judge(evidence, params); params["params"] is passed to it. Raises
    GeneratedCodeFailed when the code misbehaves (the gate turns that into a reason code)."""
    from flywheel.isolation.generated import run_code_judge

    passed, reason = run_code_judge(params["code"], evidence.to_json(), params.get("params", {}))
    return Verdict(passed, reason)
