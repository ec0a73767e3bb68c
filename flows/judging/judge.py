"""AutoJudge: one verdict per trajectory (pass | failed | env_error) with every vote kept.

Voters: the task's verifier (on the evidence the rollout collected) always; N LLM judges when a
model is configured (they arrive with the LLM module). env_error trajectories are never `failed`:
the environment, not the policy, ended them, and they stay out of success-rate denominators.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from flywheel.isolation.generated import GeneratedCodeFailed
from lake import Lake, utcnow
from verifier_templates import get_template
from verifier_templates.base import Evidence

JUDGE_VERSION = "autojudge-1"

# What the environment, not the policy, did wrong: seen in step errors or on the last screen.
NETWORK_ERRORS = re.compile(r"net::ERR_|ECONNREFUSED|ECONNRESET|Target (page|closed)|has been closed|crashed|HTTP 50[234]", re.I)
BLOCKING_SCREENS = re.compile(
    r"captcha|verify (that )?you are (a )?human|are you a robot|session (has )?expired|please (log|sign) in again"
    r"|502 bad gateway|503 service unavailable|this site can.t be reached|err_connection",
    re.I,
)


def environment_signal(step_errors: list[str], last_screen_text: str | None) -> str | None:
    """Why the environment (not the policy) spoiled the episode, if it did: CAPTCHA, expired login, network."""
    for err in step_errors:
        if err and NETWORK_ERRORS.search(err):
            return f"network or browser fault: {err[:160]}"
    if last_screen_text:
        m = BLOCKING_SCREENS.search(last_screen_text)
        if m:
            return f"blocking screen on the last step ({m.group(0)!r})"
    return None


def judge_trajectory(
    trajectory: dict[str, Any], task: dict[str, Any], env_signal: str | None = None,
    llm_votes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The verifier always votes; LLM judges add votes; abstentions do not count; env_error wins."""
    votes: list[dict[str, Any]] = []
    if trajectory["ended"] == "env_error" or env_signal:
        verdict = "env_error"
        reason = trajectory["end_detail"] or env_signal or "environment failure"
        votes.append({"voter": "environment", "vote": "env_error", "reason": reason})
    else:
        verifier = json.loads(task["verifier_json"])
        evidence = json.loads(trajectory["evidence_json"] or "null")
        if evidence is None:
            votes.append({"voter": "verifier", "vote": "failed", "reason": "no evidence was collected"})
        else:
            try:
                v = get_template(verifier["template"]).judge(Evidence.from_json(evidence), verifier["params"])
                votes.append({"voter": f"verifier:{verifier['template']}", "vote": "pass" if v.passed else "failed", "reason": v.reason})
            except GeneratedCodeFailed as exc:  # a generated verifier misbehaved: its vote says nothing of the policy
                votes.append({"voter": f"verifier:{verifier['template']}", "vote": "abstain", "reason": f"verifier_error: {exc}"})
        votes.extend(llm_votes or [])
        counted = [v for v in votes if v["vote"] != "abstain"]
        if not counted:  # nobody could judge: never held against the policy
            counted = [{"voter": "environment", "vote": "env_error", "reason": votes[0]["reason"]}]
            votes.extend(counted)
        tally = Counter(v["vote"] for v in counted)
        top = tally.most_common()
        # a tie keeps the verifier's vote: it reads the app's state, the judges read pictures of it
        verdict = counted[0]["vote"] if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]
        reason = next(v["reason"] for v in counted if v["vote"] == verdict)
    counted = [v for v in votes if v["vote"] != "abstain"]
    agreement = sum(v["vote"] == verdict for v in counted) / len(counted)
    return {
        "trajectory_id": trajectory["trajectory_id"], "task_id": trajectory["task_id"], "sandbox": trajectory["sandbox"],
        "policy": trajectory["policy"], "verdict": verdict, "reason": reason, "votes_json": json.dumps(votes),
        "agreement": agreement, "judge_version": JUDGE_VERSION,
    }


def _llm_client(lake: Lake, run_id: str):
    from flywheel import llm

    return llm.LLMClient(lake=lake, run_id=run_id) if llm.configured() else None


def pending_trajectories(lake: Lake) -> list[dict[str, Any]]:
    """Trajectories with no verdict from this judge version yet, with their task's verifier and instruction."""
    if not lake.files("trajectories"):
        return []
    has_verdicts = bool(lake.files("verdicts"))
    return lake.query(
        "SELECT t.*, k.verifier_json, k.instruction FROM trajectories t JOIN tasks_history k ON k.task_id = t.task_id "
        "QUALIFY row_number() OVER (PARTITION BY t.trajectory_id ORDER BY k.recorded_at DESC) = 1"
        + (f" AND t.trajectory_id NOT IN (SELECT trajectory_id FROM verdicts WHERE judge_version = '{JUDGE_VERSION}')"
           if has_verdicts else "")
    )


def judge_batch(lake: Lake, run_id: str, rows: list[dict[str, Any]], batch: str = "judge", llm_judges: int = 5) -> Counter:
    """Verdicts for these trajectories, landed as the batch's own rows (a retried batch replaces them)."""
    signals = _environment_signals(lake, [r["trajectory_id"] for r in rows])
    client = _llm_client(lake, run_id)
    now = utcnow()
    verdicts = []
    for r in rows:
        votes = None
        if client is not None and r["ended"] != "env_error" and not signals.get(r["trajectory_id"]):
            from flows.judging.llm_judges import lake_blob_reader, llm_votes

            steps = lake.query("SELECT * FROM steps WHERE trajectory_id = ? ORDER BY step_index", [r["trajectory_id"]])
            votes = llm_votes(client, r, r, steps, lake_blob_reader(lake), n=llm_judges)
        verdicts.append(judge_trajectory(r, r, signals.get(r["trajectory_id"]), votes) | {"run_id": run_id, "recorded_at": now})
    if verdicts:
        lake.write("verdicts", verdicts, run_id, batch)
    if client is not None:
        client.flush(batch=f"{batch}-llm")
    return Counter(v["verdict"] for v in verdicts)


def judge_pending(lake: Lake, run_id: str, llm_judges: int = 5) -> Counter:
    """Judge every trajectory that has no verdict from this judge version yet (re-running adds nothing)."""
    rows = pending_trajectories(lake)
    return judge_batch(lake, run_id, rows, "judge", llm_judges) if rows else Counter()


def _environment_signals(lake: Lake, trajectory_ids: list[str]) -> dict[str, str]:
    if not trajectory_ids or not lake.files("steps"):
        return {}
    steps = lake.query(
        "SELECT trajectory_id, list(error ORDER BY step_index) AS errors, arg_max(ui_tree_sha, step_index) AS last_tree "
        "FROM steps WHERE trajectory_id IN (SELECT unnest(?)) GROUP BY 1",
        [trajectory_ids],
    )
    out = {}
    for s in steps:
        text = lake.read_blob(s["last_tree"]).decode(errors="replace") if s["last_tree"] else None
        signal = environment_signal([e for e in s["errors"] if e], text)
        if signal:
            out[s["trajectory_id"]] = signal
    return out
