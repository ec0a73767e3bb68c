"""Evidence-graded findings, side effects recognised without a manifest, and no false "no effect": step
frames built here in the shapes foreign logs arrive in (actions only; + URL; + UI tree; + screenshot)."""

import json

import polars as pl

from flows.failure_mining import detectors as d
from tests.flows.test_mining import DONE, URL, click, click_at, frame, reasons, step, type_, undecided

BLIND = dict(tree=False, shot=False)


def _loop(found: pl.DataFrame) -> dict:
    return found.filter(pl.col("kind") == "loop").row(0, named=True)


def test_a_loop_from_actions_alone_gains_confidence_with_each_repeat_and_says_what_it_rests_on():
    def repeated(n):
        return [step(click_at(500, 500), "s", **BLIND) for _ in range(n)] + [step(DONE, "s", **BLIND)]

    found = d.detect_exact_repeats(frame(("three", repeated(3)), ("five", repeated(5)), ("two", repeated(2))))
    by_id = {r["trajectory_id"]: r for r in found.iter_rows(named=True)}
    assert set(by_id) == {"three", "five"}
    assert by_id["three"]["confidence"] < by_id["five"]["confidence"]
    assert {r["evidence_level"] for r in by_id.values()} == {"actions"}


def test_near_identical_re_clicks_are_a_loop_with_less_confidence_than_identical_ones():
    near = [step(click_at(500 + i * 3, 400 - i), "s", **BLIND) for i in range(4)] + [step(DONE, "s", **BLIND)]
    same = [step(click_at(500, 400), "s", **BLIND) for _ in range(4)] + [step(DONE, "s", **BLIND)]
    apart = [step(click_at(100 + i * 200, 400), "s", **BLIND) for i in range(4)] + [step(DONE, "s", **BLIND)]
    found = d.detect_exact_repeats(frame(("near", near), ("same", same), ("apart", apart)))
    conf = dict(found.select("trajectory_id", "confidence").iter_rows())
    assert set(conf) == {"near", "same"} and conf["near"] < conf["same"]
    assert json.loads(found.filter(pl.col("trajectory_id") == "near")["evidence"][0])["identical"] is False


def test_scrolling_on_is_reading_from_actions_alone_and_a_loop_only_when_the_screen_stays():
    scroll = {"action": "scroll", "pixels": -400}
    steps = frame(
        ("reading", [step(scroll, "s", **BLIND) for _ in range(8)] + [step(DONE, "s", **BLIND)]),
        ("stuck", [step(scroll, "end") for _ in range(4)] + [step(DONE, "end")]),
    )
    found = d.detect_exact_repeats(steps)
    assert found["trajectory_id"].to_list() == ["stuck"] and found["evidence_level"][0] in (
        "ui_tree",
        "screenshot",
    )
    assert undecided(steps)["exact_repeat"] == 1  # the blind run: even actions cannot tell


def test_a_scroll_search_the_words_call_vain_three_times_is_a_loop_and_reading_on_is_not():
    """mining-11, the labels' scroll search: the same scroll again and again while the words after each say
    the target is still not there is a loop from the words (3 such reports: one more than a click needs);
    words that name what came into view, a search that ends after two vain scrolls, or the words of a
    conditional plan are not."""
    scroll = {"action": "scroll", "pixels": -300}

    def searching(words: list[str]) -> list[dict]:
        steps = [step(scroll, "s", **BLIND)]
        for w in words:  # each step's words say what the scroll before it did, then it scrolls again
            steps.append(dict(step(scroll, "s", **BLIND), raw_output=f"{w}\nscroll down"))
        return steps[:-1] + [dict(step(DONE, "s", **BLIND), raw_output=f"{words[-1]}\ndone")]

    vain = "Scrolled down to locate the brightness slider; however, it was not found in the current view."
    steps = frame(
        ("vain", searching([vain] * 5)),
        ("vain, in Chinese", searching(["继续向下滚动，仍未找到“Videos”选项。"] * 5)),
        ("reading on", searching(["The page scrolled down to reveal a section on colours; prices are still not visible."] * 5)),
        ("found it", searching([vain, vain, "Now the slider is visible."])),
        ("planning", searching(["Find the model in the list. If it's not visible, scroll down. Successfully scrolled."] * 5)),
    )
    found = d.detect_exact_repeats(steps)
    assert sorted(found.select("trajectory_id", "evidence_level").rows()) == [
        ("vain", "reasoning"),
        ("vain, in Chinese", "reasoning"),
    ]
    assert d.MIN_SCROLL_REPORTS == 3


def test_a_click_re_aimed_after_the_model_says_it_did_not_work_is_a_loop_the_model_reported():
    tries = [
        dict(step(click_at(500, 500), "s", **BLIND), raw_output='Let me click "Accept".'),
        dict(
            step(click_at(530, 510), "s", **BLIND),
            raw_output="The banner is still showing. Let me click more precisely.",
        ),
        dict(step(click_at(505, 530), "s", **BLIND), raw_output="It didn't work. Let me try again."),
        dict(step(DONE, "s", **BLIND), raw_output="The banner is still showing; giving up."),
    ]
    moving_on = [dict(r, raw_output="Now I can see the next page.") for r in tries]
    found = d.detect_exact_repeats(frame(("stuck", tries), ("progress", moving_on)))
    assert found["trajectory_id"].to_list() == ["stuck"]
    assert found["evidence_level"][0] == "reasoning" and found["confidence"][0] > 0.9


def test_screens_confirm_a_loop_or_clear_it_and_the_finding_names_the_evidence():
    nxt = click("Next", "link")
    steps = frame(
        ("confirmed", [step(nxt, "s0"), step(nxt, "s1"), step(nxt, "s1"), step(DONE, "s1")]),
        ("cleared", [step(nxt, f"p{i}") for i in range(4)] + [step(DONE, "p4")]),
        (
            "by_url",
            [step(nxt, "x", url=f"http://h/list?page={i}", **BLIND) for i in range(4)]
            + [step(DONE, "x", url="http://h/list?page=4", **BLIND)],
        ),
    )
    found = d.detect_exact_repeats(steps)
    assert found["trajectory_id"].to_list() == ["confirmed"]
    assert _loop(found)["evidence_level"] in ("ui_tree", "screenshot") and _loop(found)["confidence"] > 0.9


def test_state_changing_controls_are_side_effects_and_unconfirmed_without_consent_or_a_question():
    steps = frame(
        ("delete", [step(click("Delete account"), "s0", **BLIND), step(DONE, "s1", **BLIND)]),
        ("asked", [step(click("Book now"), "s0", **BLIND), step(DONE, "s1", **BLIND)]),
        ("german", [step(click("Jetzt kaufen"), "s0", **BLIND), step(DONE, "s1", **BLIND)]),
        ("search", [step(click("Search"), "s0", **BLIND), step(DONE, "s1", **BLIND)]),
    ).with_columns(
        instruction=pl.col("trajectory_id").replace_strict(
            {
                "delete": "Show my settings",
                "asked": "Book a table for two at 7pm",
                "german": "Zeig mir Schuhe",
                "search": "Find shoes",
            }
        )
    )
    found = d.detect_all(steps)
    assert reasons(found, side_effects=True) == [
        ("asked", "side_effect", "state_change", 0, 0),
        ("delete", "sensitive", "unconfirmed_sensitive", 0, 0),
        ("delete", "side_effect", "state_change", 0, 0),
        ("german", "sensitive", "unconfirmed_sensitive", 0, 0),
        ("german", "side_effect", "state_change", 0, 0),
    ]
    effect = found.filter((pl.col("trajectory_id") == "delete") & (pl.col("kind") == "side_effect")).row(
        0, named=True
    )
    assert json.loads(effect["evidence"])["sensitive"] == "delete" and effect["evidence_level"] == "actions"


def test_a_coordinate_click_is_named_by_the_model_and_a_confirmation_url_is_an_observed_effect():
    said = dict(
        step(click_at(700, 800), "s0", **BLIND), raw_output='The cart is ready. Let me click "Place order".'
    )
    steps = frame(
        ("said", [said, step(DONE, "s1", **BLIND)]),
        (
            "url",
            [
                step(click_at(10, 10), "s0", url="http://shop/cart", **BLIND),
                step(DONE, "s1", url="http://shop/order/confirmation?id=7", **BLIND),
            ],
        ),
    )
    found = d.detect_side_effects(steps)
    assert dict(found.select("trajectory_id", "evidence_level").iter_rows()) == {
        "said": "actions",
        "url": "url",
    }
    assert [json.loads(e)["sensitive"] for e in found.sort("trajectory_id")["evidence"]] == ["pay", "confirm"]


def test_a_manifest_wins_and_a_failed_action_changed_nothing():
    steps = frame(
        ("manifest", [step(click("Go"), "s0", sensitive="transfer"), step(DONE, "s1")]),
        ("failed", [step(click("Delete"), "s0", ok=False, error="no such element"), step(DONE, "s0")]),
    )
    found = d.detect_side_effects(steps)
    assert found.select("trajectory_id", "evidence_level").rows() == [("manifest", "manifest")]


def test_native_inputs_focus_and_an_unchanged_ui_tree_alone_are_not_hit_nothing():
    no_shot = dict(shot=False)
    steps = frame(
        # a native date input: the click opens the browser's own picker, the tree stays as it was, then typing
        (
            "date",
            [
                step(click_at(300, 200), "s0", **no_shot),
                step({"action": "key", "keys": ["2"]}, "s0"),
                step(DONE, "s1"),
            ],
        ),
        # a click on a label or a re-chosen option: nothing in the tree changes, and there is no screenshot
        (
            "label",
            [
                step(click_at(300, 260), "s0", **no_shot),
                step(click("Save"), "s0", **no_shot),
                step(DONE, "s1"),
            ],
        ),
        # the screenshot and the tree both unchanged: proof
        ("corner", [step(click_at(990, 990), "s0"), step(click("Save"), "s0"), step(DONE, "s1")]),
        # clicking the same spot again: the loop detectors judge it, not bad_args
        ("again", [step(click_at(300, 300), "s0"), step(click_at(302, 301), "s0"), step(DONE, "s1")]),
    )
    assert reasons(d.detect_click_hit_nothing(steps)) == [("corner", "bad_args", "click_hit_nothing", 0, 0)]
    assert undecided(steps)["click_hit_nothing"] == 1  # the label click: counted, not guessed


def _said(action: dict, words: str) -> dict:
    """A blind step (actions only) with the model's words and its action as one raw output, as imports keep them."""
    return dict(step(action, "s", **BLIND), raw_output=f"{words}\nClick")


def test_calls_refused_one_after_another_whatever_they_are_are_a_failing_stretch():
    """mining-9: the device list, then the app list, then opening the app, each refused by the harness -
    one goal pursued call after call; an unmapped tool lookup between them (no error) does not break the
    stretch, a call that worked does."""
    refused = "Error: no device selected"

    def shell(name: str, ok: bool = False) -> dict:
        return step({"action": "shell", "command": name}, "s", ok=ok, error=None if ok else refused, **BLIND)

    lookup = dict(step(None, "s", format_error="unmapped_action: ToolSearch", **BLIND))
    stuck = [shell("devices"), shell("apps"), lookup, shell("open BenchTarget"), shell("doctor"), step(DONE, "s", **BLIND)]
    broken = [shell("devices"), shell("apps"), shell("status", ok=True), shell("open BenchTarget"), step(DONE, "s", **BLIND)]
    found = d.detect_failing_stretches(frame(("stuck", stuck), ("broken", broken)))
    assert found.select("trajectory_id", "first_step", "last_step", "evidence_level").rows() == [
        ("stuck", 1, 4, "errors")
    ]


def test_tries_the_next_words_say_did_not_work_are_a_failing_stretch_with_one_refusal_or_five_in_a_row():
    """mining-11: different tries in a row, each followed by words saying it did not work, are a failing
    stretch when the harness refused one of them (3 steps: errors) or, from the words alone, when they go on
    for MIN_SAID_FAILING steps (reasoning); four tries the words call failed, none refused, are not (an agent
    still looking); a try that worked breaks the stretch."""
    failing, fine = "That did not work, the menu is still closed.", "Good, the menu is open now."
    points = [(100, 100), (400, 120), (700, 500), (200, 800), (900, 300), (500, 900)]

    def tries(n: int, refused_at: int | None = None, worked_at: int | None = None) -> list[dict]:
        out = []
        for i, (x, y) in enumerate(points[:n]):
            s = step(click_at(x, y), "s", **BLIND)
            if i == refused_at:
                s.update(ok=False, error="Element is not attached to the DOM")
            if i:  # the words of each step say what the try before it did
                s["raw_output"] = f"{fine if i - 1 == worked_at else failing}\nClick"
            out.append(s)
        last = dict(step(DONE, "s", **BLIND), raw_output=f"{fine if n - 1 == worked_at else failing}\nDone")
        return out + [last]

    found = d.detect_failing_stretches(
        frame(
            ("refused once", tries(3, refused_at=1)),
            ("words, four", tries(4)),
            ("words, five", tries(5)),
            ("one worked", tries(5, worked_at=2)),
        )
    )
    assert sorted(found.select("trajectory_id", "first_step", "last_step", "evidence_level").rows()) == [
        ("refused once", 1, 2, "errors"),
        ("words, five", 1, 4, "reasoning"),
    ]
    assert d.MIN_SAID_FAILING == 5


def test_the_unlock_gesture_tried_again_after_other_tries_is_a_loop_and_a_list_swiped_on_is_not():
    """mining-13: a swipe up from the bottom edge (the unlock / home gesture) three times, a tap or Home
    between, its coordinates varying each time, is a loop from actions alone; the same swipes one after
    another with only screenshots between scroll a list; typing between them is a form filled between
    screens; two tries are not enough; a gesture from mid-screen is no edge gesture."""

    def swipe(y: int, y2: int) -> dict:
        return step({"action": "swipe", "x": 500, "y": y, "x2": 500, "y2": y2}, "s", **BLIND)

    look = step({"action": "screenshot"}, "s", **BLIND)
    tap = step({"action": "tap", "x": 500, "y": 500}, "s", **BLIND)
    home = step({"action": "system_button", "button": "home"}, "s", **BLIND)
    typed = step({"action": "type", "text": "hello"}, "s", **BLIND)
    end = step(DONE, "s", **BLIND)
    found = d.detect_gesture_retries(
        frame(
            ("keyguard", [swipe(950, 50), look, home, tap, swipe(990, 10), look, tap, swipe(900, 100), look, end]),
            ("scrolling", [swipe(950, 50), look, swipe(950, 50), look, swipe(950, 50), look, tap, end]),
            ("form", [swipe(950, 50), tap, typed, swipe(950, 50), tap, typed, swipe(950, 50), end]),
            ("twice", [swipe(950, 50), tap, home, swipe(990, 10), tap, end]),
            ("mid-screen", [swipe(600, 100), tap, swipe(600, 100), home, swipe(600, 100), end]),
            ("far apart", [swipe(950, 50), *[tap] * 9, swipe(950, 50), tap, swipe(950, 50), end]),
        )
    )
    assert found.select("trajectory_id", "first_step", "last_step", "reason", "evidence_level").rows() == [
        ("keyguard", 4, 7, "gesture_retry", "actions")
    ]
    assert json.loads(found["evidence"][0])["gestures"] == 3 and found["confidence"][0] == 0.7


def test_turns_that_run_nothing_because_the_task_is_done_are_no_loop_but_a_replanned_aim_is():
    """mining-11: an agent that says the task is complete and runs nothing, turn after turn, while its harness
    keeps it going (each turn rejected: nothing to run) is finished, not trying again; the same turns
    re-planning one click the harness cannot run are a loop."""
    def idle(words: str) -> dict:
        return dict(
            step(None, "s", ok=False, error="the harness ran no action", format_error="unmapped_action: no_action(...)", **BLIND),
            raw_output=f"{words}\nNone",
        )

    done = "Since the task has been successfully completed, no further actions are required."
    again = "I need to click the Submit button to send the form."
    steps = frame(
        ("done", [step(click("Submit"), "s", **BLIND)] + [idle(done) for _ in range(5)]),
        ("replanned", [step(click("Submit"), "s", **BLIND)] + [idle(again) for _ in range(5)]),
    )
    loops = d.detect_all(steps).filter(pl.col("kind") == "loop")
    assert loops["trajectory_id"].unique().to_list() == ["replanned"]


def test_one_loop_found_by_several_rules_is_one_finding_named_by_the_most_telling_rule():
    """A click refused four times is an exact repeat and a failing stretch: one loop, reported once, as
    exact_repeat (it says what was repeated); the evaluation counts it once too."""
    refused = [step(click("Save"), "s", ok=False, error="Timeout", **BLIND) for _ in range(4)]
    found = d.detect_all(frame(("t", refused + [step(DONE, "s", **BLIND)])))
    loops = found.filter(pl.col("kind") == "loop")
    assert loops.select("reason", "first_step", "last_step", "evidence_level").rows() == [
        ("exact_repeat", 1, 3, "errors")
    ]


def test_a_first_attempt_the_next_turn_reports_failed_counts_toward_the_loop():
    tries = [
        _said(click_at(300, 700), 'Let me click "Gold" to filter.'),
        _said(
            click_at(300, 700),
            "The filter wasn't applied - the results still show 71. Let me click it again.",
        ),
        _said(click_at(300, 680), "It still shows 71. Let me click more precisely."),
        _said(DONE, "The Gold filter has been applied: 29 results."),  # the last attempt worked
    ]
    found = d.detect_exact_repeats(frame(("gold", tries)))
    assert found["trajectory_id"].to_list() == ["gold"]  # 2 failed attempts: the original and one repeat
    assert (found["first_step"][0], found["last_step"][0]) == (1, 2)


def test_repeats_one_turn_plans_are_one_attempt_but_words_repeated_verbatim_are_not_enough():
    plan = "The counter is at 0. I need 4 people. Let me click the plus button 4 times."
    planned = [_said(click_at(480, 300), plan) for _ in range(4)] + [_said(DONE, "The counter shows 4.")]
    again = "Let me click the X on the cookie banner more precisely."
    stuck = [_said(click_at(700, 600), "Let me close the cookie banner.")]
    stuck += [_said(click_at(700, 600), again) for _ in range(3)] + [
        _said(DONE, "The banner is still showing.")
    ]
    found = d.detect_exact_repeats(frame(("planned", planned), ("stuck", stuck)))
    assert found["trajectory_id"].to_list() == ["stuck"]


def test_repeats_with_no_words_of_their_own_after_a_turn_that_planned_them_carry_the_plan_out():
    """mining-9: a transcript logs each tool call of a turn; the first carries the words ("I need 3 more taps
    to reach 5"), the rest only the call. Those repeats are the plan, not new attempts - unless words of
    their own say one failed, or no turn planned them."""
    call = 'nerve_tap {"x": 642, "y": 355}'

    def tapped(first: str, rest: list[str | None]) -> list[dict]:
        steps = [dict(step(click_at(636, 158), "s", **BLIND), raw_output=f"{first}\n{call}")]
        steps += [dict(step(click_at(636, 158), "s", **BLIND), raw_output=w or call) for w in rest]
        return steps + [_said(DONE, "The quantity is 5.")]

    planned = tapped("Quantity is now 2. I need 3 more taps to reach 5.", [None, None, None])
    unplanned = tapped("Quantity is now 2.", [None, None, None])
    failing = f"The quantity did not change, it still shows 2.\n{call}"
    reported = tapped("Quantity is now 2. I need 3 more taps to reach 5.", [failing, failing, None])
    found = d.detect_exact_repeats(frame(("planned", planned), ("unplanned", unplanned), ("reported", reported)))
    assert sorted(found["trajectory_id"].to_list()) == ["reported", "unplanned"]


def test_repeats_the_instruction_asks_for_are_no_loop_from_actions_alone_but_reported_failures_stay():
    """mining-10: "tap Ping three times", "5 iterations": repeats seen from actions alone are the task's; a
    question, a product or a condition is no request to repeat, and errors still make the repeats a loop."""

    def tapped(instruction: str, error: str | None = None) -> list[dict]:
        taps = [dict(step(click_at(192, 250), "s", ok=error is None, error=error, **BLIND)) for _ in range(3)]
        return [dict(s, instruction=instruction) for s in [*taps, step(DONE, "s", **BLIND)]]

    asked = "Launch the app on the watch, tap its Ping button three times, and report the counter."
    found = d.detect_all(
        frame(
            ("asked", tapped(asked)),
            ("asked_de", tapped("Tippe 3 Mal auf Ping und nenne den Zähler.")),
            ("refused", tapped(asked, error="Device is already in use")),
            ("plain", tapped("Tap the Ping button and report the counter.")),
            ("question", tapped("Count how many times the Ping button appears.")),
            ("product", tapped("Report a rating 20 times their stars after tapping Ping.")),
        )
    )
    loops = found.filter(pl.col("kind") == "loop")
    assert sorted(loops["trajectory_id"].to_list()) == ["plain", "product", "question", "refused"]
    assert loops.filter(pl.col("trajectory_id") == "refused")["evidence_level"].to_list() == ["errors"]


def test_a_request_to_repeat_is_read_in_other_languages_and_abuse_of_the_pattern_stays_cheap():
    for text in ("点击三次 Ping, 然后按 5次", "Ping を 3回 タップ", "Ping 버튼을 여러 번 누르세요", "appuyez 3 fois", "нажмите 3 раза"):
        assert d.asked_to_repeat(text), text
    for text in (None, "", "Every time I open it, it forgets the page.", "how many times does it appear", "第3次"):
        assert not d.asked_to_repeat(text), text
    assert not d.asked_to_repeat("times " * 200_000 + "x")  # a long instruction with no count: no match, quickly


def test_new_content_named_after_a_stepping_control_is_progress_even_if_the_control_is_still_visible():
    said = ["Let me click the right arrow of the carousel."] + [
        f"{name} appeared. The right arrow is still visible, let me continue."
        for name in ("ARCADE", "COVEN", "K/DA")
    ]
    stepping = [_said(click_at(950, 550), w) for w in said] + [_said(DONE, "That was the last skin.")]
    stuck = [_said(click_at(950, 550), w.replace("appeared", "did not change")) for w in said]
    found = d.detect_exact_repeats(
        frame(("stepping", stepping), ("stuck", stuck + [_said(DONE, "Giving up.")]))
    )
    assert found["trajectory_id"].to_list() == ["stuck"]


def test_the_next_turns_words_decide_a_repeated_click_by_element_too():
    accept = click("Alle akzeptieren")
    words = [
        "Let me accept the cookies.",
        "The consent form is still showing.",
        "The consent form is still showing.",
    ]
    stuck = [_said(accept, w) for w in words] + [_said(DONE, "The consent form is still showing.")]
    found = d.detect_exact_repeats(frame(("stuck", stuck)))
    assert found["evidence_level"].to_list() == ["reasoning"] and found["confidence"][0] > 0.9


def test_a_cycle_of_turns_the_model_reports_failing_is_a_loop_without_screens():
    """mining-5: tick the box, press Verify, tick the box, ... each pass reported failed (proxy-lite on a
    CAPTCHA), also when a pass varies one of its turns (another tile); the same cycle whose passes the model
    reports working is not one, nor is a turn tried again after a detour through two turns that never recur
    (accept, sign in, go back, accept)."""
    tick, verify = click("I'm not a robot", "checkbox"), click("Verify")
    failing = "The previous attempt to click it was not successful; the challenge is still present."
    cycle = [_said(a, "Let me solve the challenge." if i == 0 else failing) for i, a in
             enumerate([tick, verify] * 3)]
    working = [_said(a, "Success - the next challenge is shown.") for a in [tick, verify] * 3]
    tiles = [click(f"Tile {i}", "checkbox") for i in range(3)]  # a pass may vary one turn: another tile
    varying = [_said(a, failing) for i in range(3) for a in (tick, tiles[i], verify)]
    accept, sign_in, back = click("Accept all"), click("Sign in", "link"), {"action": "go_back"}
    detour = [_said(a, failing) for a in (accept, accept, sign_in, back, accept)]
    steps = frame(
        ("cycle", [*cycle, _said(DONE, failing)]),
        ("varying", [*varying, _said(DONE, failing)]),
        ("working", [*working, _said(DONE, "Done.")]),
        ("detour", [*detour, _said(DONE, "The page moved on.")]),
    )
    found = d.detect_short_cycles(steps)
    assert reasons(found) == [  # from the second pass to the last
        ("cycle", "loop", "short_cycle", 2, 5),
        ("varying", "loop", "short_cycle", 3, 8),
    ]
    assert found["evidence_level"].to_list() == ["reasoning", "reasoning"]
    assert json.loads(found.sort("trajectory_id")["evidence"][0])["passes"] == 3


def test_agents_verdicts_on_their_last_step_are_read_as_failure_or_success():
    """mining-5: "Failed - ..." (Browser-Use's evaluation of the previous goal), "failure The previous action
    failed ..." (Notte), "was not successful" / "did not succeed" / "was not executed" (proxy-lite)."""
    accept = click("Accept")
    for verdict in (
        "Failed - the banner is there.",
        "failure The previous action failed because the selector was invalid.",
        "The previous click on 'Accept' was not executed due to a page change.",
        "The previous attempt did not succeed; we are on the same page.",
    ):
        stuck = [_said(accept, "Let me accept.")] + [_said(accept, verdict) for _ in range(3)]
        found = d.detect_exact_repeats(frame(("stuck", [*stuck, _said(DONE, verdict)])))
        assert found["evidence_level"].to_list() == ["reasoning"], verdict
    worked = [_said(accept, "Let me accept.")] + [_said(accept, "Success - accepted.") for _ in range(3)]
    assert d.detect_exact_repeats(frame(("fine", [*worked, _said(DONE, "Done.")]))).is_empty()


def test_an_action_the_importer_could_not_map_repeats_by_its_name():
    """mining-5: switch_tab() five times, each reported failed, is a loop though our action space has no
    tab switch (an empty actions JSON, named by its `unmapped_action` format error); different unmapped
    actions are not repeats of each other, and an unchanged screen or the actions alone do not decide."""
    def unmapped(name: str, words: str) -> dict:
        row = _said(None, words)
        return dict(row, format_error=f"unmapped_action: {name}(...)")

    failing = "Failed - still on the blog page, not the dictionary."
    tabs = [unmapped("switch_tab", "Let me switch tabs.")] + [unmapped("switch_tab", failing) for _ in range(4)]
    mixed = [unmapped(n, failing) for n in ("switch_tab", "wait", "extract_content", "reload", "scrape")]
    found = d.detect_exact_repeats(frame(("tabs", tabs + [_said(DONE, failing)]), ("mixed", mixed)))
    assert reasons(found) == [("tabs", "loop", "exact_repeat", 1, 4)]
    assert d.detect_format_errors(frame(("tabs", tabs))).is_empty()  # still not the agent's error
    # what an unmapped action does is unknown: waiting while a page loads leaves the screen as it was, and
    # from actions alone repeating it says nothing; only the model's words or errors can tell
    waits = [dict(step(None, "s0"), format_error="unmapped_action: wait(...)") for _ in range(4)]
    blind = [dict(w, ui_tree_sha=None, screenshot_sha=None) for w in waits]
    steps = frame(("same screen", [*waits, step(DONE, "s1")]), ("blind", [*blind, step(DONE, "s1", **BLIND)]))
    assert d.detect_exact_repeats(steps).is_empty()


def test_a_link_opens_a_flow_and_a_bare_submit_is_a_side_effect_only_when_asked_for_or_seen():
    """mining-5: a link named Buy or Sign up opens the store's configurator or the sign-up form (commits
    nothing); a link that adds to the cart may commit by itself. A control named only "Submit" is a search
    as often as a sign-up: it counts when the instruction asks for a submission or the URL it led to shows
    one; a name that says what it sends counts anyway."""

    def one(action, instruction, then_url=URL):
        return [dict(step(action, "s0", **BLIND), instruction=instruction),
                dict(step(DONE, "s1", url=then_url, **BLIND), instruction=instruction)]

    submit = click("submit")
    steps = frame(
        ("buy link", one(click("Buy", "link"), "Compare the prices of laptops")),
        ("buy button", one(click("Buy now"), "Compare the prices of laptops")),
        ("cart link", one(click("Add to cart", "link"), "Compare the prices of laptops")),
        ("search", one(submit, "Find the release date of the film")),
        ("asked", one(submit, "Submit a request for a renewal of my licence")),
        ("seen", one(submit, "Find the release date", then_url="http://shop/order/confirmation?id=7")),
        ("said", one(click_at(700, 800), "Find the release date")),
        ("message", one(click("Send message"), "Find the release date")),
    )
    steps = steps.with_columns(
        raw_output=pl.when(pl.col("trajectory_id") == "said").then(pl.lit('Let me click "Submit".'))
    )
    found = d.detect_side_effects(steps)
    kinds = {r["trajectory_id"]: json.loads(r["evidence"])["sensitive"] for r in found.iter_rows(named=True)}
    assert kinds == {
        "buy button": "pay",
        "cart link": "cart",
        "asked": "send",
        "seen": "confirm",
        "message": "send",
    }


def test_a_stepping_control_pressed_again_is_no_loop_from_actions_alone():
    """mining-5: Next, a calendar's next month, a counter's + pressed 5 times is paging or stepping; from
    actions alone it is undecidable (like scrolling), a loop only when the model says it did nothing."""
    def pressed(name: str, words: str | None = None) -> list[dict]:
        rows = [dict(step(click(name), "s", **BLIND), raw_output=words) for _ in range(5)]
        return [*rows, dict(step(DONE, "s", **BLIND), raw_output=words)]

    steps = frame(
        ("next", pressed("Next month")),
        ("plus", pressed("+")),
        ("stuck", pressed("Next", "The calendar still shows March.")),
        ("other", pressed("Accept")),
    )
    assert sorted(d.detect_exact_repeats(steps)["trajectory_id"].to_list()) == ["other", "stuck"]
    assert undecided(steps.filter(pl.col("trajectory_id").is_in(["next", "plus"])))["exact_repeat"] == 2


def test_a_failed_repeat_the_model_also_reports_failed_rests_on_the_errors():
    """The strongest evidence names the finding: the harness said the clicks failed, the words agree."""
    link = click("Orders", "link")
    tries = [_said(link, "Let me open the orders.")] + [
        dict(_said(link, "failure The previous action failed."), ok=False, error="left_click: no such element")
        for _ in range(3)
    ]
    found = d.detect_exact_repeats(frame(("t", [*tries, _said(DONE, "failure The previous action failed.")])))
    assert found["evidence_level"].to_list() == ["errors"]


def _one(action, instruction="Find the release date", *, then=None, **kw) -> list[dict]:
    """An action, then `then` (or stopping), in a trajectory with that instruction."""
    first = dict(step(action, "s0", **BLIND, **kw), instruction=instruction)
    return [first, dict(step(then or DONE, "s1", **BLIND), instruction=instruction)]


def _side_effects(steps: pl.DataFrame) -> dict:
    found = d.detect_side_effects(steps)
    return {(r["trajectory_id"], r["first_step"]): json.loads(r["evidence"])["sensitive"] for r in found.iter_rows(named=True)}


def test_saving_creating_voting_and_wish_lists_are_side_effects_but_a_link_to_the_form_is_not():
    """mining-6: the edit and create forms of self-hosted apps (WebArena's GitLab, forum, shop admin) change
    data with Save, Create ..., Commit, Upvote, Follow, Invite; a link so named opens the form; the model's
    plan alone ("save the location") does not name a control."""
    steps = frame(
        ("save", _one(click("Save"))),
        ("create", _one(click("Create issue"))),
        ("vote", _one(click("Upvote"))),
        ("lock", _one(click("Lock event"))),  # mining-14: locking an event, a thread, an account
        ("merge", _one(click("Merge"))),  # mining-14: a merge request merged
        # mining-14: json.dumps writes 保存 as \u4fdd\u5b58 in the actions JSON: the name is read decoded
        ("escaped", _one(click("保存"))),
        # mining-14: a describing harness's name longer than 120 characters still names its control
        ("described", _one(click("upvote arrow button to the left of the first post titled " + "very long " * 12))),
        ("wish", _one(click("Add to Wish List"))),
        ("reorder", _one(click("Reorder", "link"))),
        ("new issue link", _one(click("Create issue", "link"))),
        ("rating filter", _one(click("1 star", "link"))),
    )
    said = frame(("said", _one(click_at(700, 800)))).with_columns(raw_output=pl.lit('Let me click "Save location".'))
    assert _side_effects(pl.concat([steps, said], how="diagonal_relaxed")) == {
        ("save", 0): "change",
        ("create", 0): "change",
        ("vote", 0): "change",
        ("lock", 0): "change",
        ("merge", 0): "change",
        ("escaped", 0): "change",
        ("described", 0): "change",
        ("wish", 0): "cart",
        ("reorder", 0): "cart",
    }


def test_an_error_after_which_the_page_moved_on_did_not_stop_the_action():
    """mining-6: a harness that waits on the navigation a click causes reports a timeout though the click
    was made; the next step's URL shows it. Without a URL change the error still means nothing happened."""
    moved = [
        step(click("Delete"), "s0", ok=False, error="Error: element is not attached", url="http://h/item/1", **BLIND),
        step(DONE, "s1", url="http://h/items", **BLIND),
    ]
    stayed = [
        step(click("Delete"), "s0", ok=False, error="Error: element is not attached", url="http://h/item/1", **BLIND),
        step(DONE, "s0", url="http://h/item/1", **BLIND),
    ]
    assert _side_effects(frame(("moved", moved), ("stayed", stayed))) == {("moved", 0): "delete"}


def test_a_timeout_does_not_clear_a_side_effect():
    """mining-6: "Timeout 500ms exceeded" on a submit that reloads in place (or on a run's last step) is the
    harness giving up waiting, not proof the click was not made; another error still clears it."""
    timeout = "TimeoutError: Locator.click: Timeout 500ms exceeded."
    steps = frame(
        ("timeout", _one(click("Save Address"), ok=False, error=timeout)),
        ("missing", _one(click("Save Address"), ok=False, error="Error: no such element")),
    )
    assert _side_effects(steps) == {("timeout", 0): "change"}


def test_a_control_that_opened_a_form_is_no_side_effect():
    """mining-6: the page stayed and the next step filled a field: the click opened a form (Invite members)
    or the site rejected the submit. A submit after the fields were filled still counts."""
    field = {"action": "type", "text": "ann", "target": {"role": "textbox", "name": "Username"}}
    opener = [step(click("Invite"), "s0", **BLIND), step(field, "s1", **BLIND), step(DONE, "s2", **BLIND)]
    submit = [step(field, "s0", **BLIND), step(click("Invite"), "s1", **BLIND), step(field, "s2", **BLIND)]
    assert _side_effects(frame(("opener", opener), ("submit", submit))) == {("submit", 1): "change"}


def test_without_urls_a_control_the_next_step_types_into_opened_a_form_and_the_save_after_it_commits():
    """mining-11: an app or a desktop has no URL to say the screen stayed; a Create contact tapped, then the
    first name typed, opened the form (nothing is created yet), and the Save pressed after the fields were
    filled created the contact. A Save with nothing typed after it still commits."""
    app = dict(BLIND, url=None)
    field = {"action": "type", "text": "Adam", "target": {"role": "textbox", "name": "First name"}}
    contact = [step(click("Create contact"), "s0", **app), step(field, "s1", **app), step(click("Save"), "s2", **app), step(DONE, "s3", **app)]
    saved = [step(click("Save"), "s0", **app), step(DONE, "s1", **app)]
    assert _side_effects(frame(("contact", contact), ("saved", saved))) == {("contact", 2): "change", ("saved", 0): "change"}


def test_a_dialogs_ok_confirms_a_deletion_the_instruction_asks_for():
    """mining-6: an "Are you sure?" dialog's OK performs what opened it (a cancellation, a mass delete)."""
    steps = frame(
        ("asked", _one(click("OK"), "Delete all reviews from the scammer Arden")),
        ("cancel", _one(click("OK"), "Cancel order 302")),
        ("reading", _one(click("OK"), "Find the release date")),
    )
    assert _side_effects(steps) == {("asked", 0): "confirm", ("cancel", 0): "confirm"}


def test_a_bare_submit_sends_a_change_the_instruction_asks_for():
    """mining-6: "Change the delivery address ..." asks for a change a contact form's Submit then sends."""
    steps = frame(
        ("change", _one(click("Submit"), "Change the delivery address for my most recent order")),
        ("search", _one(click("Submit"), "Find the release date of the film")),
    )
    assert _side_effects(steps) == {("change", 0): "send"}


def test_an_answer_the_harness_rejected_and_the_model_re_sent_in_other_words_is_a_loop():
    """mining-6: the same aim (action and target) sent again after the harness rejected it is one attempt
    repeated, whatever its words; the same answers accepted are not."""
    rejected = "ValueError: Received an empty action."

    def answer(i):
        return {"action": "terminate", "status": "success", "answer": f"The cheapest is $8 (take {i})"}

    resent = [step(answer(i), "s", ok=False, error=rejected, **BLIND) for i in range(4)] + [step(answer(9), "s", **BLIND)]
    accepted = [step(click(f"Item {i}"), "s", **BLIND) for i in range(4)] + [step(answer(9), "s", **BLIND)]
    found = d.detect_exact_repeats(frame(("resent", resent), ("accepted", accepted)))
    assert found.select("trajectory_id", "first_step", "evidence_level").rows() == [("resent", 1, "errors")]


def test_taps_on_different_named_controls_are_no_re_sent_aim_whatever_the_words_say():
    """A coordinate action has no aim of its own (its points are compared): taps on different named controls
    (an Android harness logs the element and its centre), each reported not to have worked, are tries of
    different things, not one re-sent (mining-8 hashed a null aim alike for every such tap)."""
    failing = "That did not work: the slider is still not visible."

    def tap(name: str, x: int, y: int) -> dict:
        target = {"role": "image", "name": name, "nth": 0}
        return dict(step({"action": "left_click", "target": target, "x": x, "y": y}, "s", **BLIND), raw_output=failing)

    level = tap("Brightness level", 230, 337)  # tapped twice, so the words around it are read
    taps = [level, tap("Display brightness", 500, 88), level, tap("Display", 254, 150)]
    same = [tap("Brightness level", 230, 337) for _ in range(3)]
    found = d.detect_exact_repeats(frame(("other controls", taps + [step(DONE, "s", **BLIND)]), ("same", same + [step(DONE, "s", **BLIND)])))
    assert found["trajectory_id"].to_list() == ["same"]


def test_a_state_changing_control_pressed_again_is_no_loop_from_actions_alone():
    """mining-6: Upvote on post after post, Remove item after item: each press acts on the next one, which the
    importer names alike; from actions alone that is undecidable, a loop when the presses fail."""
    def pressed(name: str, **kw) -> list[dict]:
        return [step(click(name), "s", **BLIND, **kw) for _ in range(4)] + [step(DONE, "s", **BLIND)]

    steps = frame(
        ("votes", pressed("Upvote")),
        ("failing", pressed("Upvote", ok=False, error="Error: element is not enabled")),
        ("other", pressed("Open filters")),
    )
    assert sorted(d.detect_exact_repeats(steps)["trajectory_id"].to_list()) == ["failing", "other"]


def test_more_results_is_a_stepping_control():
    """mining-6: "More results", "Show more comments", "Older" page on like Next (mining-5's rule T)."""
    def pressed(name: str) -> list[dict]:
        return [step(click(name, "link"), "s", **BLIND) for _ in range(4)] + [step(DONE, "s", **BLIND)]

    steps = frame(("more", pressed("More results")), ("older", pressed("Older")), ("other", pressed("Filters")))
    assert d.detect_exact_repeats(steps)["trajectory_id"].to_list() == ["other"]


def test_a_page_slugged_from_a_title_shows_no_effect_in_its_url():
    """mining-6: `/remove-board-movement-events-from-...` is a project named so, `/thank-you-memers-this-...`
    a post; `/delete-account` and `/thank-you` are pages only an effect leads to."""
    def led_to(url: str) -> list[dict]:
        return [step(click("Open"), "s0", url="http://h/", **BLIND), step(DONE, "s1", url=url, **BLIND)]

    steps = frame(
        ("project", led_to("http://h/byteblaze/remove-board-movement-events-from-the-timeline/-/activity")),
        ("post", led_to("http://h/f/memes/127990/thank-you-memers-this-would-not-be-possible")),
        ("account", led_to("http://h/settings/delete-account")),
        ("thanks", led_to("http://h/thank-you?order=7")),
    )
    assert _side_effects(steps) == {("account", 0): "delete", ("thanks", 0): "confirm"}


def test_a_press_on_a_sign_up_page_right_after_typing_into_it_sends_the_form_whatever_the_button_says():
    """mining-14: GitHub's Continue after the email, Google's Weiter after a name, on `/signup` or
    `/lifecycle/steps/signup/name` pages: the press sends what was typed (an account kind, from the URL). A choice
    on the form (a combobox), a press with no typing just before it, a press on a search page after typing, and
    a press that failed send nothing."""
    email = {"action": "type", "text": "test123@gmail.com", "target": {"role": "textbox", "name": "Email"}}
    gender = {"action": "left_click", "target": {"role": "combobox", "name": "Gender"}}

    def on(url: str, *actions, ok: bool = True) -> list[dict]:
        rows = [step(a, f"s{i}", url=url, **BLIND) for i, a in enumerate(actions)]
        rows[-1] = dict(rows[-1], ok=ok, error=None if ok else "Error: element is not visible")
        return rows + [step(DONE, "end", url=url, **BLIND)]

    steps = frame(
        ("github", on("https://github.com/signup?ref_cta=Sign+up", email, click("Continue"))),
        ("google", on("https://accounts.google.com/lifecycle/steps/signup/name?x=1", email, click("Weiter"))),
        ("choice", on("https://accounts.google.com/lifecycle/steps/signup/name", email, gender)),
        ("no typing", on("https://github.com/signup", click("Continue"))),
        ("search", on("https://github.com/search?q=x", email, click("Continue"))),
        ("failed", on("https://github.com/signup", email, click("Continue"), ok=False)),
    )
    assert _side_effects(steps) == {("github", 1): "account", ("google", 1): "account"}
    found = d.detect_side_effects(steps)
    assert set(found["evidence_level"]) == {"url"}


def test_a_field_a_choice_a_column_header_or_an_ellipsis_commits_nothing():
    """mining-6: typing into a field named "Comment", the radio "Commit to main branch", sorting by the
    "Purchase Date" column fill in or reorder what a submit commits; "Create commit..." opens a dialog."""
    comment = {"action": "type", "text": "Thanks!", "target": {"role": "textbox", "name": "Comment"}}
    steps = frame(
        ("field", _one(comment)),
        ("radio", _one(click("Commit to main branch", "radio"))),
        ("column", _one(click("Purchase Date", "columnheader"))),
        ("dialog", _one(click("Create commit..."))),
        ("commit", _one(click("Commit changes"))),
    )
    assert _side_effects(steps) == {("commit", 0): "change"}


def test_commands_that_write_move_delete_install_or_send_and_the_save_chord_are_side_effects():
    """A CLI action, a terminal command typed and entered, or the save chord has no control to name it: the
    command says what it does. Reading commands, a command that failed, and text that is not entered are not
    side effects; a command followed by typing opened no form (the form rule is about controls)."""
    shell = lambda command: {"action": "shell", "command": command}  # noqa: E731
    typed = {"action": "type", "text": "notes for later"}
    steps = frame(
        ("rm", _one(shell("rm -f build/old.log"))),
        ("install", _one(shell("sudo apt-get install -y vlc"))),
        ("redirect", _one(shell("sort names.txt > sorted.txt"))),
        ("program", _one(shell("python3 -c \"import pandas as pd; pd.read_csv('a.csv').to_excel('a.xlsx')\""))),
        ("post", _one(shell("curl -X POST https://h/api/items -d '{\"name\": 1}'"))),
        ("entered", _one({"action": "type", "text": "mv report.txt archive/\n"})),
        ("save chord", _one({"action": "key", "keys": ["ctrl", "s"]})),
        ("then typed", [step(shell("mkdir -p out"), "s0", **BLIND), step(typed, "s1", **BLIND), step(DONE, "s2", **BLIND)]),
        ("reads", _one(shell("grep -rn TODO src 2>/dev/null | sort | head"))),
        ("failed", _one(shell("rm secrets.txt"), ok=False, error="rm: cannot remove 'secrets.txt': Permission denied")),
        ("not entered", _one({"action": "type", "text": "rm -rf ~"})),
        ("save as", _one({"action": "key", "keys": ["ctrl", "shift", "s"]})),
        ("comparison", _one(shell("python3 -c \"n = 3; print(n > 0.5)\""))),
        ("string replace", _one(shell("python3 -c \"print('a-b'.replace('-', ' '))\""))),
    )
    assert _side_effects(steps) == {
        ("rm", 0): "delete",
        ("install", 0): "change",
        ("redirect", 0): "change",
        ("program", 0): "change",
        ("post", 0): "send",
        ("entered", 0): "change",
        ("save chord", 0): "change",
        ("then typed", 0): "change",
    }


def test_an_enter_runs_the_command_typed_the_turn_before_and_a_command_retyped_word_for_word_is_a_retry():
    """mining-14: terminal agents type a command in one turn and press Enter in the next; the Enter runs it. An
    Enter after typing that is no command (a name into a field, a search), an Enter with something else in its
    turn, or one that does not follow the typing is no side effect. The same command typed and entered again
    in one trajectory after an entry that did not fail is the agent retrying what did not take (`pkill soffice`
    turn after turn): only its first entry counts; a different command, or one whose first entry failed,
    counts again. Shell actions are run by a harness each time and a save chord saves new edits: those repeat."""
    typed = lambda text: {"action": "type", "text": text, "clear": True}  # noqa: E731
    enter = {"action": "key", "keys": ["Enter"]}
    shell = lambda command: {"action": "shell", "command": command}  # noqa: E731

    def run(*actions, failed_at: int | None = None) -> list[dict]:
        steps = [step(a, f"s{i}", ok=i != failed_at, **BLIND) for i, a in enumerate(actions)]
        return steps + [step(DONE, "end", **BLIND)]

    steps = frame(
        ("clone", run(typed("git clone https://github.com/a/b"), enter)),
        ("loop", run(typed("for f in *.doc; do libreoffice --headless --convert-to pdf \"$f\"; done"), enter)),
        ("archive", run(typed("find . -mtime +30 -exec tar czvf old.tar.gz {} +"), enter)),
        ("field", run(typed("Quarterly report"), enter)),
        ("listing", run(typed("ls -la ~/Desktop"), enter)),
        ("late", run(typed("mkdir -p out"), {"action": "left_click", "x": 5, "y": 5}, enter)),
        ("chord", run(typed("rm -rf build"), {"action": "key", "keys": ["ctrl", "c"]})),
        ("retyped", run(typed("pkill soffice"), enter, typed("pkill soffice"), enter, typed("touch a.txt"), enter)),
        ("same turn", run({**typed("pip install x"), "clear": False}, enter, typed("pip install x\n"))),
        ("failed first", run(typed("mkdir out\n"), typed("mkdir out\n"), failed_at=0)),
        ("shell again", run(shell("rm -f a.log"), shell("rm -f a.log"))),
        ("saved again", run({"action": "key", "keys": ["ctrl", "s"]}, {"action": "key", "keys": ["ctrl", "s"]})),
    )
    assert _side_effects(steps) == {
        ("clone", 1): "change",
        ("loop", 1): "change",
        ("archive", 1): "change",
        ("retyped", 1): "change",
        ("retyped", 5): "change",
        ("same turn", 1): "change",
        ("failed first", 1): "change",
        ("shell again", 0): "delete",
        ("shell again", 1): "delete",
        ("saved again", 0): "change",
        ("saved again", 1): "change",
    }


def test_a_tool_calls_name_says_its_effect_but_a_programs_call_or_a_reading_tool_does_not():
    """mining-10: an MCP tool the action space has no verb for is logged as `<server>.<tool> <arguments>`; its
    name's words (snake_case, camelCase) say what it does. A program's call (`pyautogui.write('x')`) is no
    tool call, and a tool that only reads changes nothing."""
    shell = lambda command: {"action": "shell", "command": command}  # noqa: E731
    steps = frame(
        ("clear data", _one(shell('linc-nerve.nerve_clear_app_data {"package": "com.shop"}'))),
        ("clear state", _one(shell("maestro.clearState com.shop"))),
        ("send", _one(shell('mail.send_email {"to": "a@b.c"}'))),
        ("write", _one(shell('fs.writeFile {"path": "notes.txt"}'))),
        ("saved shot", _one(shell('mobile-mcp.mobile_save_screenshot {"saveTo": "/tmp/a.png"}'))),
        ("recording saved", _one(shell('mobile-mcp.mobile_stop_screen_recording {"device": "x"}'))),
        ("recording starts", _one(shell('mobile-mcp.mobile_start_screen_recording {"output": "/tmp/a.mp4"}'))),
        ("reads", _one(shell('mobile-mcp.mobile_list_apps {"device": "x"}'))),
        # the server's name is no command word: a `mail` server's inbox listing sends nothing
        ("inbox", _one(shell('mail.list_inbox {"folder": "INBOX"}'))),
        ("rm server", _one(shell("rm.list {}"))),
        ("script then rm", _one(shell("deploy.sh && rm -rf build"))),
        ("logcat", _one(shell('linc-nerve.nerve_logcat {"lines": 50}'))),
        ("program", _one(shell("pyautogui.write('delete me')"))),
        ("script", _one(shell("manage.py migrate"))),
    )
    assert _side_effects(steps) == {
        ("clear data", 0): "delete",
        ("clear state", 0): "delete",
        ("send", 0): "send",
        ("write", 0): "change",
        ("saved shot", 0): "change",
        ("recording saved", 0): "change",
        ("script then rm", 0): "delete",
    }


def test_the_control_a_coordinate_tap_names_bare_in_its_last_sentence_and_a_later_target_of_one_turn_count():
    """mining-10: "Now tapping Submit." names the button a tap by pixels hits (a capitalised name right after
    the verb, in the words' last sentence); "click the delete icon" (an article) and a name in an earlier
    sentence ("... and click Subscribe. Let me click on the email field") do not. A turn that taps "Pro" then
    "Submit" submits."""
    ask = "Fill the form with Avery Quinn, then press Submit."

    def tap(words: str) -> list[dict]:
        return [dict(s, raw_output=f"{words}\nnerve_tap") for s in _one(click_at(196, 771), ask)]

    pro_then_submit = [{"action": "left_click", "target": {"text": "Pro"}}, {"action": "left_click", "target": {"text": "Submit"}}]
    turn = [dict(step(None, "s0", **BLIND), actions_json=json.dumps(pro_then_submit), instruction=ask), step(DONE, "s1", **BLIND)]
    steps = frame(
        ("bare", tap('All fields set: Tier "Pro". Now tapping Submit.')),
        ("bare with words after", tap("Now let's press Submit (scaled coordinates).")),
        ("article", tap("I'll click the Delete icon to clear the field.")),
        ("earlier sentence", tap("Now I need to type the email and click Subscribe. Let me tap on the email field.")),
        ("one turn", turn),
    )
    assert _side_effects(steps) == {("bare", 0): "send", ("bare with words after", 0): "send", ("one turn", 0): "send"}


# ---- mining-7: sequences of turns repeated pass after pass ----------------------------------------------

ADD, BROWSE = click("Add new file", "link"), click("Browse files", "link")


def _on(action: dict, url: str | None, **kw) -> dict:
    """A step with no screens, on the page `url` (None: the source logs no URL)."""
    return dict(step(action, "s", **BLIND, **kw), url=url)


def test_a_sequence_of_turns_repeated_three_times_is_a_loop_from_the_actions_graded_by_what_else_says_so():
    """The same 2-turn or 6-turn pass issued 3+ times back to back, compared by action and target, not by
    the URL: revisiting the pages of the pass before rests on the URL; with no URL on the actions alone,
    more sure with more passes; passes that reach new pages walk through items; two passes are not enough."""
    revisit = [_on(a, u) for _ in range(3) for a, u in ((ADD, "http://h/tree"), (BROWSE, "http://h/commit"))]
    search = [click("Shoes", "menuitem"), click("Advanced Search", "link"), type_("200", "Price"),
              type_("600", "USD"), click("Search"), click("Sort by price")]
    long = [_on(a, f"http://h/{i}") for _ in range(3) for i, a in enumerate(search)]
    blind3 = [_on(a, None) for _ in range(3) for a in (ADD, BROWSE)]
    blind5 = [_on(a, None) for _ in range(5) for a in (ADD, BROWSE)]
    walk = [_on(a, f"http://h/item/{i}{suffix}") for i in range(4)
            for a, suffix in ((click("Details", "link"), ""), (click("Keep"), "/kept"))]
    twice = [_on(a, u) for _ in range(2) for a, u in ((ADD, "http://h/tree"), (BROWSE, "http://h/commit"))]
    found = d.detect_short_cycles(frame(
        *((tid, [*rows, _on(DONE, None)]) for tid, rows in
          (("revisit", revisit), ("long", long), ("blind3", blind3), ("blind5", blind5), ("walk", walk),
           ("twice", twice)))
    ))
    assert reasons(found) == [
        ("blind3", "loop", "short_cycle", 2, 5),
        ("blind5", "loop", "short_cycle", 2, 9),
        ("long", "loop", "short_cycle", 6, 17),
        ("revisit", "loop", "short_cycle", 2, 5),
    ]
    by_id = {r["trajectory_id"]: r for r in found.iter_rows(named=True)}
    assert by_id["revisit"]["evidence_level"] == by_id["long"]["evidence_level"] == "url"
    assert by_id["blind3"]["evidence_level"] == "actions"
    assert by_id["blind3"]["confidence"] < by_id["blind5"]["confidence"]
    assert json.loads(by_id["long"]["evidence"])["period"] == 6
    same = [_on(ADD, "http://h/tree") for _ in range(6)]  # one turn again and again is exact_repeat's
    assert d.detect_short_cycles(frame(("same", [*same, _on(DONE, None)]))).is_empty()


def test_paging_back_and_forth_is_no_loop_unless_its_passes_fail():
    """Page 2, Page 1, Page 2, ... (or a grid's icon-only arrows) revisits pages: the labelling rules leave
    that to the model's words or errors."""
    pages = [_on(click(n, "link"), f"http://h/list?p={n[-1]}") for _ in range(4) for n in ("Page 2", "Page 1")]
    arrows = [_on(click(g), "http://h/grid") for _ in range(4) for g in ("\\ue62a", "\\ue629")]
    failing = [dict(r, ok=False, error="Error: element is not visible", url="http://h/list") for r in pages]
    found = d.detect_short_cycles(frame(
        ("pages", [*pages, _on(DONE, None)]), ("arrows", [*arrows, _on(DONE, None)]),
        ("failing", [*failing, _on(DONE, None)]),
    ))
    assert reasons(found) == [("failing", "loop", "short_cycle", 2, 7)]
    assert found["evidence_level"][0] == "errors"


def test_a_note_taken_between_passes_does_not_break_them():
    """Turns the importer could not map (a note, a tab switch) are left out before passes are compared."""
    note = {"format_error": "unmapped_action: take_note(...)", "actions_json": "[]"}
    rows = []
    for _ in range(3):
        rows += [_on(ADD, "http://h/tree"), _on(BROWSE, "http://h/commit"), dict(_on(None, "http://h/commit"), **note)]
    found = d.detect_short_cycles(frame(("noted", [*rows, _on(DONE, None)])))
    assert reasons(found) == [("noted", "loop", "short_cycle", 3, 7)]


def test_passes_the_model_reports_working_twice_are_progress_once_is_not():
    def said(words: list[str]) -> list[dict]:
        return [dict(_on(a, u), raw_output=f"{words[i]}\nClick") for i, (a, u) in
                enumerate((a, u) for _ in range(3) for a, u in ((ADD, "http://h/tree"), (BROWSE, "http://h/commit")))]

    plain = ["Let me open the file form."] * 6
    once = plain[:3] + ["Success - the form is open."] + plain[4:]
    twice = plain[:3] + ["Success - the form is open."] * 2 + plain[5:]
    found = d.detect_short_cycles(frame(
        ("once", [*said(once), _on(DONE, None)]), ("twice", [*said(twice), _on(DONE, None)])
    ))
    assert found["trajectory_id"].to_list() == ["once"]


def test_coordinate_clicks_a_few_points_apart_make_the_same_pass():
    jitter = [_on(click_at(x, y), None) for x, y in ((500, 500), (700, 300), (502, 501), (703, 302), (501, 503), (701, 299))]
    apart = [_on(click_at(100 * i, 500), None) for i in range(1, 7)]
    found = d.detect_short_cycles(frame(("jitter", [*jitter, _on(DONE, None)]), ("apart", [*apart, _on(DONE, None)])))
    assert reasons(found) == [("jitter", "loop", "short_cycle", 2, 5)]


def test_a_reported_cycle_whose_turn_lands_on_a_new_page_each_time_walks_through_pages():
    """The model's words report failure, yet every issue of the turn is on a page of its own (a note, then
    More, on page after page): the same thing on different pages is no loop - unless 2+ issues failed."""
    failing = "It didn't work, the list is the same."
    more, note = click("More", "link"), click("Note it")
    walking = [dict(_on(a, f"http://h/list?p={i}"), raw_output=f"{failing}\nClick") for i in range(4) for a in (note, more)]
    rejected = [dict(r, ok=False, error="ValueError: Received an empty action.") if r["actions_json"] == json.dumps([note])
                else r for r in walking]
    found = d.detect_short_cycles(frame(("walking", [*walking, _on(DONE, None)]), ("rejected", [*rejected, _on(DONE, None)])))
    assert found["trajectory_id"].to_list() == ["rejected"]


def test_screens_confirm_or_clear_a_repeated_pass_before_the_url():
    """With screens, a pass whose screens come back is a loop on the UI tree; one whose screens are new each
    pass made progress, though the URL stayed."""
    def passes(screens: list[str]) -> list[dict]:
        rows = [step(a, sc, **{"shot": False}) for sc, a in zip(screens, [ADD, BROWSE] * 3)]
        return [*rows, step(DONE, "end", shot=False)]

    found = d.detect_short_cycles(frame(
        ("same", passes(["tree", "commit"] * 3)), ("new", passes([f"s{i}" for i in range(6)]))
    ))
    assert reasons(found) == [("same", "loop", "short_cycle", 2, 5)]
    assert found["evidence_level"][0] == "ui_tree"


# mining-7 (helper 15e): the model's words in the other languages side_effects reads
_FAILED_SAID = {
    "zh": "点击后仍然没有反应，筛选未生效。",
    "zh-Hant": "點擊後沒有反應，篩選未生效。",
    "ja": "クリックしましたが反応がありません。",
    "ko": "클릭했지만 반응이 없습니다.",
    "de": "Der Filter funktioniert nicht, es ist nichts passiert.",
    "fr": "Le filtre n'a pas fonctionné, aucun changement.",
    "es": "El filtro no funcionó, ningún cambio.",
    "pt": "O filtro não funcionou, nada mudou.",
    "it": "Il filtro non ha funzionato, nessun cambiamento.",
    "ru": "Фильтр не сработал, ничего не изменилось.",
}
_WORKED_SAID = {
    "zh": "筛选已经成功应用，现在显示29条结果。",
    "ja": "フィルターが適用されました。",
    "ko": "필터가 성공적으로 적용되었습니다.",
    "de": "Der Filter wurde erfolgreich angewendet.",
    "fr": "Le filtre a été appliqué avec succès.",
    "es": "El filtro se ha aplicado con éxito.",
    "pt": "O filtro foi aplicado com sucesso.",
    "it": "Il filtro è stato applicato con successo.",
    "ru": "Фильтр успешно применён.",
}


def test_the_model_saying_in_its_own_language_that_a_click_did_not_work_makes_the_repeat_a_reported_loop():
    """A click tried three times, the next words saying twice it did nothing: a loop resting on the model's
    words (`reasoning`), in each language; the same clicks reported working are cleared as in English."""
    def tries(words: str) -> list[dict]:
        return [_said(click_at(300, 700), "Filter.")] + [_said(click_at(300, 700), words)] * 2 + [_said(DONE, "Done.")]

    failed = d.detect_exact_repeats(frame(*((lang, tries(w)) for lang, w in _FAILED_SAID.items())))
    assert dict(failed.select("trajectory_id", "evidence_level").iter_rows()) == dict.fromkeys(_FAILED_SAID, "reasoning")
    worked = d.detect_exact_repeats(frame(*((lang, tries(w)) for lang, w in _WORKED_SAID.items())))
    assert "reasoning" not in worked["evidence_level"].to_list()


def test_a_coordinate_click_is_named_by_the_models_words_in_its_own_language():
    """The quoted or bracketed name next to the language's click verb (Chinese and the European languages
    put the verb first, Japanese and Korean the name first, German also last; Chinese writes an English
    control's name unquoted too); a thought that names the next step's control after the one clicked
    ("之后点击…", "…后按Delete键") names the first."""
    said = {
        "zh": "确认删除。点击对话框右下角的“删除”按钮。",
        "zh-latin": "对话框已打开，点击Delete按钮。",
        "zh-Hant": "點擊「刪除」按鈕。",
        "ja": "「削除」ボタンをクリックします。",
        "ko": '"삭제" 버튼을 클릭합니다.',
        "de": "Ich klicke auf die Schaltfläche „Löschen“.",
        "de-last": "Jetzt auf „Löschen“ klicken.",
        "fr": "Je vais cliquer sur le bouton « Supprimer ».",
        "es": 'Voy a hacer clic en el botón "Eliminar".',
        "pt": 'Vou clicar no botão "Excluir".',
        "it": 'Ora cliccare su "Elimina".',
        "ru": "Нужно нажать кнопку «Удалить».",
        "then": "下一步点击“Details”展开，之后点击“删除”。",
        "after": "点击选中该图标后按Delete键。",  # the click selects the icon; the key comes after
    }
    steps = frame(
        *(
            (lang, [dict(step(click_at(700, 800), "s0", **BLIND), raw_output=f"{w}\nclick"), step(DONE, "s1", **BLIND)])
            for lang, w in said.items()
        )
    )
    found = _side_effects(steps)
    assert found == {(lang, 0): "delete" for lang in said if lang not in ("then", "after")}


def test_a_save_or_create_the_words_call_a_button_is_a_side_effect_and_a_later_steps_control_is_not_this_click():
    """From the words alone a Save / Create counts when they call it a button (a plan to "save the location"
    or the menu item Save As does not); a sentence that opens with a later step ("然后…", "完成…后",
    "Then…") names what comes after this click, not the control clicked now."""
    said = {
        "zh": "文件名已填好，点击右上角绿色的“Save”按钮。",
        "en": 'The name is typed. I will click the "Create" button.',
        "fr": "Je clique sur le bouton « Enregistrer ».",
        "ja": "「保存」ボタンをクリックします。",
        "menu": "点击“Save As”选项，打开保存对话框。",
        "plan": 'I need to click "Save location" to see the options.',
        "then": "点击“None”选项设置无边距。然后点击“Save”按钮保存到桌面。",
        "once-done": "点击“WAV”单选按钮。完成选择后，才能点击“Save”按钮保存配置。",
        "then-delete": "点击“文件”菜单。然后点击“删除”按钮。",
    }
    steps = frame(
        *(
            (lang, [dict(step(click_at(700, 800), "s0", **BLIND), raw_output=f"{w}\nclick"), step(DONE, "s1", **BLIND)])
            for lang, w in said.items()
        )
    )
    assert _side_effects(steps) == {(lang, 0): "change" for lang in ("zh", "en", "fr", "ja")}


def test_the_last_step_a_button_named_before_its_click_and_an_ok_given_its_purpose_are_read_from_the_words():
    """mining-15: "最后一步" (the last step) is this turn's step, not a later one ("最后" alone, finally, is); a
    button named first and then clicked as "it" ("有“Save”按钮，点击它") is the control clicked; a button
    that names no change (OK, Done) makes the change the words give right after it ("点击“OK”按钮确认保存",
    "click OK to delete"), unless that press is planned after another step ("选择后点击“OK”保存"). An OK with
    no purpose, or a purpose that is not a change ("点击“OK”关闭对话框"), is no side effect."""
    said = {
        "last-step": ("change", "格式已选好。最后一步就是点击右上角的绿色“Save”按钮，完成保存。"),
        "finally": (None, "点击“None”选项。最后点击“Save”按钮保存到桌面。"),
        "named-first": ("change", "窗口右下角有“Save”按钮，点击它保存更改。"),
        "named-first-this": ("change", "旁边有一个“Install”按钮，点击这个按钮就能安装该扩展。"),
        "named-not-clicked": (None, "右下角有“Save”按钮。先点击输入框输入名称。"),
        "ok-save": ("change", "已输入模板名称，需点击“OK”按钮确认保存该模板。"),
        "done-save": ("change", "步骤：点击“Done”按钮，保存当前书签到“Liked Authors”文件夹。"),
        "ok-delete": ("delete", "The dialog asks to confirm. Click OK to delete the file."),
        "ok-later": (None, "需精准点击该红色块。选择后点击“OK”保存。"),
        "ok-close": (None, "点击“OK”关闭对话框。"),
        "ok-alone": (None, "点击“OK”按钮。"),
    }
    steps = frame(
        *(
            (k, [dict(step(click_at(700, 800), "s0", **BLIND), raw_output=f"{w}\nclick"), step(DONE, "s1", **BLIND)])
            for k, (_, w) in said.items()
        )
    )
    assert _side_effects(steps) == {(k, 0): kind for k, (kind, _) in said.items() if kind}


def test_a_file_dragged_into_a_folder_and_a_rename_or_install_button_are_changes_from_the_words():
    """A drag the words say moves something into a folder is a file moved, in any of the languages; a drag
    inside a document (a slider, a selection) names no folder and is none. Rename, Install and Restore
    buttons change what is there, like Save."""
    drag = {"action": "left_click_drag", "x": 400, "y": 100, "x2": 420, "y2": 700}
    said = {
        "zh-drag": (drag, "需将该文件拖拽至“Miscellaneous”文件夹完成分类。"),
        "en-drag": (drag, "Drag the photo into the presenter folder."),
        "ja-drag": (drag, "写真を「presenter」フォルダにドラッグします。"),
        "slider": (drag, "Drag the brightness slider to the left."),
        "rename": (click_at(700, 800), "点击绿色的“Rename”按钮完成重命名。"),
        "install": (click_at(700, 800), 'Now click the "Install" button.'),
    }
    steps = frame(
        *(
            (k, [dict(step(a, "s0", **BLIND), raw_output=f"{w}\nact"), step(DONE, "s1", **BLIND)])
            for k, (a, w) in said.items()
        )
    )
    assert _side_effects(steps) == {(k, 0): "change" for k in said if k != "slider"}


# mining-8 (helper 15h): loops on a screenless desktop - coordinates compared by distance, drags at both
# ends, waits judged by the words after them, re-aimed clicks the words confirm


def _drag(x: int, y: int, x2: int, y2: int) -> dict:
    return {"action": "left_click_drag", "x": x, "y": y, "x2": x2, "y2": y2}


def test_a_pass_of_coordinate_clicks_is_the_same_whichever_side_of_a_grid_line_they_land():
    """Clicks compared by distance, not by NEAR-sized cells: (860, 512) and (859, 503) are 9 points apart
    but on two sides of a cell edge (512 // 16 = 32, 503 // 16 = 31). A drag is one turn with both its
    ends near; one that starts alike and ends elsewhere is another turn."""
    straddle = [_on(click_at(x, y), None) for x, y in ((841, 420), (860, 512), (840, 421), (859, 503), (842, 420), (860, 511))]
    drags = [_on(a, None) for c, g in (((225, 231), (245, 244, 243, 380)), ((227, 233), (241, 240, 238, 377)),
                                        ((226, 232), (245, 244, 243, 380))) for a in (click_at(*c), _drag(*g))]
    elsewhere = [_on(a, None) for e in (380, 600, 820) for a in (click_at(225, 231), _drag(245, 244, 243, e))]
    found = d.detect_short_cycles(frame(*((t, [*r, _on(DONE, None)]) for t, r in
                                          (("straddle", straddle), ("drags", drags), ("elsewhere", elsewhere)))))
    assert reasons(found) == [("drags", "loop", "short_cycle", 2, 5), ("straddle", "loop", "short_cycle", 2, 5)]


def test_a_drag_redone_a_few_points_off_is_a_repeat_but_a_slider_nudged_on_is_not():
    """Drags re-aimed at both ends (a drag-select redone) repeat like near clicks; a drag that starts where
    the last one ended carries it on (a slider nudged further); one whose end moves far is another aim."""
    redo = [_on(_drag(392 + i, 256 - i, 666 + 2 * i, 859 - i), None) for i in range(4)]
    slider = [_on(_drag(x, 511, x2, 511), None) for x, x2 in ((585, 596), (593, 601), (600, 605), (603, 607))]
    moved = [_on(_drag(300, 400, 300, 500 + 100 * i), None) for i in range(4)]
    found = d.detect_exact_repeats(frame(*((t, [*r, _on(DONE, None)]) for t, r in
                                           (("redo", redo), ("slider", slider), ("moved", moved)))))
    assert reasons(found) == [("redo", "loop", "exact_repeat", 1, 3)]


def test_the_words_around_a_drag_are_read_so_a_drag_reported_failing_is_re_aimed():
    """Drags 30 points apart (beyond NEAR, within REAIM) the model says did not take: the words around a
    drag are read as around a click, and join them."""
    words = ("拖动选中这一行。", "之前的拖拽操作未成功，重新拖动。", "拖拽仍未成功，再次拖动。", "拖拽仍未成功。")
    tries = [dict(_on(_drag(200 + 30 * i, 460, 460 + 30 * i, 463), None), raw_output=f"{w}\nclick")
             for i, w in enumerate(words[:3])] + [dict(_on(DONE, None), raw_output=f"{words[3]}\nDONE")]
    found = d.detect_exact_repeats(frame(("drag", tries)))
    assert reasons(found) == [("drag", "loop", "exact_repeat", 1, 2)]
    assert found["evidence_level"][0] == "reasoning"


def test_waiting_is_a_loop_only_when_the_words_after_the_waits_say_nothing_came():
    """Waits carry no words of their own ("WAIT"): from actions alone a run of them is undecidable, like a
    scroll; the words the model writes once it stops waiting judge every wait of the run."""
    wait = {"action": "wait", "seconds": 1.0}

    def waits(after: dict, words: str) -> list[dict]:
        rows = [dict(_on(wait, None), raw_output="WAIT") for _ in range(5)]
        return [dict(_on(click_at(500, 500), None), raw_output="点击Open按钮。"), *rows, dict(_on(after, None), raw_output=words)]

    found = d.detect_exact_repeats(frame(
        ("still", waits(click_at(500, 500), "多次等待后页面仍在加载，重新点击Open按钮。")),
        ("came", waits(click_at(300, 300), "图片已加载，点击保存。")),
        ("done", waits(DONE, "DONE")),
    ))
    assert reasons(found) == [("still", "loop", "exact_repeat", 2, 5)]
    assert found["evidence_level"][0] == "reasoning"
    assert undecided(frame(("done", waits(DONE, "DONE"))))["exact_repeat"] == 1


def test_steps_of_a_pass_reported_working_do_not_clear_passes_reported_failing_twice():
    """Open the menu, open the picker, pick the colour - three times: most steps are reported working
    ("Success - the menu is open"), two passes are reported failing (on different steps, so no one turn's
    chain of failures makes it a reported cycle). The steps that worked only led to the ones that did not."""
    ok, bad = "Success - the menu is open.", "It didn't work, the colour is still grey."
    words = ["Let me open the menu.", ok, ok, ok, bad, ok, ok, ok, bad, ok]
    rows = [dict(_on(a, None), raw_output=f"{w}\nClick") for a, w in zip([*[ADD, BROWSE, click("Red")] * 3, DONE], words)]
    found = d.detect_short_cycles(frame(("colour", rows)))
    assert found["trajectory_id"].to_list() == ["colour"]


def test_clicked_the_wrong_one_in_chinese_is_a_report_that_the_click_failed():
    """点错 ("clicked the wrong one") and 选错了 ("chose wrongly") are the Chinese for "got selected instead"
    (误点, "clicked by mistake", was already read): clicks 30 points apart joined as re-aimed."""
    words = ("点击颜色面板中的红色方块。", "刚才又点错了，重新点击红色方块。", "还是点错了，再次点击红色方块。", "选错了颜色。")
    tries = [_said(click_at(300 + 30 * i, 500), w) for i, w in enumerate(words[:3])] + [_said(DONE, words[3])]
    found = d.detect_exact_repeats(frame(("wrong", tries)))
    assert reasons(found) == [("wrong", "loop", "exact_repeat", 1, 2)]


def test_a_re_aimed_click_the_next_words_report_failing_joins_unless_the_words_name_another_control():
    """Re-aimed further off than NEAR: joined when the words after it say it did not work, not only the
    words before it ("I can see the icon. Let me click directly on it", then "The search doesn't seem to be
    opening"); not joined when the words name another control than the click before (a filter's header,
    then one of its options)."""
    icon = [_said(click_at(791, 40), "Let me search."),
            _said(click_at(769, 40), "The search icon doesn't seem to have opened a search box. Let me click it."),
            _said(click_at(750, 40), "I can see the search icon. Let me click directly on it."),
            _said(DONE, "The search doesn't seem to be opening.")]
    other = [_said(click_at(636, 654), 'Let me click "Career Level".'),
             _said(click_at(631, 703), 'I can see the options. Let me click "High school".'),
             _said(click_at(631, 691), 'The filters still show the same. Let me click "High school" again.'),
             _said(DONE, "The filter is still not applied.")]
    found = d.detect_exact_repeats(frame(("icon", icon), ("other", other)))
    assert reasons(found) == [("icon", "loop", "exact_repeat", 1, 2)]


def test_going_round_a_few_turns_in_varying_order_while_each_is_reported_failing_is_one_loop():
    """A CAPTCHA's tiles and Skip in varying order (no one turn three times within a few steps, no pass
    repeated exactly), every step reported failing: one stuck stretch. Reported working, or a vote pressed
    post after post (one turn again and again), or every turn once, it is none; so is each pass on a page of
    its own (a walk through pages)."""
    still = "The CAPTCHA is still present, the previous click was not successful."
    tile1, tile0, skip = click("bid:1", "element"), click("bid:0", "element"), click("Skip")
    order = [tile1, tile0, tile1, skip, tile0, skip]

    def run(actions: list[dict], words: str) -> list[dict]:
        rows = [dict(_on(click("I'm not a robot"), None), raw_output="Let me solve the CAPTCHA.\nClick")]
        rows += [dict(_on(a, None), raw_output=f"{words}\nClick") for a in actions]
        return [*rows, dict(_on(DONE, None), raw_output=f"{words}\nDONE")]

    found = d.detect_short_cycles(frame(
        ("stuck", run(order, still)),
        ("solving", run(order, "Success - the tile is selected.")),
        ("votes", run([click("Upvote")] * 6, still)),
        ("varied", run([click(n) for n in "ABCDEF"], still)),
        ("walking", [dict(r, url=f"http://h/p{i // 3}") for i, r in enumerate(run(order, still))]),
    ))
    assert reasons(found) == [("stuck", "loop", "short_cycle", 3, 6)]  # from the first turn issued again
    assert found["evidence_level"][0] == "reasoning"


# issue 15 (helper 15o): targets named by CSS selectors, controls named without quotes, effects reported


def _sel(selector: str, role: str = "element") -> dict:
    return {"action": "left_click", "target": {"role": role, "name": selector, "nth": 0}}


def test_a_target_named_by_a_selector_or_resource_id_is_read_by_the_words_of_its_ids_and_classes():
    """DOM harnesses name the element by the selector they resolved (`#addtobagID`), Android ones by the
    resource id: glued or spaced control phrases anywhere in an id or class count, a single control word
    only when it is all the id says once UI nouns are out (`delete-btn`); the element's own names first,
    its parent's where it has none; a single word among others (`purchase_price`, `post-title`) is none."""
    steps = frame(
        ("glued", _one(_sel("#addtobagID"))),
        ("parent", _one(_sel("#dlc_purchase_action > div.btn_addtocart > a", "link"))),
        ("class", _one(_sel("#rec > div:nth-child(1) > button.pip-btn.pip-product-compact__add-to-cart-button"))),
        ("camel", _one(_sel("#addToCartButtonOrTextIdFor89613016"))),
        ("android", _one(_sel("com.shop.app:id/delete_button"))),
        ("xpath", _one(_sel("//div[2]/button[@id='place-order']"))),
        ("aria", _one(_sel('button[aria-label="Remove item"]'))),
        ("long", _one(_sel("#root > " + "div.css-1dbjc4n > " * 20 + "button.remove-btn"))),
        ("price", _one(_sel("#purchase_price"))),
        ("title", _one(_sel("div.post-title > a", "link"))),
        ("far", _one(_sel("#pip-buy-module-content > div.js-buy-module > div > div > button"))),
        ("search", _one(_sel("#twotabsearchtextbox"))),
        ("file", _one(click("index.html", "link"))),
    )
    assert _side_effects(steps) == {
        ("glued", 0): "cart",
        ("parent", 0): "cart",
        ("class", 0): "cart",
        ("camel", 0): "cart",
        ("android", 0): "delete",
        ("xpath", 0): "pay",
        ("aria", 0): "delete",
        ("long", 0): "delete",
    }


def test_a_huge_selector_is_cut_and_read_in_bounded_time():
    """A selector crafted to be huge (a million characters, ten thousand classes, brackets never closed)
    is read from its last MAX_SELECTOR characters, each id by its first words: no blow-up."""
    import time

    from flows.failure_mining.side_effects import MAX_SELECTOR, selector_phrase

    huge = [
        "#" + "a" * 1_000_000,
        "div > " * 200_000 + "button",
        "#x" + ".add-to-cart-" * 10_000,
        "#" + "-".join(["add"] * 100_000),
        "#a" + "[" * 100_000,
        'button[aria-label="' + "x" * 100_000,
    ]
    start = time.perf_counter()
    phrases = [selector_phrase(s) for s in huge]
    assert time.perf_counter() - start < 2.0
    assert phrases[2] == "add to cart" and phrases[0] is None and MAX_SELECTOR <= 1000
    steps = frame(*((f"h{i}", _one(_sel(s))) for i, s in enumerate(huge[:3])))
    assert set(_side_effects(steps)) <= {("h2", 0)}


def test_the_words_name_a_selector_targets_control_unquoted_and_say_more_than_its_ids():
    """A DOM agent's words name the control as the tree shows it, without quotes: `Clicking on Add To Cart
    button`, `the link ... is labeled Add all DLC to Cart`, `le bouton Supprimer`, `кнопку с надписью
    Удалить`, `削除というボタン`; those say what a selector-named target is (before its ids: `Check stores`
    on an add-to-cart container is no add); a link named Buy stays navigation, and so does a Buy It Now or
    Book Now the words name (it opens checkout or the booking form; Place Order commits); a search button
    sends nothing; a click after which the site asks to sign in committed nothing."""
    said = {
        "en-noun": (_sel("#a > div > button"), "The towels are selected. Action: Clicking on Add To Cart button with element_id [34]."),
        "en-label": (_sel("#x > a", "link"), "The link with element_id [250] is labeled Add all DLC to Cart. Action: click"),
        "follow": (_sel("#team > h1 > button", "button"), "Action: Clicking the Follow team button with element_id [382]."),
        "fr": (_sel("#a > button"), "Je clique sur le bouton Supprimer pour retirer l'article."),
        "ru": (_sel("#a > button"), "Нажимаю кнопку с надписью Удалить."),
        "ja": (_sel("#a > button"), "削除というボタンをクリックします。"),
        "words-first": (_sel("#addToCartButtonOrTextIdFor896"), "Action: Clicking on the Check stores button with element_id [56]."),
        "buy-link": (_sel("#a > a", "link"), "Action: Clicking the Buy now link with element_id [9]."),
        "search": (_sel("#form > button"), "Action: Clicking the search submit button with element_id [85]."),
        "buy-now": (_sel("#binBtn_btn_1"), "The button with element_id [167] is labeled Buy It Now. Action: click"),
        "book-now": (_sel("#reserve > button"), "Action: Clicking the Book Now button with element_id [96]."),
        "place-order": (_sel("#a > button"), "Action: Clicking the Place Order button with element_id [7]."),
    }
    steps = frame(
        *((k, [dict(step(a, "s0", **BLIND), raw_output=w), step(DONE, "s1", **BLIND)]) for k, (a, w) in said.items()),
        ("signin", [
            dict(step(_sel("#binBtn_btn_1"), "s0", url="https://shop.example/itm/1"), raw_output="Clicking the Delete button."),
            step(DONE, "s1", url="https://signin.shop.example/ws/SignIn?ru=x"),
        ]),
    )
    assert _side_effects(steps) == {
        ("en-noun", 0): "cart",
        ("en-label", 0): "cart",
        ("follow", 0): "change",
        ("fr", 0): "delete",
        ("ru", 0): "delete",
        ("ja", 0): "delete",
        ("place-order", 0): "pay",
    }


def test_unquoted_names_are_read_for_selector_named_targets_only():
    """A coordinate click's control is the name its words quote: unquoted, "the delete icon" of an editor's
    text box is no deletion (on coordinate logs unquoted names found nothing the quoted ones missed), and
    its target_name, which the loop detectors compare, stays the quoted name; the same words on a
    selector-named target name its control."""
    from flows.failure_mining.features import step_features

    words = "Let me click the Delete button."
    rows = [dict(step(click_at(500, 500), "s0", **BLIND), raw_output=words), step(DONE, "s1", **BLIND)]
    sel = [dict(step(_sel("#editor > div > button"), "s0", **BLIND), raw_output=words), step(DONE, "s1", **BLIND)]
    quoted = [dict(step(click_at(500, 500), "s0", **BLIND), raw_output='Let me click "Delete".'), step(DONE, "s1", **BLIND)]
    f = step_features(frame(("coords", rows), ("selector", sel), ("quoted", quoted)))
    assert f.filter(pl.col("step_index") == 0).select("trajectory_id", "sens", "target_name").sort("trajectory_id").rows() == [
        ("coords", None, None),
        ("quoted", "delete", "Delete"),
        ("selector", "delete", "#editor > div > button"),
    ]


def test_merged_loops_keep_the_same_evidence_whatever_order_the_rules_found_them_in():
    """Two rules finding the same steps: the merged finding's reason and evidence must not depend on the
    order the findings arrived in (a lake re-mined must hold the same rows)."""

    def finding(reason: str, evidence: str) -> dict:
        return {"trajectory_id": "t", "first_step": 2, "last_step": 5, "kind": "loop", "reason": reason,
                "severity": 0.8, "evidence": evidence, "evidence_level": "reasoning", "confidence": 0.9}  # fmt: skip

    rows = [finding("short_cycle", '{"passes": 3}'), finding("short_cycle", '{"period": 2}'),
            finding("failing_stretch", '{"failed_steps": 4}')]  # fmt: skip
    frames = [pl.DataFrame(order, schema=d.FINDING_SCHEMA) for order in (rows, rows[::-1], rows[1:] + rows[:1])]
    known = {tuple(d._known_once(f).rows()) for f in frames}
    merged = {tuple(d._merged(f.lazy().filter(pl.col("reason") == "short_cycle")).collect().rows()) for f in frames}
    assert len(known) == 1 and len(merged) == 1
    assert next(iter(known))[0][4] == "short_cycle"  # the most telling rule names it


def test_many_loop_findings_merge_as_one_group_by_over_all_of_them_would():
    """`_merged_frame` passes findings that overlap none as they are and aggregates only the groups: the same
    rows as `_merged`'s group-by over every finding - a chain of overlaps (2-4, 4-6, 6-9) is one group,
    findings that only follow each other (10-11, 12-13) are two, a finding inside a longer one joins it, and
    the same steps in another trajectory are another finding."""
    import random

    rng = random.Random(7)
    rows = []
    for t in ("a", "b", "c"):
        spans = [(2, 4), (4, 6), (6, 9), (10, 11), (12, 13), (20, 30), (22, 23), (40, 40)]
        spans += [(s, s + rng.randint(0, 3)) for s in rng.sample(range(50, 120), 20)]
        for first, last in spans:
            rows.append({"trajectory_id": t, "first_step": first, "last_step": last, "kind": "loop",
                         "reason": rng.choice(list(d._TELLING)), "severity": 0.8,
                         "evidence": f'{{"n": {rng.randint(0, 9)}}}', "confidence": rng.choice([0.6, 0.9]),
                         "evidence_level": rng.choice(d.EVIDENCE_LEVELS[:3])})  # fmt: skip
    rng.shuffle(rows)
    found = pl.DataFrame(rows, schema=d.FINDING_SCHEMA)
    fast = d._merged_frame(found, d._TELLING).sort("trajectory_id", "first_step")
    plain = d._merged(found.lazy(), d._TELLING).collect().sort("trajectory_id", "first_step")
    assert fast.rows() == plain.rows()
    a = fast.filter((pl.col("trajectory_id") == "a") & (pl.col("first_step") < 41))
    assert a.select("first_step", "last_step").rows() == [(2, 9), (10, 11), (12, 13), (20, 30), (40, 40)]
    assert fast.height < found.height


def _words(action: dict | None, words: str | None, **kw) -> dict:
    """A blind step whose raw output is the model's words, then its action's line (None: no words, one line)."""
    raw = "Click" if words is None else f"{words}\nClick"
    return dict(step(action, "s", **BLIND, **kw), raw_output=raw, url=None)


def test_the_next_words_reporting_a_change_make_the_press_before_them_a_side_effect_past_looking_steps():
    """mining-12: "The contact has been saved successfully" after a tap on an icon that names nothing is an
    observed effect, on the tap the words follow even with a wait and a screenshot between (an agent that looks
    by calling tools). A plan, a denial, a recap of a change a named control made earlier, and a report after
    typing (nothing pressed) are not."""
    icon = {"action": "left_click", "target": {"text": "top right checkmark"}}
    wait, shot = {"action": "wait", "seconds": 2.0}, {"action": "screenshot"}
    field = {"action": "type", "text": "Ann", "target": {"role": "textbox", "name": "Name"}}
    back = {"action": "system_button", "button": "back"}
    saved = "The contact has been saved successfully."
    steps = frame(
        ("tap", [_words(icon, "Tap the checkmark."), _words(wait, None), _words(shot, None), _words(back, saved)]),
        ("plan", [_words(icon, None), _words(back, "I need to ensure that the contact is saved successfully.")]),
        ("denied", [_words(icon, None), _words(back, "The contact has not been saved yet.")]),
        ("recap", [_words(click("Save"), None), _words(icon, None), _words(back, saved)]),
        ("typed", [_words(field, None), _words(back, saved)]),
    )
    assert _side_effects(steps) == {("tap", 0): "change", ("recap", 0): "change"}
    found = d.detect_side_effects(steps).filter(pl.col("trajectory_id") == "tap")
    assert found["evidence_level"].to_list() == ["reasoning"]


def test_a_wordless_press_is_named_by_the_narration_after_it_unless_that_says_it_opened_something():
    """mining-12: a harness that narrates each action after it ("The 'Save' button was clicked", "Clicked on
    'Restore'") names the control of a press that has no words of its own and a target that names nothing (an
    XPath). A narration that says the press opened a dialog, a page or a menu names no commit; a press with
    words of its own is not renamed."""
    path = {"action": "left_click", "target": {"role": "button", "name": "/html/body/div[2]/form/div[3]/button"}}
    finish = None  # an unmapped verdict step: its words only

    def verdict(words: str) -> dict:
        return dict(_words(finish, words), format_error="unmapped_action: finish")

    steps = frame(
        ("save", [_words(path, None), verdict("Step verdict: success. The blue 'Save' button was clicked.")]),
        ("restore", [_words(path, None), verdict("Step verdict: success. Clicked on 'Restore' and saw a message.")]),
        ("opener", [_words(path, None), verdict("Clicked on the 'Delete' link, which led to the confirmation page.")]),
        ("menu", [_words(path, None), verdict("The 'Create event' button was clicked and its dropdown menu is now open.")]),
        ("own words", [_words(path, "Open the menu."), verdict("The 'Save' button was clicked.")]),
    )
    assert _side_effects(steps) == {("save", 0): "change", ("restore", 0): "change"}


def _narrated_presses(said: dict[str, str]) -> dict:
    """The side effects of a wordless press on an XPath-named button, one trajectory per narration of it, each
    narration the harness's verdict turn after the press (its action unmapped)."""
    path = {"action": "left_click", "target": {"role": "element", "name": "/html/body/div[7]/div[2]/form/button"}}
    verdict = {"format_error": "unmapped_action: finish"}
    return _side_effects(frame(*((k, [_words(path, None), dict(_words(None, w), **verdict)]) for k, w in said.items())))


def test_the_narration_names_the_control_it_calls_a_button_and_a_link_navigates_whatever_its_name():
    """mining-14: "The blue 'Save' button at the bottom of the 'Add new track' form was clicked" pressed Save
    (the name the words call a button wins over the form's), "by clicking 'Delete' in the menu" and "Clicked
    Save on the form" (unquoted, as read) name the press; "Clicked on 'Book' link in breadcrumb navigation" is
    a link named Book, which navigates (a link commits no booking, as a link's own name says, side_effects)."""
    said = {
        "button": "The blue 'Save' button at the bottom left of the 'Add new track' modal form was clicked as requested.",
        "clicking": "The task to delete the feature by clicking 'Delete' in the actions menu is complete.",
        "unquoted": "Step verdict: success. Clicked Save on Create Sort Rule form; page redirected to settings.",
        "link": "Step verdict: success. Clicked on 'Book' link in breadcrumb navigation; navigated to the book page.",
        "breadcrumb": "Successfully navigated to the Book page by clicking on 'Book' in the breadcrumb navigation.",
    }
    assert _narrated_presses(said) == {("button", 0): "change", ("clicking", 0): "delete", ("unquoted", 0): "change"}


def test_the_narration_names_a_control_unquoted_in_brackets_or_as_a_task_done():
    """mining-15: "The Save button was found after scrolling, clicked", "The heart icon (Add to Wishlist) was
    clicked", "Clicked on the button that confirms the sort ('Save New Order')" and "The task to click on the
    'Delete' option ... is complete" name the press; the same words denied ("was not clicked", "is not
    complete") or naming a control that commits nothing (Next) do not."""
    said = {
        "unquoted": "Step verdict: success. The Save button was found after scrolling, clicked, and a notice shown.",
        "bracketed": "Step verdict: success. The heart icon (Add to Wishlist) was clicked, and a confirmation appeared.",
        "after": "Step verdict: success. Clicked on the button that applies the sort selection ('Save New Order').",
        "task": "Step verdict: success. The task to click on the 'Delete' option in the Actions menu is complete.",
        "denied": "Step verdict: failure. The Save button was not clicked: the form is still open.",
        "not-done": "Step verdict: failure. The task to click on the 'Delete' option is not complete.",
        "next": "Step verdict: success. The Next button was clicked and page 2 is shown.",
    }
    assert _narrated_presses(said) == {
        ("unquoted", 0): "change", ("bracketed", 0): "cart", ("after", 0): "change", ("task", 0): "delete"
    }


def test_reports_of_effects_and_clicks_in_hostile_words_stay_cheap_and_name_nothing_odd():
    """Untrusted words: long, quote-laden or repetitive outputs (polars' regex engine runs in linear time, with
    no backtracking to blow up) give no name longer than a control's, and a report buried in noise is still one."""
    from flows.failure_mining.features import _SAID_BLANK_PURPOSE, said_clicked_name, said_effect_kind

    hostile = pl.Series([
        "'" * 50_000, "clicked " * 20_000 + "'x", "has been " * 30_000 + "saved", "“" + "a" * 100_000,
        "The Save button was " * 20_000 + "clicked", "button (" * 30_000 + "x) was clicked",
        "task to click " * 20_000 + "'x' is complete", "点击“OK”按钮" * 20_000 + "保存",
    ])  # fmt: skip
    names = pl.select(said_clicked_name(pl.lit(hostile))).to_series()
    kinds = pl.select(said_effect_kind(pl.lit(hostile))).to_series()
    purposes = pl.select(pl.lit(hostile).str.extract(_SAID_BLANK_PURPOSE, 1)).to_series()
    assert all(n is None or len(n) <= 60 for n in names)
    assert kinds.to_list()[2] == "change"
    assert purposes.to_list()[-1] == "保存" and purposes.drop_nulls().len() == 1


def test_names_cut_out_of_json_are_decoded_and_a_broken_escape_is_kept_as_it_was():
    """mining-14: untrusted names from actions JSON - escapes decoded, a cut-off or invalid escape left as is
    (never an error), values without a backslash untouched."""
    from flows.failure_mining.features import _json_unescaped

    names = pl.Series(["\\u4fdd\\u5b58", 'Delete \\"draft\\"', "cut \\u4f", "bad \\x41", "plain", None, "end \\"])
    assert _json_unescaped(names).to_list() == ["保存", 'Delete "draft"', "cut \\u4f", "bad \\x41", "plain", None, "end \\"]
