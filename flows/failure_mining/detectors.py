"""Failure detectors: small pure functions over a whole steps table, vectorised with polars expressions.

Every `detect_*` is called on a steps frame (raw `steps` rows, or `features.step_features` of them) and
returns one row per finding: trajectory_id, first_step, last_step, kind, reason, severity (0..1),
evidence (JSON). Every `undecidable_*` returns, for its check, how often the check could not be decided
per trajectory (trajectory_id, check, n): a missing screen is counted there, never guessed. Each is a
`Check` whose `.plan(features)` is its lazy query; `run_checks` collects all of them in one parallel batch.
Repeats of the previous turn are left to the loop detectors: a repeat's failure is a loop symptom, not a
bad argument.

What each detector decides (kind / reason):

loop / exact_repeat
    the same turn (identical actions JSON) issued 3+ times in a row, with at least 2 of the repeats
    ineffective: the repeat failed, or it left the screen unchanged. Pressing "next" on a paginated list
    changes the screen every time, so it is not a loop. The range covers the repeats, not the original.
    The same aim (action name and target, whatever its text: an answer, a fill) sent again after the harness
    rejected it, or for a named target after the model said it did not work, is a repeat too (mining-6).
loop / short_cycle
    a period 2-4 cycle over (turn, screen): for p consecutive steps the turn and the screen it was taken on
    equal those p steps earlier (A-B-A-B on the same screens). Smallest period wins; period 1 is
    exact_repeat's. Without comparable screens, a cycle of 2-4 turns whose passes the model reports
    failing: a turn issued 3+ times, each within 4 steps of the last with other turns between (tick the
    box, press Verify, tick the box, ...), 2+ of its issues failed or reported failed by the next turn's
    words (`_reported_passes`). An action the importer could not map repeats by its name (a tab switch),
    but only the model's words or errors decide whether repeating it was a loop; a turn issued on a new
    page each time walks through pages and is no loop unless 2+ issues failed (mining-7).
    From actions alone (mining-7, `_repeated_passes`): the same sequence of 2-8 turns (compared by action,
    target role, name and rank, argument; coordinate clicks by their NEAR cell; notes, tab switches and
    empty turns left out) issued 3+ times back to back, 2+ passes' worth of it on the pages the pass before
    was on (or on unknown pages). Evidence: errors (2+ steps failed), url (the passes go from page to page
    and come back), reasoning (2+ reported failed), else actions with a confidence by passes (3: 0.75, 4:
    0.9, 5+: 0.95). Cleared: passes that reach new pages, passes of stepping controls only (Page 2 / Page
    1, a pager's arrow glyphs) unless 2+ steps failed, passes the model reports working in 2+ steps and
    more often than failing. Overlapping short_cycle findings are merged into one.
loop / no_progress
    3+ consecutive steps whose actions all left the screen unchanged (call_user and terminate break the
    streak: asking and stopping are not attempts to change the screen; so does a click that hit nothing,
    which is a bad_args finding of its own).
loop / repeated_typing
    the same type action (same target and text) issued on 3+ steps of a trajectory, not all in one
    consecutive run (a single run is exact_repeat's), 2+ of them ineffective (failed, the screen unchanged,
    or the next turn's words say it did not take). The range runs from the second issue to the last.
    Only typing into a named target counts: the same zip code typed into whatever had focus on three
    different pages is three searches, not a loop.
loop / failing_stretch
    3+ steps in a row that failed, whatever their actions: one goal pursued with call after call that did
    not work. A step fails when the harness refused it (errors) or the model's next words say it did not
    work (reasoning); a stretch needs one refusal among its steps, or 5+ steps from the words alone (an
    agent that says three different tries in a row did not work is often still looking, not going round).
    Turns that ran nothing and reported no error (an unmapped tool lookup) do not break it. From the second
    failure on (mining-9; the words since mining-11).
loop / gesture_retry
    the phone's unlock / home gesture (a swipe up from the bottom edge across half the screen) tried 3+
    times, each within 8 acting steps of the last, with taps, system buttons or app launches between and
    nothing typed: a lock screen or overlay fought try after try, the swipe's coordinates varying each time.
    Swipes with only looking between scroll a list and are left alone. From actions alone (mining-13).
bad_args / format_error, schema_invalid, coords_out_of_range
    `format_error` set (but not `unmapped_action`: an imported action with no counterpart in our space) (codes no_tool_call, unparseable_json -> format_error; unknown_action,
    invalid_arguments -> schema_invalid; a coordinate outside 0..999 -> coords_out_of_range), an action name
    outside the action space, or a coordinate outside 0..999 in the actions JSON.
bad_args / click_hit_nothing
    the ARIA snapshot has no boxes, so "hits nothing" is decided from effects: a targeted click that failed
    (no such element), or a coordinate click that failed or left the screen unchanged - unless the next
    step typed into the focused element and changed it (the click focused a field). A coordinate click
    whose effect is unknown is undecidable.
bad_args / type_no_editable
    a type that failed (no such or no editable field), or a targetless type that left the screen
    unchanged (nothing focused took the text).
bad_args / zero_delta_scroll
    a scroll or hscroll of 0 pixels. A non-zero scroll that left the screenshot unchanged may sit at the end
    of the page (no scroll offset is recorded), so it is counted undecidable, as is one with no screenshot.
bad_args / wrong_app
    steps whose URL host differs from the trajectory's first URL host, or a goto to an absolute URL on
    another host; consecutive steps make one finding. A step (or trajectory start) without a URL is
    undecidable.
sensitive / unconfirmed_sensitive
    a step acting on a control the sandbox manifest declares sensitive with no call_user in the step
    before - or earlier, when every step since that call_user provably left the screen unchanged (the
    screen the user approved is the screen acted on).
sensitive / overcautious
    a call_user whose next effective step (one that changed the screen, has an unknown effect, is
    sensitive, or terminates) is not sensitive.
premature / terminated_failed, terminated_early
    a terminate in a trajectory whose verdict is `failed`; without a verdict, a terminate after fewer
    progress steps (not call_user, not a repeat, not failed, not a format error, not a coordinate click
    that changed nothing) than the task's reference has non-terminate actions (`reference_len`). With
    neither, the terminate is undecidable.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import polars as pl

from flows.failure_mining.features import (
    AIMED,
    CLICKS,
    ENGINE,
    EVIDENCE_LEVELS,
    HOST,
    REVISIT_WINDOW,
    SCROLLS,
    as_features,
    nxt,
    prev,
    recurs,
)
from flows.failure_mining.side_effects import asked_to_send, consented
from sandboxes.actions import ACTION_NAMES

FINDING_SCHEMA = {
    "trajectory_id": pl.String,
    "first_step": pl.Int32,
    "last_step": pl.Int32,
    "kind": pl.String,
    "reason": pl.String,
    "severity": pl.Float64,
    "evidence": pl.String,
    "evidence_level": pl.String,
    "confidence": pl.Float64,
}
UNDECIDABLE_SCHEMA = {"trajectory_id": pl.String, "check": pl.String, "n": pl.UInt32}
# How bad each reason is (0..1): feeds the findings' severity and the per-step rewards.
SEVERITY = {
    "exact_repeat": 1.0,
    "short_cycle": 0.8,
    "no_progress": 0.6,
    "repeated_typing": 0.6,
    "failing_stretch": 0.8,
    "gesture_retry": 0.7,
    "format_error": 1.0,
    "schema_invalid": 1.0,
    "coords_out_of_range": 1.0,
    "click_hit_nothing": 0.7,
    "type_no_editable": 0.7,
    "zero_delta_scroll": 0.5,
    "wrong_app": 0.9,
    "unconfirmed_sensitive": 1.0,
    "overcautious": 0.3,
    "terminated_failed": 1.0,
    "terminated_early": 0.7,
    "state_change": 0.1,
}
MIN_REPEATS = 3  # turns in a row for exact_repeat (the original + 2 repeats)
MIN_INEFFECTIVE = 2  # repeats that must have changed nothing or failed
MIN_SCROLL_REPORTS = 3  # ... for a scroll repeated, when only the model's words say the scrolls found nothing
MIN_CONFIDENCE = 0.5  # a loop from actions alone is reported from this confidence on
NEAR = 16  # grid points (of 0..999) within which two coordinate clicks aim at the same control (tuned: see LABELLING.md)
NEAR_FACTOR = 0.85
REAIM = 60  # grid points: a click re-aimed at a control the model says did not respond (tuned)
SCROLL_FACTOR = 0.0  # from actions alone a scroll repeat is reading, never a loop: only screens can tell
# ... as is pressing a control that steps (a list's Next, a calendar's next month, a counter's +): how one
# pages through results or moves a date on; only screens, errors or the model's words can tell it did nothing
# An icon font's glyph (a private-use character, or its `\ue62a` escape as accessibility trees print it)
# says nothing of its own: a name made only of glyphs is read like the pager's arrows around it (mining-7)
_GLYPH = r"(?:\\\\u[0-9a-fA-F]{4}|\\u[0-9a-fA-F]{4}|[\x{E000}-\x{F8FF}])"
_STEPPING = (
    rf"(?i)^(?:{_GLYPH}|\W)*(?:next|previous|prev|(?:load |show |see |view )?more(?: results| items| posts| comments)?|"
    r"next page|next month|previous month|older|newer|(?:page )?\d{1,4}|"
    r"forward|back|increase|decrease|\+|-|›|»|‹|«|>|<|weiter|zurück|suivant|précédent|siguiente|"
    rf"anterior)(?:{_GLYPH}|\W)*$|^(?:{_GLYPH}\s*)+$"
)
WAITS = ("wait",)
NO_PROGRESS_STEPS = 3
MAX_DETOURS = 1  # turns that recur nowhere near, allowed between two passes of a cycle (a varying tile)
PERIODS = (2, 3, 4)
MAX_PASS = 8  # turns in one pass of a repeated sequence (LABELLING.md: cycles of up to 4, long cycles of 5-8)
PASS_LENGTHS = tuple(range(2, MAX_PASS + 1))
_MAX_EVIDENCE_ACTION = 300
_OUT_OF_RANGE = r'"(?:x|y|x2|y2)"\s*:\s*(?:-\d|\d{4,}|\d+\.\d*[1-9])'
_FORMAT_OUT_OF_RANGE = r"(?:^|[\s;:])(?:x|y|x2|y2): Input should be (?:less|greater) than or equal to"
_ZERO_PIXELS = r'"pixels"\s*:\s*-?0(?:\.0*)?\s*[,}]'
_WITH_COORDINATES = (*CLICKS, *SCROLLS, "mouse_move", "left_click_drag", "long_press", "swipe")
_GOTO_URL = r'"url"\s*:\s*"([A-Za-z][A-Za-z0-9+.-]*://[^"]*)"'


# ---- the detector shape ---------------------------------------------------------------------------------


class Check:
    """A detector: `plan(features)` builds its lazy query; calling it on a steps frame (raw steps or
    features) runs that query and returns a DataFrame, so tests and flows call it like a function."""

    def __init__(self, plan: Callable[[pl.LazyFrame], pl.LazyFrame]) -> None:
        self.plan = plan
        functools.update_wrapper(self, plan)

    def __call__(self, steps: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
        return self.plan(shared(as_features(steps))).collect(engine=ENGINE)


def check(plan: Callable[[pl.LazyFrame], pl.LazyFrame]) -> Check:
    """Decorator: a plan over features becomes a detector callable on steps."""
    return Check(plan)


# ---- helpers --------------------------------------------------------------------------------------------


def _unchanged() -> pl.Expr:
    """The step's action provably left the screen as it was (false when unknown)."""
    return (pl.col("changed") == False).fill_null(False)  # noqa: E712  (a polars expression)


def _action_text() -> pl.Expr:
    """The turn's actions JSON, cut short for evidence."""
    return pl.col("act").str.slice(0, _MAX_EVIDENCE_ACTION)


def _findings(
    frame: pl.LazyFrame,
    kind: str,
    reason: str | pl.Expr,
    first: pl.Expr,
    last: pl.Expr,
    evidence: dict[str, pl.Expr],
    level: str | pl.Expr = "actions",
    confidence: float | pl.Expr = 0.95,
) -> pl.LazyFrame:
    """Shape rows of any detector into the findings schema; severity follows the reason."""
    reason_expr = pl.lit(reason) if isinstance(reason, str) else reason
    level_expr = pl.lit(level) if isinstance(level, str) else level
    conf_expr = pl.lit(confidence) if isinstance(confidence, float) else confidence
    return frame.select(
        pl.col("trajectory_id"),
        first.cast(pl.Int32).alias("first_step"),
        last.cast(pl.Int32).alias("last_step"),
        pl.lit(kind).alias("kind"),
        reason_expr.alias("reason"),
        reason_expr.replace_strict(SEVERITY, default=0.5, return_dtype=pl.Float64).alias("severity"),
        pl.struct(**evidence).struct.json_encode().alias("evidence"),
        level_expr.cast(pl.String).alias("evidence_level"),
        conf_expr.cast(pl.Float64).round(3).alias("confidence"),
    )


def _steps(
    frame: pl.LazyFrame,
    kind: str,
    reason: str | pl.Expr,
    evidence: dict[str, pl.Expr],
    level: str | pl.Expr = "actions",
    confidence: float | pl.Expr = 0.95,
) -> pl.LazyFrame:
    """One finding per step of an already filtered frame."""
    return _findings(
        frame, kind, reason, pl.col("step_index"), pl.col("step_index"), evidence, level, confidence
    )


_RANK = {v: i for i, v in enumerate(EVIDENCE_LEVELS)}


def _level_name(rank: pl.Expr) -> pl.Expr:
    """An evidence rank (`ev_rank`, or the max of it over a group) as its level's name."""
    return rank.replace_strict(dict(enumerate(EVIDENCE_LEVELS)), default=None, return_dtype=pl.String)


def shared(f: pl.LazyFrame) -> pl.LazyFrame:
    """Columns several detectors read, added once (run_checks materialises them before every plan):
    `again` (the turn repeats the previous one, `_again_expr`), `hit_nothing` (`_click_hit_nothing_expr`)
    and `sensitive_kind` (`_sensitive_kind_expr`)."""
    if "hit_nothing" in f.collect_schema().names():
        return f
    return f.with_columns(again=_again_expr() & ~pl.col("idle"), sensitive_kind=_sensitive_kind_expr()).with_columns(
        hit_nothing=_click_hit_nothing_expr()
    )


def runs(frame: pl.LazyFrame, flag: pl.Expr, **aggs: pl.Expr) -> pl.LazyFrame:
    """Maximal runs of consecutive steps of one trajectory where `flag` holds: one row per run with
    trajectory_id, first_step, last_step, n and the extra aggregations (over the run's rows).
    Only flagged rows are kept before grouping; adjacency is read from the row number."""
    t, row, step = pl.col("traj_no"), pl.col("row"), pl.col("step_index")
    adjacent = ((t == t.shift(1)) & (row == row.shift(1) + 1)).fill_null(False)
    return (
        frame.filter(flag.fill_null(False))
        .with_columns(_run=(~adjacent).cum_sum().set_sorted())  # (structural) sorted keys group 2x faster
        .group_by("_run")
        .agg(pl.col("trajectory_id").first(), first_step=step.min(), last_step=step.max(), n=pl.len(), **aggs)
    )


def _count(frame: pl.LazyFrame, name: str) -> pl.LazyFrame:
    """Undecidable cases (one per row of `frame`) counted per trajectory."""
    return (
        frame.group_by("trajectory_id")
        .agg(n=pl.len())
        .select("trajectory_id", pl.lit(name).alias("check"), pl.col("n").cast(pl.UInt32))
    )


# ---- loops ----------------------------------------------------------------------------------------------


def _again() -> pl.Expr:
    return pl.col("again")


def _again_expr() -> pl.Expr:
    """This turn repeats the previous one: identically, or as a coordinate click of the same kind within
    NEAR grid points of the previous one (a near-identical re-click aims at the same control), or within
    REAIM of it when the model says the previous click did not work ("Let me click it more precisely")."""
    single = ~pl.col("several")
    near_click = (
        pl.col("same_prev")
        & pl.col("action_name").is_in(AIMED)
        & (prev(pl.col("action_name")) == pl.col("action_name"))
        & pl.col("targetless")
        & prev(pl.col("targetless"))
        & single
    )

    def within(limit: int) -> pl.Expr:  # both points of the previous turn (a drag's start and end), if any
        def close(c: str) -> pl.Expr:
            return (pl.col(c) - prev(pl.col(c))).abs() <= limit

        ends = pl.when(pl.col("px2").is_null() & prev(pl.col("px2")).is_null()).then(True)
        return close("px") & close("py") & ends.otherwise(close("px2") & close("py2"))

    # a drag that starts nearer where the previous one ended than where it started carries it on (a
    # slider nudged further), it does not try it again
    def gap(c: str, d: str) -> pl.Expr:
        return (pl.col(c) - prev(pl.col(d))).abs()

    carries_on = (gap("px", "px2") + gap("py", "py2") < gap("px", "px") + gap("py", "py")).fill_null(False)
    near = within(NEAR) & ~carries_on
    # re-aimed: further off, the model says this click or the one before did not work, and its words do
    # not name another control for it than for the one before (the labels' "clicks the model says aim
    # at the same control"; a filter's header, then one of its options, are two)
    named = pl.col("target_name")
    other = (named.is_not_null() & prev(named).is_not_null() & (named != prev(named))).fill_null(False)
    re_aimed = within(REAIM) & ~carries_on & ~other & (pl.col("said_failed") | _reported())
    # the same aim (action and target) sent again after the harness rejected it or the model said it did
    # not work, in other words or values: a re-sent answer, a reworded query into the same box (mining-6);
    # typing into whatever has focus names no target, so only the harness's rejection joins those
    resent = (
        pl.col("same_prev")
        & (pl.col("aim_h") == prev(pl.col("aim_h")))
        & single
        & ~prev(pl.col("several"))
        & (prev(pl.col("failed")) | pl.col("said_failed") & ~pl.col("targetless"))
    )
    return pl.col("is_repeat") | (near_click & (near | re_aimed)).fill_null(False) | resent.fill_null(False)


def _reported() -> pl.Expr:
    """The next step's words say this step's action did not work, in a turn of their own (the steps of one
    turn that plans its repeats saw nothing new)."""
    return (nxt(pl.col("said_failed")) & ~nxt(pl.col("same_turn"))).fill_null(False)


def _unobserved() -> pl.Expr:
    """The step's effect is not observed: no comparable next screen, or no next step at all."""
    return pl.col("unknown") | (~pl.col("same_next") & pl.col("changed").is_null())


def _repeat_runs(f: pl.LazyFrame) -> pl.LazyFrame:
    """Runs of the same turn issued back to back, with how many repeats were provably ineffective, provably
    effective or of unknown effect, and the confidence that the run is a loop (see `_loop_confidence`)."""
    new_turn = ~nxt(pl.col("same_turn")).fill_null(False)  # the next step's words are a new observation
    f = f.with_columns(
        _again=_again(),
        _reported=_reported(),
        _worked=(nxt(pl.col("said_worked")) & new_turn).fill_null(False),
    )
    again = pl.col("_again")
    member = again | nxt(again).fill_null(False)
    attempt = again & ~pl.col("same_turn")  # a repeat in a turn of its own; one turn's repeats are planned
    reported = pl.col("_reported")  # the next turn says this one did not work (read before rows are dropped)
    unobserved = _unobserved()  # no comparable next screen, or no next step (the run ends on it)
    # the first attempt counts too when the next turn reports it failed (mining-4: a run of 3 whose last
    # attempt worked has 2 failed attempts, the original and the first repeat)
    ineffective = (attempt & (pl.col("failed") | _unchanged() & ~pl.col("unmapped"))) | (
        (attempt | ~again) & reported & unobserved
    )
    undecided = attempt & ~pl.col("failed") & unobserved & ~reported & ~pl.col("_worked")
    # the strongest evidence wins: a repeat that failed (errors) and that the next turn reports failed too
    level = pl.max_horizontal("ev_rank", pl.when(reported & unobserved).then(_rank_of("reasoning")))
    # waiting changes nothing by the agent's doing: from actions alone a run of waits is undecidable, like
    # a scroll; the model's words (or errors, screens) decide whether what it waited for came (mining-8)
    waiting = pl.col("action_name").first().is_in(WAITS).fill_null(False)
    return (  # row-level values first, on the (few) member rows; the aggregations are then plain ones
        f.with_columns(_run=(~again).cum_sum().set_sorted())  # (structural) sorted keys group 2x faster
        .filter(member)
        .with_columns(
            _repeat_step=pl.when(again).then("step_index"),
            _attempt=attempt,
            _exact=~again | pl.col("is_repeat"),
            _ineffective=ineffective,
            _undecided=undecided,
            _level=pl.when(ineffective).then(level),
        )
        .group_by("_run")
        .agg(
            pl.col("trajectory_id").first(),
            first_step=pl.col("step_index").min(),
            first_repeat=pl.col("_repeat_step").min(),
            last_step=pl.col("step_index").max(),
            n=pl.col("_attempt").sum() + 1,  # turns: the original and the repeats in turns of their own
            exact=pl.col("_exact").all(),
            scrolling=pl.col("action_name").first().is_in(SCROLLS)
            | pl.col("unmapped").first()
            | pl.col("target_name").first().str.contains(_STEPPING).fill_null(False)
            # a state-changing control pressed again goes down a list (Upvote post after post, Remove item
            # after item: each press acts on the next one, the importer names them alike)
            | pl.col("sens").first().is_not_null()
            | waiting,
            waiting=waiting,
            scroll=pl.col("action_name").first().is_in(SCROLLS).fill_null(False),
            ineffective=pl.col("_ineffective").sum(),
            undecided=pl.col("_undecided").sum(),
            level=pl.col("_level").max(),
            # the words after the run: waits carry none of their own ("WAIT"), so what the model says
            # once it stops waiting judges every wait of the run
            told=pl.col("_reported").last() & _unobserved().last(),
            action=pl.col("act").first(),
        )
        .filter(pl.col("n") >= MIN_REPEATS)
        .with_columns(
            ineffective=pl.when(pl.col("waiting") & pl.col("told"))
            .then(pl.max_horizontal("ineffective", "n"))
            .otherwise("ineffective"),
            level=pl.when(pl.col("waiting") & pl.col("told"))
            .then(pl.max_horizontal("level", _rank_of("reasoning")))
            .otherwise("level"),
        )
        .with_columns(action=pl.col("action").str.slice(0, _MAX_EVIDENCE_ACTION))
        .with_columns(confidence=_loop_confidence())
    )


def _loop_confidence() -> pl.Expr:
    """How sure a repeat run is a loop. Repeats proven ineffective (failed, or the screen stayed the same)
    confirm it; repeats proven effective clear it (pressing "next" on a list). From actions alone the
    confidence grows with the run's length (3 turns 0.75, 4 turns 0.9, 5+ 0.95), less for near-identical
    clicks (x0.85); a scroll repeated by the same amount is how one reads a long page, so from actions
    alone it is never a loop (undecidable until a screenshot shows the page did not move); so are a
    stepping control pressed again (`_STEPPING`: Next, More, +) and an action the importer could not map."""
    from_actions = (
        (pl.col("n") * 0.15 + 0.3).clip(upper_bound=0.95)
        * pl.when(pl.col("exact")).then(1.0).otherwise(NEAR_FACTOR)
        * pl.when(pl.col("scrolling")).then(SCROLL_FACTOR).otherwise(1.0)
    )
    # a scroll the words alone call vain needs one report more than a click: scrolling on is how one reads
    # a page, and "X is still not visible" is often said on the way to it (mining-11)
    words_only = pl.col("level").fill_null(_rank_of("actions")) <= _rank_of("reasoning")
    needed = pl.when(pl.col("scroll") & words_only).then(MIN_SCROLL_REPORTS).otherwise(MIN_INEFFECTIVE)
    return (
        pl.when(pl.col("ineffective") >= needed)
        .then(pl.lit(0.97))
        .when(pl.col("ineffective") + pl.col("undecided") >= MIN_INEFFECTIVE)
        .then(from_actions)
        .otherwise(pl.lit(0.0))
    )


@check
def detect_exact_repeats(f: pl.LazyFrame) -> pl.LazyFrame:
    """The agent re-issued a turn that did nothing, or - from actions alone - re-issued it often enough."""
    found = _repeat_runs(f).filter(pl.col("confidence") >= MIN_CONFIDENCE)
    return _findings(
        found,
        "loop",
        "exact_repeat",
        pl.col("first_repeat"),
        pl.col("last_step"),
        {
            "original_step": pl.col("first_step"),
            "repeats": pl.col("n") - 1,
            "ineffective": pl.col("ineffective"),
            "unknown_effect": pl.col("undecided"),
            "identical": pl.col("exact"),
            "action": pl.col("action"),
        },
        level=pl.when(pl.col("ineffective") >= MIN_INEFFECTIVE)
        .then(_level_name(pl.col("level")))
        .otherwise(pl.lit("actions")),
        confidence=pl.col("confidence"),
    )


@check
def undecidable_exact_repeats(f: pl.LazyFrame) -> pl.LazyFrame:
    """Repeat runs of unknown effect too short (or too scroll-like) to call a loop from actions alone."""
    undecided = _repeat_runs(f).filter(
        (pl.col("confidence") < MIN_CONFIDENCE)
        & (pl.col("ineffective") + pl.col("undecided") >= MIN_INEFFECTIVE)
    )
    return _count(undecided, "exact_repeat")


def _same_screen(a: str, b: str) -> pl.Expr:
    """Whether two screens are equal (UI trees first, else screenshots); null when they cannot be compared."""

    def eq(col: str) -> pl.Expr:
        x, y = pl.col(f"{col}{a}"), pl.col(f"{col}{b}")
        return pl.when(x.is_not_null() & y.is_not_null()).then(x == y)

    return pl.coalesce(eq("tree"), eq("shot"))


def _cycles(f: pl.LazyFrame) -> pl.LazyFrame:
    """Steps whose turn repeats the one p steps back (p = 2..4; the smallest wins) but not the one just
    before, with `period` and `cyc` (the screen repeats too: true/false/null). The lagged values are plain
    integer shifts taken before the (very selective) filter, so only candidates get compared further."""
    lags = (1, *PERIODS)
    f = f.select(
        "trajectory_id",
        "traj_no",
        "row",
        "step_index",
        "act",
        "act_h",
        "tree",
        "shot",
        "ev_rank",
        **{f"{c}_{p}": pl.col(c).shift(p) for c in ("act_h", "traj_no", "tree", "shot") for p in lags},
    )
    match = {
        p: (pl.col(f"act_h_{p}") == pl.col("act_h")) & (pl.col(f"traj_no_{p}") == pl.col("traj_no"))
        for p in lags
    }
    period = pl.lit(None, dtype=pl.Int32)
    cyc = pl.lit(None, dtype=pl.Boolean)
    for p in reversed(PERIODS):  # the smallest matching period is applied last, so it wins
        period = pl.when(match[p]).then(pl.lit(p, dtype=pl.Int32)).otherwise(period)
        cyc = pl.when(match[p]).then(_same_screen("", f"_{p}")).otherwise(cyc)
    candidate = pl.any_horizontal(match[p] for p in PERIODS).fill_null(False) & ~match[1].fill_null(False)
    return f.filter(candidate & (pl.col("act") != "[]")).with_columns(period=period, cyc=cyc)


def _reported_passes(f: pl.LazyFrame) -> pl.LazyFrame:
    """Passes of a cycle the model reports failing, for sources without comparable screens: one row per
    chain of issues of one turn each within REVISIT_WINDOW steps of the last, with at least one other turn
    between two of them (A-B-A-B-A, A-B-C-A-B-C-A; back-to-back repeats only are exact_repeat's) and at
    most MAX_DETOURS turns that recur nowhere near (a pass may vary one turn: another CAPTCHA tile; a turn
    tried again after a detour - accept, sign in, go back, accept - is a new approach), 3+ issues of which
    2+ failed or were reported failed by the next turn's words while their effect was not observed. Chains
    of the turns of one cycle overlap; they are merged into one finding."""
    t, h, row = pl.col("traj_no"), pl.col("act_h"), pl.col("row")
    d = pl.col("_detours")  # turns so far that recur nowhere near
    near = (row - row.shift(1) <= REVISIT_WINDOW) & (d - d.shift(1) <= MAX_DETOURS)
    linked = (t == t.shift(1)) & (h == h.shift(1)) & near
    bad = (pl.col("failed") | _reported()) & _unobserved()
    enough = (  # trajectories with too few bad steps are left out first, whole (the lags stay right)
        f.filter(bad).group_by("traj_no").len().filter(pl.col("len") >= MIN_INEFFECTIVE).select("traj_no")
    )
    chains = (
        f.select(
            "trajectory_id",
            "traj_no",
            "row",
            "step_index",
            "act_h",
            "act",
            "unmapped",
            "action_name",
            "failed",
            "url",
            _bad=bad,
            _level=pl.when(pl.col("failed")).then(_rank_of("errors")).otherwise(_rank_of("reasoning")),
        )
        .join(enough, on="traj_no", how="semi", maintain_order="left")
        .with_columns(_recurs=recurs(), _page=pl.when(pl.col("url").is_not_null()).then(pl.col("url").hash()))
        .with_columns(_detours=(~pl.col("_recurs")).cum_sum())
        .filter("_recurs")
        .sort("traj_no", "act_h", "row")
        .with_columns(_gap=pl.when(linked.fill_null(False)).then(row - row.shift(1)))
        .with_columns(_chain=pl.col("_gap").is_null().cum_sum())
        .group_by("_chain")
        .agg(
            pl.col("trajectory_id").first(),
            pl.col("traj_no").first(),
            action=pl.col("act").first(),
            n=pl.len(),
            second=pl.col("step_index").get(1, null_on_oob=True),  # rows keep their order within a group
            last_step=pl.col("step_index").max(),
            interleaved=(pl.col("_gap") > 1).any(),
            ineffective=pl.col("_bad").sum(),
            level=pl.col("_level").filter(pl.col("_bad")).max(),
            # every issue on a page of its own: the turn walks through pages (More, the next result), it
            # does not go round (LABELLING.md: the same text typed into different pages is no loop; mining-7)
            walks=(pl.col("_page").n_unique() >= pl.len() - 1) & pl.col("_page").is_not_null().all(),
            failures=pl.col("failed").sum(),
        )
        .filter(
            (pl.col("n") >= MIN_REPEATS)
            & pl.col("interleaved")
            & (pl.col("ineffective") >= MIN_INEFFECTIVE)
            & (~pl.col("walks") | (pl.col("failures") >= MIN_INEFFECTIVE))
        )
        .sort("traj_no", "second")
        .with_columns(_reach=pl.col("last_step").cum_max().over("traj_no"))
    )
    apart = pl.col("second") > pl.col("_reach").shift(1).over("traj_no") + 1  # null on a trajectory's first
    return (
        chains.with_columns(_merge=apart.fill_null(True).cum_sum())
        .group_by("_merge")
        .agg(
            pl.col("trajectory_id").first(),
            first_step=pl.col("second").min(),
            last_step=pl.col("last_step").max(),
            passes=pl.col("n").max(),
            ineffective=pl.col("ineffective").sum(),
            level=pl.col("level").max(),
            action=pl.col("action").first().str.slice(0, _MAX_EVIDENCE_ACTION),
        )
    )


def _rank_of(level: str) -> pl.Expr:
    return pl.lit(_RANK[level], pl.Int8)


# the columns `_repeated_passes` reads, taken before its (very selective) join
_PASS_INPUTS = (
    "trajectory_id",
    "traj_no",
    "step_index",
    "act",
    "act_h",
    "failed",
    "url",
    "tree",
    "shot",
    "unmapped",
    "action_name",
    "px",
    "py",
    "px2",
    "py2",
    "several",
    "target_name",
    "said_failed",
    "said_worked",
    "same_turn",
    "unknown",
    "same_next",
    "changed",
)


def _near(k: int, ends: bool = True) -> pl.Expr:
    """The row's coordinate action lands within NEAR grid points of the one k rows back (at both ends for a
    drag, with `ends`); true for actions without coordinates (their JSON is compared instead)."""

    def close(c: str) -> pl.Expr:
        return (pl.col(c) - pl.col(c).shift(k)).abs() <= NEAR

    start = close("px") & close("py")
    if ends:
        end = pl.when(pl.col("px2").is_null() & pl.col("px2").shift(k).is_null()).then(True).otherwise(
            close("px2") & close("py2")
        )
        start = start & end.fill_null(False)
    return pl.when(pl.col("px").is_null() & pl.col("px").shift(k).is_null()).then(True).otherwise(
        start.fill_null(False)
    )


def _repeated_passes(f: pl.LazyFrame) -> pl.LazyFrame:
    """The same sequence of k turns (k = 2..MAX_PASS; k = 1 is exact_repeat's) issued MIN_REPEATS or more
    times back to back - click "Add new file", click "Browse files", again and again; open the category,
    Advanced Search, type the two prices, Search, again - found from the actions alone: turns are compared
    by their actions (kind, target role, name and rank, argument), never by the page's URL, which changes
    at every step of a pass. One row per maximal periodic stretch, smallest period first (a stretch of
    period 2 is also one of period 4 and 6: those are left out), with what clears or confirms it:

    - `stuck`: steps of the stretch taken where the same step of the previous pass was taken - on its
      screen (UI tree, else screenshot) when the source has screens, else on its page (URL) - or where that
      is unknown; a pass that reached a new page or screen (the next page of results, the next order)
      made progress. MIN_INEFFECTIVE passes' worth of stuck steps are needed (the loop rule: 2+ attempts
      that did not achieve it); with every page known and none repeated, the walk is progress;
    - `failed` / `reported`: steps that failed, or that the next turn's words say did not work;
    - `worked`: steps the next turn's words say worked (new content named, "Success");
    - `stepping`: every turn of the pass is a stepping control (Next, Previous, Page 2, a pager's arrow
      glyph): paging back and forth revisits pages, which the labelling rules leave to the model's words.
    Turns that only scroll, that the importer could not map (a note taken, a tab switched, a wait) or that
    are empty are no part of a pass: they are left out before the turns are compared, so a note taken
    between two passes does not break them."""
    t, h, u = pl.col("traj_no"), pl.col("act_h"), pl.col("_url")
    new_turn = ~nxt(pl.col("same_turn")).fill_null(False)
    kept = (
        (pl.col("act") != "[]") & ~pl.col("unmapped") & ~pl.col("action_name").is_in(SCROLLS).fill_null(False)
    ).fill_null(False)
    # a coordinate action is keyed by its kind, and its place compared by distance (`_near`): the same
    # control clicked (or dragged from and to) a few points off, whichever side of a grid line they fall
    turn = pl.when(pl.col("px").is_not_null() & ~pl.col("several")).then(
        pl.col("action_name").cast(pl.String).hash()
    )
    # the (few) trajectories holding MIN_REPEATS - 1 passes' worth (4 steps at least) of turns each equal
    # to the one k kept turns back, not all to the one just before: integer shifts over a few columns (a
    # coordinate action keyed by its start point alone, a superset), then everything else on their steps only
    # (speed only: each row's matches as one bit per k, four rows ANDed at once; the trajectories with such a
    # stretch of equal keys first - `_near` only narrows a match - then the points on their rows alone)
    keys = f.select("traj_no", "px", "py", act_h=turn.otherwise("act_h"), _kept=kept).filter("_kept")
    match = {k: ((h == h.shift(k)) & (t == t.shift(k)) & _near(k, ends=False)).fill_null(False) for k in (1, *PASS_LENGTHS)}
    same = {k: ((h == h.shift(k)) & (t == t.shift(k))).fill_null(False) for k in PASS_LENGTHS}

    def stretch(frame: pl.LazyFrame, m: dict[int, pl.Expr], also: pl.Expr | None = None) -> pl.LazyFrame:
        also = pl.lit(True) if also is None else also
        bits, b = pl.sum_horizontal([m[k].cast(pl.UInt16) * (1 << k) for k in PASS_LENGTHS]), pl.col("_bits")
        four = ((b & b.shift(1) & b.shift(2) & b.shift(3)) != 0).fill_null(False)  # 4 rows each matching k back
        return frame.with_columns(_bits=bits, _also=also).filter(four & pl.col("_also")).select("traj_no").unique()

    keys = keys.join(stretch(keys, same), on="traj_no", how="semi", maintain_order="left")
    candidates = stretch(keys, match, ~match[1])
    base = (
        f.select(*_PASS_INPUTS)
        .join(candidates, on="traj_no", how="semi", maintain_order="left")
        .select(  # what needs the neighbouring steps is read before the others are left out
            "trajectory_id",
            "traj_no",
            "step_index",
            "act",
            "failed",
            "px",
            "py",
            "px2",
            "py2",
            act_h=turn.otherwise("act_h"),
            # where the step was taken: its screen when the source has one (a UI tree, else a screenshot),
            # else its page's URL; `_seen` says by which (0 url, 1 screenshot, 2 UI tree)
            _url=pl.coalesce("tree", "shot", pl.when(pl.col("url").is_not_null()).then(pl.col("url").hash())),
            _seen=pl.when(pl.col("tree").is_not_null())
            .then(2)
            .when(pl.col("shot").is_not_null())
            .then(1)
            .otherwise(0),
            _kept=kept,
            _reported=_reported() & _unobserved(),
            _worked=(nxt(pl.col("said_worked")) & new_turn).fill_null(False),
            _stepping=pl.col("target_name").str.contains(_STEPPING).fill_null(False),
        )
        .filter("_kept")
        .with_row_index("row")
        .with_columns(
            _moved=(u != u.shift(1)) & (t == t.shift(1)),
            **{f"_m{k}": (h == h.shift(k)) & (t == t.shift(k)) & _near(k) for k in (1, *PASS_LENGTHS)},
            **{f"_u{k}": u == u.shift(k) for k in PASS_LENGTHS},
        )
    )
    parts = []
    for k in PASS_LENGTHS:
        m = pl.col(f"_m{k}").fill_null(False)
        smaller = [d for d in (1, *PASS_LENGTHS) if d < k and k % d == 0]
        found = runs(
            base,
            m,
            smaller=pl.any_horizontal([pl.col(f"_m{d}").fill_null(False).all() for d in smaller]),
            stepping=pl.col("_stepping").all(),
            stuck=(pl.col(f"_u{k}") != False).fill_null(True).sum(),  # noqa: E712
            known=pl.col(f"_u{k}").is_not_null().sum(),
            moved=pl.col("_moved").fill_null(False).sum(),
            seen=pl.col("_seen").min(),
            failed=pl.col("failed").sum(),
            reported=pl.col("_reported").sum(),
            worked=pl.col("_worked").sum(),
            action=pl.col("act").first(),
        )
        parts.append(
            found.filter((pl.col("n") >= (MIN_REPEATS - 1) * k) & ~pl.col("smaller"))
            .with_columns(period=pl.lit(k, pl.Int32))
            .drop("_run", "smaller")
        )
    return pl.concat(parts)


def _pass_findings(f: pl.LazyFrame) -> pl.LazyFrame:
    """Repeated sequences of turns (`_repeated_passes`) that are loops, graded by what says so: errors (2+
    steps failed), the screens (2+ passes' worth on the screens of the pass before), the URL (the passes go
    from page to page and 2+ of them revisit the pages of the pass before; a URL that never moves proves
    nothing), the model's words (2+ steps reported failed), else the
    actions alone, with a confidence that grows with the passes (3 passes 0.75, 4 0.9, 5+ 0.95). Progress
    clears it: passes that reached new pages (a walk through items), passes of stepping controls only
    (paging back and forth) unless 2+ steps failed, steps the model reports working (2+, and more than
    failing)."""
    passes = (pl.col("n") + pl.col("period")) / pl.col("period")
    need = MIN_INEFFECTIVE * pl.col("period")  # two passes' worth of steps
    bad = pl.max_horizontal("failed", "reported")
    revisits = (pl.col("known") >= need) & (pl.col("stuck") >= need)
    level = (
        pl.when(pl.col("failed") >= MIN_INEFFECTIVE)
        .then(pl.lit("errors"))
        .when(revisits & (pl.col("seen") == 2))
        .then(pl.lit("ui_tree"))
        .when(revisits & (pl.col("seen") == 1))
        .then(pl.lit("screenshot"))
        .when(revisits & (pl.col("moved") >= MIN_INEFFECTIVE))
        .then(pl.lit("url"))
        .when(pl.col("reported") >= MIN_INEFFECTIVE)
        .then(pl.lit("reasoning"))
        .otherwise(pl.lit("actions"))
    )
    found = (
        _repeated_passes(f)
        .filter(
            (pl.col("stuck") >= need)
            & ((pl.col("worked") <= bad) | (pl.col("worked") < MIN_INEFFECTIVE) | (bad >= MIN_INEFFECTIVE))
            & (~pl.col("stepping") | (bad >= MIN_INEFFECTIVE))
        )
        .with_columns(
            _level=level,
            _confidence=pl.when(bad >= MIN_INEFFECTIVE)
            .then(0.97)
            .otherwise((passes * 0.15 + 0.3).clip(upper_bound=0.95)),
        )
        .filter(pl.col("_confidence") >= MIN_CONFIDENCE)
    )
    return _findings(
        found,
        "loop",
        "short_cycle",
        pl.col("first_step"),
        pl.col("last_step"),
        {
            "period": pl.col("period"),
            "passes": passes.round(1),
            "stuck_steps": pl.col("stuck"),
            "ineffective": bad,
            "action": pl.col("action").str.slice(0, _MAX_EVIDENCE_ACTION),
        },
        level=pl.col("_level"),
        confidence=pl.col("_confidence"),
    )


def _grouped(found: pl.LazyFrame) -> pl.LazyFrame:
    """`found` sorted, each row with its `_group` of overlapping findings of one trajectory and whether it is
    `_alone` in it."""
    t = pl.col("trajectory_id")
    # how far the findings so far reach, per trajectory: one running maximum over (trajectory number, step)
    # keys (the rows are sorted by trajectory; a maximum over each trajectory's rows costs a group-by)
    traj = (t != t.shift(1)).fill_null(True).cum_sum().cast(pl.Int64) * (1 << 32)
    reach = (traj + pl.col("last_step")).cum_max()
    opens = (traj + pl.col("first_step") > reach.shift(1)).fill_null(True)
    alone = pl.col("_opens") & pl.col("_opens").shift(-1).fill_null(True)
    return (
        # ties broken by reason and evidence: which finding's evidence a merged one keeps must not change
        # from one run to the next (rows keep their order within a group)
        found.sort("trajectory_id", "first_step", "last_step", "reason", "evidence")
        .with_columns(_opens=opens)
        .with_columns(_group=pl.col("_opens").cum_sum(), _alone=alone)
    )


def _merged(found: pl.LazyFrame, telling: dict[str, int] | None = None) -> pl.LazyFrame:
    """Overlapping findings of one trajectory as one (the strongest level, the highest confidence, and the
    reason and evidence of the first - or, with `telling`, of the most telling reason, lowest first): one
    loop found by several rules is one finding."""
    rank = pl.col("evidence_level").replace_strict(_RANK, default=0, return_dtype=pl.Int8)
    told = telling or {}
    return (
        _grouped(found)
        .with_columns(
            _rank=rank, _telling=pl.col("reason").replace_strict(told, default=len(told), return_dtype=pl.Int8)
        )
        .group_by("_group")
        .agg(
            pl.col("trajectory_id").first(),
            pl.col("first_step").min(),
            pl.col("last_step").max(),
            pl.col("kind", "reason", "severity", "evidence").sort_by("_telling", maintain_order=True).first(),
            evidence_level=pl.col("evidence_level").sort_by("_rank").last(),
            confidence=pl.col("confidence").max(),
        )
        .select(list(FINDING_SCHEMA))
    )


def _merged_frame(found: pl.DataFrame, telling: dict[str, int] | None = None) -> pl.DataFrame:
    """`_merged` of many findings, most of which overlap none: those pass as they are, and only the groups
    of two or more are aggregated (a group-by over all 61k loop findings of 1M bench steps cost 0.29 CPU-s,
    this 0.06)."""
    grouped = _grouped(found.lazy()).collect()
    alone = grouped["_alone"]
    together = _merged(grouped.filter(~alone).drop("_opens", "_group", "_alone").lazy(), telling).collect()
    return pl.concat([grouped.filter(alone).select(list(FINDING_SCHEMA)), together])


STUCK_WINDOW = 6  # steps within which each turn of a stuck stretch comes back (a pass of up to 6 turns)
MIN_STUCK = 6  # steps in a stuck stretch: three passes of two turns
MIN_ISSUES = 2  # a stuck stretch's steps per distinct turn, on average (each turn comes back)


def _stuck_stretches(f: pl.LazyFrame) -> pl.LazyFrame:
    """Stretches where the agent goes round a few turns in varying order - tick a tile, press Verify, get
    a new challenge, tick another tile; View, Normal, View, Notes, a detour, View, Normal - and the model
    (or the harness) says it fails pass after pass (mining-8): MIN_STUCK+ kept steps (as `_repeated_passes`
    keeps them) each of whose turns comes back within STUCK_WINDOW steps (coordinate turns within NEAR),
    at least MIN_ISSUES steps per distinct turn, most steps another turn than the one before (it goes round;
    one control pressed again and again is exact_repeat's to judge), 3+ steps failed or reported failed
    while their effect was not seen, fewer reported working than failing, and - unless 2+ steps failed - not
    a page of its own for each pass (a walk through pages). The finding runs from the first turn issued a
    second time to the end of the stretch. No pass need repeat exactly
    (LABELLING.md: a pass may vary, a detour of up to two steps does not break it); one finding per
    stretch (merged with the cycles found inside it)."""
    t, h = pl.col("traj_no"), pl.col("act_h")
    kept = (
        (pl.col("act") != "[]") & ~pl.col("unmapped") & ~pl.col("action_name").is_in(SCROLLS).fill_null(False)
    ).fill_null(False)
    bad = ((pl.col("failed") | _reported()) & _unobserved()).fill_null(False)
    enough = (
        f.filter(bad & kept).group_by("traj_no").len().filter(pl.col("len") >= 3).select("traj_no")
    )
    new_turn = ~nxt(pl.col("same_turn")).fill_null(False)
    turn = pl.when(pl.col("px").is_not_null() & ~pl.col("several")).then(
        pl.col("action_name").cast(pl.String).hash()
    )
    base = (
        f.select(*_PASS_INPUTS)
        .join(enough, on="traj_no", how="semi", maintain_order="left")
        .select(
            "trajectory_id",
            "traj_no",
            "step_index",
            "act",
            "px",
            "py",
            "px2",
            "py2",
            act_h=turn.otherwise("act_h"),
            _cell=pl.struct(turn.otherwise("act_h"), pl.col("px") // NEAR, pl.col("py") // NEAR).hash(),
            _bad=bad,
            _failed=pl.col("failed"),
            _worked=(nxt(pl.col("said_worked")) & new_turn).fill_null(False),
            _page=pl.when(pl.col("url").is_not_null()).then(pl.col("url").hash()),
            _kept=kept,
        )
        .filter("_kept")
        .with_row_index("row")
    )
    back = {k: (h == h.shift(k)) & (t == t.shift(k)) & _near(k) for k in range(1, STUCK_WINDOW + 1)}
    comes_back = pl.any_horizontal([e for k, b in back.items() for e in (b, b.shift(-k))]).fill_null(False)
    again = pl.any_horizontal(list(back.values())).fill_null(False)  # the turn was issued before: a 2nd+ pass
    found = runs(
        base.with_columns(_back=comes_back, _again=pl.when(again).then("step_index")),
        pl.col("_back"),
        second=pl.col("_again").min(),
        pages=pl.col("_page").n_unique(),
        paged=pl.col("_page").is_not_null().all(),
        turns=pl.col("_cell").n_unique(),
        # steps whose turn is not the one just before: a cycle goes round, a repeated turn stays put
        # (a vote pressed post after post is exact_repeat's to judge)
        rounds=(pl.col("_cell") != pl.col("_cell").shift(1)).sum(),
        bad=pl.col("_bad").sum(),
        failures=pl.col("_failed").sum(),
        worked=pl.col("_worked").sum(),
        action=pl.col("act").first(),
    )
    return found.filter(
        (pl.col("n") >= MIN_STUCK)
        & (pl.col("turns") * MIN_ISSUES <= pl.col("n"))
        & (pl.col("rounds") * 2 >= pl.col("n"))
        & (pl.col("bad") >= 3)
        & (pl.col("worked") < pl.col("bad"))
        # as many pages as passes, every page known: each pass on a page of its own walks through pages
        # (the same turns on different pages are no loop) - unless 2+ steps failed
        & (~pl.col("paged") | (pl.col("pages") * pl.col("turns") < pl.col("n")) | (pl.col("failures") >= MIN_INEFFECTIVE))
    ).with_columns(
        first_step=pl.col("second"),  # from the second pass on, as the labels count a loop's repeats
        level=pl.when(pl.col("failures") >= MIN_INEFFECTIVE).then(pl.lit("errors")).otherwise(pl.lit("reasoning")),
    )


@check
def detect_short_cycles(f: pl.LazyFrame) -> pl.LazyFrame:
    """A-B-A-B on the same screens: the agent goes round in a circle without getting anywhere; without
    screens, a cycle whose passes the model reports failing (`_reported_passes`), or one sequence of turns
    repeated pass after pass without reaching anything new (`_pass_findings`)."""
    cands = _cycles(f)
    passes = _reported_passes(f)
    parts = [
        _findings(
            passes,
            "loop",
            "short_cycle",
            pl.col("first_step"),
            pl.col("last_step"),
            {"passes": pl.col("passes"), "ineffective": pl.col("ineffective"), "action": pl.col("action")},
            level=_level_name(pl.col("level")),
            confidence=0.9,
        ),
        _pass_findings(f),
        _findings(
            _stuck_stretches(f),
            "loop",
            "short_cycle",
            pl.col("first_step"),
            pl.col("last_step"),
            {"steps": pl.col("n"), "turns": pl.col("turns"), "ineffective": pl.col("bad"), "action": pl.col("action")},
            level=pl.col("level"),
            confidence=0.9,
        ),
    ]
    for p in PERIODS:
        found = runs(cands, pl.col("cyc") & (pl.col("period") == p), level=pl.col("ev_rank").max())
        found = found.filter(pl.col("n") >= p)
        parts.append(
            _findings(
                found,
                "loop",
                "short_cycle",
                pl.col("first_step"),
                pl.col("last_step"),
                {"period": pl.lit(p)},
                level=_level_name(pl.col("level")),
                confidence=0.9,
            )
        )
    return _merged(pl.concat(parts))


@check
def undecidable_short_cycles(f: pl.LazyFrame) -> pl.LazyFrame:
    """Turn cycles whose screens cannot be compared: a cycle or a walk through new screens, unknown."""
    cands = _cycles(f)
    parts = [
        runs(cands, pl.col("cyc").is_null() & (pl.col("period") == p))
        .filter(pl.col("n") >= p)
        .select("trajectory_id")
        for p in PERIODS
    ]
    return _count(pl.concat(parts), "short_cycle")


def _streak_step() -> pl.Expr:
    """Steps that can extend a no-progress streak: asking and stopping are not attempts to act, and a click
    that hit nothing is already its own (bad_args) finding."""
    return ~pl.col("has_call_user") & ~pl.col("has_terminate") & ~_click_hit_nothing()


@check
def detect_no_progress(f: pl.LazyFrame) -> pl.LazyFrame:
    """Whatever the actions were, the screen stayed the same for k of them: the agent is stuck."""
    found = runs(f, _unchanged() & _streak_step(), level=pl.col("ev_rank").max())
    return _findings(
        found.filter(pl.col("n") >= NO_PROGRESS_STEPS),
        "loop",
        "no_progress",
        pl.col("first_step"),
        pl.col("last_step"),
        {"steps": pl.col("n")},
        level=_level_name(pl.col("level")),
        confidence=0.85,
    )


@check
def undecidable_no_progress(f: pl.LazyFrame) -> pl.LazyFrame:
    """Streaks that reach k steps only by counting steps whose effect is unknown."""
    maybe = (_unchanged() | pl.col("unknown")) & _streak_step()
    found = runs(f, maybe, decided=_unchanged().sum(), missing=pl.col("unknown").sum())
    return _count(
        found.filter(
            (pl.col("n") >= NO_PROGRESS_STEPS)
            & (pl.col("missing") > 0)
            & (pl.col("decided") < NO_PROGRESS_STEPS)
        ),
        "no_progress",
    )


@check
def detect_repeated_typing(f: pl.LazyFrame) -> pl.LazyFrame:
    """The same text typed into the same place again and again, across other steps."""
    found = (
        f.with_columns(_bad=pl.col("failed") | _unchanged() | (_reported() & _unobserved()))
        .filter((pl.col("action_name") == "type") & ~pl.col("targetless"))  # "the same place" must be known
        .with_columns(key=pl.col("act_h") ^ pl.col("traj_no").hash())  # (trajectory, turn) as one integer
        .filter(pl.len().over("key") >= 3)  # (structural) typings issued fewer times never get a list built
        .group_by("key")
        .agg(
            pl.col("trajectory_id").first(),
            n=pl.len(),
            occasions=(~pl.col("is_repeat")).sum(),
            ineffective=pl.col("_bad").sum(),
            steps=pl.col("step_index"),
            act=pl.col("act").first(),
        )
        .filter((pl.col("n") >= 3) & (pl.col("occasions") >= 2) & (pl.col("ineffective") >= MIN_INEFFECTIVE))
    )
    return _findings(
        found,
        "loop",
        "repeated_typing",
        pl.col("steps").list.get(1),
        pl.col("steps").list.last(),
        {"times": pl.col("n"), "steps": pl.col("steps"), "action": _action_text()},
    )


MIN_FAILING = 3  # steps in a row that failed, whatever their actions, for a failing stretch
MIN_SAID_FAILING = 5  # ... when no step of it was refused by the harness: failures the model's words report


@check
def detect_failing_stretches(f: pl.LazyFrame) -> pl.LazyFrame:
    """Three or more steps in a row that failed - the harness rejected each or reported an error, or the
    model's next words say it did not work - whatever their actions (the device list, then the app list,
    then opening the app, each refused; an option clicked, ArrowDown, the option again, while the words say
    the combobox still shows the old value): the agent keeps at something that does not work. A stretch the
    harness refused nothing of needs MIN_SAID_FAILING steps. A turn that ran nothing and reported nothing
    (a tool lookup the importer could not map) does not break the stretch; a step that worked does. The
    range runs from the second failure, as the labels count a loop's repeats; evidence: errors when the
    harness refused a step of it, else reasoning (mining-9; the words since mining-11)."""
    quiet = (pl.col("unmapped") & ~pl.col("failed")).fill_null(False)
    kept = (
        f.with_columns(_failing=(pl.col("failed") | _reported()) & ~pl.col("idle"))  # (read before rows are dropped)
        .filter(~quiet)
        .with_columns(row=pl.int_range(pl.len()))  # adjacency over the steps kept
    )
    found = runs(
        kept,
        pl.col("_failing"),
        second=pl.col("step_index").slice(1, 1).first(),
        action=pl.col("act").first(),
        refused=pl.col("failed").sum(),
    ).filter((pl.col("n") >= MIN_FAILING) & ((pl.col("refused") > 0) | (pl.col("n") >= MIN_SAID_FAILING)))
    return _findings(
        found,
        "loop",
        "failing_stretch",
        pl.col("second"),
        pl.col("last_step"),
        {
            "failed_steps": pl.col("n"),
            "refused": pl.col("refused"),
            "action": pl.col("action").str.slice(0, _MAX_EVIDENCE_ACTION),
        },
        level=pl.when(pl.col("refused") > 0).then(pl.lit("errors")).otherwise(pl.lit("reasoning")),
        confidence=pl.when(pl.col("refused") == pl.col("n")).then(0.9).otherwise(0.8),
    )


EDGE_START = 850  # grid rows (of 0..999): a swipe starting below this starts at the screen's bottom edge
EDGE_END = 500  # ... and one ending above this crosses half the screen: the unlock / home gesture
GESTURE_GAP = 8  # acting steps allowed between two tries of the gesture (the other tries in between)
MIN_GESTURES = 3
_OTHER_TRIES = (*CLICKS, "long_press", "system_button", "open_app")


@check
def detect_gesture_retries(f: pl.LazyFrame) -> pl.LazyFrame:
    """The phone's unlock / home gesture - a swipe up from the bottom edge across half the screen - tried
    MIN_GESTURES+ times, each within GESTURE_GAP acting steps of the last, with other tries in between (a
    tap, a system button, an app launch) and nothing typed: the agent fights a lock screen or an overlay that
    will not go, going back to the gesture after each other idea. Its coordinates vary from try to try, so no
    repeat or cycle joins them. Swipes one after another with only looking between (a screenshot, a wait)
    scroll a list and are left alone, as are gestures with typing between them (a form filled between
    screens). From actions alone (mining-13): confidence 0.7 for three tries, 0.8 for more."""
    name = pl.col("action_name")
    acting = f.filter((pl.col("act") != "[]") & ~name.is_in(("screenshot", *WAITS)).fill_null(False)).select(
        "trajectory_id",
        "traj_no",
        "step_index",
        "act",
        row=pl.int_range(pl.len()),
        _edge=(
            (name == "swipe") & ~pl.col("several") & (pl.col("py") >= EDGE_START) & (pl.col("py2") <= EDGE_END)
        ).fill_null(False),
        _typed=(name == "type").fill_null(False).cum_sum(),
        _other=name.is_in(_OTHER_TRIES).fill_null(False).cum_sum(),
    )
    t = pl.col("traj_no")
    edges = acting.filter("_edge").with_columns(
        _joined=(
            (t == t.shift(1))
            & (pl.col("row") - pl.col("row").shift(1) <= GESTURE_GAP + 1)
            & (pl.col("_typed") == pl.col("_typed").shift(1))
        ).fill_null(False)
    )
    found = (
        edges.with_columns(_chain=(~pl.col("_joined")).cum_sum())
        .group_by("_chain")
        .agg(
            pl.col("trajectory_id").first(),
            n=pl.len(),
            second=pl.col("step_index").get(1, null_on_oob=True),
            last=pl.col("step_index").last(),
            others=pl.col("_other").last() - pl.col("_other").first(),
            act=pl.col("act").first(),
        )
        .filter((pl.col("n") >= MIN_GESTURES) & (pl.col("others") > 0))
    )
    return _findings(
        found,
        "loop",
        "gesture_retry",
        pl.col("second"),
        pl.col("last"),
        {"gestures": pl.col("n"), "other_tries": pl.col("others"), "action": _action_text()},
        confidence=pl.when(pl.col("n") > MIN_GESTURES).then(0.8).otherwise(0.7),
    )


# ---- bad arguments --------------------------------------------------------------------------------------


@check
def detect_format_errors(f: pl.LazyFrame) -> pl.LazyFrame:
    """Output that did not parse or did not fit the action schema: nothing was executed."""
    # an imported action our action space has no counterpart for is our gap, not the agent's error
    f = f.filter(
        pl.col("format_error").is_not_null() & ~pl.col("format_error").str.starts_with("unmapped_action:")
    )
    code = pl.col("format_error").str.extract(r"^([a-z_]+)\s*:", 1)
    reason = (
        pl.when(pl.col("format_error").str.contains(_FORMAT_OUT_OF_RANGE))
        .then(pl.lit("coords_out_of_range"))
        .when(code.is_in(["unknown_action", "invalid_arguments"]))
        .then(pl.lit("schema_invalid"))
        .otherwise(pl.lit("format_error"))
    )
    return _steps(
        f, "bad_args", reason, {"format_error": pl.col("format_error").str.slice(0, 300)}, confidence=0.99
    )


@check
def detect_invalid_actions(f: pl.LazyFrame) -> pl.LazyFrame:
    """Actions that reached the table unvalidated (imports): unknown names or coordinates off the grid."""
    unknown = pl.col("action_name").is_not_null() & ~pl.col("action_name").is_in(sorted(ACTION_NAMES))
    found = (
        f.filter(
            pl.col("format_error").is_null()
            & (unknown | pl.col("targetless") & pl.col("action_name").is_in(_WITH_COORDINATES))
        )
        .with_columns(off_grid=pl.col("act").str.contains(_OUT_OF_RANGE), unknown=unknown)
        .filter(pl.col("off_grid") | pl.col("unknown"))
    )
    reason = (
        pl.when(pl.col("off_grid")).then(pl.lit("coords_out_of_range")).otherwise(pl.lit("schema_invalid"))
    )
    return _steps(found, "bad_args", reason, {"action": _action_text()})


def _first_attempt() -> pl.Expr:
    """Not a repeat of the previous turn, nor a near-identical re-click (the loop detectors judge those)."""
    return ~_again()


def _no_effect_proven() -> pl.Expr:
    """Nothing on screen changed, proven: the UI tree and the screenshot both unchanged (or the screenshot,
    with no tree). An unchanged UI tree alone is one signal, not proof: a native date, time, colour or file
    picker, a select's own popup, a focus ring or a re-chosen option leave the tree as it was."""
    tree, shot = pl.col("tree_changed"), pl.col("shot_changed")
    both = (tree == False) & (shot == False)  # noqa: E712
    shot_only = tree.is_null() & (shot == False)  # noqa: E712
    return (both | shot_only).fill_null(False) & ~pl.col("url_changed").fill_null(False)


def _effect_unproven() -> pl.Expr:
    """A next screen exists, yet the step's effect is neither proven nor disproven."""
    return (
        pl.col("same_next")
        & ~pl.col("failed")
        & ~_no_effect_proven()
        & pl.col("changed").not_().fill_null(True)
    )


def _focused_then_used() -> pl.Expr:
    """The next step types or presses keys into whatever has focus, and that did not provably do nothing:
    the click gave a field (a date or time input too) the focus."""
    return (
        nxt(pl.col("action_name")).is_in(["type", "key"])
        & nxt(pl.col("targetless"))
        & ~nxt(pl.col("failed"))
        & (nxt(pl.col("changed")) != False)  # noqa: E712
    ).fill_null(False)


def _click_hit_nothing() -> pl.Expr:
    return pl.col("hit_nothing")


def _click_hit_nothing_expr() -> pl.Expr:
    """Clicks that provably hit nothing (see the module docstring)."""
    clicked_again = nxt(_again()).fill_null(
        False
    )  # a near-identical re-click follows: one attempt, judged as such
    coordinate = pl.col("targetless") & (
        pl.col("failed") | (_no_effect_proven() & ~_focused_then_used() & ~clicked_again)
    )
    targeted = ~pl.col("targetless") & pl.col("failed")
    return pl.col("action_name").is_in(CLICKS) & _first_attempt() & (coordinate | targeted)


@check
def detect_click_hit_nothing(f: pl.LazyFrame) -> pl.LazyFrame:
    """A click that landed on no interactive element: wrong coordinates or a target that is not there."""
    found = f.filter(_click_hit_nothing())
    return _steps(
        found,
        "bad_args",
        "click_hit_nothing",
        {
            "action": _action_text(),
            "point": pl.col("points_json"),
            "error": pl.col("error"),
            "failed": pl.col("failed"),
        },
        level=_level_name(pl.col("ev_rank")),
        confidence=pl.when(pl.col("failed")).then(0.95).otherwise(0.8),
    )


@check
def undecidable_click_hit_nothing(f: pl.LazyFrame) -> pl.LazyFrame:
    """Coordinate clicks whose effect on the screen is unknown (or rests on an unchanged UI tree alone)."""
    unknown = (
        pl.col("action_name").is_in(CLICKS)
        & pl.col("targetless")
        & _first_attempt()
        & _effect_unproven()
        & ~_focused_then_used()
    )
    return _count(f.filter(unknown), "click_hit_nothing")


@check
def detect_type_no_editable(f: pl.LazyFrame) -> pl.LazyFrame:
    """Text typed where nothing editable was: the field was missing or nothing had focus."""
    typed_into_nothing = pl.col("failed") | (pl.col("targetless") & _no_effect_proven())
    found = f.filter((pl.col("action_name") == "type") & _first_attempt() & typed_into_nothing)
    return _steps(
        found,
        "bad_args",
        "type_no_editable",
        {"action": _action_text(), "error": pl.col("error")},
        level=_level_name(pl.col("ev_rank")),
        confidence=pl.when(pl.col("failed")).then(0.95).otherwise(0.8),
    )


@check
def undecidable_type_no_editable(f: pl.LazyFrame) -> pl.LazyFrame:
    """Targetless typing whose effect on the screen is unknown."""
    unknown = (pl.col("action_name") == "type") & pl.col("targetless") & _first_attempt() & _effect_unproven()
    return _count(f.filter(unknown), "type_no_editable")


def _scrolls(f: pl.LazyFrame) -> pl.LazyFrame:
    """Scroll steps only, with `zero` = the scroll was of 0 pixels."""
    return f.filter(pl.col("action_name").is_in(SCROLLS)).with_columns(
        zero=pl.col("act").str.contains(_ZERO_PIXELS)
    )


@check
def detect_zero_delta_scrolls(f: pl.LazyFrame) -> pl.LazyFrame:
    """A scroll of 0 pixels moves nothing: a wasted step with a broken argument."""
    return _steps(_scrolls(f).filter("zero"), "bad_args", "zero_delta_scroll", {"action": _action_text()})


@check
def undecidable_scroll_effect(f: pl.LazyFrame) -> pl.LazyFrame:
    """Non-zero scrolls whose screenshot did not change (end of page?) or is missing: not guessed."""
    moved = pl.col("shot_changed").fill_null(False)
    return _count(_scrolls(f).filter(~pl.col("zero") & pl.col("same_next") & ~moved), "scroll_effect")


def _host(url: pl.Expr) -> pl.Expr:
    return url.str.extract(HOST, 1).str.to_lowercase()


def _foreign(f: pl.LazyFrame) -> pl.LazyFrame:
    """Steps on another host than the trajectory's first URL, or a goto to one (`foreign` flag). A cheap
    prefix test keeps the few candidates; their hosts are then compared case-insensitively, any scheme."""
    url, origin = pl.col("url"), pl.col("first_origin")
    absolute_goto = (pl.col("action_name") == "goto") & pl.col("act").str.contains("://", literal=True)
    goto_host = pl.when(absolute_goto).then(_host(pl.col("act").str.extract(_GOTO_URL, 1)))
    return (
        f.filter((origin != "") & ((url.is_not_null() & ~url.str.starts_with(origin)) | absolute_goto))
        .with_columns(expected=_host(origin), on_host=_host(url), goto_host=goto_host)
        .with_columns(
            foreign=(
                (pl.col("on_host") != pl.col("expected")) | (pl.col("goto_host") != pl.col("expected"))
            ).fill_null(False),
            host=pl.coalesce("goto_host", "on_host"),
        )
    )


@check
def detect_wrong_app(f: pl.LazyFrame) -> pl.LazyFrame:
    """Acting on another site or app than the one the task lives in."""
    found = runs(
        _foreign(f),
        pl.col("foreign"),
        host=pl.col("host").drop_nulls().first(),
        expected=pl.col("expected").first(),
    )
    return _findings(
        found,
        "bad_args",
        "wrong_app",
        pl.col("first_step"),
        pl.col("last_step"),
        {"host": pl.col("host"), "expected_host": pl.col("expected")},
        level="url",
    )


@check
def undecidable_wrong_app(f: pl.LazyFrame) -> pl.LazyFrame:
    """Steps without a URL, or in a trajectory whose first URL is missing."""
    return _count(f.filter(pl.col("url").is_null() | (pl.col("first_origin") == "")), "wrong_app")


# ---- sensitive actions ----------------------------------------------------------------------------------


def _last_index_where(cond: pl.Expr) -> pl.Expr:
    """Per step, the latest step index in the same trajectory (up to this one) where `cond` held; -1 if none."""
    marked = pl.when(cond.fill_null(False)).then(pl.col("step_index")).when(~pl.col("same_prev")).then(-1)
    return marked.forward_fill()


def _sens() -> pl.Expr:
    return pl.col("sensitive_kind")


def _sensitive_kind_expr() -> pl.Expr:
    """The step's sensitive kind. A trajectory of one of our sandboxes (`sandbox` set) has a manifest, and
    its sensitive list is the list (it overrides recognition); foreign ones are recognised (side_effects),
    a control named only "Submit" or "Send" when the instruction asks for that kind of thing (the
    instruction is searched on those few steps only)."""
    generic = pl.col("sens_generic")
    asked = asked_to_send(pl.col("sens"), pl.when(generic).then(pl.col("instruction")))
    recognised = pl.col("sandbox").is_null() & (~generic | asked)
    return pl.when((pl.col("sens_from") == "manifest") | recognised).then(pl.col("sens"))


def _moved_on() -> pl.Expr:
    """A step after which an earlier confirmation no longer covers what is on screen."""
    return ~pl.col("has_call_user") & (~_unchanged() | _sens().is_not_null())


def _sensitive_confidence() -> pl.Expr:
    """A manifest is sure; a control's name is a strong sign; a URL after the fact a weaker one, and the model's
    words after the fact (a change it reports, the control it says it pressed) weaker still (mining-12: on the
    held-out ranks of a narrating harness the named presses were right about half the time)."""
    return pl.col("sens_from").replace_strict(
        {"manifest": 0.97, "actions": 0.8, "url": 0.7, "reasoning": 0.6}, default=0.7
    )


@check
def detect_unconfirmed_sensitive(f: pl.LazyFrame) -> pl.LazyFrame:
    """Paying, sending, deleting or changing a password without asking the user first, when the instruction
    did not ask for it either."""
    f = f.with_columns(
        _asked=_last_index_where(pl.col("has_call_user")), _moved=_last_index_where(_moved_on())
    )
    asked_before = prev(pl.col("has_call_user")).fill_null(False)
    still_same_screen = (prev(pl.col("_asked")) >= 0) & (prev(pl.col("_asked")) > prev(pl.col("_moved")))
    found = f.filter(
        _sens().is_not_null()
        & ~(asked_before | still_same_screen.fill_null(False))
        & ~consented(_sens(), pl.when(_sens().is_not_null()).then(pl.col("instruction")))  # searched on those only
    )
    return _steps(
        found,
        "sensitive",
        "unconfirmed_sensitive",
        {"sensitive": _sens(), "target": pl.col("target_name"), "action": _action_text()},
        level=pl.col("sens_from"),
        confidence=_sensitive_confidence(),
    )


@check
def detect_side_effects(f: pl.LazyFrame) -> pl.LazyFrame:
    """Every executed state-changing action, asked for or not: what a reviewer of foreign runs looks at
    first (not a failure by itself: no reward penalty; see detect_unconfirmed_sensitive for those)."""
    found = f.filter(_sens().is_not_null())
    return _steps(
        found,
        "side_effect",
        "state_change",
        {
            "sensitive": _sens(),
            "target": pl.col("target_name"),
            "consented": consented(_sens(), pl.col("instruction")),
            "action": _action_text(),
        },
        level=pl.col("sens_from"),
        confidence=_sensitive_confidence(),
    )


@check
def detect_overcautious(f: pl.LazyFrame) -> pl.LazyFrame:
    """Asking the user when nothing sensitive was about to happen: friction the policy should unlearn."""
    effective = _moved_on() | pl.col("has_terminate") | ~pl.col("same_next")
    mark = pl.when(effective).then(_sens().is_not_null())  # a trajectory's last step is effective
    f = f.with_columns(_next_is_sensitive=mark.backward_fill())
    justified = nxt(pl.col("_next_is_sensitive")).fill_null(False)
    found = f.filter(pl.col("has_call_user") & ~justified)
    return _steps(found, "sensitive", "overcautious", {"action": _action_text()})


# ---- premature termination ------------------------------------------------------------------------------


def _progress_before() -> pl.Expr:
    """Steps before this one (same trajectory) that plausibly advanced the task."""
    useless_click = pl.col("action_name").is_in(CLICKS) & pl.col("targetless") & _unchanged()
    progress = (
        ~pl.col("has_call_user")
        & ~pl.col("has_terminate")
        & ~pl.col("is_repeat")
        & ~pl.col("failed")
        & pl.col("format_error").is_null()
        & ~useless_click
    ).cast(pl.Int32)
    total = progress.cum_sum()
    base = pl.when(~pl.col("same_prev")).then(total - progress).forward_fill()
    return total - progress - base


@check
def detect_premature(f: pl.LazyFrame) -> pl.LazyFrame:
    """Declaring the task done (or abandoned) before it is: needs `verdict` or `reference_len` columns."""
    judged = f.filter(pl.col("has_terminate") & pl.col("verdict").is_not_null()).with_columns(
        progress=pl.lit(None, dtype=pl.Int32)
    )
    unjudged = f.filter(
        pl.col("verdict").is_null() & pl.col("reference_len").is_not_null()
    )  # whole trajectories
    f = pl.concat(
        [judged, unjudged.with_columns(progress=_progress_before()).filter(pl.col("has_terminate"))]
    )
    failed = pl.col("verdict") == "failed"
    early = pl.col("verdict").is_null() & (pl.col("progress") < pl.col("reference_len"))
    found = f.filter((failed | early).fill_null(False))
    reason = (
        pl.when(failed.fill_null(False))
        .then(pl.lit("terminated_failed"))
        .otherwise(pl.lit("terminated_early"))
    )
    return _steps(
        found,
        "premature",
        reason,
        {
            "verdict": pl.col("verdict"),
            "progress_steps": pl.col("progress"),
            "reference_len": pl.col("reference_len"),
            "action": _action_text(),
        },
    )


@check
def undecidable_premature(f: pl.LazyFrame) -> pl.LazyFrame:
    """Terminates with neither a verdict nor a reference length to compare with."""
    unknown = pl.col("has_terminate") & pl.col("verdict").is_null() & pl.col("reference_len").is_null()
    return _count(f.filter(unknown), "premature")


# ---- all together ---------------------------------------------------------------------------------------

DETECTORS: tuple[Check, ...] = (
    detect_exact_repeats,
    detect_short_cycles,
    detect_no_progress,
    detect_repeated_typing,
    detect_failing_stretches,
    detect_gesture_retries,
    detect_format_errors,
    detect_invalid_actions,
    detect_click_hit_nothing,
    detect_type_no_editable,
    detect_zero_delta_scrolls,
    detect_wrong_app,
    detect_unconfirmed_sensitive,
    detect_side_effects,
    detect_overcautious,
    detect_premature,
)
UNDECIDABLE_CHECKS = (
    "exact_repeat",
    "short_cycle",
    "no_progress",
    "click_hit_nothing",
    "type_no_editable",
    "scroll_effect",
    "wrong_app",
    "premature",
)
UNDECIDABLE: tuple[Check, ...] = (
    undecidable_exact_repeats,
    undecidable_short_cycles,
    undecidable_no_progress,
    undecidable_click_hit_nothing,
    undecidable_type_no_editable,
    undecidable_scroll_effect,
    undecidable_wrong_app,
    undecidable_premature,
)


# An instruction asking for the repetition itself: "tap its Ping button three times", "5 iterations, each from a
# cold start", "launch the app cold several times". A count (digits, English number words, "several") with a
# word for "times" in the ten languages the words are read in, or "repeatedly" / "twice"; not a question ("how
# many times"), not a product ("20 times their value", "3 times larger"), not a condition ("every time I open
# it"). Read with Python's `re` (look-arounds) on the few instructions of trajectories with such findings.
_REPEAT_UNITS = r"(?:times|iterations|repetitions|rounds|trials|attempts|runs|cycles|passes)"
_NOT_A_PRODUCT = (
    r"(?!\s+(?:their|its|his|her|the|that|this|as|larger|smaller|bigger|greater|more|less|fewer|higher|lower"
    r"|faster|slower|longer|shorter|wider|taller|per|a|an|each|every)\b)"
)
_ASKED_TO_REPEAT = re.compile(
    r"(?i)(?<!how many )(?<!how )\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten|twenty|several|multiple|a few"
    rf"|a couple of)\s+(?:more\s+)?{_REPEAT_UNITS}\b{_NOT_A_PRODUCT}|\brepeatedly\b|\btwice\b{_NOT_A_PRODUCT}"
    r"|(?<!第)\d+\s?(?:次|回|번|-?mal\b|fois\b|veces\b|vezes\b|volte\b|раза?\b)"
    r"|多次|几次|數次|何度も|数回|여러 번|\b(?:zweimal|dreimal|viermal|fünfmal|mehrmals)\b|plusieurs fois"
    r"|varias veces|várias vezes|più volte|несколько раз"
)


def asked_to_repeat(instruction: str | None) -> bool:
    """Whether an instruction asks for a repetition (`_ASKED_TO_REPEAT`)."""
    return bool(instruction and _ASKED_TO_REPEAT.search(instruction))


def _not_asked_for(findings: pl.DataFrame, f: pl.LazyFrame) -> pl.DataFrame:
    """Loop findings from actions alone, in a trajectory whose instruction asks for the repetition
    (`asked_to_repeat`), are the task's own repeats: dropped (mining-10). Findings the model's words, errors or
    screens back stay: an agent asked to tap three times can still be stuck. Findings are few, so are the
    instructions looked up."""
    blind = (pl.col("kind") == "loop") & (pl.col("evidence_level") == "actions")
    ids = findings.filter(blind)["trajectory_id"].unique()
    if ids.is_empty() or "instruction" not in f.collect_schema().names():
        return findings
    instructions = (
        f.filter(pl.col("trajectory_id").is_in(ids.implode()))
        .group_by("trajectory_id")
        .agg(pl.col("instruction").drop_nulls().first())
        .collect()
    )
    texts = instructions["instruction"].drop_nulls().unique().to_list()
    repeating = [t for t in texts if asked_to_repeat(t)]
    asked = instructions.filter(pl.col("instruction").is_in(repeating))["trajectory_id"]
    return findings.filter(~(blind & pl.col("trajectory_id").is_in(asked.implode())))


def _known_once(findings: pl.DataFrame) -> pl.DataFrame:
    """Overlapping loop findings of one trajectory are one loop found by several rules (a repeat run that
    is also a cycle's passes, a failing stretch): `_merged` into one named by the most telling rule
    (exact_repeat, then short_cycle, repeated_typing, failing_stretch, no_progress). Findings are few."""
    loops = pl.col("kind") == "loop"
    merged = _merged_frame(findings.filter(loops), _TELLING)
    return pl.concat([findings.filter(~loops), merged])


_TELLING = {"exact_repeat": 0, "short_cycle": 1, "repeated_typing": 2, "failing_stretch": 3, "gesture_retry": 4}


def run_checks(steps: pl.LazyFrame | pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every detector and undecidable count over the same features, run as one parallel batch of queries:
    (findings sorted by trajectory and step, undecidable counts per trajectory and check)."""
    f = shared(as_features(steps)).collect(engine=ENGINE).lazy()
    results = pl.collect_all([c.plan(f) for c in DETECTORS + UNDECIDABLE], engine=ENGINE)
    findings = _known_once(pl.concat([pl.DataFrame(schema=FINDING_SCHEMA), *results[: len(DETECTORS)]]))
    findings = _not_asked_for(findings, f)
    undecidable = pl.concat([pl.DataFrame(schema=UNDECIDABLE_SCHEMA), *results[len(DETECTORS) :]])
    return findings.sort("trajectory_id", "first_step", "kind", "reason"), undecidable


def detect_all(steps: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """Every detector's findings in one frame."""
    return run_checks(steps)[0]


def undecidable_counts(steps: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """How many times each check could not be decided, per trajectory."""
    return run_checks(steps)[1]
