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

with at most 15 actions an episode (the loop's cap), ending at `click[Buy Now]` (the purchase, answered with
"Your score (min 0.0, max 1.0): <r>"). `build_webshop_react_set` writes each episode in the Mind2Web form the
importer reads (`action_repr`, `think`, `error`):

- `search[q]` is `[searchbox] Search -> TYPE: q` (the store's search box, submitted);
- `click[X]` is `[] X -> CLICK`: the log names the control by its text only, not its role (an item's id, an
  option, `Buy Now`, `< Prev`, `Back to Search`);
- another action (`exit[...]`, a malformed one) is kept as it was printed, with its name as an operation
  the importer keeps unmapped (`EXIT`, `UNPARSED`), so no step is lost;
- `think[...]` is not a step of ours: its words become the `think` of the next action (several in a row are
  joined), as the model's reasoning for it;
- `error` is "Invalid action!" when the store refused the action, else none; `observation` is the page text
  printed after the action (the importer ignores it; it is what a labeller reads).

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
NOTEBOOK = "WebShop.ipynb"
LICENSE = "MIT"
POLICY = "react-text-davinci-002"
INVALID = "Invalid action!"
_EPISODE_RULE = re.compile(r"^-{17}\n(\d+)\n", re.M)  # 17 dashes and the episode's number open an episode
_ACTION = re.compile(
    r"^Action: ([^\n]*)\nObservation:(.*?)(?=^Action: [^\n]*\nObservation:|^\d+ [\d.]+ [\d.]+ [\d.]+\n|\Z)",
    re.M | re.S,
)
_CALL = re.compile(r"^(\w+)\[(.*?)\]?$", re.S)  # the model's output was cut at 100 tokens: "]" may be missing
_INSTRUCTION = re.compile(r"Instruction:\s*(.*?)\s*\[Search\]", re.S)


def build_webshop_react_set(git_dir: str | Path, out: str | Path, commit: str = COMMIT) -> int:
    """data.jsonl from a snapshot of ysymyth/ReAct: every episode printed by WebShop.ipynb; returns the count."""
    with Snapshot(git_dir, commit) as snap:
        notebook = snap.json(NOTEBOOK)
        if not isinstance(notebook, dict):
            raise ValueError(f"{REPO}@{commit}: no {NOTEBOOK} to read")
        records = []
        for number, text in episodes(printed_output(notebook)):
            record = episode(number, text)
            if record["steps"]:
                record["source"] = snap.source(REPO, f"{NOTEBOOK}#episode-{number}", LICENSE)
                records.append(record)
    return write_jsonl(out, records)


def printed_output(notebook: dict) -> str:
    """Every code cell's printed (stream) output, in order, as one text."""
    parts = []
    for cell in notebook.get("cells") or []:
        for output in cell.get("outputs") or [] if isinstance(cell, dict) else []:
            if isinstance(output, dict) and output.get("output_type") == "stream":
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


def episode(number: int, text: str) -> dict[str, Any]:
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
        steps.append(
            {
                **_operation(call, action),
                "think": "\n".join(thoughts) or None,
                "error": INVALID if observation.startswith(INVALID) else None,
                "observation": observation,
            }
        )
        thoughts = []
        bought = bought or (
            call is not None and call[1] == "click" and call[2] == "Buy Now" and not steps[-1]["error"]
        )
    return {
        "task_id": f"webshop/fixed_{number}",
        "policy": POLICY,
        "instruction": instruction,
        "ended": "terminated" if bought else "max_steps",
        "steps": steps,
    }


def _operation(call: re.Match | None, action: str) -> dict[str, str]:
    if call and call[1] == "search":
        return {"action_repr": f"[searchbox] Search -> TYPE: {call[2]}"}
    if call and call[1] == "click":
        return {"action_repr": f"[] {call[2]} -> CLICK"}
    # an operation the importer does not map (exit, a malformed action): kept as printed, unmapped
    return {"action_repr": action, "operation": (call[1] if call else "unparsed").upper()}
