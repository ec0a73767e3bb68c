"""The web driver under the phone profile: a phone's viewport, pixel ratio, touch and user agent; tap,
long press and swipe through touch events; and a replayed shop task that becomes a trajectory of
mobile actions (`flywheel run rollout --profile phone`)."""

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from flows.rollout.policies import ReplayPolicy
from flows.rollout.touch import TouchPolicy
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.actions import parse_actions
from sandboxes.device_profiles import PHONE, device_profile
from sandboxes.web import WebDriver
from tests.shop_references import ADD_ADDRESS
from verifier_templates.base import Probe

pytestmark = pytest.mark.browser
COMPUTER_ONLY = {"left_click", "double_click", "right_click", "middle_click", "triple_click", "left_click_drag",
                 "mouse_move", "scroll", "hscroll", "key"}


@pytest.fixture
def phone(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host, profile=PHONE)
    driver.reset()
    yield driver
    driver.close()


def act(driver, *actions):
    results = [driver.act(a) for a in parse_actions(list(actions))]
    assert all(r.ok for r in results), [r.error for r in results]
    return results


def test_unknown_profiles_name_the_known_ones():
    with pytest.raises(ValueError, match="available: phone"):
        device_profile("tablet")


def test_the_page_sees_a_phone(phone):
    obs = phone.observe(screenshot=True)
    width, height = struct.unpack(">II", obs.screenshot[16:24])  # the PNG header's size
    assert obs.screen_size == (width, height) == (390 * 3, 844 * 3) and phone.viewport == (390, 844)
    seen = phone.page.evaluate("({ua: navigator.userAgent, touch: navigator.maxTouchPoints, dpr: devicePixelRatio,"
                               " coarse: matchMedia('(pointer: coarse)').matches})")
    assert "Mobile" in seen["ua"] and seen["touch"] > 0 and seen["dpr"] == 3 and seen["coarse"]


def test_tap_long_press_and_swipe_act_through_touch_events(phone):
    act(phone, {"action": "goto", "url": "/products"})
    phone.page.evaluate("""() => { window.seen = [];
        for (const t of ['touchstart', 'touchmove', 'touchend', 'mousedown'])
            addEventListener(t, () => seen.push([t, performance.now()]), {passive: true}); }""")
    act(phone, {"action": "swipe", "x": 500, "y": 800, "x2": 500, "y2": 200})
    assert phone.page.evaluate("scrollY") > 100, "a swipe up scrolls the page down"
    kinds = [k for k, _ in phone.page.evaluate("seen")]
    assert kinds[0] == "touchstart" and "touchmove" in kinds and kinds[-1] == "touchend" and "mousedown" not in kinds

    act(phone, {"action": "goto", "url": "/addresses"})
    link = phone.page.get_by_role("link", name="Add a new address").first
    box = link.bounding_box()
    x, y = round((box["x"] + box["width"] / 2) * 999 / 390), round((box["y"] + box["height"] / 2) * 999 / 844)
    act(phone, {"action": "tap", "x": x, "y": y})
    assert phone.page.url.endswith("/addresses/new"), "a tap on a link follows it"

    # last: a long press on text selects it, and a phone's next tap would only dismiss the selection
    phone.page.evaluate("""() => { window.seen = [];
        for (const t of ['touchstart', 'touchend']) addEventListener(t, () => seen.push([t, performance.now()])); }""")
    act(phone, {"action": "long_press", "x": 500, "y": 500, "duration": 0.6})
    touches = {k: t for k, t in reversed(phone.page.evaluate("seen"))}  # the first of each
    assert set(touches) == {"touchstart", "touchend"} and touches["touchend"] - touches["touchstart"] >= 550



def test_a_tap_on_a_sensitive_control_is_flagged_like_a_click(phone):
    address_id = phone.probe(Probe("id", "sql", "SELECT min(id) FROM addresses"))
    act(phone, {"action": "goto", "url": f"/addresses/{address_id}/edit"})
    button = phone.page.get_by_role("button", name="Delete", exact=True)
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    x, y = round((box["x"] + box["width"] / 2) * 999 / 390), round((box["y"] + box["height"] / 2) * 999 / 844)
    (pressed,) = act(phone, {"action": "tap", "x": x, "y": y})
    assert pressed.sensitive == "delete"
    assert phone.probe(Probe("n", "sql", "SELECT count(*) FROM addresses WHERE id = ?", (address_id,))) == 0
    (elsewhere,) = act(phone, {"action": "tap", "x": 500, "y": 40})
    assert elsewhere.sensitive is None


def test_touch_policy_turns_the_reference_into_taps_that_do_the_task(phone):
    policy = TouchPolicy(ReplayPolicy(), phone, "phone")
    policy.start(TaskSpec("shop", "c", "create", "addresses", "add it", {}, 0, [], {}, ADD_ADDRESS), 0)
    emitted = []
    for _ in range(40):
        turn = policy.next_turn(phone.observe(screenshot=False))
        results = [phone.act(a) for a in turn.actions]
        assert all(r.ok for r in results), [r.error for r in results]
        emitted += [a.action for a in turn.actions]
        if emitted[-1] == "terminate":
            break
    assert policy.name == "replay@phone"
    assert "tap" in emitted and not COMPUTER_ONLY & set(emitted)
    assert emitted.count("tap") == emitted.count("type") + 1  # a tap into each field, and one on the button
    assert "swipe" in emitted, "the form's lower fields are below a phone's fold: swiped into view first"
    assert phone.probe(Probe("n", "sql", "SELECT count(*) FROM addresses WHERE label = ?", ("Boathouse 7",))) == 1


@pytest.mark.slow
def test_a_replayed_shop_task_on_the_phone_is_a_trajectory_of_mobile_actions(shop_manifest, tmp_path):
    """synthesize-tasks fills a lake; `flywheel run rollout --profile phone` replays it through touch."""
    from flows.judging.judge import judge_pending
    from flows.task_synthesis.synthesis import synthesize_sandbox
    from lake import Lake

    lake = Lake(tmp_path / "lake")
    summary = synthesize_sandbox(shop_manifest, lake, "synth-phone", count=6, seed=5)
    assert summary.verified >= 3, summary.to_json()
    lake.refresh_catalog()
    exe = Path(sys.executable).with_name("flywheel")
    out = subprocess.run([str(exe), "--lake", str(lake.root), "run", "rollout", "--policy", "replay", "--sandbox", "shop",
                          "--profile", "phone"], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    steps = lake.query("SELECT s.actions_json, s.points_json, s.screen_width, s.screen_height, t.policy "
                       "FROM steps s JOIN trajectories t USING (trajectory_id)")
    actions = [(a, p) for s in steps for a, p in zip(json.loads(s["actions_json"]), json.loads(s["points_json"]))]
    names = {a["action"] for a, _ in actions}
    assert {s["policy"] for s in steps} == {"replay@phone"}
    assert {(s["screen_width"], s["screen_height"]) for s in steps} == {(1170, 2532)}  # the screenshots' pixels
    assert "tap" in names and not COMPUTER_ONLY & names, names
    assert all(p == [a["x"], a["y"]] for a, p in actions if a["action"] == "tap"), "a tap lands where it says"
    judge_pending(lake, "j-phone")
    lake.refresh_catalog()
    verdicts = lake.query("SELECT verdict FROM verdicts")
    assert len(verdicts) == summary.verified and all(v["verdict"] == "pass" for v in verdicts)
