"""export-sft: curation reasons, formats, scrubbing, deterministic shards, the GX gate, atomic publishing.

Most tests build small synthetic lakes with the real schemas (tests/flows/export_data.py); the first one
exports a lake that the real flows filled (synthesize-tasks, rollouts through Chromium, judge, mining)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.sft_export import scrub as scrub_module
from flows.sft_export.config import ExportConfig
from flows.sft_export.export import export_sft
from flows.sft_export.formats import ground
from flows.sft_export.publish import versions
from lake import Lake
from sandboxes.action_parsing import parse_model_output
from tests.flows.export_data import BASIC, DONE, add_review, add_task, add_trajectory, click, type_
from tests.flows.trainer_layouts import load_llamafactory, render_qwen2_vl, sharegpt_problems

ROOT = Path(__file__).resolve().parents[2]

def render(messages: list[dict]) -> str:
    return render_qwen2_vl(messages)  # Qwen2-VL's own chat template (tests/data/qwen2_vl)


def read_rows(path: str | Path) -> list[dict]:
    return pq.read_table(Path(path) / "data").to_pylist()


def export(lake: Lake, tmp_path: Path, **config) -> object:
    config.setdefault("name", "t")
    return export_sft(lake, ExportConfig(**config), out=tmp_path / "exports")


# ---- a lake made by the real flows ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cycle_lake(synthesized, tmp_path_factory):
    from flows.failure_mining.mining import mine
    from flows.judging.judge import judge_pending
    from flows.rollout.rollout import rollout

    root = tmp_path_factory.mktemp("export-cycle") / "lake"
    shutil.copytree(synthesized[0], root)  # our own copy: other tests count the rollouts in theirs
    lake = Lake(root)
    rollout(lake, "r-replay", "replay", ["shop"])
    # premature ends are the faults that fail (loops and bad arguments recover): enough that the export has negatives
    rollout(lake, "r-noisy", "scripted-noisy", ["shop"], noise="loop=0.5,bad_args=0.3,premature=0.5")
    judge_pending(lake, "j1")
    mine(lake, "m1", write_report=False)
    return lake


@pytest.mark.browser
@pytest.mark.slow
def test_an_export_of_a_cycle_lake_loads_everywhere_and_renders(cycle_lake, tmp_path):
    import datasets

    result = export(cycle_lake, tmp_path, name="shop-sft", negatives=True)
    assert result.status == "published" and result.counts["rows"] > 0 and result.counts["images"] > 0
    rows = read_rows(result.path)
    assert len(rows) == result.counts["rows"] and {r["verdict"] for r in rows} == {"pass", "failed"}
    from lake.quality import LOCAL_PORT

    assert not re.search(LOCAL_PORT, json.dumps([r["messages"] for r in rows])), "data names canonical origins, never a port"
    for row in rows:
        text = render(row["messages"])
        assert text.count("<|image_pad|>") == len(row["images"]) and "<tool_call>" in text
        assert parse_model_output(row["messages"][-1]["content"][0]["text"]).format_error is None
    ds = datasets.load_dataset("parquet", data_files=f"{result.path}/data/*.parquet", split="train")
    assert len(ds) == len(rows)
    first = ds[0]
    assert first["images"][0].size[0] > 100, "images decode as PIL images through the Image feature"
    assert first["messages"][0]["role"] == "system"
    attr, lf = load_llamafactory(result.path, "shop-sft")  # LLaMA-Factory's layout of the same files
    assert len(lf) == len(rows) and all(sharegpt_problems(attr, example) == [] for example in lf)
    manifest = json.loads((Path(result.path) / "manifest.json").read_text())
    assert manifest["lineage"]["sandboxes"]["shop"] and set(manifest["lineage"]["policies"]) == {"replay", "scripted-noisy"}
    assert manifest["lineage"]["judge"]["versions"] == ["autojudge-1"]
    rl = export(cycle_lake, tmp_path, name="shop-rl", format="action-rl", negatives=True)
    rl_rows = read_rows(rl.path)
    assert rl_rows and all(r["reward"] is not None for r in rl_rows) and any(r["reward"] < 1 for r in rl_rows)
    assert len(datasets.load_dataset("parquet", data_files=f"{rl.path}/data/*.parquet", split="train")) == len(rl_rows)
    registered = cycle_lake.query("SELECT name, version, gate_success FROM exports ORDER BY name")
    assert registered == [{"name": "shop-rl", "version": "v0001", "gate_success": True},
                          {"name": "shop-sft", "version": "v0001", "gate_success": True}]


# ---- determinism, the gate, atomic publishing -------------------------------------------------------------


@pytest.fixture
def small_lake(lake):
    add_task(lake, "task-a", instruction="Email ada@example.com about order 7")
    add_task(lake, "task-b", sandbox="mail", family="delete", difficulty="hard", instruction="Delete the draft")
    for i in range(6):
        add_trajectory(lake, f"a{i}", turns=[[type_(f"note {i}")], [click("Save")], [DONE]], minutes=i)
        add_trajectory(lake, f"b{i}", task_id="task-b", sandbox="mail", turns=[[click(f"Draft {i}", "link")], [DONE]], minutes=i)
    return lake


def test_same_lake_and_config_give_byte_identical_shards(small_lake, tmp_path):
    one = export_sft(small_lake, ExportConfig(name="x", shard_bytes=64 * 1024), out=tmp_path / "one")
    two = export_sft(small_lake, ExportConfig(name="x", shard_bytes=64 * 1024), out=tmp_path / "two")
    assert one.status == two.status == "published"
    assert one.manifest_hash == two.manifest_hash and one.files == two.files
    for f in one.files:
        assert (Path(one.path) / f["path"]).read_bytes() == (Path(two.path) / f["path"]).read_bytes()
    again = export_sft(small_lake, ExportConfig(name="x", shard_bytes=64 * 1024), out=tmp_path / "one")
    assert again.status == "unchanged" and again.version == "v0001"
    assert versions(tmp_path / "one" / "x") == ["v0001"]
    other = export_sft(small_lake, ExportConfig(name="x", shard_bytes=64 * 1024, per="trajectory"), out=tmp_path / "one")
    assert other.version == "v0002" and other.config_hash != one.config_hash


def test_shards_are_capped_by_size(lake, tmp_path):
    add_task(lake, "task-a")
    for i in range(40):
        add_trajectory(lake, f"t{i}", turns=[[type_(f"x{i}")], [click("Save")], [DONE]])
    result = export_sft(lake, ExportConfig(name="x", shard_bytes=64 * 1024), out=tmp_path)
    # 120 rows make one row group at the default 1000 rows per group: write them again in groups of 10
    assert result.status == "published" and sum(f["rows"] for f in result.files) == 120
    from flows.sft_export.formats import SCHEMAS
    from flows.sft_export.shards import ShardWriter

    writer = ShardWriter(tmp_path / "cap" / "data", SCHEMAS["messages"], 20 * 1024, row_group_rows=10)
    for row in read_rows(result.path):
        writer.add(row)
    shards = writer.close()
    assert len(shards) > 1 and [s.path for s in shards][0].endswith(f"train-00000-of-{len(shards):05d}.parquet")
    assert all(s.bytes < 20 * 1024 * 1.5 for s in shards)  # a row group here is ~4 KB and sum(s.rows for s in shards) == 120
    assert [pq.ParquetFile(tmp_path / "cap" / s.path).metadata.num_rows for s in shards] == [s.rows for s in shards]


def test_pii_that_slips_past_scrubbing_fails_the_gate_and_the_previous_version_stays(small_lake, tmp_path, monkeypatch):
    first = export(small_lake, tmp_path, name="x")
    assert first.status == "published" and first.scrubbed["email"] == {"request": 6}
    add_trajectory(small_lake, "leak", turns=[[type_("call me at bob.leak@corp.example.org")], [DONE]], minutes=99)
    patterns = dict(scrub_module._COMPILED)
    monkeypatch.setattr(scrub_module, "_COMPILED", [(k, p) for k, p in patterns.items() if k != "email"])
    second = export(small_lake, tmp_path, name="x")
    assert second.status == "gate_failed" and second.version == "v0001"
    assert any("no email left" in f and "text" in f for f in second.gate_failed), second.gate_failed
    md = second.markdown()
    assert "quality gate FAILED" in md and "no email left" in md
    gate = json.loads(Path(second.gate_path).read_text())
    leaked = next(e for e in gate["expectations"] if e["description"] == "no email left")
    assert leaked["unexpected_count"] >= 1 and "bob.leak@corp" not in json.dumps(gate), "the report masks the hit"
    name_dir = tmp_path / "exports" / "x"
    assert versions(name_dir) == ["v0001"] and os.readlink(name_dir / "latest") == "v0001"
    assert not list(name_dir.glob(".build-*"))
    rows = small_lake.query("SELECT version, gate_success FROM exports ORDER BY recorded_at")
    assert rows == [{"version": "v0001", "gate_success": True}, {"version": None, "gate_success": False}]


def test_a_local_port_in_the_data_fails_the_gate(small_lake, tmp_path):
    add_trajectory(small_lake, "port", turns=[[type_("http://127.0.0.1:38893/cart")], [DONE]], minutes=99)
    result = export(small_lake, tmp_path, name="x")
    assert result.status == "gate_failed"
    assert any("no local port" in f for f in result.gate_failed), result.gate_failed


def test_a_tampered_shard_fails_the_files_suite(small_lake, tmp_path):
    from flows.sft_export.formats import SCHEMAS
    from flows.sft_export.scrub import PII_PATTERNS
    from lake.quality import gate_export

    result = export(small_lake, tmp_path, name="x")
    manifest = json.loads((Path(result.path) / "manifest.json").read_text())
    assert gate_export(Path(result.path), manifest, PII_PATTERNS, SCHEMAS["messages"])["success"]
    manifest["counts"]["rows"] += 1
    manifest["files"][0]["rows"] += 1
    gate = gate_export(Path(result.path), manifest, PII_PATTERNS, SCHEMAS["messages"])
    assert not gate["success"]
    assert {f.split(":")[0] for f in gate["failed"]} == {"files"} and len(gate["failed"]) == 2


def _big_lake(lake: Lake, trajectories: int) -> None:
    """Many trajectories in few writes (the export must be slow enough to be killed while writing)."""
    import datetime as dt

    from tests.flows.export_data import T0, png

    add_task(lake, "task-a")
    blobs = [lake.put_blob(png(i, 200, 120)) for i in range(50)]
    steps, trajs, verdicts = [], [], []
    for t in range(trajectories):
        tid = f"traj-{t:05d}"
        for i in range(6):
            steps.append({"trajectory_id": tid, "step_index": i, "screenshot_sha": blobs[(t + i) % 50], "url": "http://h/",
                          "actions_json": json.dumps([{"action": "type", "text": f"trajectory {t} step {i}"}]),
                          "ok": True, "points_json": "[null]", "run_id": "big"})
        trajs.append({"trajectory_id": tid, "task_id": "task-a", "task_version": 1, "sandbox": "shop", "policy": "p",
                      "num_steps": 6, "ended": "terminated", "run_id": "big", "recorded_at": T0 + dt.timedelta(seconds=t)})
        verdicts.append({"trajectory_id": tid, "task_id": "task-a", "verdict": "pass", "judge_version": "j",
                         "run_id": "big", "recorded_at": T0})
    lake.write("steps", steps, "big", 0)
    lake.write("trajectories", trajs, "big", 0)
    lake.write("verdicts", verdicts, "big", 0)


@pytest.mark.slow
def test_sigkill_mid_export_leaves_no_version_and_a_rerun_completes(lake, tmp_path):
    _big_lake(lake, 1500)
    out = tmp_path / "exports"
    code = (
        "from flows.sft_export.config import ExportConfig; from flows.sft_export.export import export_sft; "
        f"from lake import Lake; export_sft(Lake({str(lake.root)!r}), ExportConfig(name='big', shard_bytes=65536), "
        f"out={str(out)!r})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    name_dir = out / "big"
    killed_while_writing = False
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        parts = list(name_dir.glob(".build-*/data/part-*.parquet"))
        if parts and not list(name_dir.glob(".build-*/manifest.json")):
            os.kill(proc.pid, signal.SIGKILL)
            killed_while_writing = True
            break
        time.sleep(0.005)
    proc.wait()
    assert killed_while_writing, "the export finished before shards could be seen being written"
    assert list(name_dir.glob(".build-*")), "the killed build left its hidden folder"
    assert versions(name_dir) == [] and not (name_dir / "latest").exists()
    assert not lake.files("exports")
    rerun = export_sft(lake, ExportConfig(name="big", shard_bytes=65536), out=out)
    assert rerun.status == "published" and rerun.version == "v0001" and rerun.counts["rows"] == 1500 * 6
    assert not list(name_dir.glob(".build-*")), "the rerun removed the dead build"
    assert len(rerun.files) > 1 and sum(f["rows"] for f in rerun.files) == 9000


# ---- curation --------------------------------------------------------------------------------------------


def test_verdicts_env_errors_and_negatives(lake, tmp_path):
    add_task(lake, "task-a")
    add_trajectory(lake, "ok", turns=[[click("A")], [DONE]])
    add_trajectory(lake, "bad", verdict="failed", turns=[[click("B")], [DONE]])
    add_trajectory(lake, "env", verdict="env_error", turns=[[click("C")], [DONE]])
    add_trajectory(lake, "env2", ended="env_error", turns=[[click("D")], [DONE]])
    add_trajectory(lake, "new", verdict=None, turns=[[click("E")], [DONE]])
    add_trajectory(lake, "orphan", task_id="task-gone", turns=[[click("F")], [DONE]])
    plain = export(lake, tmp_path, name="plain")
    assert plain.counts["dropped"] == {"not_judged": 1, "env_error": 2, "no_task": 1, "failed": 1}
    assert {r["trajectory_id"] for r in read_rows(plain.path)} == {"ok"}
    neg = export(lake, tmp_path, name="neg", negatives=True)
    rows = read_rows(neg.path)
    assert {(r["trajectory_id"], r["verdict"]) for r in rows} == {("ok", "pass"), ("bad", "failed")}
    assert neg.counts["dropped"] == {"not_judged": 1, "env_error": 2, "no_task": 1}
    late = export(lake, tmp_path, name="late", since="2026-01-01T00:00:30+00:00")
    assert late.counts["dropped"]["before_since"] == 6 and late.counts["rows"] == 0
    assert late.status == "empty" and late.path is None and "nothing to export" in late.markdown()
    assert versions(tmp_path / "exports" / "late") == []


def test_exact_and_near_duplicates(lake, tmp_path):
    add_task(lake, "task-a")
    add_trajectory(lake, "t1", turns=BASIC, screens=[0, 1, 2, 3])
    add_trajectory(lake, "t1-copy", turns=BASIC, screens=[0, 1, 2, 3], minutes=1)
    retried = [BASIC[0], BASIC[1], [{"action": "wait", "seconds": 1}], BASIC[2], BASIC[2], BASIC[3]]
    add_trajectory(lake, "t1-retry", turns=retried, screens=[0, 1, 2, 2, 2, 3], minutes=2)
    other = [BASIC[0], [type_("Goodbye")], BASIC[2], BASIC[3]]
    add_trajectory(lake, "t2", turns=other, screens=[0, 1, 2, 3], minutes=3)
    add_trajectory(lake, "t1-other-screens", turns=BASIC, screens=[0, 5, 6, 7], minutes=4)
    result = export(lake, tmp_path, name="d")
    assert result.counts["dropped"] == {"duplicate_exact": 1, "duplicate_near": 1}
    assert {r["trajectory_id"] for r in read_rows(result.path)} == {"t1", "t2", "t1-other-screens"}
    loose = export(lake, tmp_path, name="loose", near_dedup=False)
    assert loose.counts["dropped"] == {"duplicate_exact": 1}


def test_balance_caps_by_sandbox_family_and_difficulty(lake, tmp_path):
    add_task(lake, "s1", family="create", difficulty="easy")
    add_task(lake, "s2", family="delete", difficulty="hard")
    add_task(lake, "m1", sandbox="mail", family="create", difficulty="hard")
    for i in range(5):
        for task, sandbox in (("s1", "shop"), ("s2", "shop"), ("m1", "mail")):
            add_trajectory(lake, f"{task}-{i}", task_id=task, sandbox=sandbox, turns=[[click(f"{task} {i}")], [DONE]])
    by_sandbox = export(lake, tmp_path, name="a", max_per_sandbox=3)
    kept = {r["trajectory_id"] for r in read_rows(by_sandbox.path)}
    assert by_sandbox.counts["dropped"] == {"cap_sandbox": 9}
    assert sum(k.startswith("m1") for k in kept) == 3 and sum(not k.startswith("m1") for k in kept) == 3
    by_family = export(lake, tmp_path, name="b", max_per_family=4)
    assert by_family.counts["dropped"] == {"cap_family": 7}  # create: 10 -> 4, delete: 5 -> 4
    both = export(lake, tmp_path, name="c", max_per_difficulty=2, max_per_sandbox=3)
    kept = {r["trajectory_id"] for r in read_rows(both.path)}
    sandbox_of = {"s1": "shop", "s2": "shop", "m1": "mail"}
    difficulty_of = {"s1": "easy", "s2": "hard", "m1": "hard"}
    for caps, cap in ((sandbox_of, 3), (difficulty_of, 2)):
        for value in set(caps.values()):
            assert sum(caps[k.split("-")[0]] == value for k in kept) <= cap
    assert 3 <= len(kept) <= 4 and sum(both.counts["dropped"].values()) == 15 - len(kept)
    again = export(lake, tmp_path / "again", name="b", max_per_family=4)
    assert again.manifest_hash == by_family.manifest_hash, "the capped sample is the same on every run"


def test_reviewer_rejects_and_relabels(lake, tmp_path):
    add_task(lake, "task-a")
    add_task(lake, "task-b", family="delete")
    for tid, task in (("keep", "task-a"), ("rejected", "task-a"), ("relabelled", "task-a"), ("forgiven", "task-a"),
                      ("b1", "task-b"), ("b2", "task-b")):
        add_trajectory(lake, tid, task_id=task, turns=[[click(tid)], [DONE]])
    add_review(lake, "trajectory", "rejected", "reject")
    add_review(lake, "trajectory", "relabelled", "relabel", label="failed")
    add_review(lake, "trajectory", "forgiven", "reject", minutes=1)
    add_review(lake, "trajectory", "forgiven", "accept", minutes=2)
    add_review(lake, "task", "task-b", "reject")
    result = export(lake, tmp_path, name="r")
    assert {r["trajectory_id"] for r in read_rows(result.path)} == {"keep", "forgiven"}
    assert result.counts["dropped"] == {"review_rejected": 3, "failed": 1}


def test_scrubbing_counts_and_replaces(lake, tmp_path):
    add_task(lake, "task-a", instruction="Send the invoice to jo.doe@example.com or call (415) 555-0134")
    secret = "sk-" + "a1B2" * 8
    add_trajectory(lake, "t", turns=[[type_("card 4111 1111 1111 1111")], [type_(f"key {secret}")],
                                     [type_("+44 20 7946 0958 and x@y.io")], [click("Save")], [DONE]])
    result = export(lake, tmp_path, name="s", per="trajectory")
    assert result.scrubbed == {"secret": {"typed_text": 1}, "card": {"typed_text": 1},
                               "email": {"request": 1, "typed_text": 1}, "phone": {"request": 1, "typed_text": 1}}
    text = json.dumps(read_rows(result.path)[0]["messages"])
    for leaked in ("jo.doe", "555-0134", "4111", secret, "7946", "x@y.io"):
        assert leaked not in text
    assert "[EMAIL]" in text and "[CARD]" in text and "[SECRET]" in text and "[PHONE]" in text
    assert "[412" not in text  # coordinates are not phone numbers
    from flows.sft_export.scrub import Scrubber

    s = Scrubber()
    assert s('{"x": 412, "y": 318} 2026-01-31 12:30 order 1234567', "f") == '{"x": 412, "y": 318} 2026-01-31 12:30 order 1234567'


# ---- formats ---------------------------------------------------------------------------------------------


def test_per_trajectory_rows_and_step_drops(lake, tmp_path):
    add_task(lake, "task-a")
    turns = [[click("A")], [click("B")], [click("C")], [DONE]]
    add_trajectory(lake, "t", turns=turns, format_error_at=1)
    lost = [[click("A")], [{"action": "left_click", "target": {"role": "button", "name": "Gone"}}], [DONE]]
    add_trajectory(lake, "u", turns=lost, screens=[7, 8, 9], unlocated_at=1)  # its target was never found
    result = export(lake, tmp_path, name="p", per="trajectory")
    rows = {r["trajectory_id"]: r for r in read_rows(result.path)}
    assert result.counts["step_drops"] == {"format_error_step": 1, "ungrounded_step": 1}
    assert [m["role"] for m in rows["t"]["messages"]] == ["system"] + ["user", "assistant"] * 3
    assert len(rows["t"]["images"]) == 3 == render(rows["t"]["messages"]).count("<|image_pad|>")
    assert result.counts["steps"] == 5 and result.counts["rows"] == 2


def test_openai_protocol_and_image_references(lake, tmp_path):
    add_task(lake, "task-a")
    add_trajectory(lake, "t")
    result = export(lake, tmp_path, name="o", protocol="openai", images="ref")
    rows = read_rows(result.path)
    assistant = rows[1]["messages"][-1]
    assert assistant["content"][0]["text"] == "" and assistant["tool_calls"]
    parsed = parse_model_output({"role": "assistant", "content": "", "tool_calls": assistant["tool_calls"]})
    assert [a.action for a in parsed.actions] == ["triple_click", "type"]
    image = rows[0]["images"][0]
    # referenced by the blob's key, its path relative to the lake's root: the same wherever the lake sits
    assert image["bytes"] is None and image["path"] == f"blobs/sha256/{rows[0]['image_shas'][0][:2]}/{rows[0]['image_shas'][0][2:4]}/{rows[0]['image_shas'][0]}"
    assert (lake.root / image["path"]).read_bytes() == lake.read_blob(rows[0]["image_shas"][0])
    assert "<tools>" not in rows[0]["messages"][0]["content"][0]["text"]


def test_the_same_lake_in_another_folder_exports_the_same_bytes(lake, tmp_path):
    add_task(lake, "task-a")
    add_trajectory(lake, "t")
    moved = tmp_path / "elsewhere" / "lake"
    shutil.copytree(lake.root, moved)
    shards = []
    for where, root in (("here", lake.root), ("there", moved)):
        result = export_sft(Lake(root), ExportConfig(name="same", images="ref"), out=tmp_path / where)
        assert result.status == "published", result.markdown()
        shards.append([(f.name, f.read_bytes()) for f in sorted((Path(result.path) / "data").glob("*.parquet"))])
    assert shards[0] and shards[0] == shards[1]


def test_only_a_blob_key_reads_a_referenced_image():
    from lake.store import blob_digest, blob_key

    digest = "ab" + "c" * 62
    assert blob_digest(blob_key(digest)) == digest
    for elsewhere in ("../../etc/passwd", "/etc/passwd", f"blobs/sha256/ab/cc/../{digest}",
                      f"blobs/sha256/zz/cc/{digest}", f"/abs/blobs/sha256/ab/cc/{digest}", ""):
        with pytest.raises(ValueError, match="not a lake blob key"):
            blob_digest(elsewhere)


def test_action_rl_rows_carry_rewards_and_unmined_trajectories_are_dropped(lake, tmp_path):
    add_task(lake, "task-a")
    add_trajectory(lake, "mined")
    add_trajectory(lake, "raw", rewards=False, turns=[[click("X")], [DONE]])
    result = export(lake, tmp_path, name="rl", format="action-rl")
    rows = read_rows(result.path)
    assert result.counts["dropped"] == {"not_mined": 1}
    assert [r["step_index"] for r in rows] == [0, 1, 2, 3] and [r["done"] for r in rows] == [False] * 3 + [True]
    assert all(r["reward"] == 1.0 and r["screenshot"]["bytes"] for r in rows)
    assert "<tool_call>" in rows[2]["action"] and json.loads(rows[2]["actions_json"])[0]["target"]["name"] == "Save"


def test_grounding_turns_targets_into_coordinates():
    g = ground(json.dumps([{"action": "goto", "url": "/orders"}, {"action": "select", "target": {"label": "Country"},
                                                                    "option": "Chile"}, {"action": "check",
                                                                                          "target": {"label": "Gift"}}]),
               json.dumps([None, [10, 20], [30, 40]]), "http://h:1/")
    assert [(a.action, getattr(a, "x", None), getattr(a, "text", None) or getattr(a, "keys", None)) for a in g] == [
        ("key", None, ["ctrl", "l"]), ("type", None, "http://h:1/orders"), ("key", None, ["Enter"]),
        ("left_click", 10, None), ("type", None, "Chile"), ("key", None, ["Enter"]), ("left_click", 30, None),
    ]
    drag = ground(json.dumps([{"action": "left_click_drag", "target": {"text": "Card"}, "to": {"text": "Done"}}]),
                  json.dumps([[1, 2, 3, 4]]), "")
    assert [(a.x, a.y, a.x2, a.y2, a.target) for a in drag] == [(1, 2, 3, 4, None)]
    assert ground(json.dumps([click("Save")]), json.dumps([None]), "") is None
    assert ground("not json", None, "") is None


def test_bad_config_names_the_fix():
    with pytest.raises(ValueError, match="ISO 8601"):
        ExportConfig(name="x", since="yesterday")
    with pytest.raises(ValueError, match="export name"):
        ExportConfig(name="../up")


def test_an_undecodable_image_fails_the_image_suite(lake, tmp_path):
    from flows.sft_export.formats import SCHEMAS
    from flows.sft_export.scrub import PII_PATTERNS
    from lake.quality import gate_export

    add_task(lake, "task-a")
    add_trajectory(lake, "t")
    result = export(lake, tmp_path, name="refs", images="ref")
    manifest = json.loads((Path(result.path) / "manifest.json").read_text())
    blob = lake.root / read_rows(result.path)[0]["images"][0]["path"]
    blob.write_bytes(b"\x89PNG\r\n\x1a\n not really")
    gate = gate_export(Path(result.path), manifest, PII_PATTERNS, SCHEMAS["messages"])
    assert gate["failed"] and all(f.startswith("images: ") for f in gate["failed"])
    assert any(f.startswith("images: every image decodes (decodable): 1 unexpected") for f in gate["failed"])


def test_cli_rejects_bad_options_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "flywheel.cli", "--lake", str(tmp_path / "lake"), "run", "export-sft",
                           "--name", "x", "--since", "last tuesday"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "ISO 8601" in done.stdout + done.stderr and "Traceback" not in done.stdout + done.stderr


@pytest.mark.slow
def test_cli_exports_and_prints_where_and_how_to_load(small_lake, tmp_path):
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "FLYWHEEL_EXPORTS": str(tmp_path / "exports")}
    done = subprocess.run([sys.executable, "-m", "flywheel.cli", "--lake", str(small_lake.root), "run", "export-sft",
                           "--name", "cli-sft", "--per-trajectory", "--max-per-sandbox", "4"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "published cli-sft/v0001" in out and "cap_sandbox 4" in out and "email 4," in out and "(email: request 4)" in out, out
    assert f"{tmp_path / 'exports' / 'cli-sft' / 'v0001'}" in out and "load_dataset" in out
    assert small_lake.query("SELECT name, version FROM exports") == [{"name": "cli-sft", "version": "v0001"}]


@pytest.mark.browser
@pytest.mark.slow
def test_the_analyst_questions_answer_on_a_lake_the_real_flows_made(cycle_lake):
    """docs/analyst_questions.sql through the DuckDB CLI on the shop lake synthesize/rollout/judge/mine wrote."""
    from tests.lake.test_analyst_questions import duckdb_cli, questions

    cycle_lake.refresh_catalog()
    answers = {}
    for label, sql in questions().items():
        done = subprocess.run([duckdb_cli(), "-readonly", str(cycle_lake.catalog_path), "-json", "-c", sql],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{label}: {done.stderr}"
        answers[label] = json.loads(done.stdout or "[]")
    judged = cycle_lake.query("SELECT count(*) AS n FROM verdicts WHERE verdict != 'env_error'")[0]["n"]
    assert sum(r["episodes"] for r in answers["[1]"]) == judged > 0
    assert {r["policy"] for r in answers["[1]"]} == {"replay", "scripted-noisy"}
    assert answers["[2]"] and all(r["rank"] <= 3 for r in answers["[2]"])
    mined = cycle_lake.query("SELECT count(*) AS n FROM failures")[0]["n"]
    assert 0 < sum(r["findings"] for r in answers["[2]"]) <= mined
    assert isinstance(answers["[3]"], list)  # no task is born from a failure until synthesis reads the seeds
