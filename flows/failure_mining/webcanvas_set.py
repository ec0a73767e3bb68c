"""A seventh labelled set: the WebCanvas agent's Mind2Web-Live runs (iMeanAI/WebCanvas) as data.jsonl (WEBCANVAS.md).

The repository (MIT; still nothing of it is committed, see tests/data/mining_eval/WEBCANVAS.md) kept, until
June 2024, five result files of its own agent (GPT planning over the page's accessibility tree, with a
reward model scoring each step) on Mind2Web-Live tasks on real websites: `results/**/*.json`, each a list of
runs `{"task_id", "task_name" (the instruction), "task_status" (finished / limit / error), "step_list"}`,
and per step the model's `trace_description` (`thought`, and `action`: the model's own sentence for what it
does), the executed `action` (`click[72]`, `fill_search[13,hiking boots]`, `google_search["..."]`,
`goto[url]`, `go_back`, `select_option[...]`, or `None` when the turn chose nothing the harness runs), the
CSS `selector` the harness resolved the element id to, the `url` of the page *after* the action, and the
reward model's verdict. `build_webcanvas_set` writes each run as BrowserGym steps the importer reads:

- `action`: `click('72')`; `fill('13', 'text')` then `press('13', 'Enter')` for fill_search (the harness
  fills, then presses Enter); `fill(...)` for fill_form; `select_option('7', 'x')`; `goto(url)`;
  `go_back()`; google_search as `goto('https://www.google.com/search?q=<query>')` (what the harness opens);
  `None` as `no_action()`, a call the importer keeps unmapped, so step `i` is the source's `step_list[i]`,
  with `last_action_error` saying the harness ran nothing (as BrowserGym reports an action it could not
  run; the source records no error of its own, but a None action is one nothing was executed for).
- `axtree_txt`: one line `[72] link '<selector>'` naming the element by its selector (the source names no
  text), the role from the selector's last tag (a -> link, button, input / textarea -> textbox, select ->
  combobox, label, else element).
- `think`: the model's thought, then `Action: ` and its sentence for the action. The reward model's verdict
  is left out (another model's words).
- `url`: the page the action was taken on, i.e. the previous step's recorded URL (none for the first step).

The run's `ended` is `terminated` (finished), `max_steps` (limit) or `env_error` (error). Files are parsed
with `json` and never run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "iMeanAI/WebCanvas"
LICENSE = "MIT"
COMMIT = "5ee4419378152f29773f6505633c3a4beacaf98b"  # the last commit holding results/ (removed in 2a7709e)
RESULTS = "results/"
POLICY = "webcanvas"
_ACTION = re.compile(r"^\s*([a-z_]+)\s*(?:\[(.*)\])?\s*$", re.S)
_ENDED = {"finished": "terminated", "limit": "max_steps", "error": "env_error"}
_TAG_ROLES = {
    "a": "link", "button": "button", "input": "textbox", "textarea": "textbox",
    "select": "combobox", "label": "label", "option": "option", "img": "img",
}  # fmt: skip
NO_ACTION = "no_action()"  # not a BrowserGym call: the importer keeps it as an unmapped step
RAN_NOTHING = "the harness ran no action: the turn's plan named none it runs (the source's action is None)"


def build_webcanvas_set(git_dir: str | Path, out: str | Path, commit: str = COMMIT) -> int:
    """data.jsonl from a snapshot of iMeanAI/WebCanvas (every run of every results/ file); returns the count."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        for name in sorted(n for n in snap.names(RESULTS) if n.endswith(".json")):
            runs = snap.json(name)
            if not isinstance(runs, list):
                continue
            seen: dict[str, int] = {}
            for position, run in enumerate(runs):
                record = trajectory(name.removesuffix(".json"), run, seen)
                if record is not None:
                    record["source"] = snap.source(REPO, f"{name}#{position}", LICENSE)
                    lines.append(record)
    return write_jsonl(out, lines)


def trajectory(file_id: str, run: Any, seen: dict[str, int] | None = None) -> dict | None:
    """One run of a result file as a data.jsonl record; None when it has no steps. The task id is the file's
    path without `.json`, then the run's own `task_id` (`#2`, `#3` after it when a file repeats an id)."""
    if not isinstance(run, dict) or not isinstance(run.get("step_list"), list) or not run["step_list"]:
        return None
    task_id = f"{file_id}/{run.get('task_id')}"
    if seen is not None:
        seen[task_id] = seen.get(task_id, 0) + 1
        if seen[task_id] > 1:
            task_id = f"{task_id}#{seen[task_id]}"
    steps, before = [], None
    for raw in run["step_list"]:
        step = raw if isinstance(raw, dict) else {}
        said = step.get("trace_description") if isinstance(step.get("trace_description"), dict) else {}
        thought, plan = _str(said.get("thought")), _str(said.get("action"))
        words = "\n".join(p for p in (thought, f"Action: {plan}" if plan else None) if p) or None
        action, axtree = browsergym_call(step.get("action"), _str(step.get("selector")))
        steps.append({"action": action, "think": words, "url": before, "axtree_txt": axtree})
        if action == NO_ACTION:  # the harness ran nothing: BrowserGym reports that as the step's action error
            steps[-1]["last_action_error"] = RAN_NOTHING
        before = _str(step.get("url")) or before
    record: dict[str, Any] = {
        "task_id": task_id,
        "policy": POLICY,
        "instruction": _str(run.get("task_name")),
        "steps": steps,
    }
    ended = _ENDED.get(run.get("task_status"))
    if ended:
        record["ended"] = ended
    return record


def browsergym_call(action: Any, selector: str | None) -> tuple[str, str | None]:
    """(BrowserGym call text, a one-line axtree naming the element) for one WebCanvas action string."""
    m = _ACTION.match(action) if isinstance(action, str) else None
    if not m or m[1] == "none":
        return NO_ACTION, None
    kind, arg = m[1], (m[2] or "").strip()
    if kind == "goto" and arg:
        return f"goto({arg!r})", None
    if kind == "google_search":
        query = arg[1:-1] if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "\"'" else arg
        return f"goto({('https://www.google.com/search?q=' + quote(query))!r})", None
    if kind == "go_back":
        return "go_back()", None
    element, _, text = arg.partition(",")
    element = element.strip()
    if not element.isdigit():
        return f"{kind}_unparsed()", None
    tree = f"[{element}] {_role(selector)} {_quoted(selector)}" if selector else None
    if kind == "click":
        return f"click({element!r})", tree
    if kind == "fill_search":
        return f"fill({element!r}, {text!r})\npress({element!r}, 'Enter')", tree
    if kind == "fill_form":
        return f"fill({element!r}, {text!r})", tree
    if kind == "select_option":
        return f"select_option({element!r}, {text!r})", tree
    return f"{kind}()", tree  # hover, scroll, ...: unmapped by the importer


def _role(selector: str | None) -> str:
    last = (selector or "").rsplit(">", 1)[-1].strip()
    tag = re.match(r"[a-zA-Z][a-zA-Z0-9-]*", last)
    return _TAG_ROLES.get(tag[0].lower(), "element") if tag else "element"


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
