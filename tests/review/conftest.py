"""A small hand-written lake for the review queue: verified pairs (one whose request carries a <script>),
a rejected pair, a replay with screenshots, judged trajectories (one with low agreement) and a mined failure."""

from __future__ import annotations

import datetime as dt
import json
import struct
import zlib

import pytest

from lake import Lake

SCRIPT_REQUEST = "Add the address <script>window.__pwned=1</script> labelled Boathouse 7."
NOW = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)


def png(rgb: tuple[int, int, int], size: int = 8) -> bytes:
    """A real, solid-colour PNG (the app serves screenshots as image/png)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def task_row(task_id: str, sandbox: str, family: str, instruction: str, status: str = "verified") -> dict:
    return {
        "task_id": task_id, "version": 1, "sandbox": sandbox, "source_commit": "abc123", "family": family,
        "app_area": "addresses", "difficulty": "easy", "instruction": instruction, "status": status,
        "reason": None if status == "verified" else "passes_initially", "seed": 1,
        "params_json": "{}", "injection_json": json.dumps([{"skill": "insert_addresses", "args": {"id": 7, "label": "<b>x</b>"}}]),
        "verifier_json": json.dumps({"template": "row_exists", "params": {"table": "addresses", "where": {"id": 7}}}),
        "reference_json": json.dumps([{"action": "goto", "url": "/addresses/new"},
                                      {"action": "left_click", "target": {"role": "button", "name": "Save"}}]),
        "provenance_json": "{}", "run_id": "seed-run", "recorded_at": NOW,
    }


def build_review_lake(root) -> Lake:
    lake = Lake(root)
    lake.write("tasks", [
        task_row("t-shop-create", "shop", "create", SCRIPT_REQUEST),
        task_row("t-shop-update", "shop", "update", "Rename the address Studio 58 to Studio 59."),
        task_row("t-mail-delete", "mail", "delete", "Delete the draft to Ben."),
        task_row("t-mail-search", "mail", "search", "Find the mail about the invoice."),
        task_row("t-shop-bad", "shop", "create", "A pair the gate rejected.", status="rejected"),
    ], "seed-run", "tasks")
    trajectories = [("tr-replay", "t-shop-create", "shop", "replay"), ("tr-noisy", "t-mail-delete", "mail", "scripted-noisy"),
                    ("tr-ok", "t-shop-update", "shop", "scripted-noisy")]
    lake.write("trajectories", [
        {"trajectory_id": tid, "task_id": task, "task_version": 1, "sandbox": sb, "source_commit": "abc123",
         "policy": policy, "episode": 0, "num_steps": 2, "ended": "terminated", "evidence_json": "{}",
         "started_at": NOW, "finished_at": NOW, "duration_s": 1.0, "run_id": "seed-run", "recorded_at": NOW}
        for tid, task, sb, policy in trajectories
    ], "seed-run", "trajectories")
    steps = []
    for tid, *_ in trajectories:
        for i, colour in enumerate([(200, 30, 30), (30, 200, 30)]):
            steps.append({"trajectory_id": tid, "step_index": i, "screenshot_sha": lake.put_blob(png(colour)),
                          "screen_width": 8, "screen_height": 8, "url": f"http://127.0.0.1/{tid}/{i}",
                          "actions_json": json.dumps([{"action": "left_click", "coordinate": [100 * (i + 1), 200]}]),
                          "ok": True, "started_at": NOW, "finished_at": NOW, "run_id": "seed-run"})
    lake.write("steps", steps, "seed-run", "steps")
    votes_low = [{"voter": "verifier:row_absent", "vote": "failed", "reason": "row still there"},
                 {"voter": "llm-1", "vote": "pass", "reason": "<img src=x onerror=window.__pwned=1> looks done"}]
    lake.write("verdicts", [
        {"trajectory_id": "tr-replay", "task_id": "t-shop-create", "sandbox": "shop", "policy": "replay", "verdict": "pass",
         "reason": "row found", "votes_json": "[]", "agreement": 1.0, "judge_version": "autojudge-1", "run_id": "seed-run",
         "recorded_at": NOW},
        {"trajectory_id": "tr-noisy", "task_id": "t-mail-delete", "sandbox": "mail", "policy": "scripted-noisy",
         "verdict": "failed", "reason": "row still there", "votes_json": json.dumps(votes_low), "agreement": 0.5,
         "judge_version": "autojudge-1", "run_id": "seed-run", "recorded_at": NOW},
        {"trajectory_id": "tr-ok", "task_id": "t-shop-update", "sandbox": "shop", "policy": "scripted-noisy", "verdict": "pass",
         "reason": "field equals", "votes_json": "[]", "agreement": 1.0, "judge_version": "autojudge-1", "run_id": "seed-run",
         "recorded_at": NOW},
    ], "seed-run", "verdicts")
    lake.write("failures", [
        {"failure_id": "f1", "trajectory_id": "tr-noisy", "task_id": "t-mail-delete", "sandbox": "mail",
         "policy": "scripted-noisy", "first_step": 0, "last_step": 1, "kind": "loop", "reason": "exact_repeat",
         "severity": 0.8, "evidence_json": "{}", "detector_version": "d1", "run_id": "seed-run", "recorded_at": NOW},
    ], "seed-run", "failures")
    return lake


@pytest.fixture
def review_lake(tmp_path) -> Lake:
    return build_review_lake(tmp_path / "lake")
