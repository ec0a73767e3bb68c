"""A blind labelled set: ReAct (text-davinci-002) on 500 WebShop tasks (ysymyth/ReAct's WebShop.ipynb) as data.jsonl.

The repository (MIT; nothing of it is committed, see tests/data/mining_eval/WEBSHOP_REACT.md) keeps the
notebook of the ReAct paper's WebShop experiment with its printed output: 500 episodes of a prompted
text-davinci-002 shopping on WebShop's simulated store (`fixed_0` .. `fixed_499`), each printed as

    -----------------
    <n>
    Action: reset
    Observation: <the store's start page: "Webshop / Instruction: / <the instruction> / [Search]">
    Action: search[<query>]            # or think[<words>], click[<a bracketed control>], ...
    Observation: <the page after it, as text; "Invalid action!" when the store refused the action>
    ...
    <n+1> <mean score> <success rate> <failure rate>
    -------------

with at most 15 turns an episode (the loop's cap; thoughts count), ending at `click[Buy Now]` (the purchase, answered with
"Your score (min 0.0, max 1.0): <r>"). `build_webshop_react_set` writes each episode in the Mind2Web form the
importer reads (`action_repr`, `think`, `error`):

- `search[q]` is `[searchbox] Search -> TYPE: q` (the store's search box, submitted);
- `click[X]` is `[] X -> CLICK`: the log names the control by its text only, not its role (an item's id, an
  option, `Buy Now`, `< Prev`, `Back to Search`);
- an action the store does not have (`exit[...]`, `type[...]`, a search without brackets) is the model's own
  mistake, which the store refuses: it is kept as a step in our own form, with no action and the format error
  `unknown_action: <the action>` (as the BrowserGym reader marks a call it cannot read), so no step is lost;
- `think[...]` is not a step of ours: its words become the `think` of the next action (several in a row are
  joined), as the model's reasoning for it;
- `error` is "Invalid action!" when the store refused the action, else none; `observation` is the page text
  printed after the action (the importer ignores it; it is what a labeller reads).

Reruns of the same harness print the same way: `BRITTLENESS_NOTEBOOKS` reads sbhambr1/react_brittleness's three
(REACT_BRITTLENESS.md), each notebook's episodes with their own policy and task-id prefix.

Step `i` is the episode's `i`-th action other than reset and think. The run's `ended` is `terminated` when it
bought something, else `max_steps`. The notebook is parsed as JSON and never run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "ysymyth/ReAct"
COMMIT = "6bdb3a1fd38b8188fc7ba4102969fe483df8fdc9"
LICENSE = "MIT"
# (notebook, the policy that ran it, the prefix of its episodes' task ids): the ReAct paper's own run
NOTEBOOKS = (("WebShop.ipynb", "react-text-davinci-002", "webshop"),)
# sbhambr1/react_brittleness (MIT, its LICENSE is ReAct's): the same harness and prompt rerun with three newer
# models (REACT_BRITTLENESS.md); each notebook numbers its episodes from 100, so the prefix tells them apart
BRITTLENESS_REPO = "sbhambr1/react_brittleness"
BRITTLENESS_COMMIT = "d19b1fa3a803ee7b796e2595af2275bd1287027e"
BRITTLENESS_NOTEBOOKS = (
    ("WebShop_llama.ipynb", "react-llama-3.1-8b-instruct", "llama-3.1-8b"),
    ("WebShop_instruct.ipynb", "react-gpt-3.5-turbo-instruct", "gpt-3.5-turbo-instruct"),
    ("WebShop.ipynb", "react-gpt-3.5-turbo", "gpt-3.5-turbo"),
)
INVALID = "Invalid action!"
UNKNOWN_ACTION_CHARS = 80  # of an action the store does not know, kept in its step's format error
_EPISODE_RULE = re.compile(r"^-{17}\n(\d+)\n", re.M)  # 17 dashes and the episode's number open an episode
_ACTION = re.compile(
    r"^Action: ([^\n]*)\nObservation:(.*?)(?=^Action: [^\n]*\nObservation:|^\d+ [\d.]+ [\d.]+ [\d.]+\n|\Z)",
    re.M | re.S,
)
_CALL = re.compile(r"^(\w+)\[(.*?)\]?$", re.S)  # the model's output was cut at 100 tokens: "]" may be missing
_INSTRUCTION = re.compile(r"Instruction:\s*(.*?)\s*\[Search\]", re.S)


def build_webshop_react_set(
    git_dir: str | Path,
    out: str | Path,
    commit: str = COMMIT,
    notebooks: tuple[tuple[str, str, str], ...] = NOTEBOOKS,
    repo: str = REPO,
) -> int:
    """data.jsonl from a snapshot of ysymyth/ReAct (or a rerun of its harness: `notebooks`, `repo`): every
    episode each notebook printed; returns the count."""
    with Snapshot(git_dir, commit) as snap:
        records = []
        for path, policy, prefix in notebooks:
            notebook = snap.json(path)
            if not isinstance(notebook, dict):
                raise ValueError(f"{repo}@{commit}: no {path} to read")
            for number, text in episodes(printed_output(notebook)):
                record = episode(number, text, policy, prefix)
                if record["steps"]:
                    record["source"] = snap.source(repo, f"{path}#episode-{number}", LICENSE)
                    records.append(record)
    return write_jsonl(out, records)


def printed_output(notebook: dict) -> str:
    """Every code cell's printed output (its stdout stream; warnings on stderr are not the harness's), in
    order, as one text."""
    parts = []
    for cell in notebook.get("cells") or []:
        for output in cell.get("outputs") or [] if isinstance(cell, dict) else []:
            if (
                isinstance(output, dict)
                and output.get("output_type") == "stream"
                and output.get("name") == "stdout"
            ):
                text = output.get("text")
                parts.append(
                    "".join(text) if isinstance(text, list) else text if isinstance(text, str) else ""
                )
    return "".join(parts)


def episodes(printed: str) -> list[tuple[int, str]]:
    """(episode number, its printed text) for each episode the output holds."""
    starts = list(_EPISODE_RULE.finditer(printed))
    ends = [m.start() for m in starts[1:]] + [len(printed)]
    return [(int(m[1]), printed[m.end() : end]) for m, end in zip(starts, ends)]


def episode(
    number: int, text: str, policy: str = NOTEBOOKS[0][1], prefix: str = NOTEBOOKS[0][2]
) -> dict[str, Any]:
    """One printed episode as a data.jsonl record (see the module's doc)."""
    instruction, steps, thoughts, bought = None, [], [], False
    for m in _ACTION.finditer(text):
        action, observation = m[1].strip(), m[2].strip()
        if action == "reset":
            found = _INSTRUCTION.search(observation)
            instruction = " ".join(found[1].split()) if found else None
            continue
        call = _CALL.match(action)
        if call and call[1] == "think":
            thoughts.append(call[2].strip())
            continue
        said = "\n".join(thoughts) or None
        steps.append(
            {
                **_step(call, action, said),
                "error": INVALID if observation.startswith(INVALID) else None,
                "observation": observation,
            }
        )
        thoughts = []
        bought = bought or (
            call is not None and call[1] == "click" and call[2] == "Buy Now" and not steps[-1]["error"]
        )
    return {
        "task_id": f"{prefix}/fixed_{number}",
        "policy": policy,
        "instruction": instruction,
        "ended": "terminated" if bought else "max_steps",
        "steps": steps,
    }


def _step(call: re.Match | None, action: str, said: str | None) -> dict[str, Any]:
    if call and call[1] == "search":
        return {"action_repr": f"[searchbox] Search -> TYPE: {call[2]}", "think": said}
    if call and call[1] == "click":
        return {"action_repr": f"[] {call[2]} -> CLICK", "think": said}
    # no action of the store's (exit[...], type[...], a search without brackets): the model's own mistake, which
    # the store refuses; kept in our own step form with no action and that format error, so no step is lost
    return {
        "actions": [],
        "raw_output": f"{said}\n{action}" if said else action,
        "format_error": f"unknown_action: {action[:UNKNOWN_ACTION_CHARS]}",
    }
