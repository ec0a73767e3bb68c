"""A third labelled set: ColorBrowserAgent's WebArena runs (MadeAgents/browser-agent) as data.jsonl for `real_eval`.

The repository (Apache-2.0; still nothing of it is committed, see tests/data/mining_eval/WEBARENA_COLORBROWSER.md)
keeps BrowserGym's experiment-loop dumps of GPT-5 on the 812 WebArena tasks: per task a `summary_info.json`
(`n_steps`, the reward, the error that ended the run) and per step a `steps_info_<n>.json` whose `obs` holds
the goal, the open pages' URLs, the flattened accessibility tree (`[431] link 'Bestsellers'`) and the last
action's error, and whose `action` is the model's output: a `<think>` block, then an `<action>` block with one
BrowserGym call in backquotes. `build_webarena_colorbrowser_set` writes the runs as BrowserGym steps the importer
reads unchanged: `action` (the call), `think`, `url` (the active page), `axtree_txt` (that step's
tree, which names the target) and `error` - the error the *next* observation reports, which is this action's.
The dump after the last executed action (step `n_steps`) holds an action the loop never ran; it is left out,
so step `i` here is `steps_info_<i>.json`. An empty output (the harness's "Received an empty action") is kept
as a call the importer marks unmapped, so the step count and the labels' indices stay the source's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "MadeAgents/browser-agent"
POLICY = "colorbrowseragent-gpt-5"
RESULTS = "trajectories/webarena/results"
WEBCHOREARENA_RESULTS = "trajectories/webchorearena/results"  # the same agent on WebChoreArena (WEBCHOREARENA_COLORBROWSER.md)
LICENSE = "Apache-2.0"
_STEP_FILE = re.compile(r"^task_(\d+)/steps_info_(\d+)\.json$")
_ACTION = re.compile(r"<action>\s*(.*?)\s*(?:</action>?|$)", re.S)  # some outputs never close the block
_THINK = re.compile(r"<think>\s*(.*?)\s*(?:</think>|<action>|$)", re.S)
EMPTY = "empty_action()"  # not a BrowserGym call: the importer keeps it as an unmapped step


def build_webarena_colorbrowser_set(
    git_dir: str | Path,
    out: str | Path,
    commit: str = "HEAD",
    sample: Callable[[str], bool] | None = None,
    results: str = RESULTS,
) -> int:
    """data.jsonl from a snapshot of MadeAgents/browser-agent (every task of the `results` folder, or those
    `sample` keeps by task id, `<benchmark>/task_<n>`); returns the count. Runs with no executed step (the
    browser never started) are left out."""
    benchmark = Path(results).parent.name  # trajectories/<benchmark>/results
    with Snapshot(git_dir, commit) as snap:
        tasks: dict[int, dict[int, str]] = {}
        for name in snap.names(f"{results}/"):
            m = _STEP_FILE.match(name.removeprefix(f"{results}/"))
            if m:
                tasks.setdefault(int(m[1]), {})[int(m[2])] = name
        lines = []
        for number in sorted(tasks):
            task_id = f"{benchmark}/task_{number}"
            if sample is not None and not sample(task_id):
                continue
            summary = _dict(snap.json(f"{results}/task_{number}/summary_info.json"))
            dumps = [_dict(snap.json(tasks[number][i])) for i in sorted(tasks[number])]
            record = trajectory(task_id, dumps, summary)
            if record["steps"]:
                record["source"] = snap.source(REPO, f"{results}/task_{number}", LICENSE)
                lines.append(record)
    return write_jsonl(out, lines)


def trajectory(task_id: str, dumps: list[dict], summary: dict) -> dict:
    """One run (its step dumps in order) as a data.jsonl record, steps in BrowserGym form (see the module's doc)."""
    executed = summary.get("n_steps")
    if not isinstance(executed, int):
        executed = len(dumps)
    steps, goal = [], None
    for i, dump in enumerate(dumps[:executed]):
        obs = _dict(dump.get("obs"))
        goal = goal or _str(obs.get("goal"))
        thought, action = split_output(dump.get("action"))
        after = _dict(dumps[i + 1].get("obs")) if i + 1 < len(dumps) else {}
        steps.append(
            {
                "action": action,
                "think": thought,
                "url": _active_url(obs),
                "axtree_txt": _str(obs.get("axtree_txt")),
                "error": _str(after.get("last_action_error")) or None,
            }
        )
    answer = next((s["action"] for s in reversed(steps) if s["action"].startswith("send_msg_to_user(")), None)
    return {
        "task_id": task_id,
        "policy": POLICY,
        "instruction": goal,
        "final_answer": answer,
        "steps": steps,
    }


def split_output(output: Any) -> tuple[str | None, str]:
    """(the <think> text, the BrowserGym call) from one model output; an output with no call gives EMPTY."""
    if not isinstance(output, str) or not output.strip():
        return None, EMPTY
    think = _THINK.search(output)
    act = _ACTION.search(output)
    call = (act[1] if act else output if "<think>" not in output else "").strip().strip("`").strip()
    return (think[1].strip() or None) if think else None, call or EMPTY


def _active_url(obs: dict) -> str | None:
    urls = obs.get("open_pages_urls")
    if not isinstance(urls, list) or not urls:
        return None
    index = obs.get("active_page_index")
    index = index[0] if isinstance(index, list) and index else index
    return _str(urls[index] if isinstance(index, int) and 0 <= index < len(urls) else urls[0])


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
