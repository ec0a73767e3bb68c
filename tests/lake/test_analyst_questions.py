"""docs/analyst_questions.sql answers its three questions on a lake on disk, through the DuckDB CLI that
bootstrap installs (duckdb-cli, an older DuckDB than the library that writes the catalog) and through the
library, with the answers the rows imply."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from lake import Lake
from tests.flows.export_data import add_trajectory

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "docs" / "analyst_questions.sql"
T0 = dt.datetime(2026, 3, 1, 9, tzinfo=dt.UTC)


def duckdb_cli() -> str:
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.fail(f"no DuckDB CLI at {cli}: ./bootstrap installs it (duckdb-cli in pyproject.toml)")
    return str(cli)


def questions() -> dict[str, str]:
    """'[1]' -> the SQL of that question (comments dropped), in file order; a statement ends at a line ending ';'."""
    out, label, lines = {}, None, []
    for line in QUESTIONS.read_text().splitlines():
        found = re.match(r"^-- (\[\w+\])", line)
        if found:
            label = found.group(1)
        elif not line.lstrip().startswith("--") and line.strip():
            lines.append(line)
            if line.rstrip().endswith(";"):
                out[label] = "\n".join(lines).rstrip(";")
                lines = []
    return out


def task(lake: Lake, task_id: str, family: str, area: str, status: str = "verified", provenance: dict | None = None):
    lake.write("tasks", [{
        "task_id": task_id, "version": 1, "sandbox": "shop", "source_commit": "c1", "family": family, "app_area": area,
        "difficulty": "easy", "instruction": f"do {task_id}", "status": status, "seed": 0, "params_json": "{}",
        "injection_json": "[]", "verifier_json": json.dumps({"template": "row_exists", "params": {}}),
        "reference_json": "[]", "provenance_json": json.dumps({"agent": "static", **(provenance or {})}),
        "run_id": "synth-1", "recorded_at": T0,
    }], "synth-1", task_id)


def failure(lake: Lake, fid: str, trajectory: str, task_id: str, kind: str, reason: str):
    lake.write("failures", [{
        "failure_id": fid, "trajectory_id": trajectory, "task_id": task_id, "sandbox": "shop", "policy": "scripted-noisy",
        "first_step": 0, "last_step": 1, "kind": kind, "reason": reason, "severity": 0.5, "evidence_json": "{}",
        "detector_version": "mining-1", "run_id": "mine-1", "recorded_at": T0,
    }], "mine-1", fid)


@pytest.fixture(scope="module")
def analyst_lake(tmp_path_factory) -> Lake:
    lake = Lake(tmp_path_factory.mktemp("analyst") / "lake")
    task(lake, "task-a", "create", "/orders")
    task(lake, "task-b", "delete", "/users/<>")
    born = {"parent_task_id": "task-a", "seed_id": "seed-1", "failure_kind": "loop"}  # the names targeted synthesis writes
    task(lake, "task-c", "create", "/orders", provenance=born)
    task(lake, "task-d", "create", "/orders", status="rejected",  # the parent's old name, in lakes written before
         provenance={"parent_task": "task-a", "seed_id": "seed-2", "failure_kind": "bad_args", "strategy": "variant"})
    # day 1: create 1 of 2, delete 1 of 1 (plus an env_error that does not count); day 2: create 2 of 2
    for tid, task_id, verdict, minutes in [("t1", "task-a", "pass", 0), ("t2", "task-a", "failed", 5),
                                           ("t3", "task-b", "env_error", 10), ("t4", "task-b", "pass", 15),
                                           ("t5", "task-c", "pass", 24 * 60), ("t6", "task-a", "pass", 24 * 60 + 5)]:
        add_trajectory(lake, tid, task_id=task_id, verdict=verdict, minutes=minutes + 9 * 60 + 60 * 24 * 59)
    failure(lake, "f1", "t2", "task-a", "loop", "exact_repeat")
    failure(lake, "f2", "t2", "task-a", "loop", "exact_repeat")
    failure(lake, "f3", "t2", "task-a", "bad_args", "click_hit_nothing")
    failure(lake, "f4", "t6", "task-a", "loop", "short_cycle")
    failure(lake, "f5", "t6", "task-a", "premature", "terminated_early")
    failure(lake, "f6", "t4", "task-b", "sensitive", "unconfirmed_sensitive")
    lake.refresh_catalog()
    return lake


EXPECTED = {
    "[1]": [
        ("2026-03-01", "scripted-noisy", "shop", "create", 2, 0.5),
        ("2026-03-01", "scripted-noisy", "shop", "delete", 1, 1.0),
        ("2026-03-02", "scripted-noisy", "shop", "create", 2, 1.0),
    ],
    "[2]": [
        ("shop", "/orders", "loop", "exact_repeat", 2, 1, 1),
        ("shop", "/orders", "bad_args", "click_hit_nothing", 1, 1, 2),
        ("shop", "/orders", "loop", "short_cycle", 1, 1, 3),
        ("shop", "/users/<>", "sensitive", "unconfirmed_sensitive", 1, 1, 1),
    ],
    "[3]": [
        ("shop", "task-d", "create", "rejected", "task-a", "seed-2", "bad_args", 0, 0, None),
        ("shop", "task-c", "create", "verified", "task-a", "seed-1", "loop", 1, 1, 1.0),
    ],
    "[3b]": [("bad_args", 1, 0, 0), ("loop", 1, 1, 1)],
}


def _plain(value):
    if isinstance(value, dt.datetime | dt.date):
        return value.strftime("%Y-%m-%d")
    return float(value) if hasattr(value, "as_tuple") else value  # Decimal -> float


def test_the_file_asks_the_three_questions():
    assert list(questions()) == ["[1]", "[2]", "[3]", "[3b]"]
    text = QUESTIONS.read_text()
    for key in ("parent_task_id", "seed_id", "failure_kind"):  # one spelling: the views rename old keys
        assert f"provenance_json->>'{key}'" in text
    assert "coalesce" not in text


@pytest.mark.parametrize("label", list(EXPECTED))
def test_each_question_answers_from_the_catalog_through_the_library(analyst_lake, label):
    con = duckdb.connect(str(analyst_lake.catalog_path), read_only=True)
    try:
        rows = [tuple(_plain(v) for v in r) for r in con.sql(questions()[label]).fetchall()]
    finally:
        con.close()
    assert rows == EXPECTED[label]


def test_each_question_answers_through_the_duckdb_cli(analyst_lake):
    for label, sql in questions().items():
        done = subprocess.run([duckdb_cli(), "-readonly", str(analyst_lake.catalog_path), "-json", "-c", sql],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{label}: {done.stderr}"
        rows = [tuple(_plain(v) if not isinstance(v, str) else v[:10] if re.match(r"\d{4}-\d\d-\d\d ", v) else v
                      for v in r.values()) for r in json.loads(done.stdout or "[]")]
        assert rows == EXPECTED[label], label


def test_the_whole_file_runs_in_the_cli_as_the_header_says(analyst_lake):
    with QUESTIONS.open() as sql:
        done = subprocess.run([duckdb_cli(), "-readonly", str(analyst_lake.catalog_path)], stdin=sql,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "unconfirmed_sensitive" in done.stdout and "seed-1" in done.stdout
