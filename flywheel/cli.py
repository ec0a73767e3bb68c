"""The `flywheel` command: run flows, query the lake, re-validate tasks, start a sandbox by hand."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

QUIET_PREFECT = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_UI_ENABLED": "false",
    # run logs: flywheel's own loggers ("flywheel.*") reach each flow run's log (`prefect flow-run logs ID`) at
    # INFO, as Prefect's run loggers do; the console shows warnings only (the CLI prints its own summaries)
    "PREFECT_LOGGING_EXTRA_LOGGERS": "flywheel",
    "PREFECT_LOGGING_ROOT_LEVEL": "INFO",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL": "WARNING",
}
KNOWN = Path("<known labelled sets>")  # `eval mining --real` given no path: every known set whose data is here
GLOBAL_OPTIONS = ("--lake",)  # accepted anywhere on the command line, before or after the subcommand
POLICY_HELP = ("replay: the reference solution; scripted-noisy: a SIMULATOR of an imperfect agent; simulated-learner: "
               "a SIMULATOR whose fault rates halve per published export holding the task's family (a stand-in for "
               "training, to show the loop offline); llm: any litellm model (FLYWHEEL_MODEL, FLYWHEEL_API_BASE, FLYWHEEL_API_KEY)")
POLICY_CHOICES = ["replay", "scripted-noisy", "simulated-learner", "llm"]


def _number(kind: type, smallest: float, what: str):
    """An argparse type: a `kind` of at least `smallest`, else one message naming the value and the bound."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number; give {what}") from None
        if value < smallest or value != value:  # NaN compares false
            raise argparse.ArgumentTypeError(f"{text} is too small; give {what}")
        return value

    parse.__name__ = what  # argparse names the type in its own messages
    return parse


positive_int = _number(int, 1, "a whole number of 1 or more")
non_negative_int = _number(int, 0, "a whole number of 0 or more")
positive_float = _number(float, 1e-9, "a number above 0")


def port_number(text: str) -> int:
    value = _number(int, 1, "a port from 1 to 65535")(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text} is too large; give a port from 1 to 65535")
    return value


def _prefect_env() -> str:
    """Settings for Prefect before it is imported; says which server the run will use."""
    from flywheel.prefect_server import use_running_server

    for k, v in QUIET_PREFECT.items():
        os.environ.setdefault(k, v)
    os.environ.setdefault("PREFECT_HOME", str(Path(".prefect").resolve()))
    api_url = use_running_server()
    if api_url:
        return f"Prefect server {api_url}"
    return (f"an ephemeral Prefect server (~10 s, minutes on a loaded machine; `{_me()} server start` "
            "keeps one running for every run)")


def _send_prefect_logs() -> None:
    """Send a run's last log lines to the Prefect server while it is still up. An ephemeral server stops at
    interpreter exit, before Prefect's log worker drains, and then every run ended on "--- Error logging to API
    --- All connection attempts failed"."""
    if "prefect" not in sys.modules:  # the run never got as far as Prefect
        return
    from prefect.logging.handlers import APILogWorker

    try:
        APILogWorker.drain_all(timeout=10)
    except Exception as exc:  # noqa: BLE001 - the run's outcome stands; the logs are the server's copy only
        print(f"note: the run's last log lines did not reach the Prefect server ({exc})", file=sys.stderr)


def _cheap_checks(args: argparse.Namespace) -> list[str]:
    """What is wrong with the command line, found before Prefect is imported or started (a few ms)."""
    problems = []
    for flag in ("count", "episodes", "workers", "steps", "areas"):
        if getattr(args, flag, 1) is not None and getattr(args, flag, 1) < 1:
            problems.append(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    if getattr(args, "minutes", 1.0) <= 0:
        problems.append(f"--minutes must be positive, got {args.minutes}")
    if getattr(args, "since", None):
        import datetime as dt

        try:
            dt.datetime.fromisoformat(args.since)
        except ValueError:
            problems.append(f"--since {args.since!r} is not an ISO 8601 time (e.g. 2026-12-01 or 2026-12-01T08:00:00+00:00)")
    problems += [_unknown_sandbox(name) for name in getattr(args, "sandboxes", None) or [] if not _sandbox_exists(name)]
    if getattr(args, "noise", None):
        from flows.rollout.policies import NoiseRates

        try:
            NoiseRates.parse(args.noise)
        except ValueError as exc:
            problems.append(f"--noise: {exc}")
    return problems


def hoist_global_options(argv: list[str]) -> list[str]:
    """Move global options (and their values) to the front, so `flywheel run judge --lake L` works like
    `flywheel --lake L run judge`. Nothing after a `--` is touched."""
    front, rest, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        name = arg.split("=", 1)[0]
        if name in GLOBAL_OPTIONS:
            if "=" in arg:
                front.append(arg)
            else:
                front += argv[i:i + 2]
                i += 1
        else:
            rest.append(arg)
        i += 1
    return front + rest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="flywheel",
        description="An AutoResearch data flywheel for GUI and computer-use agents: synthesise verified tasks "
        "from sandbox apps, roll policies out on them, judge and mine the trajectories, explore thin areas, and "
        "export curated training data; everything lands in a DuckDB + Parquet lake. Start with "
        "`flywheel run synthesize-tasks`; `flywheel doctor` says what this machine lacks.",
    )
    parser.add_argument("--lake", help="lake root (default: $FLYWHEEL_LAKE or ./lake); accepted anywhere on the line")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a flow").add_subparsers(dest="flow", required=True)
    syn = run.add_parser(
        "synthesize-tasks",
        help="read each sandbox's source, write skills and task-verifier pairs, keep the ones the gate proves",
        description="For each sandbox: read its source at the pinned commit, let the coding agent write injection "
        "skills and candidate task-verifier pairs, and replay every candidate through the validation gate in a "
        "live sandbox. Verified and rejected pairs (with a reason code) land in the lake's `tasks` table.",
    )
    syn.add_argument("--sandbox", action="append", dest="sandboxes", metavar="NAME", help="a sandbox name or folder (repeatable; default: all shipped)")
    syn.add_argument("--count", type=positive_int, default=40, help="candidates per sandbox (default 40)")
    syn.add_argument("--seed", type=non_negative_int, default=0, help="seed for parameter draws (default 0)")
    syn.add_argument("--agent", default="static", choices=["static", "llm"], help="coding agent (default: static, offline; "
                     "llm: any litellm model reads the source through tools, set FLYWHEEL_MODEL and FLYWHEEL_API_BASE)")
    syn.add_argument("--workers", type=positive_int, default=1, help="app replicas validating in parallel per sandbox, sharing one Chromium (default 1; more helps on machines with more than 2 cores)")
    syn.add_argument("--from-failures", action="store_true",
                     help="targeted synthesis: turn mined failure_seeds into new candidates (a variant of a failed task with other "
                     "parameters; the first sub-goal of a multi-step task in the monitoring pool; a longer chain for a mastered "
                     "task), each with its lineage in provenance, through the same gate; --count caps them per sandbox")
    syn.add_argument("--policy", help="with --from-failures: only seeds from this policy's trajectories")

    ro = run.add_parser(
        "rollout",
        help="run a policy on verified tasks in live sandboxes; trajectories and steps land in the lake",
        description="Drive a policy on verified tasks through the real drivers. Every turn is a step row with its "
        "screenshot as a blob; an app that dies mid-episode ends it as env_error and is restarted.",
    )
    ro.add_argument("--policy", required=True, choices=POLICY_CHOICES, help=POLICY_HELP)
    ro.add_argument("--sandbox", action="append", dest="sandboxes", metavar="NAME")
    ro.add_argument("--tasks", nargs="+", metavar="TASK_ID", help="only these tasks")
    ro.add_argument("--episodes", type=positive_int, default=1, help="episodes per task (default 1)")
    ro.add_argument("--workers", type=positive_int, default=1)
    ro.add_argument("--noise", help="scripted-noisy fault rates, e.g. loop=0.2,bad_args=0.1,premature=0.1")
    ro.add_argument("--all", dest="all_tasks", action="store_true",
                    help="every verified task; by default the curriculum's pools choose: active (and new) tasks first, monitoring "
                    "ones re-checked every --recheck-every rollouts, mastered ones retired")
    ro.add_argument("--budget", type=positive_int, help="at most N tasks per sandbox (default: every task the pools choose)")
    ro.add_argument("--recheck-every", type=positive_int, default=2, help="re-check a monitoring task every N rollouts of the policy (default 2)")
    ro.add_argument("--profile", choices=["phone"], help="run web sandboxes under a device profile (phone: 390x844, touch, "
                    "mobile user agent); the policy acts through tap, swipe, type and system buttons")
    run.add_parser("judge", help="give every new trajectory a verdict (pass | failed | env_error), votes kept")
    mf = run.add_parser(
        "mine-failures",
        help="find repetition loops, bad action arguments and sensitive-action errors; per-step rewards",
        description="Vectorised detectors over the steps table. Incremental: only trajectories not yet mined with "
        "this detector version are read; re-running adds nothing. Writes failures, step_rewards, failure_seeds.",
    )
    mf.add_argument("--policy", help="only this policy's trajectories")
    mf.add_argument("--since", help="only trajectories recorded since this time (ISO 8601)")
    exp = run.add_parser(
        "explore",
        help="measure coverage, explore each sandbox's thinnest areas, turn what changed there into verified tasks",
        description="Per sandbox: measure which areas (screens, form actions, entities) verified tasks, trajectories "
        "and mined failures cover; explore the live app breadth-first towards the K thinnest areas (and areas that "
        "fail often); derive candidate tasks from the transitions that changed state there; gate them like "
        "synthesize-tasks does. Prints coverage before and after; the transition graph lands in `transitions`.",
    )
    exp.add_argument("--sandbox", action="append", dest="sandboxes", metavar="NAME", help="a sandbox name or folder (repeatable; default: all shipped)")
    exp.add_argument("--areas", type=positive_int, default=8, help="thinnest areas to target per sandbox (default 8)")
    exp.add_argument("--steps", type=positive_int, default=200, help="explorer steps per sandbox (default 200)")
    exp.add_argument("--minutes", type=positive_float, default=2.0, help="exploring time per sandbox (default 2)")
    exp.add_argument("--seed", type=non_negative_int, default=0)
    exp.add_argument("--workers", type=positive_int, default=1, help="app replicas validating candidates in parallel")
    exp.add_argument("--sensitive", choices=["skip", "confirm"], default="skip",
                     help="controls the manifest declares sensitive: skip them (default) or press them after a call_user confirmation")
    cyc = run.add_parser(
        "cycle", help="turn the flywheel N times: synthesize -> rollout -> judge -> mine -> curriculum -> targeted synthesis "
        "-> explore -> export, with a report comparing the iterations",
        description="Each iteration: synthesize-tasks, a rollout the curriculum's pools choose, judge, mine-failures, "
        "curriculum, synthesize-tasks --from-failures, explore, export-sft --route sft. The report (lake/reports/cycle-*.md "
        "+ an SVG chart, and Prefect artifacts) compares iterations: success per family, pool movement, tasks born from "
        "failures and whether they were solved later, coverage. With --policy simulated-learner (a SIMULATOR standing in "
        "for training on each export) the loop shows its effect offline.")
    cyc.add_argument("--policy", default="scripted-noisy", choices=POLICY_CHOICES, help=POLICY_HELP)
    cyc.add_argument("--sandbox", action="append", dest="sandboxes", metavar="NAME")
    cyc.add_argument("--count", type=positive_int, default=40, help="synthesis candidates per sandbox (default 40)")
    cyc.add_argument("--episodes", type=positive_int, default=1, help="episodes per task (default 1)")
    cyc.add_argument("--iterations", type=positive_int, default=1, help="turns of the flywheel (default 1)")
    cyc.add_argument("--budget", type=positive_int, help="at most N rollout tasks per sandbox per iteration")
    cyc.add_argument("--targeted", type=non_negative_int, default=8, help="tasks from failure seeds per sandbox per iteration (default 8)")
    cyc.add_argument("--explore-minutes", type=positive_float, default=0.5, help="exploring time per sandbox per iteration (default 0.5)")
    ex = run.add_parser(
        "export-sft",
        help="curated, quality-gated, versioned Parquet training data: exports/<name>/<version>/",
        description="Select judged trajectories (pass; failed too with --negatives; never env_error or what reviewers "
        "rejected), de-duplicate, balance, scrub PII, write zstd Parquet shards with a dataset card and manifest, "
        "validate them with Great Expectations, and publish the version only if the gate passes. Output: --out, "
        "else $FLYWHEEL_EXPORTS, else exports/ beside the lake.",
    )
    ex.add_argument("--name", required=True, help="dataset name, e.g. shop-sft")
    ex.add_argument("--format", choices=["messages", "action-rl"],
                    help="messages (default): chat rows for SFT (TRL, LLaMA-Factory); action-rl (default with --route rl): "
                    "state, action, Ct Qt St Lt and reward per step")
    ex.add_argument("--route", choices=["sft", "rl", "negatives"],
                    help="route by quality: sft = passed trajectories of verified tasks; rl = trajectories (passed or failed) of "
                    "tasks in the curriculum's active pool, as action-rl; negatives = failed trajectories with mined failures, "
                    "their kinds and reasons in failures.parquet beside the data (default: the plain selection)")
    ex.add_argument("--since", help="only trajectories recorded since this time (ISO 8601)")
    ex.add_argument("--negatives", action="store_true", help="also export failed trajectories (column verdict = failed)")
    per = ex.add_mutually_exclusive_group()
    per.add_argument("--per-step", dest="per", action="store_const", const="step", help="one row per step (default)")
    per.add_argument("--per-trajectory", dest="per", action="store_const", const="trajectory", help="one row per trajectory")
    ex.add_argument("--images", default="embed", choices=["embed", "ref"], help="embed image bytes (default) or reference lake blobs by key (a path relative to the lake root)")
    ex.add_argument("--protocol", default="qwen-xml", choices=["qwen-xml", "openai"],
                    help="assistant actions as Qwen computer_use <tool_call> XML (default) or OpenAI tool_calls")
    ex.add_argument("--max-per-sandbox", type=positive_int, help="balance: at most N trajectories per sandbox")
    ex.add_argument("--max-per-family", type=positive_int, help="balance: at most N trajectories per task family")
    ex.add_argument("--max-per-difficulty", type=positive_int, help="balance: at most N trajectories per difficulty")
    ex.add_argument("--shard-mb", type=positive_int, default=256, help="shard size cap in MB (default 256)")
    ex.add_argument("--out", help="export root (default: $FLYWHEEL_EXPORTS, else exports/ beside the lake)")
    ex.add_argument("--license", default="other",
                    help="the dataset card's licence id, e.g. cc-by-4.0 (default: other, i.e. none chosen yet)")

    traj = sub.add_parser("trajectories", help="bring trajectories into the lake").add_subparsers(dest="traj_cmd", required=True)
    imp = traj.add_parser(
        "import",
        help="import trajectories: our JSONL/Parquet schema, other agents' logs (BrowserGym / AgentLab, Mind2Web, "
        "AITW / AndroidControl, OpenAI and Anthropic computer-use transcripts), Qwen-CUA run directories, "
        "GUI-Odyssey episodes",
        description="Formats are detected per path (per step, for other agents' logs) and documented with examples in "
        "flows/rollout/IMPORT_FORMATS.md. Bad records go to the quarantine table with a reason (its code is explained there); the rest "
        "lands once, and importing the same input twice adds nothing. Then `flywheel run mine-failures` mines them.",
    )
    imp.add_argument("paths", nargs="+", type=Path)

    cov = sub.add_parser("coverage", help="what each sandbox offers and what tasks cover").add_subparsers(dest="cov_cmd", required=True)
    cov_show = cov.add_parser("show", help="areas of a sandbox with verified tasks, trajectories and failures; writes an SVG picture")
    cov_show.add_argument("sandbox")

    cur = sub.add_parser("curriculum", help="curriculum pools").add_subparsers(dest="cur_cmd", required=True)
    show = cur.add_parser("show", help="tasks per pool (active | monitoring | mastered) per policy, sandbox, family")
    show.add_argument("--policy")
    upd = cur.add_parser(
        "update",
        help="recompute the pools from every verdict (run cycle does it each iteration; run this after rollout and judge)",
        description="A task's pool follows its policy's success rate over the verdicts so far: below --low it is "
        "monitoring, above --high mastered, in between active (what the policy can learn from now). Runs the "
        "`curriculum` Prefect flow, then shows the pools.",
    )
    upd.add_argument("--low", type=float, default=0.2, help="success rate below which a task is monitoring (default 0.2)")
    upd.add_argument("--high", type=float, default=0.8, help="success rate above which a task is mastered (default 0.8)")

    ev = sub.add_parser("eval", help="measure the flywheel's own detectors").add_subparsers(dest="eval_cmd", required=True)
    evm = ev.add_parser("mining", help="precision and recall per failure kind, as JSON")
    evm.add_argument("--labels", type=Path, help="JSONL of {trajectory_id, kind, step}; default: the scripted-noisy policy's injected faults")
    evm.add_argument("--real", type=Path, nargs="?", const=KNOWN, metavar="DATA_JSONL", help="a labelled set of other agents' runs (tests/data/mining_eval/LABELLING.md): per kind, per evidence level and against the same-action-3x baseline; --labels then names its labels (default: tests/data/mining_eval/labels.jsonl). Without a path: every known labelled set whose data is here (KNOWN_SETS in flows/failure_mining/real_eval.py: web, desktop and phone agents' runs; tests/data/mining_eval/*.md say where each comes from, how to build it and which env var or path it is read from), side by side, each with its SET_STATUS (blind or in-sample)")

    doc = sub.add_parser("doctor", help="check this machine: packages, browser, Docker, adb, LLM, Prefect, lake")
    doc.add_argument("--no-llm-call", action="store_true", help="do not send the one cheap test request to the model")

    srv = sub.add_parser("serve", help="serve every deployment in prefect.yaml (starts a local Prefect server if none is set)")
    srv.add_argument("--port", type=port_number, default=4299, help="port of the local Prefect server (default 4299)")
    srv.add_argument("--limit", type=positive_int, default=2, help="flow runs at once (default 2)")
    srv.add_argument("--prefect-yaml", type=Path, default=Path(__file__).resolve().parents[1] / "prefect.yaml")

    server = sub.add_parser("server", help="a long-lived local Prefect server that every flywheel run reuses (no start-up wait)")
    server_cmd = server.add_subparsers(dest="server_cmd", required=True)
    server_start = server_cmd.add_parser("start", help="start it in the background on 127.0.0.1 (state, log and pidfile in $PREFECT_HOME, default ./.prefect)")
    server_start.add_argument("--port", type=port_number, default=4299, help="port (default 4299)")
    server_start.add_argument("--timeout", type=positive_float, default=300.0, help="seconds to wait for it to answer (default 300)")
    server_cmd.add_parser("stop", help="stop it")
    server_cmd.add_parser("status", help="is it running, and where")

    rev = sub.add_parser("review", help="the human spot-review queue").add_subparsers(dest="review_cmd", required=True)
    rs = rev.add_parser("serve", help="a web app on 127.0.0.1 for reviewing sampled pairs and trajectories, opened with a printed token")
    rs.add_argument("--port", type=port_number, default=8765)
    rs.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1: only this machine)")
    rs.add_argument("--reviewer", default=os.environ.get("USER") or "reviewer", help="your name on every decision (default $USER)")
    rs.add_argument("--sample", type=positive_int, default=30, help="items drawn, stratified by sandbox and family (default 30), "
                    "plus every low-agreement judge case")
    rs.add_argument("--seed", type=non_negative_int, default=0)
    rev.add_parser("stats", help="AutoJudge-vs-human agreement and the verifiers reviewers flagged")

    lake_p = sub.add_parser("lake", help="query and maintain the lake").add_subparsers(dest="lake_cmd", required=True)
    sql = lake_p.add_parser("sql", help="run SQL against the catalog's views (read-only)")
    sql.add_argument("query")
    sql.add_argument("--format", choices=["table", "csv", "json"], default="table")
    lake_p.add_parser("refresh", help="rebuild catalog.duckdb from each Delta table's current files")
    lake_p.add_parser("compact", help="merge each table's small files into few (also runs every "
                      "$FLYWHEEL_LAKE_COMPACT_EVERY commits, default 10); older snapshots stay readable")
    vac = lake_p.add_parser("vacuum", help="delete the files that overwritten batches and compactions left, once no "
                            "snapshot newer than --older-than-hours reads them")
    vac.add_argument("--older-than-hours", type=non_negative_int, default=168,
                     help="keep every file a snapshot of the last N hours reads (default 168, a week: longer than any "
                          "query or export still reading an older catalog)")
    vac.add_argument("--dry-run", action="store_true", help="only count the files it would delete")
    lake_p.add_parser("migrate", help="turn a lake of the old file-per-batch layout into Delta tables (once; no flow may write meanwhile)")

    tasks = sub.add_parser("tasks", help="inspect and re-validate tasks").add_subparsers(dest="tasks_cmd", required=True)
    val = tasks.add_parser("validate", help="re-run the validation gate on one stored task; prints a JSON verdict")
    val.add_argument("task_id")
    val.add_argument("--truncate", type=non_negative_int, default=0, help="drop the last K reference actions and expect the verifier to pass anyway (a verified task then fails)")

    sb = sub.add_parser("sandbox", help="work with sandboxes").add_subparsers(dest="sandbox_cmd", required=True)
    sb.add_parser("list", help="list the shipped sandboxes")
    up = sb.add_parser("up", help="start a sandbox app so a person can click through it")
    up.add_argument("name")

    args = parser.parse_args(hoist_global_options(list(sys.argv[1:] if argv is None else argv)))
    if args.lake:
        os.environ["FLYWHEEL_LAKE"] = args.lake
    if argv is not None:  # called from Python (tests, scripts): the caller owns the processes it starts
        return _dispatch(args)
    from flywheel import orphans

    orphans.reap_orphans()  # what a SIGKILLed run left behind
    tag = orphans.claim()
    try:
        code = _dispatch(args)
        _send_prefect_logs()  # any command that ran a flow: before the ephemeral server stops at exit
        return code
    except KeyboardInterrupt:
        print("interrupted; ending the processes this run started", file=sys.stderr)
        return 130
    finally:
        orphans.end_children(tag)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        problems = _cheap_checks(args)
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        if problems:
            return 2
        return _run_synthesize(args) if args.flow == "synthesize-tasks" else _run_other(args)
    if args.command == "curriculum":
        return _curriculum(args)
    if args.command == "coverage":
        return _coverage(args)
    if args.command == "trajectories":
        return _import(args)
    if args.command == "doctor":
        return _doctor(args)
    if args.command == "eval":
        return _eval_mining(args)
    if args.command == "serve":
        return _serve(args)
    if args.command == "server":
        return _server(args)
    if args.command == "review":
        return _review(args)
    if args.command == "lake":
        return _lake(args)
    if args.command == "tasks":
        return _validate(args)
    return _sandbox(args)


SHIPPED_SANDBOXES = Path(__file__).resolve().parents[1] / "sandboxes"


def _shipped_sandbox_names() -> list[str]:
    """Names from the shipped sandbox.toml files, read with tomllib (the manifest model costs ~1 s to import)."""
    import tomllib

    names = []
    for toml in sorted(SHIPPED_SANDBOXES.glob("*/sandbox.toml")):
        try:
            names.append(tomllib.loads(toml.read_text()).get("sandbox", {}).get("name") or toml.parent.name)
        except (OSError, tomllib.TOMLDecodeError):
            names.append(toml.parent.name)  # the flow reports what is wrong with it
    return names


def _sandbox_exists(name: str) -> bool:
    return name in _shipped_sandbox_names() or Path(name).exists()


def _unknown_sandbox(name: str) -> str:
    import difflib

    known = _shipped_sandbox_names()
    close = difflib.get_close_matches(name, known, n=3)
    return f"no sandbox named {name!r}; " + (f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(known))}")


def _run_synthesize(args: argparse.Namespace) -> int:
    from flywheel.llm import configured

    if args.agent == "llm" and not configured():
        print("error: --agent llm needs a model: set FLYWHEEL_MODEL (e.g. openai/NAME) and FLYWHEEL_API_BASE for a "
              "vLLM/Ollama server, or FLYWHEEL_API_KEY for a hosted API", file=sys.stderr)
        return 2
    server = _prefect_env()
    from rich.console import Console
    from rich.markdown import Markdown

    from flows.task_synthesis import flow as synth_flow
    from lake import Lake

    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(f"[bold]synthesize-tasks[/]: on {server}…")
    with _progress(console) as progress:
        synth_flow.progress = progress
        result = synth_flow.synthesize_tasks(sandboxes=args.sandboxes, count=args.count, seed=args.seed, agent=args.agent, lake_root=Lake().uri, workers=args.workers,
                                             from_failures=args.from_failures, policy=args.policy)
        synth_flow.progress = None
    console.print(Markdown(result["markdown"]))
    for s in result["sandboxes"]:
        console.print(f"  {s['sandbox']}: {s['verified']} new verified pairs")
    console.print(f"\nLake: {result['lake']}. Query the verified pairs with:\n"
                  f"  {_me()} lake sql \"SELECT sandbox, family, count(*) AS n FROM tasks WHERE status = 'verified' GROUP BY ALL ORDER BY ALL\"")
    failed = [s for s in result["sandboxes"] if s["error"]] or result["problems"]
    return 1 if failed and not any(s["verified"] or s["already_known"] for s in result["sandboxes"]) else 0


def _progress(console):
    """A live bar on a terminal; elsewhere (a log file, CI) a plain line every 10% or 30 s."""
    if console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console)
    from flywheel.progress import LineProgress

    return LineProgress(sys.stdout)


def _me() -> str:
    """How the user can call this command again: `flywheel` when it is on PATH, else the path they used."""
    import shutil

    here = Path(sys.argv[0])
    if here.resolve() == Path(__file__).resolve():  # `python -m flywheel.cli`
        return f"{sys.executable} -m flywheel.cli"
    if shutil.which("flywheel") == str(here.resolve()) or not here.parent.parts:
        return "flywheel"
    rel = os.path.relpath(here)
    return str(here.resolve()) if rel.startswith("..") else rel


def _run_other(args: argparse.Namespace) -> int:
    server = _prefect_env()
    from rich.console import Console
    from rich.markdown import Markdown

    from lake import Lake

    console = Console(width=None if sys.stdout.isatty() else 140)
    root = Lake().uri
    console.print(f"[bold]{args.flow}[/]: on {server}…")
    if args.flow == "rollout":
        from flows.rollout import flow as rollout_flow

        with _progress(console) as progress:
            rollout_flow.progress = progress
            result = rollout_flow.rollout(policy=args.policy, sandboxes=args.sandboxes, tasks=args.tasks,
                                          episodes=args.episodes, workers=args.workers, noise=args.noise, lake_root=root,
                                          profile=args.profile, all_tasks=args.all_tasks, budget=args.budget,
                                          recheck_every=args.recheck_every)
            rollout_flow.progress = None
        console.print(Markdown(result["markdown"]))  # its problems included, once
        landed = result["episodes"] or result["landed_before"]  # a resumed run may have nothing left
        if landed:
            console.print(f"Next: {_me()} run judge   (lake: {root})")
        return 0 if landed else 1
    if args.flow == "mine-failures":
        from flows.failure_mining.flow import mine_failures

        result = mine_failures(policy=args.policy, since=args.since, lake_root=root)
        console.print(Markdown(result["markdown"]))
        console.print(f"Next: {_me()} run export-sft --name NAME   (curated training data; lake: {root})\n"
                      f"The failures, one query away:\n  {_me()} lake sql \"SELECT kind, reason, count(*) AS n "
                      "FROM failures GROUP BY ALL ORDER BY n DESC\"", soft_wrap=True)
        return 0
    if args.flow == "explore":
        from flows.exploration.flow import explore

        result = explore(sandboxes=args.sandboxes, areas=args.areas, steps=args.steps, minutes=args.minutes,
                         seed=args.seed, workers=args.workers, sensitive=args.sensitive, lake_root=root)
        console.print(Markdown(result["markdown"]))
        for s in result["sandboxes"]:
            console.print(f"  {s['sandbox']}: areas with a verified task {s['share_before']:.0%} before -> "
                          f"{s['share_after']:.0%} after; {s['verified']} new verified tasks, "
                          f"{s['verified_in_empty_areas']} of them in areas that had none")
        console.print(f"Report: {result['report']}")
        return 0 if any(not s["error"] for s in result["sandboxes"]) else 1
    if args.flow == "export-sft":
        return _export_sft(args, console, root)
    if args.flow == "judge":
        from flows.judging.flow import judge

        console.print(Markdown(judge(lake_root=root)["markdown"]))
        console.print(f"Next: {_me()} run mine-failures   (lake: {root})")
        return 0
    from flows.cycle.flow import cycle

    result = cycle(policy=args.policy, sandboxes=args.sandboxes, count=args.count, episodes=args.episodes, lake_root=root,
                   iterations=args.iterations, budget=args.budget, targeted=args.targeted, explore_minutes=args.explore_minutes)
    console.print(Markdown(result["markdown"]))
    console.print(f"Report: {result['report']}")
    return 0


def _export_sft(args: argparse.Namespace, console, root: str) -> int:
    from pydantic import ValidationError
    from rich.markdown import Markdown

    from flows.sft_export import flow as export_flow
    from flows.sft_export.config import ExportConfig

    params = dict(name=args.name, format=args.format or ("action-rl" if args.route == "rl" else "messages"),
                  route=args.route, per=args.per or "step", images=args.images, protocol=args.protocol,
                  since=args.since, negatives=args.negatives, max_per_sandbox=args.max_per_sandbox,
                  max_per_family=args.max_per_family, max_per_difficulty=args.max_per_difficulty, license=args.license)
    try:  # bad options fail here, in one line, before Prefect starts
        ExportConfig(**params, shard_bytes=args.shard_mb * 1024 * 1024)
    except ValidationError as exc:
        console.print(f"[red]error:[/] {'; '.join(e['msg'].removeprefix('Value error, ') for e in exc.errors())}")
        return 2
    with _progress(console) as progress:
        export_flow.progress = progress
        result = export_flow.export_sft(**params, shard_mb=args.shard_mb, out=args.out, lake_root=root)
        export_flow.progress = None
    console.print(Markdown(result["markdown"]))
    return 1 if result["status"] in ("gate_failed", "empty") else 0


def _eval_mining(args: argparse.Namespace) -> int:
    if args.real == KNOWN:
        from rich.console import Console

        from flows.failure_mining.real_eval import (
            evaluate_known_sets,
            pooled,
            pooled_by_status,
            summary_table,
        )
        from flywheel.progress import LineProgress

        console = Console(stderr=True)  # stdout is the JSON's
        with _progress(console) if console.is_terminal else LineProgress(sys.stderr) as bar:
            sets = evaluate_known_sets(progress=bar)
        total = pooled(sets)
        by_status = pooled_by_status(sets)
        print(json.dumps({**sets, "pooled": total, "pooled_by_status": by_status}, indent=1, default=str))
        print(summary_table(sets, total), file=sys.stderr)  # the JSON is for tools; this is for the reader
        return 0
    if args.real is not None:
        from flows.failure_mining.real_eval import LABELS, evaluate_set, pooled, status_of, summary_table

        labels = args.labels or LABELS
        for what, path in (("data", args.real), ("labels", Path(labels))):
            if not path.is_file():
                print(f"error: no {what} file at {path}; give --real DATA.jsonl and --labels LABELS.jsonl "
                      "(tests/data/mining_eval/*.md say how each known set is built)", file=sys.stderr)
                return 2
        try:
            scored = {"status": status_of(args.real, labels), **evaluate_set(args.real, labels)}
        except ValueError as exc:  # a label that is not one, or names no task of the data; a quarantined record
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(json.dumps(scored, indent=1, default=str))
        one = {args.real.name if args.real.name != "data.jsonl" else args.real.parent.name or "data": scored}
        print(summary_table(one, pooled(one)), file=sys.stderr)  # the JSON is for tools; this is for the reader
        return 0
    from flows.failure_mining.evaluation import evaluate
    from lake import Lake

    lake = Lake()
    if args.labels is not None and not Path(args.labels).is_file():
        print(f"error: no labels file at {args.labels}", file=sys.stderr)
        return 2
    try:
        scored = evaluate(lake, args.labels)
    except ValueError as exc:  # a line that is not a label
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not scored["trajectories"]:  # nothing to score is no score: say what would give one
        source = f"no trajectory of {args.labels} is" if args.labels else "no trajectory with the simulator's recorded faults is"
        print(f"error: {source} in the lake at {lake.uri}; roll out a simulator (`--policy scripted-noisy` or `simulated-learner`) to score against its "
              "faults, or score other agents' labelled runs with --real DATA.jsonl --labels LABELS.jsonl", file=sys.stderr)
        return 1
    print(json.dumps(scored, indent=1, default=str))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from flywheel.doctor import run_checks

    checks = run_checks(call_llm=not args.no_llm_call)
    for c in checks:
        mark = "ok " if c.ok else ("MISSING" if c.required else "absent ")
        print(f"{mark:8} {c.name:20} {c.detail}")
        if not c.ok and c.fix:
            print(f"{'':8} {'':20} fix: {c.fix}")
    missing = [c for c in checks if c.required and not c.ok]
    print(f"\n{len(missing)} required item(s) missing" if missing else "\neverything required is here")
    return 1 if missing else 0


def _serve(args: argparse.Namespace) -> int:
    _prefect_env()
    from flywheel.serve import serve

    try:
        return serve(args.prefect_yaml, port=args.port, limit=args.limit)
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _server(args: argparse.Namespace) -> int:
    from flywheel import prefect_server

    os.environ.setdefault("PREFECT_HOME", str(Path(".prefect").resolve()))
    home = prefect_server.prefect_home()
    if args.server_cmd == "start":
        print(f"starting a Prefect server on 127.0.0.1:{args.port} (state in {home}; first start ~15 s)…", flush=True)
        try:
            state, new = prefect_server.start(args.port, home, args.timeout)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{'started' if new else 'already running'}: {state.api_url} (pid {state.pid}); flywheel runs with "
              f"PREFECT_HOME={home} use it; `{_me()} server stop` ends it")
        return 0
    if args.server_cmd == "stop":
        state = prefect_server.stop(home)
        print(f"stopped the server at {state.api_url} (pid {state.pid})" if state else f"no server of ours runs (PREFECT_HOME={home})")
        return 0
    state = prefect_server.read_state(home)
    if state is None:
        print(f"not running (PREFECT_HOME={home}); flywheel runs start an ephemeral server. Start one with `{_me()} server start`")
        return 1
    answers = prefect_server.api_answers(state.api_url, timeout_s=5.0)
    print(f"{'running' if answers else 'started but not answering yet'}: {state.api_url} (pid {state.pid}, log {home / 'server.log'})")
    return 0 if answers else 1


def _review(args: argparse.Namespace) -> int:
    from lake import Lake

    if args.review_cmd == "stats":
        from flywheel.review.stats import print_stats

        return print_stats(Lake())
    from flywheel.review.app import serve_review

    return serve_review(Lake(), host=args.host, port=args.port, reviewer=args.reviewer, sample=args.sample, seed=args.seed)


def _import(args: argparse.Namespace) -> int:
    from flows.rollout.importers import import_paths
    from lake import Lake

    lake = Lake()
    try:
        report = import_paths(lake, args.paths)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    lake.refresh_catalog()
    print(f"records in: {report.records_in}  accepted: {report.accepted} ({report.steps} steps)  "
          f"already imported: {report.skipped}  quarantined: {report.quarantined_total}")
    for reason, n in report.quarantined.most_common():
        print(f"  quarantined {n:4d}  {reason}")
    if report.quarantined_total:
        print(f"see them with: flywheel lake sql \"SELECT reason, record_json FROM quarantine WHERE run_id = '{report.run_id}'\"")
    return 0


def _curriculum(args: argparse.Namespace) -> int:
    from flows.curriculum.curriculum import pool_report
    from lake import Lake

    if args.cur_cmd == "update":
        if not 0 <= args.low < args.high <= 1:
            print(f"error: need 0 <= --low < --high <= 1, got --low {args.low} --high {args.high}", file=sys.stderr)
            return 2
        print(f"curriculum: on {_prefect_env()}…")
        from flows.curriculum.flow import curriculum

        moved = curriculum(lake_root=Lake().uri, low=args.low, high=args.high)["moved"]
        print("tasks moved: " + (", ".join(f"{n} into {pool}" for pool, n in sorted(moved.items())) or "none"))
        args.policy = None
    rows = pool_report(Lake(), getattr(args, "policy", None))
    if not rows:
        print(f"no pools yet: pools come from verdicts; after `{_me()} run rollout` and `{_me()} run judge`, run "
              f"`{_me()} curriculum update` (`{_me()} run cycle` does all three)")
        return 1
    _print_table(list(rows[0]), [tuple(r.values()) for r in rows])
    return 0


def _coverage(args: argparse.Namespace) -> int:
    from flows.exploration.chart import coverage_chart_svg
    from flows.exploration.coverage import render_coverage
    from flows.exploration.exploration import coverage_now
    from lake import Lake
    from sandboxes.registry import select

    chosen, problems = select([args.sandbox])
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if not chosen:
        return 2
    lake = Lake()
    rows = coverage_now(lake, chosen[0])
    print(render_coverage(chosen[0].name, rows))
    chart = lake.root / "reports" / f"coverage-{chosen[0].name}.svg"
    chart.parent.mkdir(parents=True, exist_ok=True)
    chart.write_text(coverage_chart_svg(chosen[0].name, rows))
    print(f"\npicture: {chart}")
    return 0


def _lake(args: argparse.Namespace) -> int:
    import duckdb

    from lake import Lake
    from lake.store import LegacyLakeError

    lake = Lake()
    try:
        return _lake_command(args, lake, duckdb)
    except LegacyLakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _lake_command(args: argparse.Namespace, lake, duckdb) -> int:
    if args.lake_cmd == "migrate":
        from lake.migrate import migrate

        done = migrate(lake)
        for table, rows in done.items():
            print(f"{table:20} {rows:8d} rows -> Delta table {lake.tables_dir / table}")
        print(f"migrated {len(done)} tables; the old files are in {lake.root / 'legacy'} (delete them when satisfied)"
              if done else f"nothing to migrate in {lake.root}")
        lake.refresh_catalog()
        return 0
    if args.lake_cmd == "compact":
        removed = lake.compact()
        print("\n".join(f"{t:20} {n:6d} small files merged" for t, n in removed.items()) or "nothing to compact")
        lake.refresh_catalog()
        return 0
    if args.lake_cmd == "vacuum":
        removed = lake.vacuum(args.older_than_hours, dry_run=args.dry_run)
        verb = "would delete" if args.dry_run else "deleted"
        print("\n".join(f"{t:20} {verb} {n:6d} unread files" for t, n in removed.items())
              or f"nothing to delete (no file unread for {args.older_than_hours} h)")
        return 0
    if args.lake_cmd == "refresh" or (not lake.remote and not lake.catalog_path.exists()):
        lake.refresh_catalog()
        if args.lake_cmd == "refresh":
            print(f"catalog rebuilt: {lake.catalog_path}")
            return 0
    from lake.analyst import AnalystSQLRefused, run_analyst_sql

    try:
        cols, rows = run_analyst_sql(lake, args.query)
    except AnalystSQLRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except duckdb.Error as exc:
        con = lake.connect() if lake.remote else duckdb.connect(str(lake.catalog_path), read_only=True)
        try:
            views = ", ".join(_views(con))
        finally:
            con.close()
        print(f"error: {str(exc).splitlines()[0]}\nviews: {views}", file=sys.stderr)
        return 2
    if not cols:
        return 0
    if args.format == "json":
        print(json.dumps([dict(zip(cols, r)) for r in rows], default=str, indent=1))
    elif args.format == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")  # not RFC 4180's CRLF: shells read lines by \n
        w.writerow(cols)
        w.writerows(rows)
    else:
        _print_table(cols, rows)
    return 0


def _views(con) -> list[str]:
    return [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()]


def _print_table(cols: list[str], rows: list[tuple]) -> None:
    cells = [[("" if v is None else str(v)).replace("\n", " ")[:80] for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")


def _validate(args: argparse.Namespace) -> int:
    from flows.task_synthesis.revalidate import revalidate

    result = revalidate(args.task_id, truncate=args.truncate)
    print(json.dumps(result, indent=1, default=str))
    return 0 if result.get("status") == "verified" else 1


def _sandbox(args: argparse.Namespace) -> int:
    from sandboxes.app_process import AppProcess, SandboxError
    from sandboxes.registry import select

    chosen, problems = select([args.name] if args.sandbox_cmd == "up" else None)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if args.sandbox_cmd == "list":
        for m in chosen:
            print(f"{m.name:12} {m.sandbox.kind:8} {m.sandbox.description}")
        return 0
    if not chosen:
        return 2
    try:
        if chosen[0].start is not None and chosen[0].start.isolation == "container":
            import time

            from sandboxes.container import ContainerApp

            with ContainerApp(chosen[0]) as app:
                print(f"{app.manifest.name} is up at {app.base_url}/  (a container with no network; a shell in its "
                      f"workspace: docker exec -it -w {app.workspace_dir} {app.container.short_id} sh); Ctrl-C stops it")
                while app.healthy():
                    time.sleep(1)
            return 0
        if chosen[0].sandbox.kind == "android":
            import time

            from sandboxes.android import open_android_driver

            driver = open_android_driver(chosen[0])  # leases a device from [android] / FLYWHEEL_ADB_*
            try:
                driver.reset()
                print(f"{driver.manifest.name} is up on {driver.serial} (fresh-install state, app launched); Ctrl-C gives the device back")
                while driver.device_online():
                    time.sleep(1)
            finally:
                driver.close()
            return 0
        with AppProcess(chosen[0]) as app:
            st = app.manifest.state
            where = app.state_path or (f"{st.kind}, read in the page" if st.in_page else f"{st.kind} under {app.workdir}")
            print(f"{app.manifest.name} is up at {app.base_url}{app.manifest.start.home_path}  (state: {where}); Ctrl-C stops it")
            app.proc.wait()
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
