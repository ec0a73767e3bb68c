"""Imports are untrusted input: a screenshot path may not leave the JSONL's folder (absolute paths, `..`,
symlinks out), a screenshot must decode as an image, and a huge line is never read whole. Each abuse is
quarantined with its reason while the good records beside it land once."""

import json
import tracemalloc

from flows.rollout import importers
from flows.rollout.importers import import_paths
from tests.flows.test_importers import DONE, count, png, trajectory, write_jsonl

CLICK = {"action": "left_click", "x": 10, "y": 20}


def _with_shot(task_id: str, path: str) -> dict:
    return trajectory(
        task_id=task_id,
        steps=[
            {"step_index": 0, "actions": [CLICK], "screenshot_path": path},
            {"step_index": 1, "actions": [DONE]},
        ],
    )


def _reasons(lake) -> dict[str, str]:
    rows = lake.query("SELECT record_json, reason FROM quarantine")
    return {json.loads(r["record_json"])["record"]["task_id"]: r["reason"] for r in rows}


def test_screenshot_paths_must_stay_inside_the_jsonl_folder(lake, tmp_path):
    outside = tmp_path / "secret.png"
    outside.write_bytes(png(4, 4))  # a real image, so only the path is wrong
    folder = tmp_path / "export"
    (folder / "shots").mkdir(parents=True)
    (folder / "shots" / "ok.png").write_bytes(png(3, 3))
    (folder / "shots" / "link.png").symlink_to(outside)
    (folder / "shots" / "inner.png").symlink_to(
        folder / "shots" / "ok.png"
    )  # a link that stays inside is fine
    source = write_jsonl(
        folder / "runs.jsonl",
        [
            _with_shot("absolute", str(outside)),
            _with_shot("dotdot", "../secret.png"),
            _with_shot("dotdot-deep", "shots/../../secret.png"),
            _with_shot("symlink-out", "shots/link.png"),
            _with_shot("etc", "/etc/passwd"),
            _with_shot("good", "shots/ok.png"),
            _with_shot("inner-link", "shots/inner.png"),
        ],
    )
    report = import_paths(lake, [source])
    assert (report.accepted, report.quarantined) == (2, {"unsafe_path": 5})
    reasons = _reasons(lake)
    assert set(reasons) == {"absolute", "dotdot", "dotdot-deep", "symlink-out", "etc"}
    assert "leads outside" in reasons["symlink-out"] and "relative path" in reasons["dotdot"]
    assert count(lake, "trajectories") == 2
    blobs = list((lake.root / "blobs").rglob("*")) if (lake.root / "blobs").exists() else []
    assert all(p.read_bytes() != outside.read_bytes() for p in blobs if p.is_file())


def test_a_screenshot_must_be_a_real_decodable_image(lake, tmp_path):
    (tmp_path / "text.png").write_bytes(b"#!/bin/sh\nrm -rf /\n")
    (tmp_path / "truncated.png").write_bytes(png(20, 20)[:40])
    (tmp_path / "ok.png").write_bytes(png(2, 2))
    lines = [
        _with_shot("text", "text.png"),
        _with_shot("truncated", "truncated.png"),
        _with_shot("good", "ok.png"),
        trajectory(task_id="b64", steps=[{"actions": [DONE], "screenshot_b64": "aGVsbG8gd29ybGQ="}]),
    ]
    report = import_paths(lake, [write_jsonl(tmp_path / "runs.jsonl", lines)])
    assert (report.accepted, report.quarantined) == (1, {"invalid_screenshot": 3})
    assert all(r.startswith("invalid_screenshot: step 0:") for r in _reasons(lake).values())


def test_a_huge_jsonl_line_is_quarantined_without_being_read_whole(lake, tmp_path, monkeypatch):
    monkeypatch.setattr(importers, "MAX_RECORD_BYTES", 1 << 20)  # 1 MiB cap for the test; 64 MiB by default
    source = tmp_path / "runs.jsonl"
    with source.open("w") as fh:
        fh.write(json.dumps(trajectory(task_id="before")) + "\n")
        fh.write('{"task_id": "huge", "final_answer": "' + "x" * (50 << 20) + '", "steps": []}\n')  # 50 MB
        fh.write(json.dumps(trajectory(task_id="after")) + "\n")
    tracemalloc.start()
    report = import_paths(lake, [source])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (report.accepted, report.quarantined) == (2, {"line_too_long": 1})
    assert peak < 20 << 20, f"the import held {peak / 2**20:.0f} MiB at once"
    reason = lake.query("SELECT reason FROM quarantine")[0]["reason"]
    assert reason.startswith("line_too_long: line 2 is longer than 1048576 bytes")
    assert sorted(r["task_id"] for r in lake.query("SELECT task_id FROM trajectories")) == ["after", "before"]
    again = import_paths(lake, [source])
    assert (again.accepted, again.skipped) == (0, 3)


def test_oversized_json_files_and_screenshots_are_refused_by_size_before_reading(lake, tmp_path, monkeypatch):
    monkeypatch.setattr(importers, "MAX_RECORD_BYTES", 4096)
    monkeypatch.setattr(importers, "MAX_IMAGE_BYTES", 2048)
    big = tmp_path / "episode.json"
    big.write_text(json.dumps(trajectory(task_id="big", final_answer="y" * 10_000)))
    (tmp_path / "large.png").write_bytes(png(200, 200, (1, 2, 3)) + b"\0" * 4096)
    shots = write_jsonl(tmp_path / "runs.jsonl", [_with_shot("large", "large.png")])
    report = import_paths(lake, [big, shots])
    assert report.quarantined == {"record_too_large": 1, "screenshot_too_large": 1}


def test_a_decompression_bomb_is_refused_before_it_is_decoded(lake, tmp_path, monkeypatch):
    monkeypatch.setattr(importers, "MAX_IMAGE_PIXELS", 10_000)
    (tmp_path / "bomb.png").write_bytes(
        png(400, 400, (0, 0, 0))
    )  # 160,000 pixels, compresses to almost nothing
    report = import_paths(lake, [write_jsonl(tmp_path / "runs.jsonl", [_with_shot("bomb", "bomb.png")])])
    assert report.quarantined == {"screenshot_too_large": 1}
    assert "400x400 pixels" in lake.query("SELECT reason FROM quarantine")[0]["reason"]
