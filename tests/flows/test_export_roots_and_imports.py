"""Exports of trajectories without a sandbox (imported ones), and the same name exported to two roots."""

from __future__ import annotations

from flows.sft_export.config import ExportConfig
from flows.sft_export.export import export_sft
from flows.sft_export.publish import register_missing
from tests.flows.export_data import DONE, add_task, add_trajectory, click


def test_negatives_export_an_imported_trajectory_that_names_no_sandbox(lake, tmp_path):
    add_task(lake, "task-a")
    add_trajectory(lake, "ok", turns=[[click("A")], [DONE]])
    add_task(lake, "task-imported", sandbox=None)
    add_trajectory(lake, "imported", task_id="task-imported", sandbox=None, verdict="failed", policy="imported",
                   turns=[[click("B")], [DONE]])
    result = export_sft(lake, ExportConfig(name="neg", negatives=True), out=tmp_path / "exports")
    assert result.status == "published", result.gate_failed  # every exported row names its sandbox
    assert result.counts["trajectories"] == 1 and result.counts["dropped"] == {"no_sandbox": 1}


def test_one_name_in_two_roots_gives_rows_told_apart_by_path_and_recovers_each(lake, tmp_path):
    add_task(lake, "task-a")
    add_trajectory(lake, "ok", turns=[[click("A")], [DONE]])
    one = export_sft(lake, ExportConfig(name="x"), out=tmp_path / "one")
    two = export_sft(lake, ExportConfig(name="x"), out=tmp_path / "two")
    assert one.version == two.version == "v0001"
    rows = lake.query("SELECT version, path FROM exports WHERE name = 'x' AND gate_success")
    assert sorted(r["path"] for r in rows) == sorted([one.path, two.path])
    # a version published in a third root whose row was lost (killed right after the rename) is recovered,
    # although a v0001 row for that name exists for the other roots
    three = tmp_path / "three" / "x"
    (three / "v0001").mkdir(parents=True)
    for f in ("manifest.json", "gate.json"):
        (three / "v0001" / f).write_bytes((tmp_path / "one" / "x" / "v0001" / f).read_bytes())
    assert register_missing(lake, three, "x") == ["v0001"]
    assert register_missing(lake, three, "x") == []
    assert len(lake.query("SELECT path FROM exports WHERE name = 'x' AND gate_success")) == 3


def test_the_gate_decodes_every_image_not_a_sample(lake, tmp_path):
    import json
    from pathlib import Path

    from flows.sft_export.formats import SCHEMAS
    from flows.sft_export.scrub import PII_PATTERNS
    from lake.quality import gate_export

    add_task(lake, "task-a")
    for i in range(12):  # 12 trajectories of 4 screens: more images than any sample looks at
        add_trajectory(lake, f"t{i:02d}", turns=[[click(f"A{i}")], [click(f"B{i}")], [click(f"C{i}")], [DONE]],
                       screens=[4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3], minutes=i)
    result = export_sft(lake, ExportConfig(name="refs", images="ref"), out=tmp_path / "exports")
    assert result.status == "published"
    manifest = json.loads((Path(result.path) / "manifest.json").read_text())
    import pyarrow.parquet as pq

    rows = pq.read_table(Path(result.path) / manifest["files"][-1]["path"]).to_pylist()
    last = lake.root / rows[-1]["images"][-1]["path"]
    last.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")  # what a referenced host file would hold
    gate = gate_export(Path(result.path), manifest, PII_PATTERNS, SCHEMAS["messages"])
    assert any(f.startswith("images: every image decodes (decodable): 1 unexpected") for f in gate["failed"]), gate
