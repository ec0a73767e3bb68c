"""Great Expectations suites that gate what the lake hands to others: one per export format.

`gate_export(folder, manifest, pii_patterns)` reads the shards an export just wrote (never the rows the
writer held) and validates pandas frames with GX, in chunks so memory stays bounded:
  files   one row per shard: rows and sha256 match the manifest, the Parquet schema is the format's,
          and the shard rows add up to the manifest's row count;
  rows    ids, keys and verdicts present and in their value sets, ids unique (within a chunk of
          CHUNK_ROWS rows: a global check would hold every id); for messages, as many images as image
          parts and as LLaMA-Factory `<image>` placeholders in `conversations`; for action-rl, every reward signal present and in its range;
  text    every text the rows carry (message parts, tool-call arguments; for action-rl the request, URL,
          action, error): roles and part types in their sets, and no PII pattern left (one expectation
          per kind, so a report says which kind slipped through);
  images  every image decodes (PIL), embedded or referenced by blob key (each distinct one once).
The result is JSON-able: success, and per expectation its suite, type, column, success, unexpected count
and examples (PII examples masked). GX is imported here only, when a gate runs (it costs ~3 s).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

CHUNK_ROWS = 20_000
REWARD_RANGES = {"ct": (0.0, 1.0), "qt": (0.0, 1.0), "st": (-1.0, 0.0), "lt": (-1.0, 0.0)}
KEYS = ("id", "trajectory_id", "task_id", "sandbox", "verdict")
TEXT_FIELDS = {"action-rl": ("instruction", "url", "action", "actions_json", "error")}
# A run's local port in data teaches a model infrastructure: sandboxes are named by canonical origins.
LOCAL_PORT = r"(?:127\.0\.0\.1|localhost):\d+"


def gate_export(folder: Path, manifest: dict[str, Any], pii_patterns: dict[str, str],
                expected_schema: pa.Schema, read_reference: Callable[[str], bytes] | None = None) -> dict[str, Any]:
    """read_reference(key) reads an image referenced by its blob key; by default the file at that key
    under the manifest's `lineage.lake` (a local lake)."""
    gx = _gx()
    fmt = manifest["config"]["format"]
    validator = _Validator(gx)
    validator.run("files", _files_frame(folder, manifest, expected_schema), _files_suite(gx, manifest))
    verdicts = ["pass", "failed"] if manifest["config"]["negatives"] else ["pass"]
    for rows, text in _chunks(folder, manifest, fmt):
        validator.run("rows", rows, _rows_suite(gx, fmt, verdicts))
        validator.run("text", text, _text_suite(gx, fmt, pii_patterns))
    if read_reference is None:
        lake_root = Path(manifest["lineage"]["lake"])

        def read_reference(key: str) -> bytes:
            return (lake_root / key).read_bytes()

    validator.run("images", _every_image(folder, manifest, fmt, read_reference), _images_suite(gx))
    return validator.report(pii_patterns)


def _gx():
    import logging

    logging.getLogger("great_expectations").setLevel(logging.WARNING)  # no "created a temp docs site" lines
    try:
        import great_expectations as gx
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise RuntimeError("the export gate needs great-expectations: run ./bootstrap (or pip install great-expectations)") from exc
    return gx


class _Validator:
    """One ephemeral GX context; validates frames and merges the results of chunks by expectation."""

    def __init__(self, gx) -> None:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self.gx = gx
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.source = self.context.data_sources.add_pandas("export")
        self.definitions: dict[str, Any] = {}
        self.merged: dict[tuple, dict[str, Any]] = {}

    def run(self, suite_name: str, frame, suite) -> None:
        if suite_name not in self.definitions:
            asset = self.source.add_dataframe_asset(name=suite_name)
            self.definitions[suite_name] = asset.add_batch_definition_whole_dataframe("whole")
        batch = self.definitions[suite_name].get_batch(batch_parameters={"dataframe": frame})
        result = batch.validate(suite, result_format="SUMMARY")
        for r in result.results:
            cfg = r.expectation_config
            kwargs = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
            key = (suite_name, cfg.type, json.dumps(kwargs, sort_keys=True, default=str), cfg.description)
            m = self.merged.setdefault(key, {
                "suite": suite_name, "expectation": cfg.type, "description": cfg.description,
                "column": kwargs.get("column") or kwargs.get("column_A"), "success": True,
                "unexpected_count": 0, "examples": [], "observed": None,
            })
            m["success"] = m["success"] and bool(r.success)
            res = r.result or {}
            m["unexpected_count"] += int(res.get("unexpected_count") or 0)
            m["examples"] = (m["examples"] + list(res.get("partial_unexpected_list") or []))[:5]
            if res.get("observed_value") is not None:
                m["observed"] = res["observed_value"]
            if r.exception_info and r.exception_info.get("raised_exception"):
                m["success"] = False
                m["observed"] = r.exception_info.get("exception_message")

    def report(self, pii_patterns: dict[str, str]) -> dict[str, Any]:
        expectations = list(self.merged.values())
        for e in expectations:
            if e["expectation"] == "expect_column_values_to_not_match_regex_list":
                e["examples"] = [_mask(str(x), pii_patterns) for x in e["examples"]]
            e["examples"] = [x if isinstance(x, int | float | bool) or x is None else str(x)[:200] for x in e["examples"]]
            if not isinstance(e["observed"], int | float | bool | str | type(None)):
                e["observed"] = str(e["observed"])
        failed = [e for e in expectations if not e["success"]]
        return {
            "success": not failed,
            "statistics": {"evaluated": len(expectations), "failed": len(failed)},
            "failed": [f"{e['suite']}: {e['description'] or e['expectation']} ({e['column']}): "
                       f"{e['unexpected_count']} unexpected" for e in failed],
            "expectations": expectations,
        }


def _mask(text: str, pii_patterns: dict[str, str]) -> str:
    """The context of a PII hit with the hit itself masked: a report must not leak what it caught."""
    for kind, pattern in pii_patterns.items():
        m = re.search(pattern, text)
        if m:
            hit = m.group(0)
            return f"…{text[max(0, m.start() - 30):m.start()]}<{kind}: {hit[:2]}***>{text[m.end():m.end() + 30]}…"
    return text[:80]


# ---- frames ---------------------------------------------------------------------------------------------


def _files_frame(folder: Path, manifest: dict[str, Any], expected_schema: pa.Schema):
    import hashlib

    import pandas as pd

    rows = []
    for f in manifest["files"]:
        path = folder / f["path"]
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        meta = pq.ParquetFile(path)
        rows.append({
            "path": f["path"], "rows_manifest": f["rows"], "rows_parquet": meta.metadata.num_rows,
            "sha_manifest": f["sha256"], "sha_file": digest.hexdigest(),
            "schema_ok": meta.schema_arrow.remove_metadata().equals(expected_schema.remove_metadata()),
        })
    return pd.DataFrame(rows, columns=["path", "rows_manifest", "rows_parquet", "sha_manifest", "sha_file", "schema_ok"])


def _shards(folder: Path, manifest: dict[str, Any]) -> Iterator[pq.ParquetFile]:
    for f in manifest["files"]:
        yield pq.ParquetFile(folder / f["path"])


def _chunks(folder: Path, manifest: dict[str, Any], fmt: str) -> Iterator[tuple[Any, Any]]:
    """(rows frame, long-form text frame) per chunk of rows, read back from the shards."""
    import pandas as pd

    for shard in _shards(folder, manifest):
        names = [n for n in shard.schema_arrow.names if n not in ("images", "screenshot")]
        for batch in shard.iter_batches(batch_size=CHUNK_ROWS, columns=names):
            rows = batch.select([c for c in batch.schema.names if c not in ("messages", "conversations")]).to_pandas()
            if fmt == "messages":
                text, n_parts = _message_text(batch.column("messages"))
                rows["image_parts"] = n_parts
                rows["image_placeholders"] = _placeholders(batch.column("conversations"))
                rows["images"] = pc.list_value_length(batch.column("image_shas")).fill_null(0).to_numpy()
            else:
                text = pd.concat(
                    [pd.DataFrame({"field": name, "text": batch.column(name).to_pandas()})
                     for name in TEXT_FIELDS["action-rl"]],
                    ignore_index=True,
                )
            yield rows, text.drop_duplicates(ignore_index=True)  # the system prompt once, not once per row


def _message_text(messages: pa.ListArray):
    """Every text a row's messages carry, one line per part or tool call, and the image parts per row."""
    import numpy as np
    import pandas as pd

    flat = pc.list_flatten(messages)
    msg_row = pc.list_parent_indices(messages).to_numpy()
    roles = flat.field("role")
    parts = flat.field("content")
    part_msg = pc.list_parent_indices(parts).to_numpy()
    part_values = pc.list_flatten(parts)
    part_type = part_values.field("type")
    frames = [pd.DataFrame({
        "role": pc.take(roles, pa.array(part_msg)).to_pandas(),
        "type": part_type.to_pandas(),
        "text": part_values.field("text").to_pandas(),
    })]
    calls = flat.field("tool_calls")
    call_msg = pc.list_parent_indices(calls).to_numpy()
    if len(call_msg):
        fn = pc.list_flatten(calls).field("function")
        frames.append(pd.DataFrame({
            "role": pc.take(roles, pa.array(call_msg)).to_pandas(), "type": "tool_call",
            "text": pc.binary_join_element_wise(fn.field("name"), fn.field("arguments"), " ").to_pandas(),
        }))
    is_image = pc.equal(part_type, "image").fill_null(False).to_numpy(zero_copy_only=False)
    per_row = np.bincount(msg_row[part_msg[is_image]], minlength=len(messages))
    return pd.concat(frames, ignore_index=True), per_row


def _placeholders(conversations: pa.ListArray):
    """`<image>` placeholders per row of the LLaMA-Factory turns (it requires as many as the row has images)."""
    import numpy as np

    values = pc.list_flatten(conversations).field("value")
    counts = pc.count_substring(values, "<image>").fill_null(0).to_numpy(zero_copy_only=False)
    return np.bincount(pc.list_parent_indices(conversations).to_numpy(), weights=counts,
                       minlength=len(conversations)).astype(int)


def _every_image(folder: Path, manifest: dict[str, Any], fmt: str, read_reference: Callable[[str], bytes]):
    """Every distinct image the shards carry, decoded with PIL, a row group at a time: a published image
    that is not one (a host file an import referenced, a truncated PNG) fails the gate wherever it sits."""
    import hashlib

    import pandas as pd

    column = "images" if fmt == "messages" else "screenshot"
    out, seen = [], set()
    for shard in _shards(folder, manifest):
        for g in range(shard.num_row_groups):
            values = shard.read_row_group(g, columns=[column]).column(column)
            for img in (pc.list_flatten(values) if fmt == "messages" else values).to_pylist():
                if not img:
                    continue
                key = hashlib.sha256(img["bytes"]).digest() if img.get("bytes") is not None else img.get("path")
                if key not in seen:
                    seen.add(key)
                    out.append(_decode(img, read_reference))
    return pd.DataFrame(out, columns=["path", "decodable", "width", "height"])


def _decode(img: dict, read_reference: Callable[[str], bytes]) -> dict:
    from PIL import Image

    try:
        data = img["bytes"] if img.get("bytes") is not None else read_reference(img["path"])
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            return {"path": img.get("path"), "decodable": True, "width": im.width, "height": im.height}
    except Exception as exc:  # any decoder error is the finding, not a crash
        return {"path": f"{img.get('path')}: {type(exc).__name__}", "decodable": False, "width": 0, "height": 0}


# ---- suites ---------------------------------------------------------------------------------------------


def _files_suite(gx, manifest: dict[str, Any]):
    e = gx.expectations
    total = manifest["counts"]["rows"]
    return gx.ExpectationSuite(name="export-files", expectations=[
        e.ExpectTableRowCountToEqual(value=len(manifest["files"]), description="one shard per manifest entry"),
        e.ExpectColumnPairValuesToBeEqual(column_A="rows_manifest", column_B="rows_parquet",
                                          description="shard row counts match the manifest"),
        e.ExpectColumnPairValuesToBeEqual(column_A="sha_manifest", column_B="sha_file",
                                          description="shard hashes match the manifest"),
        e.ExpectColumnValuesToBeInSet(column="schema_ok", value_set=[True], description="shards have the format's schema"),
        e.ExpectColumnSumToBeBetween(column="rows_parquet", min_value=total, max_value=total,
                                     description="rows add up to the manifest's count"),
    ])


def _rows_suite(gx, fmt: str, verdicts: list[str]):
    e = gx.expectations
    exp = [e.ExpectColumnValuesToNotBeNull(column=c, description=f"{c} is never null") for c in KEYS]
    exp += [
        e.ExpectColumnValuesToBeInSet(column="verdict", value_set=verdicts, description="verdicts the config asked for"),
        e.ExpectColumnValuesToBeUnique(column="id", description="row ids are unique"),
    ]
    if fmt == "messages":
        exp.append(e.ExpectColumnPairValuesToBeEqual(column_A="images", column_B="image_parts",
                                                     description="one image per image part"))
        exp.append(e.ExpectColumnPairValuesToBeEqual(column_A="images", column_B="image_placeholders",
                                                     description="one <image> placeholder per image (LLaMA-Factory)"))
    else:
        exp += [e.ExpectColumnValuesToNotBeNull(column=c, description=f"{c} is never null")
                for c in ("step_index", "action", "reward", "ok", "done")]
        exp += [e.ExpectColumnValuesToBeBetween(column=c, min_value=lo, max_value=hi, description=f"{c} in [{lo}, {hi}]")
                for c, (lo, hi) in REWARD_RANGES.items()]
    return gx.ExpectationSuite(name=f"export-rows-{fmt}", expectations=exp)


def _text_suite(gx, fmt: str, pii_patterns: dict[str, str]):
    e = gx.expectations
    exp = [e.ExpectColumnValuesToNotMatchRegexList(column="text", regex_list=[p], description=f"no {kind} left")
           for kind, p in pii_patterns.items()]
    exp.append(e.ExpectColumnValuesToNotMatchRegexList(
        column="text", regex_list=[LOCAL_PORT], description="no local port (127.0.0.1:<port>, localhost:<port>)"))
    if fmt == "messages":
        exp += [
            e.ExpectColumnValuesToBeInSet(column="role", value_set=["system", "user", "assistant"],
                                          description="roles are system, user, assistant"),
            e.ExpectColumnValuesToBeInSet(column="type", value_set=["text", "image", "tool_call"],
                                          description="parts are text, image or tool calls"),
        ]
    return gx.ExpectationSuite(name=f"export-text-{fmt}", expectations=exp)


def _images_suite(gx):
    e = gx.expectations
    return gx.ExpectationSuite(name="export-images", expectations=[
        e.ExpectColumnValuesToBeInSet(column="decodable", value_set=[True], description="every image decodes"),
        e.ExpectColumnValuesToBeBetween(column="width", min_value=1, description="every image has pixels"),
    ])
