"""How trainers read an export, for the tests: Qwen2-VL's real chat template (tests/data/qwen2_vl, Apache-2.0)
rendered with jinja2 the way transformers' apply_chat_template does, and LLaMA-Factory's loading of a
sharegpt dataset as its data/README.md documents it (hiyouga/LLaMA-Factory, data/README.md at commit
2ad9871bb402d0d4682466970bd404c650f05b9c; the role alternation and message count as its
SharegptDatasetConverter in src/llamafactory/data/converter.py checks them)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QWEN2_VL_TEMPLATE = json.loads((ROOT / "tests" / "data" / "qwen2_vl" / "chat_template.json").read_text())["chat_template"]
VISION = "<|vision_start|><|image_pad|><|vision_end|>"

# The keys LLaMA-Factory's data/README.md documents for a dataset description, its columns and its tags.
DOCUMENTED_KEYS = {"hf_hub_url", "ms_hub_url", "script_url", "cloud_file_name", "file_name", "formatting", "ranking",
                   "subset", "split", "folder", "num_samples", "columns", "tags"}
DOCUMENTED_COLUMNS = {"prompt", "query", "response", "history", "messages", "system", "tools", "images", "videos",
                      "audios", "chosen", "rejected", "kto_tag"}
DOCUMENTED_TAGS = {"role_tag", "content_tag", "user_tag", "assistant_tag", "observation_tag", "function_tag", "system_tag"}
TAG_DEFAULTS = {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
                "observation_tag": "observation", "function_tag": "function_call", "system_tag": "system"}
FILE_TYPES = {"arrow": "arrow", "csv": "csv", "json": "json", "jsonl": "json", "parquet": "parquet", "txt": "text"}


def render_qwen2_vl(messages: list[dict], add_generation_prompt: bool = False) -> str:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    return env.from_string(QWEN2_VL_TEMPLATE).render(messages=messages, add_generation_prompt=add_generation_prompt)


def load_llamafactory(dataset_dir: str | Path, name: str):
    """(the dataset description, the `datasets` Dataset) as LLaMA-Factory loads a local dataset: the entry of
    dataset_info.json in dataset_dir, its file_name (a file, or a folder whose files share one type) loaded
    with `datasets.load_dataset(<type>, data_files=...)`."""
    import datasets

    info = json.loads((Path(dataset_dir) / "dataset_info.json").read_text())
    attr = info[name]
    assert set(attr) <= DOCUMENTED_KEYS, f"undocumented keys {set(attr) - DOCUMENTED_KEYS}"
    assert set(attr.get("columns", {})) <= DOCUMENTED_COLUMNS and set(attr.get("tags", {})) <= DOCUMENTED_TAGS
    assert attr.get("formatting") in ("alpaca", "sharegpt")
    path = Path(dataset_dir) / attr["file_name"]
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    types = {FILE_TYPES.get(f.suffix.lstrip(".")) for f in files}
    assert len(types) == 1 and None not in types, f"LLaMA-Factory needs files of one known type, got {types}"
    ds = datasets.load_dataset(types.pop(), data_files=[str(f) for f in files], split=attr.get("split", "train"))
    return attr, ds


def sharegpt_problems(attr: dict, example: dict) -> list[str]:
    """What LLaMA-Factory would refuse in one sharegpt example (empty: it loads)."""
    tags = TAG_DEFAULTS | attr.get("tags", {})
    columns = {"messages": "conversations"} | attr.get("columns", {})
    messages = example[columns["messages"]]
    problems = []
    if messages and messages[0][tags["role_tag"]] == tags["system_tag"]:
        messages = messages[1:]
    odd, even = (tags["user_tag"], tags["observation_tag"]), (tags["assistant_tag"], tags["function_tag"])
    for i, m in enumerate(messages):
        if m[tags["role_tag"]] not in (odd, even)[i % 2]:
            problems.append(f"turn {i}: role {m[tags['role_tag']]!r} where {(odd, even)[i % 2]} belong")
        if m[tags["role_tag"]] == tags["function_tag"]:
            calls = json.loads(m[tags["content_tag"]])
            for call in calls if isinstance(calls, list) else [calls]:
                if set(call) != {"name", "arguments"} or not isinstance(call["arguments"], dict):
                    problems.append(f"turn {i}: a function call is {{name, arguments: {{...}}}}, got {call}")
    if len(messages) % 2:
        problems.append(f"{len(messages)} turns after the system prompt: a prompt/response pair needs an even count")
    images = example.get(columns["images"]) or [] if "images" in columns else []
    placeholders = sum(m[tags["content_tag"]].count("<image>") for m in example[columns["messages"]])
    if placeholders != len(images):
        problems.append(f"{placeholders} <image> placeholders for {len(images)} images")
    if "tools" in columns:
        tools = json.loads(example[columns["tools"]])
        if not (isinstance(tools, list) and all("name" in t and "parameters" in t for t in tools)):
            problems.append("tools is not a JSON list of function schemas")
    return problems
