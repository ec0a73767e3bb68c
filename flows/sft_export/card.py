"""manifest.json (what the export holds, with file hashes) and README.md (the dataset card).

Both are deterministic: no times, no run ids of the export itself, keys sorted, so the same lake and the
same config give the same manifest hash. The lineage says where every row came from: sandbox source
commits, task versions and verifier templates, synthesis provenance, policies and models, the judge's
version and voters, and for action-rl the reward detector version and weights.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from flows.sft_export.config import ExportConfig
from flows.sft_export.shards import Shard

MANIFEST_VERSION = 1


def lineage(kept: pl.DataFrame, lake_root: Path, rewards: list[dict[str, Any]]) -> dict[str, Any]:
    if kept.is_empty():
        return {"lake": str(lake_root), "sandboxes": {}, "tasks": 0, "policies": {}, "judge": {}}
    sandboxes = {s: sorted(c) for s, c in kept.group_by("sandbox").agg(pl.col("source_commit").unique().drop_nulls()).iter_rows()}
    policies = {}
    for policy, models, n in kept.group_by("policy").agg(pl.col("model").unique().drop_nulls(), pl.len()).sort("policy").iter_rows():
        policies[policy] = {"trajectories": n, "models": sorted(models)}
    voters = Counter()
    for votes in kept["votes_json"].drop_nulls().to_list():
        voters.update(v.get("voter", "?") for v in json.loads(votes))
    provenance = Counter()
    for p in kept["provenance_json"].drop_nulls().to_list():
        d = json.loads(p)
        provenance[f"{d.get('agent')} / {d.get('model') or '-'} / {d.get('synthesiser_version') or '-'}"] += 1
    return {
        "lake": str(lake_root),
        "sandboxes": dict(sorted(sandboxes.items())),
        "tasks": kept.select("task_id", "task_version").n_unique(),
        "task_families": _counts(kept, "family"),
        "difficulties": _counts(kept, "difficulty"),
        "verifier_templates": _counts(kept, "verifier_template"),
        "synthesis": dict(sorted(provenance.items())),
        "policies": policies,
        "judge": {"versions": sorted(kept["judge_version"].drop_nulls().unique().to_list()), "voters": dict(sorted(voters.items()))},
        "rollout_runs": sorted(kept["run_id"].drop_nulls().unique().to_list()),
        "rewards": rewards,
    }


def _counts(frame: pl.DataFrame, col: str) -> dict[str, int]:
    return {str(k): n for k, n in frame.group_by(col).len().sort(col, nulls_last=True).iter_rows()}


def build_manifest(config: ExportConfig, schema: pa.Schema, shards: list[Shard], counts: dict[str, Any],
                   scrubbed: dict[str, dict[str, int]], lineage_: dict[str, Any]) -> dict[str, Any]:
    return {
        "manifest_version": MANIFEST_VERSION,
        "name": config.name,
        "config": config.content(),
        "config_hash": config.config_hash,
        "counts": counts,
        "scrubbed": scrubbed,
        "files": [{"path": s.path, "rows": s.rows, "bytes": s.bytes, "sha256": s.sha256} for s in shards],
        "schema": [{"name": f.name, "type": str(f.type)} for f in schema],
        "lineage": lineage_,
    }


def write_manifest(folder: Path, manifest: dict[str, Any]) -> str:
    """Write manifest.json canonically; its sha256 is the export's manifest hash."""
    data = (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
    (folder / "manifest.json").write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def write_card(folder: Path, manifest: dict[str, Any], manifest_hash: str, gate: dict[str, Any]) -> None:
    c, cfg, lin = manifest["counts"], manifest["config"], manifest["lineage"]
    files = "\n".join(f"| `{f['path']}` | {f['rows']} | {f['bytes']} | `{f['sha256'][:16]}…` |" for f in manifest["files"])
    schema = "\n".join(f"| `{f['name']}` | `{f['type']}` |" for f in manifest["schema"])
    dropped = "\n".join(f"| {r} | {n} |" for r, n in {**c["dropped"], **c["step_drops"]}.items() if n) or "| (none) | 0 |"
    scrubbed = "\n".join(f"| {k} | {sum(v.values())} | {', '.join(f'{f} {n}' for f, n in v.items()) or '-'} |"
                         for k, v in manifest["scrubbed"].items())
    sandboxes = "\n".join(f"- `{s}` at {', '.join(f'`{x[:12]}`' for x in commits) or '(unknown commit)'}"
                          for s, commits in lin.get("sandboxes", {}).items()) or "- (none)"
    policies = "\n".join(f"- `{p}`: {v['trajectories']} trajectories, models {', '.join(v['models']) or '-'}"
                         for p, v in lin.get("policies", {}).items()) or "- (none)"
    text = f"""---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*.parquet
tags:
- computer-use
- gui-agent
- flywheel
---
# {manifest['name']}

A `{cfg['format']}` dataset exported by the flywheel's `export-sft`
({'one row per ' + cfg['per'] if cfg['format'] == 'messages' else 'one row per step'};
actions as `{cfg['protocol']}`; images {'embedded' if cfg['images'] == 'embed' else 'referenced by blob path'}).
Manifest hash `{manifest_hash}`, config hash `{manifest['config_hash']}`.
Quality gate: {'passed' if gate['success'] else 'FAILED'} ({gate['statistics']['evaluated']} expectations; `gate.json`).

## Load it
```python
from datasets import load_dataset
ds = load_dataset("parquet", data_files="data/train-*.parquet", split="train")
```
or `polars.scan_parquet("data/*.parquet")`, or DuckDB `SELECT * FROM 'data/*.parquet'`.

## Counts
{c['rows']} rows from {c['trajectories']} trajectories ({c['steps']} steps, {c['images']} images);
{c['considered']} trajectories considered.

| dropped because | n |
|---|---|
{dropped}

## Filters
Verdicts: {'pass and failed (negatives; see `verdict`)' if cfg['negatives'] else 'pass only'}; env_error never;
human rejects never; since {cfg['since'] or 'the beginning'}; exact de-duplication always, near
de-duplication {'on' if cfg['near_dedup'] else 'off'}; caps per sandbox {cfg['max_per_sandbox'] or '-'},
per family {cfg['max_per_family'] or '-'}, per difficulty {cfg['max_per_difficulty'] or '-'} (seed {cfg['seed']}).

## Scrubbed
Secrets and PII in text were replaced by placeholders (`[EMAIL]`, `[PHONE]`, `[CARD]`, `[SECRET]`).
Screenshots are not scrubbed: review them before sharing outside your organisation.

| kind | n | where |
|---|---|---|
{scrubbed}

## Sources and lineage
Lake `{lin.get('lake')}`; {lin.get('tasks', 0)} task versions.

Sandboxes (source commits):
{sandboxes}

Policies:
{policies}

Judge: versions {', '.join(lin.get('judge', {}).get('versions', [])) or '-'}; voters
{', '.join(f'{k} ({v})' for k, v in lin.get('judge', {}).get('voters', {}).items()) or '-'}.
Task families {json.dumps(lin.get('task_families', {}))}; verifier templates
{json.dumps(lin.get('verifier_templates', {}))}; synthesis {json.dumps(lin.get('synthesis', {}))}.
{('Rewards: ' + json.dumps(lin['rewards'])) if lin.get('rewards') else ''}

## Files
| file | rows | bytes | sha256 |
|---|---|---|---|
{files}

## Schema
| column | type |
|---|---|
{schema}
"""
    (folder / "README.md").write_text(text)
