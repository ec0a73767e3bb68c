"""Per-step features every detector reads, derived once from a steps frame with vectorised expressions.

Conventions the detectors rely on:
- rows are ordered by (trajectory_id, step_index) with each trajectory contiguous; `same_prev` /
  `same_next` say whether the neighbouring row belongs to the same trajectory, so a plain `shift` never
  leaks across trajectories;
- a step's `ui_tree_sha` / `screenshot_sha` describe the screen its action was taken on, so the effect of
  step i's action is the difference between step i's and step i+1's screen;
- `changed` is that effect, compared on the UI tree when both steps have one, else on the screenshot when
  both have one, else null. `unknown` is true when a next step exists but the two screens cannot be
  compared: missing data, counted as undecidable and never guessed. A trajectory's last step has no next
  screen: `changed` is null and `unknown` false (nothing is missing; the effect is just never observed);
- screens (`tree`, `shot`) and turns (`act_h`) are kept as 64-bit hashes: equality is all we need;
  `traj_no` numbers the trajectories of the frame and `row` the rows, so neighbour tests compare
  integers, not ids, and runs of steps never depend on how steps are numbered;
- `first_origin` is the scheme://host of the trajectory's first URL ("" when it has none);
- `url_changed` says the next step is on another URL (an observed effect; an unchanged URL proves nothing);
  `changed` counts a URL change as a change when the screens cannot be compared;
- `px` / `py` are the first action's point on the 0..999 grid (null without one) and `target_name` what the
  action names as its target (the target's name, label or text; for a coordinate click, the control the
  model's own output said it was clicking, e.g. `Let me click "Add to cart"`), for side-effect recognition;
- `sens` is the step's sensitive kind (see side_effects: the manifest's, else recognised from the target's
  name and role, else from the command the turn runs, else from the URL it led to; null when the action failed), `sens_from` what said so and
  `sens_generic` that it rests on a name such as "Submit" alone (the detectors ask the instruction);
- `same_turn`: the step belongs to the previous step's turn, a turn that plans a repeat (see
  `_with_model_words`);
- `said_failed`: the step's own raw output says the previous action did not work ("still showing", "didn't
  open", "try again"; English only): the model's report of an effect it saw, evidence level `reasoning`;
  `said_worked`: it says the previous action did what it meant ("Now I have 2 protons", "has been added")
  and not that it failed, or it names new content ("COVEN AHRI appeared", "Now I can see August 12-21"),
  which also overrides a failure phrase in the same words (a stepping control "is still visible");
- `ev_rank` is the strongest evidence the step's effect is known from, as its rank in EVIDENCE_LEVELS (a
  small integer, not a string per step): errors (the action failed), screenshot, ui_tree, url (the next
  step's URL differs), else actions.
- `failed`: the step reported an error and the page's URL did not move on after it (an error after which the
  URL changed - a harness timing out on the navigation a click caused - stopped nothing; mining-6);
  `aim_h` the hash of the action's name and target without its text (a re-sent answer, a re-typed field).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from flows.failure_mining.side_effects import command_kind, control_kind, effect_kind, generic_name

CLICKS = ("left_click", "double_click", "right_click", "middle_click", "triple_click", "tap")
SCROLLS = ("scroll", "hscroll")
_FILLING = ("type", "select")  # filling in a form's fields
# The columns of the steps table the miner reads; nothing else is ever loaded.
STEP_COLUMNS = (
    "trajectory_id",
    "step_index",
    "screenshot_sha",
    "ui_tree_sha",
    "url",
    "actions_json",
    "format_error",
    "ok",
    "error",
    "points_json",
    "sensitive",
    "raw_output",
)
# Trajectory-level columns a caller may join onto the steps (see detectors.detect_premature).
OPTIONAL_COLUMNS = {
    "verdict": pl.String,
    "reference_len": pl.Int32,
    "instruction": pl.String,
    "sandbox": pl.String,
}
_TYPES = {"step_index": pl.Int32, "ok": pl.Boolean}
# The engine every query of the miner collects with. polars' default ("auto") picks the streaming engine
# here, whose results come in ~30 chunks per 1M rows; gathers and coalesces over chunked string columns
# then cost 30-100x what they cost on one chunk (1M bench steps: features 1.63 -> 0.88 CPU-s, a batch's
# mine_frame 4.3 -> 3.0), and the miner's frames fit in memory by construction (batches of whole files).
ENGINE = "in-memory"
_FIRST_ACTION = r'^\[\s*\{\s*"action"\s*:\s*"([A-Za-z_]+)"'
# An imported action our action space has no counterpart for (a tab switch, a wait, a slider): its actions
# JSON is empty, its format_error names it (flows.rollout.foreign_formats), so that names the turn.
_UNMAPPED = "unmapped_action:"
REVISIT_WINDOW = 4  # steps within which a turn issued again is one more pass at it (a cycle of up to 4 turns)
ORIGIN = r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#]+)"
HOST = r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]+)"
_TARGET_ROLE = r'"target"\s*:\s*\{[^}]*?"role"\s*:\s*"([^"]{1,40})"'
_TARGET_NAME = r'"target"\s*:\s*\{[^}]*?"(?:name|label|text)"\s*:\s*"((?:[^"\\]|\\.){1,120})"'
# ... or the purpose it gave for the click: `click the cart icon to add this iPad to the bag`.
_SAID_PURPOSE = (
    r"(?i)\b(?:click|tap|press)\w*\b[^.\n]{0,80}?\bto (add\b[^.\n]{0,50}?\bto (?:the |my |your |a )?"
    r"(?:cart|bag|basket|trolley|wish ?list|favou?rites|order)\b)"
)
# The model saying its previous action did not work (English only): "still showing", "didn't", "try again";
# and the verdict words agents put on their own last step ("Failed - ...", "failure: the previous action
# failed", "was not successful", "did not succeed", "was not executed": mining-5, none of them in Claude's
# words on the ABP set, all of them in Browser-Use's, Notte's and proxy-lite's).
_SAID_NO_EFFECT = (
    r"(?i)\b(?:still (?:\w+ ){0,2}?(?:showing|there|visible|the same|not|on the|shows?|persists?|open|closed|"
    r"selected|displayed|present|loading)|didn'?t (?:\w+ )?(?:work|open|navigate|change|register|apply|respond|"
    r"seem|take|go through|load|expand|close|select|happen)|did not (?:\w+ )?(?:work|open|navigate|change|"
    r"register|apply|respond|take|load|expand|close|select|happen)|doesn'?t seem to|does not seem to|"
    r"failed|unsuccessful(?:ly)?|not successful(?:ly)?|^\s*failure|did(?: not|n'?t) (?:\w+ ){0,2}?succeed|"
    r"did(?: not|n'?t) (?:\w+ )?(?:lead|redirect|reveal|trigger|dismiss|proceed|advance|return)|"
    r"(?:was|were)(?: not|n'?t) (?:\w+ )?(?:executed|completed)|"
    r"isn'?t (?:working|responding|opening)|not (?:working|responding|navigating)|hasn'?t (?:changed|been|opened|"
    r"updated)|no (?:change|effect)|nothing (?:happened|changed)|(?:try|trying) (?:again|clicking)|"
    r"more precise(?:ly)?|more precision|keeps? (?:intercepting|hitting|expanding)|persists?|persistent|"
    r"accidentally|got selected instead)"
)
# The model reporting that its previous action did what it wanted (English only): "Now I have 2 protons",
# "it shows 2+", "has been added", a verdict that opens its words ("Success - ..."). Read only where the
# step's words do not also say it failed.
_SAID_WORKED = (
    r"(?i)(?:^|[.!\n]\s*)(?:good|great|perfect|excellent)\b|^\s*(?:success|successful|succeeded)\b|"
    r"\b(?:now (?:I have|it shows|it says|shows|says|"
    r"displays|has|there (?:is|are))|it (?:now )?shows \S|I'?ve (?:added|selected|set|increased|decreased|"
    r"moved|entered)|(?:has|have) been (?:added|selected|applied|set|updated|increased|entered|submitted|saved)|"
    r"is now (?:selected|set|checked|open|showing|applied|displayed|active)|(?:successfully|worked)\b)"
)
# New content named after a stepping control - a carousel's or a calendar's "next" - is progress, not a
# repeat that failed ("Now I can see August 12-21", "COVEN AHRI appeared", "I see Thank You and ...");
# not `I can see "Female infertility" is a link. Let me click directly on it` (a retry: ABP's misses).
_SAID_NEW = (
    r"(?i)\bappeared\b|\bI (?:can )?see (?:more|new|another)\b|\b(?:now )?I (?:can )?see (?-i:[A-Z0-9])"
)
# The model planning a repeat within one turn: "Let me click the plus button 4 times".
_SAID_TIMES = r"(?i)\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten|several|a few) (?:more )?times\b"
# In a model's own words, the control it is about to click: `click on the "Save" button`, `tap 'Send'`.
_SAID_TARGET = (
    r"""(?i)(?:click|tap|press|select|hit)(?:ing|s)?\s+(?:on\s+)?(?:the\s+)?["'“‘]([^"'”’\n]{1,60})["'”’]"""
)


# The evidence a finding rests on, weakest first; a finding records the strongest one that decided it.
EVIDENCE_LEVELS = ("actions", "reasoning", "url", "ui_tree", "screenshot", "errors", "manifest")


def _rank(level: str) -> pl.Expr:
    return pl.lit(EVIDENCE_LEVELS.index(level), dtype=pl.Int8)


def prev(expr: pl.Expr, n: int = 1) -> pl.Expr:
    """The value n steps earlier in the same trajectory; null across a trajectory boundary."""
    t = pl.col("traj_no")
    return pl.when(t.shift(n) == t).then(expr.shift(n))


def nxt(expr: pl.Expr, n: int = 1) -> pl.Expr:
    """The value n steps later in the same trajectory; null across a trajectory boundary."""
    t = pl.col("traj_no")
    return pl.when(t.shift(-n) == t).then(expr.shift(-n))


def contains_action(name: str) -> pl.Expr:
    """Whether any action of the turn is `name` (a turn may carry a batch of actions); the JSON is only
    searched for turns of several actions, the rest answer from `action_name`."""
    return (
        pl.when(pl.col("several"))
        .then(pl.col("act").str.contains(rf'"action"\s*:\s*"{name}"'))
        .otherwise((pl.col("action_name") == name).fill_null(False))
    )


def _differs_next(col: str) -> pl.Expr:
    """True/False when this step's and the next step's value are both known; null otherwise."""
    c = pl.col(col)
    return pl.when(pl.col("same_next") & c.is_not_null() & c.shift(-1).is_not_null()).then(c != c.shift(-1))


def with_missing_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Hand-built or imported frames may leave optional columns out or all-null; give them the lake's types."""
    wanted = {c: _TYPES.get(c, pl.String) for c in STEP_COLUMNS} | OPTIONAL_COLUMNS
    fixes = [
        pl.lit(None, dtype=t).alias(c) if c not in frame.columns else pl.col(c).cast(t)
        for c, t in wanted.items()
        if c not in frame.columns or frame.schema[c] != t
    ]
    return frame.with_columns(fixes) if fixes else frame


def in_trajectory_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Each trajectory contiguous and in step order; skips the sort when the writer already did that."""
    tid = frame["trajectory_id"].hash()
    boundaries = (tid != tid.shift(1)).fill_null(True)
    steps_rise = ((frame["step_index"] > frame["step_index"].shift(1)) | boundaries).all()
    if steps_rise and int(boundaries.sum()) == tid.filter(boundaries).n_unique():  # every id opens a run
        return frame
    return frame.sort("trajectory_id", "step_index")


def _per_action(acts: pl.LazyFrame) -> pl.LazyFrame:
    """What every detector reads from a turn's actions JSON, computed once per distinct JSON (turns repeat
    across millions of steps: the regular expressions are the costly part), keyed by its hash `act_h`."""
    return (
        acts.with_columns(
            px=pl.col("act").str.extract(r'"x"\s*:\s*(\d+)', 1).cast(pl.Int32, strict=False),
            py=pl.col("act").str.extract(r'"y"\s*:\s*(\d+)', 1).cast(pl.Int32, strict=False),
            # categorical: detectors test it against lists of names on every step (17x cheaper than strings)
            action_name=pl.col("act").str.extract(_FIRST_ACTION, 1).cast(pl.Categorical),
            targetless=~pl.col("act").str.contains('"target"', literal=True),
            target_name=pl.col("act").str.extract(_TARGET_NAME, 1),
            several=pl.col("act").str.contains("}, {", literal=True) | pl.col("act").str.contains("},{", literal=True),
            # what the turn aims at, whatever its text: the action's name and its target (an answer, a fill of
            # one field); null for a coordinate action (detectors compare its points)
            aim_h=pl.when(~pl.col("act").str.contains(r'"x"\s*:'))
            .then(
                pl.concat_str(
                    pl.col("act").str.extract(_FIRST_ACTION, 1),
                    pl.col("act").str.extract(r'"target"\s*:\s*(\{[^}]*\})', 1).fill_null(""),
                )
            )
            .hash(),
        )
        .with_columns(
            has_call_user=contains_action("call_user"),
            has_terminate=contains_action("terminate"),
            _target_kind=control_kind(pl.col("target_name"), pl.col("act").str.extract(_TARGET_ROLE, 1)),
            _target_generic=generic_name(pl.col("target_name")),
            _command_kind=command_kind(pl.col("act")),
        )
        .drop("act")
    )


def step_features(steps: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """Order once and derive the columns every detector shares, so no detector parses JSON twice."""
    frame = steps.collect(engine=ENGINE) if isinstance(steps, pl.LazyFrame) else steps
    frame = in_trajectory_order(with_missing_columns(frame))
    tid = pl.col("trajectory_id").hash()  # 64-bit: two adjacent trajectories never collide in practice
    lf = frame.lazy().with_row_index("row").with_columns(same_prev=(tid.shift(1) == tid).fill_null(False))
    lf = lf.with_columns(
        traj_no=(~pl.col("same_prev")).cast(pl.UInt32).cum_sum(),
        same_next=pl.col("same_prev").shift(-1).fill_null(False),
        act=pl.col("actions_json").fill_null("[]"),
        tree=pl.when(pl.col("ui_tree_sha").is_not_null()).then(pl.col("ui_tree_sha").hash()),
        shot=pl.when(pl.col("screenshot_sha").is_not_null()).then(pl.col("screenshot_sha").hash()),
        unmapped=pl.col("format_error").str.starts_with(_UNMAPPED).fill_null(False),
    ).with_columns(act_h=pl.when(pl.col("unmapped")).then(pl.col("format_error")).otherwise("act").hash())
    base = lf.collect(engine=ENGINE)
    per_action = _per_action(base.lazy().select("act_h", "act").unique("act_h")).collect(engine=ENGINE)
    at = base["act_h"].replace_strict(  # each step's row in per_action: a hash lookup, then plain gathers
        per_action["act_h"], pl.int_range(per_action.height, eager=True, dtype=pl.UInt32), return_dtype=pl.UInt32
    )
    lf = (
        base.with_columns(**{c: per_action[c].gather(at) for c in per_action.columns if c != "act_h"})
        .lazy()
        .with_columns(
            url_changed=pl.when(
                pl.col("same_next") & pl.col("url").is_not_null() & pl.col("url").shift(-1).is_not_null()
            ).then(pl.col("url") != pl.col("url").shift(-1)),
            tree_changed=_differs_next("tree"),
            shot_changed=_differs_next("shot"),
        )
        .with_columns(
            # an error after which the page's URL moved on did not stop the action: the harness gave up
            # waiting on the navigation it caused (Playwright's "Timeout 500ms exceeded" on a link)
            failed=pl.col("ok").not_().fill_null(False) & ~pl.col("url_changed").fill_null(False),
            is_repeat=pl.col("same_prev")
            & (pl.col("act_h") == pl.col("act_h").shift(1))
            & ((pl.col("act") != "[]") | pl.col("unmapped")),
            changed=pl.coalesce(
                "tree_changed", "shot_changed", pl.when(pl.col("url_changed").fill_null(False)).then(True)
            ),
            unknown=pl.col("same_next")
            & pl.col("tree_changed").is_null()
            & pl.col("shot_changed").is_null()
            & ~pl.col("url_changed").fill_null(False),
        )
        .with_columns(
            ev_rank=pl.when(pl.col("failed"))
            .then(_rank("errors"))
            .when(pl.col("shot_changed").is_not_null())
            .then(_rank("screenshot"))
            .when(pl.col("tree_changed").is_not_null())
            .then(_rank("ui_tree"))
            .when(pl.col("url_changed").fill_null(False))
            .then(_rank("url"))
            .otherwise(_rank("actions")),
        )
    )
    out = _with_model_words(lf.drop("ui_tree_sha", "screenshot_sha", "actions_json").collect(engine=ENGINE))
    return _with_sensitive(out.drop("raw_output").with_columns(first_origin=_first_origin(out)))


def recurs() -> pl.Expr:
    """The turn recurs within REVISIT_WINDOW steps of this one, before or after, in the same trajectory (a
    repeat, or one pass of a cycle of 2-4 turns: tick the box, press Verify, tick the box...); scrolls and
    empty turns never do (scrolling on is reading, see detectors.SCROLL_FACTOR: "the results still show all
    breeds" while scrolling is about the page)."""
    h, t = pl.col("act_h"), pl.col("traj_no")
    # the turn k steps back is this one; k steps ahead is the same comparison made k rows later
    back = {k: (h == h.shift(k)) & (t == t.shift(k)) for k in range(1, REVISIT_WINDOW + 1)}
    again = pl.any_horizontal([e for k, b in back.items() for e in (b, b.shift(-k))]).fill_null(False)
    acted = (pl.col("act") != "[]") | pl.col("unmapped")
    return again & acted & ~pl.col("action_name").is_in(SCROLLS).fill_null(False)


def _with_model_words(features: pl.DataFrame) -> pl.DataFrame:
    """`said_failed`, `said_worked`, `same_turn`, and `target_name` for coordinate clicks from
    the model's words (with `_named_kind`, the sensitive kind of the final target name). Only the rows that
    can use them are searched - coordinate clicks, turns that recur within a few steps (`recurs`: a click by
    element, a typing, a tab switch: the loop detectors read what the next turn says of each) and the steps
    right after one - since raw outputs are the longest text of a step, and each distinct text once (a
    policy's outputs repeat).

    `same_turn`: the step's words are the previous step's, word for word but for their last line (the
    action: ABP's harness logs a turn's thought on each of its actions), and name a count ("Let me click the
    plus button 4 times"): one turn that plans its repeats, not new attempts. Words repeated without a count
    are not enough for that: on the ABP set three labelled loops are re-clicks whose thought the model
    repeated word for word ("Let me click the X button on the cookie banner more precisely" twice)."""
    click = pl.col("targetless") & pl.col("action_name").is_in(CLICKS)
    read = (click | recurs()).fill_null(False) & pl.col("raw_output").is_not_null()
    after = (pl.col("same_prev") & read.shift(1)).fill_null(False) & pl.col("raw_output").is_not_null()
    wanted = features.select(click=(click & read).fill_null(False), rows=read | after)
    rows = wanted["rows"].arg_true()
    picked = features.select("raw_output").gather(rows).with_columns(
        h=pl.col("raw_output").hash(), click=wanted["click"].gather(rows)
    )
    texts = picked.select("h", "raw_output").unique("h")
    picked = picked.drop("raw_output")
    raw = pl.col("raw_output")
    named = pl.coalesce(
        raw.str.extract_all(_SAID_TARGET).list.last().str.extract(_SAID_TARGET, 1),
        raw.str.extract(_SAID_PURPOSE, 1),
    )
    said = texts.select(
        "h",
        failed=raw.str.contains(_SAID_NO_EFFECT),
        worked=raw.str.contains(_SAID_WORKED),
        new=raw.str.contains(_SAID_NEW),
        planned=raw.str.contains("\n", literal=True) & raw.str.contains(_SAID_TIMES),
        words=raw.str.replace(r"\n[^\n]*\z", "").hash(),
        named=named,
    ).with_columns(kind=control_kind(pl.col("named")), generic=generic_name(pl.col("named")))
    said = picked.join(said, on="h", how="left", maintain_order="left").with_columns(
        named=pl.when(pl.col("click")).then("named"),
        kind=pl.when(pl.col("click")).then("kind"),
        generic=pl.when(pl.col("click")).then("generic"),
    )
    n = features.height

    def spread(col: str, dtype: pl.DataType = pl.Boolean, default=False) -> pl.Series:
        return pl.repeat(default, n, dtype=dtype, eager=True).scatter(rows, said[col])

    failed, worked, new = (spread(c).fill_null(False) for c in ("failed", "worked", "new"))
    failed = failed & ~new  # "The right arrow is still visible" after new items appeared: progress
    words = spread("words", pl.UInt64, None)
    same_words = (features["same_prev"] & (words == words.shift(1))).fill_null(False)
    out = features.with_columns(
        same_turn=same_words & spread("planned").fill_null(False),
        said_failed=failed,
        said_worked=(worked & ~failed) | new,
    )
    if said["named"].null_count() == said.height:  # the words name no control: the targets' kinds stand
        # (a target's kind and genericness are null / false where it has no name, as for no words)
        return out.rename({"_target_kind": "_named_kind", "_target_generic": "_named_generic"})
    return out.with_columns(
        _named_kind=pl.when(pl.col("target_name").is_not_null())
        .then(pl.col("_target_kind"))
        # the model's plan names what it saves or creates in the same words ("save the location", "create
        # the report") as often as the control: from its words alone, those (side_effects "change") do not count
        .otherwise(spread("kind", pl.String, None).replace("change", None)),
        _named_generic=pl.when(pl.col("target_name").is_not_null())
        .then(pl.col("_target_generic"))
        .otherwise(spread("generic").fill_null(False)),
        target_name=pl.coalesce(pl.col("target_name"), spread("named", pl.String, None)),
    ).drop("_target_kind", "_target_generic")


def _per_value(values: pl.Series, kind: Callable[[pl.Expr], pl.Expr]) -> pl.Series:
    """`kind` of each value, computed once per distinct value (URLs repeat across millions of steps; the
    regular expressions behind `kind` are the costly part); only values with a kind are looked up."""
    table = pl.DataFrame({"v": values.drop_nulls().unique()}).with_columns(k=kind(pl.col("v"))).drop_nulls("k")
    if table.is_empty():
        return pl.repeat(None, values.len(), dtype=pl.String, eager=True).alias(values.name)
    return values.replace_strict(table["v"], table["k"], default=None, return_dtype=pl.String)


def _with_sensitive(features: pl.DataFrame) -> pl.DataFrame:
    """`sens` and `sens_from` (see the module docstring; `sens_from` is null where `sens` is). Which source
    names the step's kind is decided on every step with booleans; the kinds themselves (strings) are put
    together on the few steps that have one."""
    kinds = _per_value(features["url"], effect_kind)
    observed = nxt(pl.lit(kinds))
    generic = pl.col("_named_generic") & observed.is_null()  # a URL that shows the effect says more
    # the page stayed and the next step typed into it: the control opened a form (Invite members, Create
    # commit...) or the site rejected the submit; either way nothing was committed (needs URLs to tell)
    filling = pl.col("action_name").is_in(_FILLING)
    opened_form = (~pl.col("url_changed") & nxt(filling) & ~prev(filling).fill_null(False)).fill_null(False)
    # a timeout is the harness giving up waiting, not proof the click was not made (Playwright's "Timeout
    # 500ms exceeded" on most submits that reload the page): it does not clear a side effect
    error = pl.col("error")  # literal searches: a regular expression here cost 0.07 CPU-s per 500k steps
    timed_out = (error.str.contains("imeout", literal=True) | error.str.contains("imed out", literal=True)).fill_null(False)
    flags = features.select(
        manifest=pl.col("sensitive").is_not_null(),
        named=~opened_form & (~pl.col("_named_generic") | generic) & pl.col("_named_kind").is_not_null(),
        command=pl.col("_command_kind").is_not_null(),
        observed=observed.is_not_null(),
        generic=generic,
        done=~pl.col("failed") | timed_out,
    )
    rows = flags.select(
        pl.col("done") & (pl.col("manifest") | pl.col("named") | pl.col("command") | pl.col("observed"))
    ).to_series().arg_true()
    here = pl.DataFrame(
        {
            "sensitive": features["sensitive"].gather(rows),
            "kind": features["_named_kind"].gather(rows),
            "command_kind": features["_command_kind"].gather(rows),
            "next_kind": kinds.shift(-1).gather(rows),
            **{c: flags[c].gather(rows) for c in ("manifest", "named", "command", "observed")},
        }
    ).select(
        # a command or the save chord names its effect itself: no form to open, no generic word to ask about
        sens=pl.coalesce(
            "sensitive", pl.when("named").then("kind"), "command_kind", pl.when("observed").then("next_kind")
        ),
        sens_from=pl.when("manifest")
        .then(pl.lit("manifest"))
        .when(pl.col("named") | pl.col("command"))
        .then(pl.lit("actions"))
        .otherwise(pl.lit("url")),
    )

    def spread(values: pl.Series) -> pl.Series:  # scatter works in place: a new series each
        nulls = pl.repeat(None, features.height, dtype=pl.String, eager=True)
        return nulls.scatter(rows, values) if rows.len() else nulls

    return features.with_columns(  # categorical: detectors compare kinds with names on every step
        sens=spread(here["sens"]).cast(pl.Categorical),
        sens_from=spread(here["sens_from"]).cast(pl.Categorical),
        # the kind rests on a name that says only that a form is sent (side_effects.GENERIC_WORDS)
        sens_generic=~flags["manifest"] & flags["named"] & flags["generic"],
    ).drop("_named_kind", "_named_generic", "_command_kind")


def _first_origin(features: pl.DataFrame) -> pl.Series:
    """Each step's trajectory's first URL origin (scheme://host), "" when that URL is missing: extracted at
    the trajectory starts only, then carried forward."""
    starts = features["same_prev"].not_().arg_true()
    origins = features["url"].gather(starts).str.extract(ORIGIN, 1).fill_null("")
    return origins.gather(features["traj_no"] - 1)  # traj_no numbers the starts from 1, in row order


def attach_trajectories(features: pl.DataFrame, trajectories: pl.DataFrame) -> pl.DataFrame:
    """Keep the steps of `trajectories` only and give every step its trajectory's `verdict` and
    `reference_len`, by trajectory number (a gather, not a join over the steps)."""
    firsts = features.select("traj_no", "trajectory_id", "same_prev").filter(~pl.col("same_prev"))
    known = trajectories.select(
        "trajectory_id",
        *(
            pl.col(c) if c in trajectories.columns else pl.lit(None, t).alias(c)
            for c, t in OPTIONAL_COLUMNS.items()
        ),
    )
    info = firsts.join(
        known.with_columns(_keep=pl.lit(True)), on="trajectory_id", how="left", maintain_order="left"
    )
    info = pl.concat(
        [pl.DataFrame({"_keep": [False]}), info.select("_keep", *OPTIONAL_COLUMNS)], how="diagonal_relaxed"
    ).rechunk()  # traj_no counts from 1: row 0 is padding (one chunk: a gather over two costs 2.5x)
    at = features["traj_no"]
    out = features.with_columns(**{c: info[c].cast(t).gather(at) for c, t in OPTIONAL_COLUMNS.items()})
    keep = info["_keep"].fill_null(False)
    return out if keep[1:].all() else out.filter(keep.gather(at))


def as_features(steps: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame:
    """Detectors accept raw steps or already-derived features (the miner derives them once)."""
    names = steps.collect_schema().names() if isinstance(steps, pl.LazyFrame) else steps.columns
    return steps.lazy() if "traj_no" in names else step_features(steps).lazy()
