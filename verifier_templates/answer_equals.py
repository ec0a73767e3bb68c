"""The agent's final answer equals the expected one (information-retrieval tasks)."""

from __future__ import annotations

from typing import Any

from verifier_templates.base import Evidence, Probe, Verdict, normalise

NAME = "answer_equals"
HOLDS_INITIALLY = False


def probes(params: dict[str, Any]) -> list[Probe]:
    return [Probe("answer", "answer")]


def judge(evidence: Evidence, params: dict[str, Any]) -> Verdict:
    answer = evidence.final.get("answer")
    if answer is None or str(answer).strip() == "":
        return Verdict(False, "no answer given")
    accepted = [params["answer"], *params.get("also_accept", [])]
    if any(normalise(answer) == normalise(a) for a in accepted):
        return Verdict(True, f"answer {answer!r} equals {params['answer']!r}")
    return Verdict(False, f"answer {answer!r} differs from {params['answer']!r}")
