"""Small synthetic lakes that follow the real schemas, for the export tests (no browser needed)."""

from __future__ import annotations

import datetime as dt
import io
import json

from lake import Lake

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
URL = "http://shop.local/"  # a canonical origin, as drivers record them


def png(seed: int, w: int = 48, h: int = 30) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), ((seed * 37) % 256, (seed * 91) % 256, (seed * 13) % 256)).save(buf, format="PNG")
    return buf.getvalue()


def click(name: str, role: str = "button") -> dict:
    return {"action": "left_click", "target": {"role": role, "name": name}}


def type_(text: str, label: str = "Email") -> dict:
    return {"action": "type", "text": text, "target": {"label": label}}


DONE = {"action": "terminate", "status": "success"}
BASIC = [[{"action": "goto", "url": "/orders"}], [type_("Hello")], [click("Save")], [DONE]]


def add_task(lake: Lake, task_id: str, *, sandbox: str = "shop", family: str = "create", difficulty: str = "easy",
             instruction: str = "Add an order for Ada", status: str = "verified", version: int = 1) -> None:
    lake.write("tasks", [{
        "task_id": task_id, "version": version, "sandbox": sandbox, "source_commit": f"commit-{sandbox}",
        "family": family, "app_area": "orders", "difficulty": difficulty, "instruction": instruction,
        "status": status, "seed": 0, "params_json": "{}", "injection_json": "[]",
        "verifier_json": json.dumps({"template": "row_exists", "params": {}}), "reference_json": "[]",
        "provenance_json": json.dumps({"agent": "static", "model": None, "synthesiser_version": "static-1"}),
        "run_id": "synth", "recorded_at": T0,
    }], "synth", f"{task_id}-{version}-{status}")


def add_trajectory(lake: Lake, tid: str, *, task_id: str = "task-a", sandbox: str = "shop", verdict: str | None = "pass",
                   ended: str = "terminated", turns: list[list[dict]] | None = None, screens: list[int] | None = None,
                   policy: str = "scripted-noisy", minutes: int = 0, rewards: bool = True, format_error_at: int | None = None,
                   image_every: int = 1, unlocated_at: int | None = None) -> None:
    turns = BASIC if turns is None else turns
    screens = list(range(len(turns))) if screens is None else screens
    when = T0 + dt.timedelta(minutes=minutes)
    steps = []
    for i, (actions, screen) in enumerate(zip(turns, screens)):
        sha = lake.put_blob(png(screen)) if i % image_every == 0 else None
        points = [[100 + 10 * i, 200] if a.get("target") and i != unlocated_at else None for a in actions]
        bad = i == format_error_at
        steps.append({
            "trajectory_id": tid, "step_index": i, "screenshot_sha": sha, "screen_width": 1280, "screen_height": 800,
            "ui_tree_sha": None, "url": URL + "page", "raw_output": json.dumps(actions),
            "actions_json": "[]" if bad else json.dumps(actions), "format_error": "unparseable_json: x" if bad else None,
            "ok": True, "error": None, "points_json": json.dumps(points), "sensitive": None,
            "started_at": when, "finished_at": when, "run_id": "roll",
        })
    lake.write("steps", steps, "roll", tid)
    lake.write("trajectories", [{
        "trajectory_id": tid, "task_id": task_id, "task_version": 1, "sandbox": sandbox, "source_commit": f"commit-{sandbox}",
        "policy": policy, "model": None, "episode": 0, "num_steps": len(steps), "ended": ended, "end_detail": None,
        "final_answer": None, "evidence_json": None, "injected_faults_json": "[]", "started_at": when,
        "finished_at": when, "duration_s": 1.0, "run_id": "roll", "recorded_at": when,
    }], "roll", tid)
    if verdict:
        lake.write("verdicts", [{
            "trajectory_id": tid, "task_id": task_id, "sandbox": sandbox, "policy": policy, "verdict": verdict,
            "reason": "r", "votes_json": json.dumps([{"voter": "verifier:row_exists", "vote": verdict, "reason": "r"}]),
            "agreement": 1.0, "judge_version": "autojudge-1", "run_id": "judge", "recorded_at": when,
        }], "judge", tid)
    if rewards:
        lake.write("step_rewards", [{
            "trajectory_id": tid, "step_index": i, "ct": 1.0, "qt": 1.0, "st": 0.0, "lt": 0.0, "reward": 1.0,
            "weights_json": "{}", "detector_version": "mining-1", "run_id": "mine",
        } for i in range(len(steps))], "mine", tid)


def add_review(lake: Lake, item_kind: str, item_id: str, decision: str, label: str | None = None, minutes: int = 0) -> None:
    lake.write("reviews", [{
        "review_id": f"{item_id}-{decision}-{minutes}", "item_kind": item_kind, "item_id": item_id, "sandbox": "shop",
        "family": "create", "reviewer": "ana", "decision": decision, "reason": "test", "label": label,
        "judge_label": None, "sample_id": "s1", "decided_at": T0 + dt.timedelta(minutes=minutes),
    }], "review", f"{item_id}-{minutes}")
