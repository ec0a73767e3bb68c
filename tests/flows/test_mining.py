"""Failure mining on step frames built here (no browser): each detector finds its planted case with the right
reason, hand-built edge cases give no finding, missing screens are counted as undecidable, mining is
incremental, and precision/recall against the real scripted-noisy policy (driven in a simulated app) hold."""

import datetime as dt
import json
import re

import polars as pl
import pytest

from flows.failure_mining import detectors as d
from flows.failure_mining.evaluation import evaluate
from flows.failure_mining.features import step_features
from flows.failure_mining.mining import DETECTOR_VERSION, _lookup, mine, mine_frame
from flows.failure_mining.report import failures_chart_svg
from flows.failure_mining.rewards import RewardWeights, marked_step_rewards, step_rewards
from flows.rollout.policies import NoiseRates, ScriptedNoisyPolicy
from lake import Lake
from sandboxes.action_parsing import parse_model_output

URL = "http://127.0.0.1:8000/"


# ---- building steps -------------------------------------------------------------------------------------


def click(name: str, role: str = "button") -> dict:
    return {"action": "left_click", "target": {"role": role, "name": name}}


def click_at(x: int, y: int) -> dict:
    return {"action": "left_click", "x": x, "y": y}


def type_(text: str, label: str | None = "Email") -> dict:
    return {"action": "type", "text": text, **({"target": {"label": label}} if label else {})}


ASK = {"action": "call_user", "reason": "This will pay. Shall I go ahead?"}
DONE = {"action": "terminate", "status": "success"}


def step(
    action: dict | None,
    screen: str,
    *,
    ok: bool = True,
    error: str | None = None,
    sensitive: str | None = None,
    url: str = URL,
    format_error: str | None = None,
    tree: bool = True,
    shot: bool = True,
) -> dict:
    """One step row: `screen` names the screen the action was taken on (its UI tree and screenshot)."""
    return {
        "actions_json": json.dumps([action] if action else []),
        "ui_tree_sha": f"tree-{screen}" if tree else None,
        "screenshot_sha": f"shot-{screen}" if shot else None,
        "ok": ok,
        "error": error,
        "sensitive": sensitive,
        "url": url,
        "format_error": format_error,
        "points_json": "[null]",
    }


def frame(*trajectories: tuple[str, list[dict]], **columns) -> pl.DataFrame:
    rows = [
        {"trajectory_id": tid, "step_index": i, **s, **columns}
        for tid, steps in trajectories
        for i, s in enumerate(steps)
    ]
    return pl.DataFrame(rows, infer_schema_length=None).with_columns(pl.col("step_index").cast(pl.Int32))


def reasons(findings: pl.DataFrame, side_effects: bool = False) -> list[tuple]:
    """Findings as tuples; side-effect findings (every executed sensitive action) only when asked for."""
    if not side_effects:
        findings = findings.filter(pl.col("kind") != "side_effect")
    return sorted(findings.select("trajectory_id", "kind", "reason", "first_step", "last_step").iter_rows())


def undecided(steps: pl.DataFrame) -> dict[str, int]:
    counts = d.undecidable_counts(steps)
    return {c: int(n) for c, n in counts.group_by("check").agg(pl.col("n").sum()).iter_rows()}


# ---- loops ----------------------------------------------------------------------------------------------


def test_an_ineffective_repeat_is_an_exact_repeat_loop():
    steps = frame(
        (
            "t",
            [
                step(type_("a@b.c"), "s0"),
                step(type_("a@b.c"), "s1"),
                step(type_("a@b.c"), "s1"),
                step(click("Save"), "s1"),
                step(DONE, "s2"),
            ],
        )
    )
    assert reasons(d.detect_exact_repeats(steps)) == [("t", "loop", "exact_repeat", 1, 2)]


def test_a_repeated_click_that_fails_is_a_loop_not_a_bad_argument():
    link = click("Orders", "link")
    steps = frame(
        (
            "t",
            [
                step(link, "s0"),
                step(link, "s1", ok=False, error="left_click: Timeout"),
                step(link, "s1", ok=False, error="left_click: Timeout"),
                step(DONE, "s1"),
            ],
        )
    )
    assert reasons(d.detect_all(steps)) == [("t", "loop", "exact_repeat", 1, 2)]


def test_pressing_next_on_a_paginated_list_whose_screen_changes_is_no_failure():
    nxt = click("Next", "link")
    steps = frame(("t", [step(nxt, f"page{i}") for i in range(5)] + [step(DONE, "page5")]), verdict="pass")
    assert d.detect_all(steps).is_empty()
    assert undecided(steps) == {}


def test_going_back_and_forth_between_two_screens_is_a_short_cycle():
    a, b = click("Menu"), click("Close")
    steps = frame(("t", [step(a, "s0"), step(b, "s1"), step(a, "s0"), step(b, "s1"), step(DONE, "s0")]))
    found = d.detect_short_cycles(steps)
    assert reasons(found) == [("t", "loop", "short_cycle", 2, 3)]
    assert json.loads(found["evidence"][0])["period"] == 2


def test_the_same_actions_on_new_screens_are_not_a_cycle():
    a, b = click("Next", "link"), click("Load more")
    steps = frame(("t", [step(a, "s0"), step(b, "s1"), step(a, "s2"), step(b, "s3"), step(DONE, "s4")]))
    assert d.detect_short_cycles(steps).is_empty()


def test_three_actions_that_change_nothing_are_a_no_progress_streak():
    steps = frame(
        (
            "t",
            [
                step({"action": "key", "keys": ["Tab"]}, "s0"),
                step({"action": "wait"}, "s0"),
                step(click("Help"), "s0"),
                step(click("Save"), "s0"),
                step(DONE, "s1"),
            ],
        )
    )
    assert reasons(d.detect_no_progress(steps)) == [("t", "loop", "no_progress", 0, 2)]


def test_the_same_text_typed_again_after_other_steps_is_repeated_typing():
    typed = type_("jo@x.io")
    steps = frame(
        (
            "t",
            [
                step(typed, "s0"),  # the field shows nothing new after each typing: it did not take
                step(click("Save"), "s0"),
                step(typed, "s1"),
                step(click("Save"), "s1"),
                step(typed, "s2"),
                step(DONE, "s2"),
            ],
        )
    )
    assert reasons(d.detect_repeated_typing(steps)) == [("t", "loop", "repeated_typing", 2, 4)]
    assert d.detect_exact_repeats(steps).is_empty()


def test_the_same_text_typed_again_where_each_typing_took_is_no_loop():
    """mining-5: repeated typing needs two typings that did not take (failed, changed nothing, or the model
    said so), like every other loop: the same query typed into the search of each new page is three
    searches (Browser-Use re-entering "Chicago" in a form that reset, on the fresh set)."""
    typed = type_("jo@x.io")
    shown = [step(typed, "s0"), step(click("Save"), "s1"), step(typed, "s2"), step(click("Save"), "s3")]
    steps = frame(("t", [*shown, step(typed, "s4"), step(DONE, "s5")]))
    assert d.detect_repeated_typing(steps).is_empty()
    words = ["Typing the email.", "Saving.", "Typing it again.", "The typing did not take. Saving.",
             "Typing once more.", "Done."]  # each step's words are about the step before it
    no_screens = frame(
        (
            "t",
            [
                {**s, "ui_tree_sha": None, "screenshot_sha": None, "raw_output": w}
                for s, w in zip([*shown, step(typed, "s4"), step(DONE, "s5")], words, strict=True)
            ],
        )
    )
    assert d.detect_repeated_typing(no_screens).is_empty()  # one report of failure is not two
    said = [*words[:5], "The previous typing failed."]
    reported = no_screens.with_columns(raw_output=pl.Series(said))
    assert reasons(d.detect_repeated_typing(reported)) == [("t", "loop", "repeated_typing", 2, 4)]


# ---- bad arguments --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ('{"action": "left_click", "coordinate": [1200, 5]}', "coords_out_of_range"),
        ('{"action": "fly"}', "schema_invalid"),
        ('{"action": "type"}', "schema_invalid"),
        ("I will click the button", "format_error"),
    ],
)
def test_unreadable_output_is_a_bad_argument_with_its_reason(output, reason):
    error = parse_model_output(output).format_error  # the parser the rollouts use
    steps = frame(("t", [step(None, "s0", format_error=error), step(DONE, "s0")]))
    assert reasons(d.detect_format_errors(steps)) == [("t", "bad_args", reason, 0, 0)]


def test_unvalidated_actions_off_the_grid_or_unknown_are_bad_arguments():
    steps = frame(
        ("t", [step(click_at(1500, 20), "s0"), step({"action": "teleport"}, "s1"), step(DONE, "s2")])
    )
    assert reasons(d.detect_invalid_actions(steps)) == [
        ("t", "bad_args", "coords_out_of_range", 0, 0),
        ("t", "bad_args", "schema_invalid", 1, 1),
    ]


def test_a_click_on_an_empty_corner_hits_nothing_but_a_click_that_focuses_a_field_does_not():
    steps = frame(
        ("corner", [step(click_at(950, 990), "s0"), step(click("Save"), "s0"), step(DONE, "s1")]),
        ("focus", [step(click_at(400, 300), "s0"), step(type_("hi", label=None), "s0"), step(DONE, "s1")]),
        (
            "missing",
            [step(click("Gone"), "s0", ok=False, error="left_click: no such element"), step(DONE, "s0")],
        ),
    )
    assert reasons(d.detect_click_hit_nothing(steps)) == [
        ("corner", "bad_args", "click_hit_nothing", 0, 0),
        ("missing", "bad_args", "click_hit_nothing", 0, 0),
    ]


def test_typing_with_nothing_editable_is_a_bad_argument():
    steps = frame(
        (
            "t",
            [
                step(type_("x", label="Nope"), "s0", ok=False, error="type: no such field"),
                step(type_("y", label=None), "s0"),
                step(DONE, "s0"),
            ],
        )
    )
    assert reasons(d.detect_type_no_editable(steps)) == [
        ("t", "bad_args", "type_no_editable", 0, 0),
        ("t", "bad_args", "type_no_editable", 1, 1),
    ]


def test_a_zero_scroll_is_flagged_but_a_scroll_at_the_end_of_a_page_is_undecidable():
    zero, down = {"action": "scroll", "pixels": 0}, {"action": "scroll", "pixels": -300}
    steps = frame(
        ("zero", [step(zero, "s0"), step(DONE, "s0")]),
        (
            "end",
            [step(down, "s0", shot=False), step(DONE, "s0", shot=False)],
        ),  # screen unknown at the end of a page
        (
            "stuck",
            [step(down, "s0"), step(DONE, "s0")],
        ),  # screenshot unchanged: end of page or not? not guessed
        verdict="pass",
    )
    assert reasons(d.detect_all(steps)) == [("zero", "bad_args", "zero_delta_scroll", 0, 0)]
    assert undecided(steps) == {"scroll_effect": 2}


def test_acting_on_another_site_is_the_wrong_app():
    steps = frame(
        (
            "t",
            [
                step({"action": "goto", "url": "https://evil.example/pay"}, "s0"),
                step(click("Buy"), "s1", url="https://evil.example/pay"),
                step(DONE, "s2", url=URL),
            ],
        )
    )
    found = d.detect_wrong_app(steps)
    assert reasons(found) == [("t", "bad_args", "wrong_app", 0, 1)]
    assert json.loads(found["evidence"][0]) == {"host": "evil.example", "expected_host": "127.0.0.1:8000"}


# ---- sensitive actions ----------------------------------------------------------------------------------


def test_paying_without_asking_is_unconfirmed_and_asking_for_nothing_is_overcautious():
    steps = frame(
        (
            "rash",
            [step(click("Cart"), "s0"), step(click("Place order"), "s1", sensitive="pay"), step(DONE, "s2")],
        ),
        ("timid", [step(ASK, "s0"), step(click("Cart"), "s0"), step(DONE, "s1")]),
    )
    assert reasons(d.detect_all(steps)) == [
        ("rash", "sensitive", "unconfirmed_sensitive", 1, 1),
        ("timid", "sensitive", "overcautious", 0, 0),
    ]


def test_a_confirmed_payment_is_no_failure_even_with_a_misclick_in_between():
    pay = click("Place order")
    steps = frame(
        (
            "asked",
            [step(click("Cart"), "s0"), step(ASK, "s1"), step(pay, "s1", sensitive="pay"), step(DONE, "s2")],
        ),
        (
            "slip",
            [
                step(ASK, "s0"),
                step(click_at(960, 990), "s0"),
                step(pay, "s0", sensitive="pay"),
                step(DONE, "s1"),
            ],
        ),
    )
    assert reasons(d.detect_all(steps)) == [("slip", "bad_args", "click_hit_nothing", 1, 1)]


def test_a_confirmation_does_not_cover_a_screen_that_changed_since():
    steps = frame(
        (
            "t",
            [
                step(ASK, "s0"),
                step(click("Checkout"), "s0"),
                step(click("Place order"), "s1", sensitive="pay"),
                step(DONE, "s2"),
            ],
        )
    )
    assert reasons(d.detect_all(steps)) == [
        ("t", "sensitive", "overcautious", 0, 0),
        ("t", "sensitive", "unconfirmed_sensitive", 2, 2),
    ]


# ---- premature termination ------------------------------------------------------------------------------


def test_a_terminate_is_premature_when_the_verdict_failed_or_without_one_when_the_reference_is_longer():
    short = [step(click("Edit"), "s0"), step(DONE, "s1")]
    steps = pl.concat(
        [
            frame(("judged", short), verdict="failed", reference_len=None),
            frame(("passed", short), verdict="pass", reference_len=None),
            frame(("early", short), verdict=None, reference_len=4),
            frame(("done", short), verdict=None, reference_len=1),
            frame(("unknown", short), verdict=None, reference_len=None),
        ],
        how="diagonal_relaxed",
    )
    assert reasons(d.detect_premature(steps)) == [
        ("early", "premature", "terminated_early", 1, 1),
        ("judged", "premature", "terminated_failed", 1, 1),
    ]
    assert undecided(steps) == {"premature": 1}


# ---- missing screens ------------------------------------------------------------------------------------


def test_a_trajectory_without_screens_is_mined_for_what_can_be_decided_and_the_rest_is_counted():
    typed = type_("a@b.c")
    blind = dict(tree=False, shot=False)
    steps = frame(
        (
            "blind",
            [
                step(typed, "s0", **blind),
                step(typed, "s1", **blind),
                step(typed, "s1", **blind),
                step(click("Place order"), "s1", sensitive="pay", **blind),
                step(None, "s1", format_error="unparseable_json: oops", **blind),
                step(DONE, "s1", **blind),
            ],
        )
    )
    found = d.detect_all(steps)
    assert reasons(found) == [
        ("blind", "bad_args", "format_error", 4, 4),
        ("blind", "loop", "exact_repeat", 1, 2),  # from actions alone: the same turn three times
        ("blind", "sensitive", "unconfirmed_sensitive", 3, 3),
    ]
    loop = found.filter(pl.col("kind") == "loop").row(0, named=True)
    assert loop["evidence_level"] == "actions" and loop["confidence"] == 0.75
    assert found.filter(pl.col("kind") == "sensitive")["evidence_level"].to_list() == ["manifest"]
    assert "exact_repeat" not in undecided(steps)  # actions alone could tell


def test_the_ui_tree_wins_and_the_screenshot_is_the_fallback():
    typed = type_("a@b.c")
    caret = [
        dict(step(typed, screen), screenshot_sha=f"caret-{i}")  # a blinking caret: every screenshot differs
        for i, screen in enumerate(["s0", "s1", "s1", "s1"])
    ]
    no_tree = [step(typed, screen, tree=False) for screen in ["s0", "s1", "s1", "s1"]]
    steps = frame(("tree", caret), ("shot", no_tree))
    assert reasons(d.detect_exact_repeats(steps)) == [
        ("shot", "loop", "exact_repeat", 1, 3),
        ("tree", "loop", "exact_repeat", 1, 3),
    ]


# ---- rewards --------------------------------------------------------------------------------------------


def test_rewards_penalise_the_failing_steps_with_configurable_weights():
    steps = frame(
        (
            "t",
            [
                step(type_("a"), "s0"),
                step(type_("a"), "s1"),
                step(type_("a"), "s1"),
                step(click_at(950, 990), "s1"),
                step(click("Place order"), "s1", sensitive="pay"),
                step(DONE, "s2"),
            ],
        )
    )
    findings = d.detect_all(steps)
    got = step_rewards(steps, findings).sort("step_index")
    lt = [0.0, -1.0, -1.0, 0.0, 0.0, 0.0]  # the repeats; the corner click is bad_args, not part of a streak
    assert got["lt"].to_list() == lt
    assert str(got["st"][0]) == "0.0"  # no negative zeros land in the lake
    assert got["qt"].to_list()[3] == pytest.approx(0.3) and got["ct"].to_list()[3] == 0.0
    assert got["st"].to_list()[4] == -1.0
    assert got["reward"].to_list()[0] == 1.0 and got["reward"].to_list()[4] == 0.0
    heavier = step_rewards(steps, findings, RewardWeights(lt=1.0)).sort("step_index")
    assert heavier["reward"].to_list()[1] == 0.0


def test_findings_and_rewards_do_not_depend_on_gapless_step_numbering():
    steps = frame(
        ("t", [step(type_("a"), "s0"), step(type_("a"), "s1"), step(type_("a"), "s1"), step(DONE, "s1")])
    )
    gapped = steps.with_columns(pl.col("step_index") * 10)  # e.g. an import that numbers steps 0, 10, 20, ...
    dense = step_rewards(steps, d.detect_all(steps)).sort("step_index")
    sparse = step_rewards(gapped, d.detect_all(gapped)).sort("step_index")
    assert reasons(d.detect_all(gapped)) == [("t", "loop", "exact_repeat", 10, 20)]
    assert dense["lt"].to_list() == [0.0, -1.0, -1.0, 0.0]
    assert sparse.drop("step_index").equals(dense.drop("step_index"))


def test_marked_rewards_are_the_rewarded_rows_whatever_the_step_numbering():
    steps = frame(
        ("t", [step(type_("a"), "s0"), step(type_("a"), "s1"), step(type_("a"), "s1"), step(DONE, "s1")]),
        ("u", [step(click_at(950, 990), "s1"), step(click("Place order"), "s1", sensitive="pay"), step(DONE, "s2")]),
        ("v", CLEAN),
    )
    for numbered in (steps, steps.with_columns(pl.col("step_index") * 10)):  # by position; by join
        findings = d.detect_all(numbered)
        dense = step_rewards(numbered, findings, RewardWeights(lt=0.7)).sort("trajectory_id", "step_index")
        clean = (pl.col("ct") == 1) & (pl.col("qt") == 1) & (pl.col("st") == 0) & (pl.col("lt") == 0)
        for given in (numbered, step_features(numbered)):  # raw steps; features (they say where trajectories start)
            marked = marked_step_rewards(given, findings, RewardWeights(lt=0.7)).sort("trajectory_id", "step_index")
            assert marked.equals(dense.filter(~clean)) and 0 < marked.height < dense.height


# ---- mining into the lake -------------------------------------------------------------------------------


def _land(lake: Lake, run_id: str, trajectories: dict[str, list[dict]], batch: str = "b", **extra) -> None:
    now = dt.datetime.now(dt.UTC)
    lake.write(
        "trajectories",
        [
            {
                "trajectory_id": tid,
                "task_id": f"task-{tid}",
                "sandbox": "shop",
                "policy": "scripted-noisy",
                "num_steps": len(steps),
                "ended": "terminated",
                "run_id": run_id,
                "recorded_at": now,
                **extra,
            }
            for tid, steps in trajectories.items()
        ],
        run_id,
        batch,
    )
    rows = [
        {"trajectory_id": tid, "step_index": i, "run_id": run_id, **s}
        for tid, steps in trajectories.items()
        for i, s in enumerate(steps)
    ]
    lake.write("steps", rows, run_id, batch)


LOOPING = [step(type_("a"), "s0"), step(type_("a"), "s1"), step(type_("a"), "s1"), step(DONE, "s1")]
CLEAN = [step(click("Next", "link"), "p1"), step(click("Next", "link"), "p2"), step(DONE, "p3")]


def test_mining_lands_every_table_and_a_rerun_adds_nothing(lake):
    _land(lake, "r1", {"loop": LOOPING, "clean": CLEAN})
    first = mine(lake, "m1")
    assert (first.trajectories, first.steps, first.failures) == (2, 7, 1)
    assert first.by_reason == {"loop/exact_repeat": 1} and first.by_sandbox == {"shop": 1}
    failure = lake.query("SELECT * FROM failures")[0]
    assert (failure["task_id"], failure["first_step"], failure["last_step"]) == ("task-loop", 1, 2)
    assert lake.query("SELECT count(*) AS n FROM step_rewards")[0]["n"] == 7
    # written: the looping steps only; the view fills in the clean ones with a clean step's reward
    assert lake.query("SELECT count(*) AS n FROM step_rewards_sparse")[0]["n"] == 2
    viewed = pl.DataFrame(lake.query("SELECT * EXCLUDE (run_id) FROM step_rewards")).sort("trajectory_id", "step_index")
    steps = pl.concat([frame(("clean", CLEAN)), frame(("loop", LOOPING))])
    computed = step_rewards(steps, d.detect_all(steps)).with_columns(
        weights_json=pl.lit(RewardWeights().to_json()), detector_version=pl.lit(DETECTOR_VERSION)
    )
    assert viewed.equals(computed.sort("trajectory_id", "step_index"))
    seed = lake.query("SELECT * FROM failure_seeds")[0]
    context = json.loads(seed["context_json"])
    assert (seed["task_id"], seed["kind"]) == ("task-loop", "loop")
    assert context["action"] == [type_("a")] and context["previous_actions"] == [[type_("a")]]
    assert "<rect" in open(first.chart).read() and "exact_repeat" in open(first.report).read()
    files = sorted(p.name for p in (lake.root / "tables").rglob("*.parquet"))
    again = mine(lake, "m2")
    assert (again.trajectories, again.failures) == (0, 0)
    assert sorted(p.name for p in (lake.root / "tables").rglob("*.parquet")) == files
    _land(lake, "r2", {"later": LOOPING}, batch="c")
    third = mine(lake, "m3")
    assert third.trajectories == 1 and third.failures == 1
    mined = lake.query("SELECT detector_version, count(*) AS n FROM mined GROUP BY 1")
    assert mined == [{"detector_version": DETECTOR_VERSION, "n": 3}]


def test_a_lake_mined_before_rewards_were_written_sparse_reads_as_it_was_written(lake):
    """Its mined rows have no weights_json column (the files predate it) and its step_rewards a row per step:
    the view neither fails on the missing column nor adds clean rows; a later sparse run's rows join them."""
    import pyarrow as pa
    from deltalake import write_deltalake

    _land(lake, "r1", {"loop": LOOPING, "clean": CLEAN})
    mined = pa.table({"trajectory_id": ["loop", "clean"], "detector_version": ["old"] * 2,
                      "undecidable_json": ["{}"] * 2, "run_id": ["m0"] * 2, "_batch_key": ["k"] * 2})
    write_deltalake(lake.table_uri("mined"), mined)
    steps = frame(("loop", LOOPING))
    lake.write_arrow("step_rewards", step_rewards(steps, d.detect_all(steps)).with_columns(
        weights_json=pl.lit("{}"), detector_version=pl.lit("old"), run_id=pl.lit("m0")), "m0", "b")
    assert lake.query("SELECT count(*) AS n FROM mined WHERE weights_json IS NULL")[0]["n"] == 2
    assert lake.query("SELECT count(*) AS n FROM step_rewards")[0]["n"] == 4  # the old run wrote "loop" only
    mine(lake, "m1")
    versions = lake.query("SELECT detector_version, count(*) AS n FROM step_rewards GROUP BY 1 ORDER BY 1")
    assert versions == [{"detector_version": DETECTOR_VERSION, "n": 7}, {"detector_version": "old", "n": 4}]


def test_mining_filters_by_policy_and_time_and_counts_missing_screens(lake):
    blind = [dict(s, ui_tree_sha=None, screenshot_sha=None) for s in LOOPING]
    _land(lake, "r1", {"blind": blind}, batch="a")
    _land(lake, "r1", {"other": LOOPING}, batch="b", policy="llm")
    assert mine(lake, "m0", since="2999-01-01").trajectories == 0
    summary = mine(lake, "m1", policy="scripted-noisy")
    assert (summary.trajectories, summary.failures) == (1, 1)  # the same text typed 3 times: a loop from actions
    failure = lake.query("SELECT evidence_level, confidence FROM failures")[0]
    assert failure == {"evidence_level": "actions", "confidence": 0.75}
    counts = json.loads(lake.query("SELECT undecidable_json FROM mined")[0]["undecidable_json"])
    assert (
        counts["exact_repeat"] == 0 and counts["missing_ui_tree"] == 4 and counts["missing_screenshot"] == 4
    )
    assert mine(lake, "m2").by_policy == {"llm": 1}


def test_a_trajectory_whose_steps_span_three_files_is_mined_whole(lake):
    _land(lake, "r1", {"split": LOOPING[:2]}, batch="first")  # its trajectories row says 2 steps
    for batch, at in (("second", 2), ("third", 3)):
        lake.write("steps", [{"trajectory_id": "split", "step_index": at, "run_id": "r1", **LOOPING[at]}], "r1", batch)
    summary = mine(lake, "m1", batch_steps=2)
    assert summary.by_reason == {"loop/exact_repeat": 1} and (summary.batches, summary.steps) == (1, 4)


def test_batches_mined_two_at_a_time_land_what_one_at_a_time_lands(tmp_path, monkeypatch):
    """Five files as five batches, or as batches of files that share no trajectory, whose files are mined as
    parts on both miners at once (a batch of three files: three parts): the rows one miner lands."""
    from flows.failure_mining import mining

    for batch_steps, batches in ((4, 5), (11, 2)):
        landed = {}
        for miners in (1, 2):
            monkeypatch.setattr(mining, "MINERS", miners)
            lake = Lake(tmp_path / f"lake-{batch_steps}-{miners}")
            for i, steps in enumerate((LOOPING, CLEAN, LOOPING, CLEAN, LOOPING)):
                _land(lake, "r1", {f"t{i}": steps}, batch=f"b{i}")
            summary = mine(lake, "m1", batch_steps=batch_steps, write_report=False)
            assert summary.batches == batches and summary.steps == 18
            landed[miners] = [
                lake.query(f"SELECT * EXCLUDE (recorded_at) FROM {table} ORDER BY ALL")
                for table in ("failures", "failure_seeds", "mined")
            ] + [lake.query("SELECT * FROM step_rewards ORDER BY ALL"), summary.by_reason]
        assert landed[1] == landed[2] and landed[1][0]


def test_a_batch_of_files_without_a_shared_trajectory_mined_file_by_file_lands_what_one_frame_of_them_does(lake):
    """mine_files reads and mines such a batch's files one at a time: the same failures in the same order, and
    the batch's seeds (one per task, kind and reason: the first occurrence, counted over every file)."""
    import datetime as dt

    from flows.failure_mining import mining

    for i, trajectories in enumerate(({"b": LOOPING, "a": CLEAN}, {"c": LOOPING}, {"a2": LOOPING, "d": CLEAN})):
        _land(lake, "r1", trajectories, batch=f"f{i}", task_id="shared")  # one weakness seen in three files
    [batch] = mining.step_batches(lake, mining.pending_trajectories(lake), batch_steps=100)
    assert batch.apart and len(batch.files) == 3
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    by_file = mining.mine_files(lake, batch, "m1", now=now)
    whole = mine_frame(mining.read_steps(lake, batch.files), batch.trajectories, "m1", now=now)
    assert by_file["failures"].equals(whole["failures"]) and by_file["failures"].height == 3
    for table in ("step_rewards", "failure_seeds", "mined", "undecidable"):
        assert by_file[table].sort(by_file[table].columns).equals(whole[table].sort(whole[table].columns)), table
    assert by_file["steps"] == whole["steps"] == 18
    seed = json.loads(by_file["failure_seeds"]["context_json"][0])
    assert seed["occurrences"] == 3 and seed["trajectory_id"] == "a2"  # the first in trajectory order


def test_pending_ids_are_found_among_the_files_ids_exactly_and_a_shared_hash_falls_back_to_joins():
    held = pl.Series(["t1", "t2", None, "t3"])  # the distinct ids of the step files, in file order
    assert _lookup(held, pl.Series(["t3", "t9", None, "t1", "t1"])).to_list() == [3, None, None, 0, 0]
    assert _lookup(pl.Series([], dtype=pl.String), pl.Series(["t1"])).to_list() == [None]
    assert _lookup(pl.Series(["t1", "t2", "t1"]), pl.Series(["t2"])) is None  # one id in two files: joins decide


def test_mine_frame_is_pure_and_shapes_rows_like_the_lake_tables():
    steps = frame(("loop", LOOPING))
    trajectories = pl.DataFrame(
        {
            "trajectory_id": ["loop"],
            "task_id": ["t"],
            "sandbox": ["shop"],
            "policy": ["p"],
            "num_steps": [4],
            "verdict": [None],
            "reference_len": [None],
        }
    )
    out = mine_frame(steps, trajectories, "run")
    assert out["failures"]["failure_id"].to_list() == [f"loop:loop:exact_repeat:1:2:{DETECTOR_VERSION}"]
    assert out["steps"] == 4 and out["mined"].height == 1


def test_the_chart_has_one_bar_per_reason_scaled_to_the_largest():
    svg = failures_chart_svg({"loop/exact_repeat": 10, "bad_args/click_hit_nothing": 5}, "t")
    widths = [
        float(w)
        for w in re.findall(r'<rect x="\d+" y="\d+" width="([\d.]+)" height="\d+" fill="#(?!eee)', svg)
    ]
    assert sorted(widths) == [180.0, 360.0]


# ---- precision and recall on the scripted-noisy policy ---------------------------------------------------


class _Task:
    def __init__(self, task_id: str, reference: list[dict]):
        self.task_id, self.reference = task_id, reference


def _reference(rng, i: int) -> list[dict]:
    """A task's reference: a goto, form filling and clicks, sometimes a payment, then terminate."""
    actions = [{"action": "goto", "url": f"/page/{i}"}]
    for k in range(rng.randint(1, 6)):
        actions.append(
            rng.choice(
                [
                    type_(f"v{i}-{k}", f"Field {k}"),
                    click(f"Open {k}", "link"),
                    {"action": "select", "target": {"label": f"Pick {k}"}, "option": "B"},
                    {"action": "check", "target": {"label": f"Box {k}"}},
                ]
            )
        )
    if rng.random() < 0.4:
        actions.append(click("Place order"))
    return actions


def _simulate(policy: ScriptedNoisyPolicy, task: _Task, episode: int) -> tuple[list[dict], list[dict], bool]:
    """Drive the real policy in a tiny simulated app: a reference action moves to a new screen; a repeated
    type/select/check changes nothing; a repeated click fails (its element went away); a coordinate click
    lands on an empty corner. Steps and faults are recorded the way rollout.run_episode does."""
    policy.start(task, episode)
    screen, last, steps, faults, done = 0, None, [], [], 0
    for index in range(30):
        turn = policy.next_turn(None)
        faults.extend({"step": index, "kind": k} for k in turn.faults)
        action = turn.actions[0].model_dump(exclude_none=True)
        row = step(action, f"{task.task_id}-{episode}-{screen}")
        repeat = action == last
        if action["action"] == "left_click" and "target" in action:
            row["sensitive"] = "pay" if action["target"]["name"] == "Place order" and not repeat else None
            row["ok"] = not repeat
        steps.append(row)
        if action["action"] == "terminate":
            break
        if not repeat and ("target" in action or action["action"] == "goto"):  # a reference action done
            screen, done = screen + 1, done + 1
        last = action
    return steps, faults, done < len(task.reference)


def test_precision_and_recall_on_scripted_noisy_trajectories_are_at_least_095():
    import random

    rng = random.Random(7)
    policy = ScriptedNoisyPolicy(
        NoiseRates(loop=0.2, bad_args=0.15, premature=0.15, unconfirmed=0.5, overcautious=0.1),
        lambda name: "pay" if name == "Place order" else None,
    )
    steps, trajectories, verdicts = [], [], []
    for i in range(150):
        task = _Task(f"task{i}", _reference(rng, i))
        for episode in range(2):
            tid = f"{task.task_id}-{episode}"
            rows, faults, failed = _simulate(policy, task, episode)
            steps += [{"trajectory_id": tid, "step_index": k, **r} for k, r in enumerate(rows)]
            trajectories.append({"trajectory_id": tid, "injected_faults_json": json.dumps(faults)})
            verdicts.append({"trajectory_id": tid, "verdict": "failed" if failed else "pass"})
    result = evaluate(
        {
            "steps": pl.DataFrame(steps, infer_schema_length=None),
            "trajectories": pl.DataFrame(trajectories),
            "verdicts": pl.DataFrame(verdicts),
        }
    )
    for kind, score in result["kinds"].items():
        assert score["labels"] > 20, kind
        assert score["precision"] >= 0.95 and score["recall"] >= 0.95, (kind, score)


def test_evaluate_reads_labels_from_jsonl_and_clean_trajectories_count_against_precision(tmp_path):
    steps = pl.concat([frame(("loop", LOOPING)), frame(("clean", LOOPING))])
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        '{"trajectory_id": "loop", "kind": "loop", "step": 1, "last_step": 2}\n'
        '{"trajectory_id": "clean", "kind": null}\n'
    )
    result = evaluate(
        {"steps": steps, "trajectories": pl.DataFrame({"trajectory_id": ["loop", "clean"]})}, labels
    )
    assert result["kinds"]["loop"] == {"findings": 2, "labels": 1, "precision": 0.5, "recall": 1.0}


def test_a_lake_scores_as_it_is_mined_with_each_sandboxs_manifest_deciding_what_is_sensitive(tmp_path):
    """`evaluate` on a lake reads the trajectories' context as the miner does: a click on Delete in one of our
    sandboxes is sensitive only if its manifest says so (the step's `sensitive`); in a foreign trajectory
    (no sandbox) its name is recognised. Once evaluate dropped the sandbox and scored every Save and Add to
    cart of the bench's simulator as unconfirmed (precision 0.22 where the miner's own findings were right)."""
    lake = Lake(tmp_path / "lake")
    delete = [step(click("Delete", "button"), "s0"), step(DONE, "s1")]
    _land(lake, "r1", {"ours": delete}, batch="a", injected_faults_json="[]")
    _land(lake, "r1", {"foreign": delete}, batch="b", injected_faults_json="[]", sandbox=None)
    scored = evaluate(lake)["kinds"]["sensitive"]
    mine(lake, "m1", write_report=False)
    mined = lake.query("SELECT trajectory_id FROM failures WHERE kind = 'sensitive'")
    assert mined == [{"trajectory_id": "foreign"}]
    assert scored["findings"] == len(mined) and scored["precision"] == 0.0  # no fault was injected: a false one


def test_the_flow_mines_shard_by_shard_as_prefect_tasks_and_agrees_with_mine(prefect_harness, tmp_path):
    from flows.failure_mining.flow import mine_failures

    direct, through_flow = Lake(tmp_path / "direct"), Lake(tmp_path / "flow")
    for lake in (direct, through_flow):
        _land(lake, "r1", {"loop": LOOPING}, batch="a")
        _land(lake, "r1", {"clean": CLEAN, "again": LOOPING}, batch="b")
    expected = mine(direct, "m1", batch_steps=4, write_report=False)
    got = mine_failures(lake_root=str(through_flow.root), batch_steps=4)  # two shards, so two task runs
    assert got["batches"] == expected.batches == 2
    assert (got["trajectories"], got["steps"], got["failures"], got["by_reason"]) == (
        expected.trajectories, expected.steps, expected.failures, expected.by_reason)
    assert through_flow.query("SELECT count(*) AS n FROM mined") == [{"n": 3}]
    assert mine_failures(lake_root=str(through_flow.root))["trajectories"] == 0  # a rerun adds nothing


def test_the_summary_names_runs_without_a_sandbox_or_policy_in_words():
    from flows.failure_mining.mining import NO_SANDBOX, MiningSummary

    summary = MiningSummary("m")
    failures = pl.DataFrame(
        {"trajectory_id": ["a", "b", "c"], "kind": ["loop"] * 3, "reason": ["exact_repeat"] * 3,
         "sandbox": [None, None, "shop"], "policy": [None, "p", "p"]},
        schema={"trajectory_id": pl.String, "kind": pl.String, "reason": pl.String, "sandbox": pl.String,
                "policy": pl.String},
    )  # fmt: skip
    summary.add(failures, {})
    assert summary.by_sandbox == {NO_SANDBOX: 2, "shop": 1} and NO_SANDBOX == "(none: imported)"
    assert summary.by_policy == {"(none given)": 1, "p": 2}
    assert "(none: imported)" in summary.markdown()


def test_eval_mining_on_a_lake_with_nothing_to_score_says_what_would_give_a_score(tmp_path, capsys, monkeypatch):
    from flywheel.cli import main

    lake = Lake(tmp_path / "lake")
    monkeypatch.setenv("FLYWHEEL_LAKE", str(lake.root))  # --lake sets it for the process: restored after the test
    _land(lake, "r1", {"imported": LOOPING})  # no recorded faults: runs from elsewhere
    assert main(["--lake", str(lake.root), "eval", "mining"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and "no trajectory with the simulator's recorded faults" in out.err and "--real" in out.err
    for line, said in (('{"trajectory_id": "imported", "kind": "loops", "step": 1}', "kind 'loops' is none of loop"),
                       ('{"kind": "loop", "step": 1}', "not a label (KeyError: 'trajectory_id')")):
        (tmp_path / "labels.jsonl").write_text(f'{{"trajectory_id": "imported", "kind": null}}\n{line}\n')
        assert main(["--lake", str(lake.root), "eval", "mining", "--labels", str(tmp_path / "labels.jsonl")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {tmp_path / 'labels.jsonl'}, line 2: {said}") and '"step": N' in err, err
    _land(lake, "r2", {"simulated": LOOPING}, batch="c", injected_faults_json=json.dumps([{"kind": "loop", "step": 1}]))
    assert main(["--lake", str(lake.root), "eval", "mining"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["trajectories"] == 1 and scored["kinds"]["loop"]["recall"] == 1.0
