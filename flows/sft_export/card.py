"""manifest.json (what the export holds, with file hashes), README.md (the dataset card, with Hugging Face
YAML metadata: licence, task categories, data files, features, split sizes) and, for `messages`,
dataset_info.json (LLaMA-Factory's description of the dataset: sharegpt columns and tags).

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


def lineage(kept: pl.DataFrame, lake_root: str | Path, rewards: list[dict[str, Any]]) -> dict[str, Any]:
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
                   scrubbed: dict[str, dict[str, int]], lineage_: dict[str, Any],
                   sidecars: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`files` are the data shards; `sidecars` other files published beside them (listed only when there are
    some, so exports without any keep their manifest hash)."""
    return ({"sidecars": sidecars} if sidecars else {}) | {
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


_HF_DTYPES = {pa.string(): "string", pa.int32(): "int32", pa.int64(): "int64", pa.float64(): "float64",
              pa.bool_(): "bool", pa.binary(): "binary"}
TASK_CATEGORIES = {"messages": ["image-text-to-text"], "action-rl": ["reinforcement-learning", "image-text-to-text"]}
SIZE_CATEGORIES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]


def hf_features(schema: pa.Schema) -> list[dict[str, Any]]:
    """The schema as a Hugging Face card's `dataset_info.features` (image columns from the schema's metadata)."""
    meta = json.loads((schema.metadata or {}).get(b"huggingface", b"{}")).get("info", {}).get("features", {})
    return [{"name": f.name, **_hf_body(f.type, meta.get(f.name))} for f in schema]


def _hf_body(t: pa.DataType, hf: dict[str, Any] | None = None) -> dict[str, Any]:
    if hf and hf.get("_type") == "Image":
        return {"dtype": "image"}
    if pa.types.is_struct(t):
        return {"struct": [{"name": t.field(i).name, **_hf_body(t.field(i).type)} for i in range(t.num_fields)]}
    if pa.types.is_list(t):
        inner = _hf_body(t.value_type, (hf or {}).get("feature"))
        return {"list": inner.get("dtype") or inner.get("struct") or inner}
    return {"dtype": _HF_DTYPES[t]}


def card_metadata(manifest: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    cfg, rows = manifest["config"], manifest["counts"]["rows"]
    size = sum(f["bytes"] for f in manifest["files"])
    meta: dict[str, Any] = {"license": cfg.get("license", "other")}
    if meta["license"] == "other":
        meta["license_name"] = "unspecified"
    meta |= {
        "pretty_name": manifest["name"],
        "task_categories": TASK_CATEGORIES[cfg["format"]],
        "tags": ["computer-use", "gui-agent", "flywheel", "trl", *(["llama-factory"] if cfg["format"] == "messages" else [])],
        "size_categories": [next((c for n, c in SIZE_CATEGORIES if rows < n), "n>100M")],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*.parquet"}]}],
        "dataset_info": {
            "config_name": "default",
            "features": hf_features(schema),
            "splits": [{"name": "train", "num_bytes": size, "num_examples": rows}],
            "download_size": size,
            "dataset_size": size,
        },
    }
    return meta


def dataset_info(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """LLaMA-Factory's dataset_info.json for a `messages` export (data/README.md of LLaMA-Factory: sharegpt
    formatting, `conversations` and `images` columns, the role tags spelled out); None for action-rl."""
    cfg = manifest["config"]
    if cfg["format"] != "messages":
        return None
    columns = {"messages": "conversations", "images": "images"}
    if cfg["protocol"] == "openai":  # function_call turns: the model needs the tool schemas (qwen-xml has them in the system prompt)
        columns["tools"] = "tools"
    return {manifest["name"]: {
        "file_name": "data",
        "formatting": "sharegpt",
        "columns": columns,
        "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
                 "observation_tag": "observation", "function_tag": "function_call", "system_tag": "system"},
    }}


def write_dataset_info(folder: Path, manifest: dict[str, Any]) -> None:
    info = dataset_info(manifest)
    if info:
        (folder / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n")


def references(manifest: dict[str, Any]) -> str:
    """How to decode images referenced by blob key (`--images ref`): join the keys to the lake's root."""
    if manifest["config"]["images"] != "ref":
        return ""
    column = "images" if manifest["config"]["format"] == "messages" else "screenshot"
    feature, value = (("List(Image(decode=False))", "[{'bytes': None, 'path': f'{LAKE}/{i[\"path\"]}'} for i in r[COLUMN]]")
                      if column == "images" else ("Image(decode=False)",
                                                  "{'bytes': None, 'path': f'{LAKE}/{r[COLUMN][\"path\"]}'} if r[COLUMN] else None"))
    trainers = ("Trainers that open the paths themselves (LLaMA-Factory) open them relative to their working directory:"
                " start\nthem in the lake's root.\n") if column == "images" else ""
    return f"""
Images are referenced, not embedded: each `{column}` value has `bytes` null and `path` the blob's key, its path
relative to the root of the lake it was exported from (`blobs/sha256/<ab>/<cd>/<sha256>`, the same wherever the
lake sits). Join the keys to the lake's root before decoding:
```python
from datasets import Image, List
LAKE, COLUMN = {manifest['lineage']['lake']!r}, {column!r}  # lineage.lake in manifest.json
ds = ds.cast_column(COLUMN, {feature})
ds = ds.map(lambda r: {{COLUMN: {value}}}).cast_column(COLUMN, {feature.replace("decode=False", "")})
```
{trainers}"""


def write_card(folder: Path, manifest: dict[str, Any], manifest_hash: str, gate: dict[str, Any],
               schema: pa.Schema) -> None:
    import yaml

    front = yaml.safe_dump(card_metadata(manifest, schema), sort_keys=False, allow_unicode=True, width=110)
    c, cfg, lin = manifest["counts"], manifest["config"], manifest["lineage"]
    files = "\n".join(f"| `{f['path']}` | {f['rows']} | {f['bytes']} | `{f['sha256'][:16]}…` |"
                      for f in manifest["files"] + manifest.get("sidecars", []))
    schema = "\n".join(f"| `{f['name']}` | `{f['type']}` |" for f in manifest["schema"])
    dropped = "\n".join(f"| {r} | {n} |" for r, n in {**c["dropped"], **c["step_drops"]}.items() if n) or "| (none) | 0 |"
    scrubbed = "\n".join(f"| {k} | {sum(v.values())} | {', '.join(f'{f} {n}' for f, n in v.items()) or '-'} |"
                         for k, v in manifest["scrubbed"].items())
    sandboxes = "\n".join(f"- `{s}` at {', '.join(f'`{x[:12]}`' for x in commits) or '(unknown commit)'}"
                          for s, commits in lin.get("sandboxes", {}).items()) or "- (none)"
    policies = "\n".join(f"- `{p}`: {v['trajectories']} trajectories, models {', '.join(v['models']) or '-'}"
                         for p, v in lin.get("policies", {}).items()) or "- (none)"
    licence = (f"Licence: `{cfg.get('license')}`." if cfg.get("license", "other") != "other" else
               "Licence: **none chosen** (`license: other`): set one with `export-sft --license ID` before sharing.")
    llama = f"""
LLaMA-Factory reads the same files through `dataset_info.json` (sharegpt: `conversations` with `<image>`
placeholders, `images`{', `tools`' if cfg['protocol'] == 'openai' else ''}):
```yaml
dataset_dir: exports/{manifest['name']}/latest   # the folder that holds this card and dataset_info.json
dataset: {manifest['name']}
template: qwen2_vl
```
""" if cfg["format"] == "messages" else ""
    text = f"""---
{front}---
# {manifest['name']}

A `{cfg['format']}` dataset exported by the flywheel's `export-sft`
({'one row per ' + cfg['per'] if cfg['format'] == 'messages' else 'one row per step'};
actions as `{cfg['protocol']}`; images {'embedded' if cfg['images'] == 'embed' else 'referenced by blob key'}).
Manifest hash `{manifest_hash}`, config hash `{manifest['config_hash']}`.
Quality gate: {'passed' if gate['success'] else 'FAILED'} ({gate['statistics']['evaluated']} expectations; `gate.json`).
{licence} The screenshots show sandbox apps that keep their own licences (see the sources below).

## Load it
```python
from datasets import load_dataset
ds = load_dataset("parquet", data_files="data/train-*.parquet", split="train")
```
or `polars.scan_parquet("data/*.parquet")`, or DuckDB `SELECT * FROM 'data/*.parquet'`. TRL reads `messages`
and `images`.
{references(manifest)}{llama}
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
