"""Exports load unchanged where trainers look: TRL (`messages` + `images` through `datasets`, rendered by
Qwen2-VL's real chat template) and LLaMA-Factory (dataset_info.json + sharegpt `conversations` with `<image>`
placeholders), and the dataset card's Hugging Face metadata (licence, task categories, features) parses back
into the features `datasets` loads. On small lakes with the real schemas (tests/flows/export_data.py); the
cycle-lake test in test_export.py does the same on a lake the real flows made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.sft_export.config import ExportConfig
from flows.sft_export.export import export_sft
from tests.flows.export_data import DONE, add_task, add_trajectory, click, type_
from tests.flows.trainer_layouts import VISION, load_llamafactory, render_qwen2_vl, sharegpt_problems

ABUSE = "Type <image> and <video> into the note, then save"  # placeholders in text must not count as media


@pytest.fixture
def layout_lake(lake):
    add_task(lake, "task-a", instruction=ABUSE)
    add_task(lake, "task-b", sandbox="mail", family="delete", instruction="Delete the draft")
    for i in range(3):
        add_trajectory(lake, f"a{i}", turns=[[type_(f"<image> {i}")], [click("Save")], [DONE]], minutes=i)
        add_trajectory(lake, f"b{i}", task_id="task-b", sandbox="mail", turns=[[click(f"Draft {i}", "link")], [DONE]],
                       minutes=i, image_every=2)  # the second step has no screenshot: a turn without an image
    return lake


def export(lake, tmp_path, **config):
    result = export_sft(lake, ExportConfig(**{"name": "t", **config}), out=tmp_path / "exports")
    assert result.status == "published", result.markdown()
    return Path(result.path)


@pytest.mark.parametrize("config", [{}, {"per": "trajectory"}, {"protocol": "openai"}, {"images": "ref"}],
                         ids=["per-step", "per-trajectory", "openai", "images-ref"])
def test_both_layouts_load_with_datasets_and_meet_their_formats(layout_lake, tmp_path, config):
    import datasets

    folder = export(layout_lake, tmp_path, **config)
    trl = datasets.load_dataset("parquet", data_files=f"{folder}/data/*.parquet", split="train")
    if config.get("images") == "ref":  # blob keys relative to the lake: decoded through the card's own recipe
        assert all(img["path"].startswith("blobs/sha256/") for img in trl.cast_column(
            "images", datasets.List(datasets.Image(decode=False)))[0]["images"])
        trl = card_recipe(folder, trl)
    attr, lf = load_llamafactory(folder, "t")
    if config.get("images") == "ref":
        lf = card_recipe(folder, lf)
    assert len(lf) == len(trl) > 0
    assert attr["formatting"] == "sharegpt" and attr["columns"]["messages"] == "conversations"
    assert ("tools" in attr["columns"]) == (config.get("protocol") == "openai")
    for row, example in zip(trl, lf):
        # TRL: the images decode, and Qwen2-VL's template shows one vision block per image
        assert all(img.size[0] > 0 for img in row["images"])
        text = render_qwen2_vl(row["messages"])
        assert text.count(VISION) == len(row["images"])
        assert text.startswith("<|im_start|>system\nYou are a computer-use agent")
        # LLaMA-Factory: nothing its converter refuses, as many <image> placeholders as images
        assert sharegpt_problems(attr, example) == []
        assert [t["from"] for t in example["conversations"]][:3] == (
            ["system", "human", "function_call" if config.get("protocol") == "openai" else "gpt"])
    every_value = " ".join(t["value"] for r in lf for t in r["conversations"])
    assert "[image]" in every_value and "[video]" in every_value  # the request's and typed text's placeholders
    assert any(len(r["images"]) == 0 for r in lf) or config.get("per") == "trajectory"


def card_recipe(folder: Path, ds):
    """Runs the dataset card's code for referenced images on ds, as a reader of the card would."""
    card = (folder / "README.md").read_text()
    code = card.split("Join the keys to the lake's root before decoding:\n```python\n", 1)[1].split("```", 1)[0]
    scope = {"ds": ds}
    exec(code, scope)  # the card's text, which this test is checking works
    return scope["ds"]


def test_qwen2_vl_renders_the_assistant_turn_as_its_tool_call(layout_lake, tmp_path):
    import datasets

    folder = export(layout_lake, tmp_path)
    row = datasets.load_dataset("parquet", data_files=f"{folder}/data/*.parquet", split="train")[0]
    text = render_qwen2_vl(row["messages"])
    assistant = text.split("<|im_start|>assistant\n", 1)[1]
    assert assistant.startswith("<tool_call>\n") and '"name": "computer_use"' in assistant
    prompt = render_qwen2_vl(row["messages"][:-1], add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n") and text.startswith(prompt)


def test_the_card_metadata_parses_back_into_the_loaded_features(layout_lake, tmp_path):
    import datasets
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard

    for config in ({"license": "cc-by-4.0"}, {"format": "action-rl", "name": "rl"}):
        folder = export(layout_lake, tmp_path, **config)
        card = DatasetCard.load(folder / "README.md")
        ds = datasets.load_dataset("parquet", data_files=f"{folder}/data/*.parquet", split="train")
        info = DatasetInfosDict.from_dataset_card_data(card.data)["default"]
        assert info.features == ds.features
        assert info.splits["train"].num_examples == len(ds)
        assert card.data.configs[0]["data_files"][0]["path"] == "data/train-*.parquet"
        if config.get("format") == "action-rl":
            assert card.data.task_categories == ["reinforcement-learning", "image-text-to-text"]
            assert not (folder / "dataset_info.json").exists()  # RL rows are not an SFT chat dataset
        else:
            assert card.data.license == "cc-by-4.0" and card.data.task_categories == ["image-text-to-text"]
            assert "llama-factory" in card.data.tags and "dataset_info.json" in card.text
        assert "Sources and lineage" in card.text and "commit-shop" in card.text


def test_without_a_licence_the_card_says_none_was_chosen(layout_lake, tmp_path):
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(export(layout_lake, tmp_path) / "README.md")
    assert card.data.license == "other" and card.data.license_name == "unspecified"
    assert "none chosen" in card.text


def test_a_bad_licence_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="cc-by-4.0"):
        ExportConfig(name="t", license="CC BY 4.0; DROP")


def test_the_gate_refuses_a_row_whose_placeholders_do_not_count_its_images(layout_lake, tmp_path, monkeypatch):
    from flows.sft_export import formats

    real = formats.sharegpt
    monkeypatch.setattr(formats, "sharegpt", lambda messages: [dict(t, value=t["value"] + "<image>") for t in real(messages)])
    result = export_sft(layout_lake, ExportConfig(name="t"), out=tmp_path / "exports")
    assert result.status == "gate_failed"
    assert any("placeholder" in f for f in result.gate_failed)


def test_dataset_info_is_what_llamafactory_documents(layout_lake, tmp_path):
    folder = export(layout_lake, tmp_path, name="shop-sft")
    assert json.loads((folder / "dataset_info.json").read_text()) == {"shop-sft": {
        "file_name": "data", "formatting": "sharegpt", "columns": {"messages": "conversations", "images": "images"},
        "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
                 "observation_tag": "observation", "function_tag": "function_call", "system_tag": "system"},
    }}


def test_the_llamafactory_check_fails_where_llamafactory_would(layout_lake, tmp_path):
    """The checks above can fail: each break of dataset_info.json that LLaMA-Factory's parser (DatasetAttr in
    src/llamafactory/data/parser.py) or its sharegpt converter would trip on is caught."""
    folder = export(layout_lake, tmp_path, name="lf")
    good = json.loads((folder / "dataset_info.json").read_text())["lf"]

    def problems(attr: dict, extra_file: str | None = None) -> str:
        (folder / "dataset_info.json").write_text(json.dumps({"lf": attr}))
        if extra_file:
            (folder / "data" / extra_file).write_text("{}")
        try:
            loaded_attr, ds = load_llamafactory(folder, "lf")
            found = [p for example in ds for p in sharegpt_problems(loaded_attr, example)]
            return "; ".join(found)
        except (AssertionError, KeyError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            if extra_file:
                (folder / "data" / extra_file).unlink()

    assert problems(good) == ""
    assert "undocumented keys" in problems({**good, "file": "data"})
    assert problems({**good, "formatting": "openai"})
    assert "role" in problems({**good, "tags": {**good["tags"], "user_tag": "user"}})
    assert problems({**good, "columns": {**good["columns"], "messages": "messages"}})  # TRL's column is not sharegpt
    assert "placeholders" in problems({**good, "columns": {"messages": "conversations"}})  # images not named
    assert "one known type" in problems(good, extra_file="notes.json")  # a folder of mixed files
