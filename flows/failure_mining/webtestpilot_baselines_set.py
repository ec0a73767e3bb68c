"""A labelled set of two web agents' test runs from code-philia/WebTestPilot as data.jsonl (WEBTESTPILOT_BASELINES.md).

The repository (no licence file; nothing of it is committed here) keeps the results of its RQ1/RQ2 experiment:
LLM agents executing natural-language test cases (log in, create a book, delete a shelf, add a product ...) in
a real browser on four self-hosted web apps (BookStack, Indico, Invoice Ninja, PrestaShop), with and without
injected bugs. `experiments/rq1_2/results/<agent>/<app>/<app>.final.json` holds, per app, `results`: one record
per test case run, `{"test_name", "success", "current_step", "total_step", "error_message", "has_bug",
"bug_name", "traces", ...}`, and `traces` is the list of the agent's executed actions, each
`{"action": {"name", "args"}}`. The test case itself (its steps and expected results) is
`experiments/rq1_2/input/<app>/*.json` (`name`, `url`, `actions`: [{`action`, `expectedResult`}]).

Two of the four agents are built, the two whose logs say whether an attempt worked:

- `pinata`: `click` / `fill` / `select` / `scroll` with the element's `xpath` (and its screenshot label), and
  after each test step a `finish` with the agent's own verdict (`status` success / fail / unknown, `reason`
  in words). `finish` becomes an unmapped `finish()` step whose `think` is "Step verdict: <status>. <reason>".
- `lavague`: `click` / `setValue` with the element's `xpath`, `scroll_down` / `scroll_up`, `back`, `wait`,
  and `fail` (its navigation engine found no way to do the instruction: nothing ran). `fail` becomes an
  unmapped `fail()` step with `last_action_error` saying nothing ran (as BrowserGym reports an action it could
  not run). LaVague's results hold no words; some steps are code or empty names (`unparsed_action()`).

NaviQate's and WebTestPilot's own traces hold actions only (no verdict, no words) and are left out.

Each action becomes a BrowserGym step the importer reads, step `i` = `traces[i]`: `click('x3')`,
`fill('x3', 'text')`, `select_option('x3', 'option')`, `scroll(0, 500)` / `scroll(0, -500)`, `go_back()`,
`noop()` for a wait. The element id is `x<n>`, numbered per run by first appearance of its xpath (the same xpath
is the same id throughout the run), and `axtree_txt` is one line `[x3] <role> '<xpath>'`, the role from the
xpath's last tag (a -> link, button, input / textarea -> textbox, select -> combobox, ...). No URL, no page
text, no screenshot is recorded per step. The instruction is the test case's numbered steps with their
expected results; the task id is `<agent>/<app>/<test_name>` (`#2` after it if a file repeats a name). The run's
`ended` is `env_error` when its `error_message` reports an exception ("Error at step ..."), else `terminated`
(a passed test, or one the agent stopped on a failed step). Files are parsed with `json` and never run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flows.failure_mining.snapshot import Snapshot, write_jsonl

REPO = "code-philia/WebTestPilot"
LICENSE = "none stated (the repository has no LICENSE file and its README names none)"
COMMIT = "7d685a01caa7671601768e6eb0ca1f98c8ddaafb"
RESULTS = "experiments/rq1_2/results/"
INPUTS = "experiments/rq1_2/input/"
AGENTS = ("lavague", "pinata")
_TAG_ROLES = {
    "a": "link", "button": "button", "input": "textbox", "textarea": "textbox",
    "select": "combobox", "label": "label", "option": "option", "img": "img", "li": "listitem",
}  # fmt: skip
_RESULT = re.compile(r"^experiments/rq1_2/results/([^/]+)/([^/]+)/\2\.final\.json$")
RAN_NOTHING = (
    "the agent's action was fail: nothing ran (its navigation engine found no way to do the instruction)"
)


def build_webtestpilot_baselines_set(git_dir: str | Path, out: str | Path, commit: str = COMMIT) -> int:
    """data.jsonl from a snapshot of code-philia/WebTestPilot (every run of the two agents); returns the count."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        tests = _test_cases(snap)
        for name in sorted(snap.names(RESULTS)):
            m = _RESULT.match(name)
            if not m or m[1] not in AGENTS:
                continue
            agent, app = m[1], m[2]
            data = snap.json(name)
            runs = data.get("results") if isinstance(data, dict) else None
            if not isinstance(runs, list):
                continue
            seen: dict[str, int] = {}
            for position, run in enumerate(runs):
                record = trajectory(agent, app, run, tests.get(app, {}), seen)
                if record is not None:
                    record["source"] = snap.source(REPO, f"{name}#{position}", LICENSE)
                    lines.append(record)
    return write_jsonl(out, lines)


def _test_cases(snap: Snapshot) -> dict[str, dict[str, str]]:
    """{app: {test case name: instruction text}} from the test case files (unreadable ones are skipped)."""
    cases: dict[str, dict[str, str]] = {}
    for name in snap.names(INPUTS):
        parts = name[len(INPUTS) :].split("/")
        if len(parts) != 2 or not parts[1].endswith(".json"):
            continue
        case = snap.json(name)
        if isinstance(case, dict) and isinstance(case.get("name"), str):
            cases.setdefault(parts[0], {})[case["name"].strip()] = instruction(case)
    return cases


def instruction(case: dict) -> str:
    """A test case as the agent's instruction: its name and start URL, then each step with its expected result."""
    lines = [f"Test case {case.get('name')} on {case.get('url')}:"]
    for number, step in enumerate(case.get("actions") or [], 1):
        if isinstance(step, dict):
            lines.append(f"{number}. {step.get('action')} (expected: {step.get('expectedResult')})")
    return "\n".join(lines)


def trajectory(
    agent: str, app: str, run: Any, tests: dict[str, str], seen: dict[str, int] | None = None
) -> dict | None:
    """One test case run as a data.jsonl record; None when it has no name or no traces. The test case's
    instruction is matched by name (a buggy variant, "<name> - Bug", runs the same test case)."""
    if (
        not isinstance(run, dict)
        or not isinstance(run.get("test_name"), str)
        or not isinstance(run.get("traces"), list)
    ):
        return None
    if not run["traces"]:
        return None
    test = run["test_name"].strip()
    task_id = f"{agent}/{app}/{test}"
    if seen is not None:
        seen[task_id] = seen.get(task_id, 0) + 1
        if seen[task_id] > 1:
            task_id = f"{task_id}#{seen[task_id]}"
    ids: dict[str, str] = {}
    steps = [browsergym_step(trace, ids) for trace in run["traces"]]
    base = test.removesuffix(" - Bug").strip()
    error = run.get("error_message")
    return {
        "task_id": task_id,
        "policy": agent,
        "instruction": tests.get(base) or f"Test case {test}",
        "steps": steps,
        "ended": "env_error" if isinstance(error, str) and error.startswith("Error") else "terminated",
    }


def browsergym_step(trace: Any, ids: dict[str, str]) -> dict:
    """One trace entry as a BrowserGym step; `ids` numbers the run's xpaths (x1, x2, ...) as they appear."""
    action = trace.get("action") if isinstance(trace, dict) else None
    name = action.get("name") if isinstance(action, dict) else None
    args = action.get("args") if isinstance(action, dict) and isinstance(action.get("args"), dict) else {}
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]+", name):
        return {"action": "unparsed_action()"}  # code text, an empty name or no action: kept, unmapped
    if name == "finish":
        verdict = f"Step verdict: {args.get('status')}. {args.get('reason') or ''}".strip()
        return {"action": "finish()", "think": verdict}
    if name == "fail":
        return {"action": "fail()", "last_action_error": RAN_NOTHING}
    if name in ("scroll", "scroll_down", "scroll_up"):
        up = name == "scroll_up" or args.get("direction") == "up"
        return {"action": f"scroll(0, {-500 if up else 500})"}
    if name == "back":
        return {"action": "go_back()"}
    if name == "wait":
        return {"action": "noop()"}
    xpath = args.get("xpath") if isinstance(args.get("xpath"), str) and args.get("xpath") else None
    if xpath is None:
        return {"action": f"{name}()"}  # unmapped by the importer
    bid = ids.setdefault(xpath, f"x{len(ids) + 1}")
    tree = f"[{bid}] {_role(xpath)} {_quoted(xpath)}"
    if name == "click":
        return {"action": f"click({bid!r})", "axtree_txt": tree}
    if name in ("fill", "setValue"):
        return {"action": f"fill({bid!r}, {str(args.get('value') or '')!r})", "axtree_txt": tree}
    if name == "select":
        options = args.get("options")
        option = options[0] if isinstance(options, list) and options else options
        return {"action": f"select_option({bid!r}, {str(option or '')!r})", "axtree_txt": tree}
    return {"action": f"{name}()", "axtree_txt": tree}  # unmapped by the importer


def _role(xpath: str) -> str:
    last = xpath.rstrip("/").rsplit("/", 1)[-1]
    tag = re.match(r"[a-zA-Z][a-zA-Z0-9-]*", last)
    return _TAG_ROLES.get(tag[0].lower(), "element") if tag else "element"


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
