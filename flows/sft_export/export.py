"""`export-sft` as plain library code: curate -> write shards (scrubbed) -> manifest -> gate -> publish.

Memory stays bounded: per-trajectory facts are held, steps and rows are streamed (see curation.py and
shards.py). The same lake and config give byte-identical shards and the same manifest hash; when the
newest published version already has that hash, nothing new is published (`unchanged`).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from flows.sft_export import card, curation, publish
from flows.sft_export.config import ExportConfig
from flows.sft_export.formats import ROW_FACTS, SCHEMAS, STEP_COLUMNS, RowBuilder, image_reader
from flows.sft_export.scrub import PII_PATTERNS, Scrubber
from flows.sft_export.shards import ShardWriter, file_sha256
from lake import Lake
from lake.store import blob_digest


@dataclass
class ExportResult:
    name: str
    status: str  # published | unchanged | gate_failed | empty (no row survived curation; nothing published)
    version: str | None
    path: str | None
    config_hash: str
    manifest_hash: str
    counts: dict[str, Any]
    scrubbed: dict[str, dict[str, int]]
    files: list[dict[str, Any]]
    gate_path: str | None = None
    gate_failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    run_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        c = self.counts
        head = {
            "published": f"published **{self.name}/{self.version}**",
            "unchanged": f"unchanged: **{self.name}/{self.version}** already holds exactly this (manifest {self.manifest_hash[:12]})",
            "gate_failed": "**quality gate FAILED** — nothing published; the previous version stays "
                           f"({self.version or 'none yet'})",
            "empty": "**nothing to export** — no trajectory passed curation (see why below; `flywheel run cycle` "
                     "makes judged trajectories); nothing published",
        }[self.status]
        lines = [f"# export-sft: {head}", "",
                 f"{c['rows']} rows from {c['trajectories']} trajectories ({c['steps']} steps, {c['images']} images), "
                 f"{len(self.files)} shard(s), {sum(f['bytes'] for f in self.files) / 1e6:.1f} MB, {self.seconds:.1f} s; "
                 f"{c['considered']} trajectories considered.", "",
                 "| kept / dropped | n |", "|---|---|", f"| kept trajectories | {c['kept']} |"]
        lines += [f"| dropped: {r} | {n} |" for r, n in c["dropped"].items()]
        lines += [f"| steps left out: {r} | {n} |" for r, n in c["step_drops"].items() if n]
        scrubbed = {k: sum(v.values()) for k, v in self.scrubbed.items()}
        lines += ["", "Scrubbed: " + ", ".join(f"{k} {n}" for k, n in scrubbed.items())
                  + "".join(f" ({k}: " + ", ".join(f"{f} {n}" for f, n in v.items()) + ")" for k, v in self.scrubbed.items() if v)]
        if self.gate_failed:
            lines += ["", "Failed expectations:", *[f"- {f}" for f in self.gate_failed], "", f"GX result: `{self.gate_path}`"]
        if self.path:
            extra = ", failures.parquet (each failure's kind, reason and steps)" if (Path(self.path) / "failures.parquet").exists() else ""
            lines += ["", f"Where: `{self.path}` (README.md card, manifest.json, gate.json, data/{extra})", "",
                      "Load it:", "```python",
                      f'datasets.load_dataset("parquet", data_files="{self.path}/data/*.parquet", split="train")',
                      f'polars.scan_parquet("{self.path}/data/*.parquet")',
                      f"duckdb.sql(\"SELECT * FROM '{self.path}/data/*.parquet'\")", "```"]
        return "\n".join(lines)


def export_sft(lake: Lake, config: ExportConfig, out: str | Path | None = None, run_id: str | None = None,
               progress: Any = None) -> ExportResult:
    t0 = time.monotonic()
    run_id = run_id or f"export-{uuid.uuid4().hex[:12]}"
    name_dir = publish.export_root(lake, out) / config.name
    name_dir.mkdir(parents=True, exist_ok=True)
    publish.register_missing(lake, name_dir, config.name)
    con = curation.connect(lake)
    try:
        scan = progress.add_task("curate: de-duplication scan", total=None) if progress else None
        cur = curation.curate(lake, con, config,
                              on_steps=(lambda n, total: progress.update(scan, advance=n, total=total)) if progress else None)
        folder = publish.start_build(name_dir)
        try:
            return _build(lake, con, config, cur, folder, name_dir, run_id, progress, t0)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
    finally:
        con.close()


def _build(lake, con, config, cur, folder: Path, name_dir: Path, run_id: str, progress, t0: float) -> ExportResult:
    schema = SCHEMAS[config.format]
    writer = ShardWriter(folder / "data", schema, config.shard_bytes)
    scrubber = Scrubber()
    builder = RowBuilder(config, scrubber, image_reader(lake, config.images))
    rewards = config.format == "action-rl"
    lineage = card.lineage(cur.kept, lake.uri, _reward_lineage(con, cur.kept) if rewards else [])
    total_steps = int(cur.kept["steps"].sum()) if not cur.kept.is_empty() else 0
    bar = progress.add_task(f"write {config.name}: steps", total=total_steps) if progress else None
    produced = images = 0
    # the kept rows in `ord` order, in step with the stream (which yields them in the same order)
    facts = cur.kept.select("ord", *ROW_FACTS).sort("ord").iter_rows(named=True) if total_steps else iter(())
    for tid, steps in curation.stream_trajectories(
        con, cur.step_files, cur.kept, STEP_COLUMNS, rewards
    ):
        traj = next(facts)
        while traj["trajectory_id"] != tid:
            traj = next(facts)
        any_row = False
        for row in builder.rows(traj, steps):
            pictures = row.get("images") or ([row["screenshot"]] if row.get("screenshot") else [])
            images += len(pictures)
            writer.add(row, 2048 + sum(len(p["bytes"] or b"") for p in pictures))
            any_row = True
        produced += any_row
        if progress:
            progress.advance(bar, len(steps))
    shards = writer.close()
    sidecars = []
    if config.route == "negatives" and writer.rows:
        sidecars.append(_write_failures(con, cur.kept, folder, "failures.parquet"))
    counts = {
        "rows": writer.rows, "trajectories": produced, "steps": builder.steps_out, "images": images,
        "considered": cur.considered, "kept": cur.kept.height, "dropped": cur.dropped, "step_drops": builder.step_drops,
    }
    manifest = card.build_manifest(config, schema, shards, counts, scrubber.report(), lineage, sidecars)
    manifest_hash = card.write_manifest(folder, manifest)
    result = ExportResult(config.name, "published", None, None, config.config_hash, manifest_hash, counts,
                          scrubber.report(), manifest["files"], run_id=run_id)
    latest, latest_hash = publish.latest_manifest_hash(name_dir)
    if latest_hash == manifest_hash or not writer.rows:
        shutil.rmtree(folder, ignore_errors=True)
        result.status, result.version = ("unchanged" if writer.rows else "empty"), latest
        result.path = str(name_dir / latest) if latest_hash == manifest_hash else None
        result.seconds = time.monotonic() - t0
        return result
    gate_bar = progress.add_task("quality gate (Great Expectations)", total=None) if progress else None
    from lake.quality import gate_export

    gate = gate_export(folder, manifest, PII_PATTERNS, schema, lambda key: lake.read_blob(blob_digest(key)))
    if progress:
        progress.update(gate_bar, total=1, completed=1)

    (folder / "gate.json").write_text(json.dumps(gate, indent=1, sort_keys=True, default=str))
    card.write_card(folder, manifest, manifest_hash, gate, schema)
    card.write_dataset_info(folder, manifest)
    if not gate["success"]:
        gate_path = publish.reject(folder, name_dir, gate)
        publish.register(lake, manifest, manifest_hash, gate_path, False, None, None, run_id)
        result.status, result.version, result.gate_path, result.gate_failed = "gate_failed", latest, str(gate_path), gate["failed"]
    else:
        target = publish.publish(folder, name_dir)
        publish.register(lake, manifest, manifest_hash, target / "gate.json", True, target.name, target, run_id)
        result.version, result.path, result.gate_path = target.name, str(target), str(target / "gate.json")
    result.seconds = time.monotonic() - t0
    return result


def _reward_lineage(con, kept) -> list[dict[str, Any]]:
    """Per detector version and weights, how many of the kept trajectories' steps have a reward."""
    if kept.is_empty():
        return []
    con.register("kept_ids", kept.select("trajectory_id").to_arrow())
    try:
        rows = con.sql(
            "SELECT detector_version, weights_json::VARCHAR, count(*) AS steps FROM step_rewards "
            "WHERE trajectory_id IN (SELECT trajectory_id FROM kept_ids) GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    finally:
        con.unregister("kept_ids")
    return [{"detector_version": d, "weights": w, "steps": n} for d, w, n in rows]


def _write_failures(con, kept, folder: Path, name: str) -> dict[str, Any]:
    """Beside the negatives' shards: every mined failure of the kept trajectories, with its kind, reason
    and step range, so a trainer can weight or mask the steps that went wrong; its manifest entry."""
    path = folder / name
    con.register("kept_ids", kept.select("trajectory_id").to_arrow())
    try:
        con.sql(
            "SELECT trajectory_id, task_id, sandbox, policy, first_step, last_step, kind, reason, severity, evidence_json "
            "FROM failures WHERE trajectory_id IN (SELECT trajectory_id FROM kept_ids) "
            "ORDER BY trajectory_id, first_step, kind, reason"
        ).write_parquet(str(path), compression="zstd")
    finally:
        con.unregister("kept_ids")
    return {"path": name, "rows": pq.read_metadata(path).num_rows, "bytes": path.stat().st_size,
            "sha256": file_sha256(path), "holds": "mined failures of the rows' trajectories (kind, reason, steps)"}
