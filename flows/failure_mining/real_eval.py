"""The miner against hand-labelled trajectories of other agents (see tests/data/mining_eval/LABELLING.md).

An evaluation set is a folder with `data.jsonl` (trajectories in a format `flows.rollout.importers` reads,
each line with the source's own `task_id` and a `source` record: repository, commit, path, licence) and
`labels.jsonl` ({"task_id", "kind": "loop" | "side_effect" | null, "step", "last_step"}; null marks a
trajectory with no finding of any labelled kind). `evaluate_set` imports the data into a throwaway lake
through the real importer, runs every detector, and scores per kind, per evidence level the findings rest
on, and next to baselines: "the same action N times in a row" for loops (N = 3), and "a manifest's
sensitive list" for side effects (foreign logs have none, so it finds nothing).

`build_abp_set` writes such a `data.jsonl` from a git snapshot of
theredsix/abp-online-mind2web-results (Claude + Agent Browser Protocol on Online-Mind2Web, MIT): each
`abp_run/<task>/result.json` gives the instruction, the action history as text and the model's thought
per action. The harness records no screen size; its clicks reach x = 1262, y = 823, so a 1280 x 900
viewport is assumed (it only scales points to our grid).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import polars as pl

from flows.failure_mining.detectors import detect_all
from flows.failure_mining.evaluation import TOLERANCE, _matched, label_lines
from flows.failure_mining.features import attach_trajectories, step_features
from flows.failure_mining.snapshot import Snapshot, write_jsonl
from lake import Lake

KINDS = ("loop", "side_effect")
BASELINE_REPEATS = 3
ABP_REPO = "theredsix/abp-online-mind2web-results"
ABP_VIEWPORT = {"width": 1280, "height": 900}
EVAL_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "mining_eval"
LABELS = EVAL_DATA / "labels.jsonl"
# The labelled sets `flywheel eval mining --real` scores side by side when their data is here: name ->
# (environment variable naming data.jsonl, its default place beside the repo, labels, whether the set has
# the tune / held-out split). The data is built from public repositories (see each set's notes).
KNOWN_SETS = {
    "abp": ("FLYWHEEL_MINING_EVAL", "abp", LABELS, True),  # LABELLING.md; tuned on: in-sample
    "operator_evals": (  # OPERATOR_EVALS.md; runs 0-1 of three web agents (see SET_STATUS)
        "FLYWHEEL_MINING_EVAL_OPERATOR",
        "operator_evals",
        EVAL_DATA / "operator_evals_labels.jsonl",
        False,
    ),
    "operator_evals_run2": (  # the same source's run 2 (runs=("2",))
        "FLYWHEEL_MINING_EVAL_OPERATOR_RUN2",
        "operator_evals_run2",
        EVAL_DATA / "operator_evals_run2_labels.jsonl",
        False,
    ),
    "operator_evals_heldout": (  # the same source's runs 3-7 (runs=("3", ..., "7"))
        "FLYWHEEL_MINING_EVAL_OPERATOR_HELDOUT",
        "operator_evals_heldout",
        EVAL_DATA / "operator_evals_heldout_labels.jsonl",
        False,
    ),
    "webarena_colorbrowser": (  # WEBARENA_COLORBROWSER.md; another agent and harness
        "FLYWHEEL_MINING_EVAL_WEBARENA",
        "webarena_colorbrowser",
        EVAL_DATA / "webarena_colorbrowser_labels.jsonl",
        False,
    ),
    "webchorearena_colorbrowser": (  # WEBCHOREARENA_COLORBROWSER.md; the same agent on WebChoreArena, labelled blind
        "FLYWHEEL_MINING_EVAL_WEBCHOREARENA",
        "webchorearena_colorbrowser",
        EVAL_DATA / "webchorearena_colorbrowser_labels.jsonl",
        False,
    ),
    "osworld_verified": (  # OSWORLD_VERIFIED.md; other agents (UI-TARS, Doubao) on a desktop, labelled blind
        "FLYWHEEL_MINING_EVAL_OSWORLD",
        "osworld_verified",
        EVAL_DATA / "osworld_verified_labels.jsonl",
        False,
    ),
    "android_world_agents": (  # ANDROID_WORLD_AGENTS.md; T3A- and SeeAct-style agents on Android, labelled blind
        "FLYWHEEL_MINING_EVAL_ANDROID_WORLD",
        "android_world_agents",
        EVAL_DATA / "android_world_agents_labels.jsonl",
        False,
    ),
    "webcanvas": (  # WEBCANVAS.md; the WebCanvas agent on Mind2Web-Live (iMeanAI/WebCanvas), labelled blind
        "FLYWHEEL_MINING_EVAL_WEBCANVAS",
        "webcanvas",
        EVAL_DATA / "webcanvas_labels.jsonl",
        False,
    ),
    "gbox_webarena": (  # GBOX_WEBARENA.md; Claude Code through GBOX's browser tools on WebArena (babelcloud/webarena), labelled blind
        "FLYWHEEL_MINING_EVAL_GBOX_WEBARENA",
        "gbox_webarena",
        EVAL_DATA / "gbox_webarena_labels.jsonl",
        False,
    ),
    "mobile_agent_bench": (  # MOBILE_AGENT_BENCH.md; Claude Code + four MCP stacks on an Android phone, labelled blind
        "FLYWHEEL_MINING_EVAL_MOBILE_AGENT_BENCH",
        "mobile_agent_bench",
        EVAL_DATA / "mobile_agent_bench_labels.jsonl",
        False,
    ),
    "webtestpilot_baselines": (  # WEBTESTPILOT_BASELINES.md; LaVague and Pinata running test cases on four web apps, labelled blind
        "FLYWHEEL_MINING_EVAL_WEBTESTPILOT_BASELINES",
        "webtestpilot_baselines",
        EVAL_DATA / "webtestpilot_baselines_labels.jsonl",
        False,
    ),
    "webtestpilot_baselines_late": (  # the same runs' ranks 120-236, labelled blind after ranks 0-119 were scored
        "FLYWHEEL_MINING_EVAL_WEBTESTPILOT_BASELINES",
        "webtestpilot_baselines",
        EVAL_DATA / "webtestpilot_baselines_labels_late.jsonl",
        False,
    ),
    "lyx_android_world": (  # LYX_ANDROID_WORLD.md; an AndroidWorld fork's phone agent (7 runs), labelled blind
        "FLYWHEEL_MINING_EVAL_LYX_ANDROID_WORLD",
        "lyx_android_world",
        EVAL_DATA / "lyx_android_world_labels.jsonl",
        False,
    ),
    "android_world_mcp": (  # ANDROID_WORLD_MCP.md; Claude Code through an MCP phone server on AndroidWorld tasks, labelled blind
        "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP",
        "android_world_mcp",
        EVAL_DATA / "android_world_mcp_labels.jsonl",
        False,
    ),
    "android_world_mcp_late": (  # the same runs' ranks 28-77, labelled blind after ranks 0-27 were scored
        "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP",
        "android_world_mcp",
        EVAL_DATA / "android_world_mcp_labels_late.jsonl",
        False,
    ),
    "android_world_mcp_rest": (  # the same runs' ranks 78-111 (all the rest), labelled blind by a third labeller
        "FLYWHEEL_MINING_EVAL_ANDROID_WORLD_MCP",
        "android_world_mcp",
        EVAL_DATA / "android_world_mcp_labels_rest.jsonl",
        False,
    ),
    "webshop_react": (  # WEBSHOP_REACT.md; ReAct (text-davinci-002) on 500 WebShop tasks (ysymyth/ReAct), labelled blind
        "FLYWHEEL_MINING_EVAL_WEBSHOP_REACT",
        "webshop_react",
        EVAL_DATA / "webshop_react_labels.jsonl",
        False,
    ),
    "react_brittleness": (  # REACT_BRITTLENESS.md; the same harness rerun with Llama 3.1 8B and GPT-3.5 (sbhambr1/react_brittleness), labelled blind
        "FLYWHEEL_MINING_EVAL_REACT_BRITTLENESS",
        "react_brittleness",
        EVAL_DATA / "react_brittleness_labels.jsonl",
        False,
    ),
}
# How much each set can still tell: every set was labelled blind (ABP excepted) and scored once before any rule
# was chosen reading it; once its findings are read to choose rules it is in-sample, and its figures say how
# well the rules fit it, not how they carry over. `flywheel eval mining --real` reports this beside the figures.
SET_STATUS = {
    "abp": "in-sample: labelled while the rules were written (mining-2); both halves read since mining-4",
    "operator_evals": "in-sample: blind at mining-3 (loop F1 0.697); read to choose rules since mining-5",
    "operator_evals_run2": "in-sample: blind at mining-4 (loop F1 0.667); read to choose rules since mining-5",
    "operator_evals_heldout": "in-sample: blind at mining-7 (loop F1 0.840); read since mining-9 (2026-12-02)",
    "webarena_colorbrowser": "in-sample: blind at mining-5 (loop F1 0.343); read to choose rules since mining-6",
    "webchorearena_colorbrowser": "in-sample: blind before mining-6; read to choose rules since mining-6",
    "osworld_verified": "in-sample: blind at mining-7 (loop F1 0.721, ranks 0-224); read to choose rules since",
    "android_world_agents": "in-sample: blind at mining-7 (loop F1 0.522); read since mining-9",
    "webcanvas": "in-sample: blind at mining-8 (loop F1 0.406); read since mining-9",
    "gbox_webarena": "blind at mining-9 (loop F1 0.0, side effects R 0.836); loops read since",
    "mobile_agent_bench": "blind at mining-9 (loop F1 0.399, side effects R 0.114); loops read since, side effects since mining-10",
    "webtestpilot_baselines": "blind: labelled 2026-12-03 (helper 15m), scored once at mining-11; read since (mining-12)",
    "webtestpilot_baselines_late": "in-sample: ranks 120-236 labelled 2026-12-03 (helper 15q), scored blind at mining-11 and mining-12; its side-effect misses read for mining-14",
    "lyx_android_world": "blind: labelled 2026-12-03 (helper 15n), scored once at mining-11; read since (mining-12)",
    "android_world_mcp": "blind: labelled 2026-12-03 (helper 15o, ranks 0-27), scored once at mining-11; read since (mining-12, mining-13)",
    "android_world_mcp_late": "blind: ranks 28-77 labelled 2026-12-03 (helper 15p), scored once at mining-11 and once at mining-12",
    "android_world_mcp_rest": "blind: ranks 78-111 labelled 2026-12-03 (helper 15r), scored once at mining-12 and once at mining-13; pooled since (its misses not read)",
    "webshop_react": "blind: labelled 2026-12-05 (helper-4), scored once at mining-15; its findings not read",
    "react_brittleness": "blind: labelled 2026-12-05 (helper-6), scored once at mining-15; its findings not read",
}
HALVES = ("tune", "held_out")


def half_of(task_id: str) -> str:
    """The fixed split of a labelled set: detector constants are tuned on "tune" only; "held_out" is
    scored, never read while tuning. By the sha256 of the source's task_id, so it never moves."""
    return HALVES[int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 2]


def build_abp_set(git_dir: str | Path, out: str | Path, commit: str = "HEAD") -> int:
    """data.jsonl from a snapshot of the ABP Online-Mind2Web results; returns the trajectories written."""
    lines = []
    with Snapshot(git_dir, commit) as snap:
        paths = sorted(  # abp_run/<task>/result.json; one run also holds a nested copy of another, left out
            p for p in snap.names() if p.startswith("abp_run/") and p.endswith("/result.json") and p.count("/") == 2
        )
        for path in paths:
            result = json.loads(snap.blob(path) or b"")  # every result is there (a missing one is an error)
            thoughts = result.get("thoughts") or []
            steps = [
                {"action": action, "thought": thoughts[i] if i < len(thoughts) else None}
                for i, action in enumerate(result["action_history"])
            ]
            lines.append(
                {
                    "task_id": result["task_id"],
                    "policy": "abp-claude-opus-4.6",
                    "model": "claude-opus-4.6",
                    "instruction": result["task"],
                    "final_answer": result.get("final_result_response"),
                    "viewport": ABP_VIEWPORT,
                    "source": snap.source(ABP_REPO, path, "MIT"),
                    "steps": steps,
                }
            )
    return write_jsonl(out, lines)


def load_set(data: str | Path) -> dict[str, pl.DataFrame]:
    """Import data.jsonl into a throwaway lake with the real importer; steps and trajectories as frames."""
    from flows.rollout.importers import import_paths

    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(Path(tmp) / "lake")
        report = import_paths(lake, [Path(data)], run_id="mining-eval")
        if report.quarantined_total:
            raise ValueError(
                f"{data}: {report.quarantined_total} records quarantined: {dict(report.quarantined)}"
            )
        con = lake.connect()
        try:
            steps = con.sql("SELECT * FROM steps").pl()
            trajectories = con.sql("SELECT trajectory_id, task_id, instruction FROM trajectories").pl()
        finally:
            con.close()
    return {"steps": steps, "trajectories": trajectories}


def labels_for(frames: dict[str, pl.DataFrame], labels: str | Path) -> tuple[pl.DataFrame, list[str]]:
    """Labels keyed by the source's task_id, as (trajectory_id, kind, first_step, last_step)."""
    ids = dict(frames["trajectories"].select("task_id", "trajectory_id").iter_rows())
    rows, named = [], []
    for where, task_id, kind, first, last in label_lines(labels, "task_id", KINDS):
        if task_id not in ids:
            raise ValueError(f"{where}: task {task_id!r} is not in the data (labels name the data's own task_id)")
        named.append(ids[task_id])
        if kind:
            rows.append({"trajectory_id": ids[task_id], "kind": kind, "first_step": first, "last_step": last})
    schema = {"trajectory_id": pl.String, "kind": pl.String, "first_step": pl.Int32, "last_step": pl.Int32}
    return pl.DataFrame(rows, schema=schema), sorted(set(named))


def same_action_baseline(steps: pl.DataFrame, n: int = BASELINE_REPEATS) -> pl.DataFrame:
    """ "The same action n times in a row" as loop findings (the range of the repeats after the first): the
    same actions JSON, so an action the importer could not map (an empty JSON) repeats nothing, as the
    baseline counted it from the start (the detectors' own repeats count those by their name)."""
    f = step_features(steps).with_columns(is_repeat=pl.col("is_repeat") & (pl.col("act") != "[]"))
    member = pl.col("is_repeat") | pl.col("is_repeat").shift(-1).fill_null(False)
    runs = (
        f.lazy()
        .with_columns(_run=(~pl.col("is_repeat")).cum_sum())
        .filter(member)
        .group_by("_run")
        .agg(
            pl.col("trajectory_id").first(),
            first=pl.col("step_index").min(),
            last=pl.col("step_index").max(),
            k=pl.len(),
        )
        .filter(pl.col("k") >= n)
        .select(
            "trajectory_id",
            first_step=pl.col("first") + 1,
            last_step="last",
            kind=pl.lit("loop"),
            reason=pl.lit("baseline"),
        )
        .collect()
    )
    return runs


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return round(2 * p * r / (p + r), 4) if p + r else 0.0


def _counted(findings: int, matched: int, labels: int, found: int) -> dict:
    """The figures of one kind from its counts: `matched` findings overlap a label, `found` labels overlap a
    finding. The counts are kept beside the ratios so that sets can be pooled exactly (`pooled`)."""
    p = round(matched / findings, 4) if findings else None
    r = round(found / labels, 4) if labels else None
    return {"findings": findings, "labels": labels, "precision": p, "recall": r, "f1": _f1(p, r),
            "matched": matched, "found": found}


def _kind_scores(findings: pl.DataFrame, labels: pl.DataFrame) -> dict:
    """Per kind: findings, labels, precision, recall, F1 (a finding matches an overlapping label, +-1 step)."""
    out = {}
    cols = ["trajectory_id", "kind", "first_step", "last_step"]
    for kind in KINDS:
        fk = findings.filter(pl.col("kind") == kind).select(cols)
        lk = labels.filter(pl.col("kind") == kind).select(cols)
        matched = int(_matched(fk, lk, TOLERANCE).sum()) if fk.height else 0
        found = int(_matched(lk, fk, TOLERANCE).sum()) if lk.height else 0
        out[kind] = _counted(fk.height, matched, lk.height, found)
    return out


# Bands of a finding's confidence, each named and bounded above (the last one is not)
CONFIDENCE_BANDS = (("< 0.7", 0.7), ("0.7-0.8", 0.8), ("0.8-0.9", 0.9), (">= 0.9", None))


def _band(confidence: float) -> str:
    return next(name for name, upper in CONFIDENCE_BANDS if upper is None or confidence < upper)


def _by_confidence(findings: pl.DataFrame, labels: pl.DataFrame) -> dict:
    """Per kind and band of the findings' own confidence: how many, and how many match a label - whether a
    finding's confidence says how often findings like it are right. Findings are few: read in Python."""
    cols = ["trajectory_id", "kind", "first_step", "last_step"]
    out: dict = {}
    for kind in KINDS:
        fk = findings.filter(pl.col("kind") == kind)
        hits = _matched(fk.select(cols), labels.filter(pl.col("kind") == kind).select(cols), TOLERANCE)
        counts: dict[str, list[int]] = {}
        for confidence, hit in zip(fk["confidence"].to_list(), hits.to_list()):
            into = counts.setdefault(_band(confidence), [0, 0])
            into[0], into[1] = into[0] + 1, into[1] + int(hit)
        if counts:
            out[kind] = {name: _band_figures(*counts[name]) for name, _ in CONFIDENCE_BANDS if name in counts}
    return out


def _band_figures(findings: int, matched: int) -> dict:
    return {"findings": findings, "matched": matched, "precision": round(matched / findings, 4)}


def _scores(findings: pl.DataFrame, label_frame: pl.DataFrame, steps: pl.DataFrame) -> dict:
    """Per kind, per evidence level and for the baselines, over the trajectories of these frames."""
    result = {
        "kinds": _kind_scores(findings, label_frame),
        "by_evidence_level": {},
        "baselines": {
            f"loop: same action {BASELINE_REPEATS}x in a row": _kind_scores(
                same_action_baseline(steps), label_frame
            )["loop"],
            "side_effect: manifest sensitive lists only": _kind_scores(findings.clear(), label_frame)[
                "side_effect"
            ],
        },
    }
    for level in sorted(findings["evidence_level"].unique().to_list()):
        result["by_evidence_level"][level] = _kind_scores(
            findings.filter(pl.col("evidence_level") == level), label_frame
        )
    result["by_confidence"] = _by_confidence(findings, label_frame)
    return result


def evaluate_set(data: str | Path, labels: str | Path = LABELS, split: bool = True) -> dict:
    """Precision, recall and F1 per kind, per evidence level and for the baselines, on a labelled set: on
    all of it, and (`split`) on each half of the fixed split (`half_of`)."""
    frames = load_set(data)
    label_frame, ids = labels_for(frames, labels)
    trajectories = frames["trajectories"].filter(pl.col("trajectory_id").is_in(ids))
    steps = frames["steps"].filter(pl.col("trajectory_id").is_in(ids))
    findings = detect_all(attach_trajectories(step_features(steps), trajectories))
    result = {
        "trajectories": len(ids),
        "steps": steps.height,
        "labels": {k: label_frame.filter(pl.col("kind") == k).height for k in KINDS},
        **_scores(findings, label_frame, steps),
    }
    if not split:
        return result
    result["halves"] = {}
    halves = trajectories.select(
        "trajectory_id", half=pl.col("task_id").map_elements(half_of, return_dtype=pl.String)
    )
    for half in HALVES:
        here = halves.filter(pl.col("half") == half)["trajectory_id"].implode()
        in_half = pl.col("trajectory_id").is_in(here)
        result["halves"][half] = {
            "trajectories": halves.filter(pl.col("half") == half).height,
            **_scores(findings.filter(in_half), label_frame.filter(in_half), steps.filter(in_half)),
        }
    return result


def known_set_data(name: str) -> Path | None:
    """Where a known set's data.jsonl is: `$<its variable>`, else ../shared/mining_eval/<name>/data.jsonl
    beside the repo; None when it is in neither place."""
    variable, folder, _, _ = KNOWN_SETS[name]
    root = Path(__file__).resolve().parents[2]
    for candidate in (os.environ.get(variable), root.parent / "shared" / "mining_eval" / folder / "data.jsonl"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def evaluate_known_sets(progress=None) -> dict:
    """Every known labelled set side by side (each with the same-action baseline); a set whose data is not
    here says so and how to get it. `progress`: a rich Progress (or flywheel.progress.LineProgress), advanced
    a set at a time (the 19 parts take about a minute)."""
    out = {}
    bar = progress.add_task("labelled sets", total=len(KNOWN_SETS)) if progress is not None else None
    for name, (variable, folder, labels, split) in KNOWN_SETS.items():
        if progress is not None:
            progress.update(bar, description=f"labelled sets: {name}")
        data = known_set_data(name)
        status = SET_STATUS.get(name, "unknown: say in SET_STATUS whether its findings were read")
        if data is None:
            out[name] = {
                "status": status,
                "skipped": f"no data.jsonl: set ${variable} or build ../shared/mining_eval/{folder}/data.jsonl "
                f"(recipe in tests/data/mining_eval/)",
            }
        else:
            out[name] = {"status": status, "data": str(data), **evaluate_set(data, labels, split=split)}
        if progress is not None:
            progress.update(bar, advance=1)
    return out


def pooled(sets: dict) -> dict:
    """The scored sets taken as one: per kind, per evidence level, for the loop baseline and per confidence
    band, from each set's counts (a run scored in two sets with different labels counts in both)."""
    scored = [s for s in sets.values() if "kinds" in s]

    def total(pick) -> dict:
        parts = [pick(s) for s in scored]
        return _counted(*(sum(p[k] for p in parts) for k in ("findings", "matched", "labels", "found")))

    def at_level(level: str, kind: str):  # a set with no finding at a level still brings its labels
        return lambda s: s["by_evidence_level"].get(level, {}).get(kind) or _none_found(s, kind)

    levels = sorted({level for s in scored for level in s["by_evidence_level"]})
    baseline = f"loop: same action {BASELINE_REPEATS}x in a row"
    bands: dict = {}
    for kind in KINDS:
        for name, _ in CONFIDENCE_BANDS:
            counts = [s["by_confidence"].get(kind, {}).get(name) for s in scored]
            counts = [c for c in counts if c]
            if counts:
                found = _band_figures(sum(c["findings"] for c in counts), sum(c["matched"] for c in counts))
                bands.setdefault(kind, {})[name] = found
    return {
        "sets": len(scored),
        "trajectories": sum(s["trajectories"] for s in scored),
        "steps": sum(s["steps"] for s in scored),
        "kinds": {kind: total(lambda s, k=kind: s["kinds"][k]) for kind in KINDS},
        "by_evidence_level": {level: {k: total(at_level(level, k)) for k in KINDS} for level in levels},
        "baselines": {baseline: total(lambda s: s["baselines"][baseline])},
        "by_confidence": bands,
    }


def pooled_by_status(sets: dict) -> dict:
    """`pooled` of the blind sets and of the in-sample ones apart (and of sets of unknown status): how the rules
    carry to logs no rule was chosen from, next to how well they fit the logs that were read."""
    groups: dict[str, dict] = {}
    for name, s in sets.items():
        if "kinds" in s:
            groups.setdefault(_read_or_blind(s["status"]), {})[name] = s
    return {status: pooled(group) for status, group in sorted(groups.items())}


def _none_found(scored: dict, kind: str) -> dict:
    return {"findings": 0, "matched": 0, "labels": scored["kinds"][kind]["labels"], "found": 0}


def _figures(c: dict | None, f1: bool = True) -> str:
    if not c or c["precision"] is None and c["recall"] is None:
        return "-"
    shown = [c["precision"], c["recall"], *([c["f1"]] if f1 else [])]
    return " / ".join("-" if v is None else f"{v:.3f}" for v in shown)


UNKNOWN_STATUS = "unknown: not a known set (KNOWN_SETS), so no one has said whether its findings were read"


def status_of(data: str | Path, labels: str | Path) -> str:
    """The SET_STATUS of the known set whose data and labels these files are; UNKNOWN_STATUS for any other."""
    for name, (_, _, known_labels, _) in KNOWN_SETS.items():
        known = known_set_data(name)
        if known is not None and _same_file(known, data) and _same_file(known_labels, labels):
            return SET_STATUS.get(name, UNKNOWN_STATUS)
    return UNKNOWN_STATUS


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return Path(a).samefile(b)
    except OSError:
        return False


def _read_or_blind(status: str) -> str:
    """A set's SET_STATUS in a word: in-sample once its findings were read to choose rules, blind until then
    (unknown for a set given by path that is no known set)."""
    if status.startswith("unknown"):
        return "unknown"
    read_words = ("read since", "read to choose", "misses read")
    return "in-sample" if status.startswith("in-sample") or any(w in status for w in read_words) else "blind"


def _row(name: str, runs: str, status: str, scored: dict) -> tuple[str, ...]:
    base = scored["baselines"][f"loop: same action {BASELINE_REPEATS}x in a row"]["f1"]
    loops, sides = _figures(scored["kinds"]["loop"]), _figures(scored["kinds"]["side_effect"], f1=False)
    return (name, runs, status, loops, "-" if base is None else f"{base:.3f}", sides)


def summary_table(sets: dict, total: dict) -> str:
    """The sets side by side and pooled, as a reader wants them at the end of a run: loops' precision /
    recall / F1 next to the same-action baseline's F1, side effects' precision / recall, then the pooled
    figures per evidence level and whether a finding's confidence says how often findings like it are right."""
    rows = [("set", "runs", "status", "loops P / R / F1", "baseline F1", "side effects P / R")]
    for name, s in sets.items():
        if "kinds" in s:
            rows.append(_row(name, str(s["trajectories"]), _read_or_blind(s["status"]), s))
        else:
            rows.append((name, "-", "skipped", s.get("skipped", "")))
    pooling = len(sets) > 1  # a set given alone: its own row holds the figures
    if pooling:
        rows.append(_row("pooled", str(total["trajectories"]), f"{total['sets']} sets", total))
        by_status = pooled_by_status(sets)
        if len(by_status) > 1:  # blind and in-sample sets say different things: each pooled on its own too
            for status, part in by_status.items():
                rows.append(_row(f"pooled, {status}", str(part["trajectories"]), f"{part['sets']} sets", part))
    widths = [max(len(r[i]) for r in rows if len(r) > 4 or i < 3) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    loop, side = total["kinds"]["loop"], total["kinds"]["side_effect"]
    levels = [
        f"{level}: " + ", ".join(f"{k} {c['precision']:.3f} ({c['findings']})" for k, c in kinds.items() if c["findings"])
        for level, kinds in total["by_evidence_level"].items()
    ]
    lines += [
        "",
        f"{'pooled' if pooling else 'in all'}: loops {loop['matched']} of {loop['findings']} findings right, {loop['found']} of {loop['labels']}"
        f" labels found; side effects {side['matched']} of {side['findings']} right, {side['found']} of"
        f" {side['labels']} found",
        f"by evidence level ({'pooled ' if pooling else ''}precision, findings): " + "; ".join(levels),
    ]
    for kind, per_band in total["by_confidence"].items():
        bands = "; ".join(f"{band} {c['precision']:.3f} ({c['findings']})" for band, c in per_band.items())
        lines.append(f"{kind} findings by their own confidence ({'pooled ' if pooling else ''}precision, findings): {bands}")
    return "\n".join(lines)
