"""The review queue in a real Chromium: token, keyboard-only decisions, two reviewers at once, escaping."""

import re
import urllib.error
import urllib.request

import pytest

from flywheel.review.app import ReviewState, start_server
from flywheel.review.sampling import draw_sample
from tests.review.conftest import SCRIPT_REQUEST

pytestmark = pytest.mark.browser
TOKEN = "t0ken-for-tests-only"


@pytest.fixture
def review_app(review_lake):
    state = ReviewState(review_lake, draw_sample(review_lake, size=10, seed=0), "nobody", TOKEN)
    server, thread = start_server(state)
    yield state, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join()
    server.server_close()


@pytest.fixture
def new_page(browser_host):
    contexts = []

    def make():
        contexts.append(browser_host.browser.new_context())
        return contexts[-1].new_page()

    yield make
    for c in contexts:
        c.close()


def open_queue(page, base, reviewer):
    page.goto(f"{base}/?token={TOKEN}&reviewer={reviewer}")
    page.wait_for_url(re.compile(r"/item/\d+$"))


def decisions(lake, reviewer):
    return lake.query("SELECT item_kind, item_id, decision, reason, label FROM reviews_history WHERE reviewer = ? "
                      "ORDER BY decided_at", [reviewer])


def test_requests_without_the_token_are_refused(review_app, new_page):
    _, base = review_app
    for path in ("/", "/item/0", "/static/review.js", "/?token=wrong"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + path)
        assert err.value.code == 403
    req = urllib.request.Request(base + "/decide/0", data=b'{"decision": "accept"}', method="POST",
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 403
    page = new_page()
    assert page.goto(base + "/item/0").status == 403


def test_three_items_reviewed_with_the_keyboard_land_in_the_lake(review_app, new_page):
    state, base = review_app
    page = new_page()
    open_queue(page, base, "alice")
    assert page.url.endswith("/item/0")
    expected = []
    for index in range(3):
        kind = page.locator("#item").get_attribute("data-kind")
        item = state.sample.items[index]
        assert kind == item.kind
        if index == 0:
            page.keyboard.press("a")
            expected.append((item.item_id, "accept", None, None))
        elif index == 1:
            page.keyboard.press("r")
            page.keyboard.type("the request names no city")
            page.keyboard.press("Enter")
            expected.append((item.item_id, "reject", "the request names no city", None))
        elif kind == "trajectory":
            page.keyboard.press("l")
            page.keyboard.press("1")
            expected.append((item.item_id, "relabel", None, "pass"))
        else:
            page.keyboard.press("f")
            page.keyboard.type("checks any row")
            page.keyboard.press("Enter")
            expected.append((item.item_id, "flag_verifier", "checks any row", None))
        page.wait_for_url(re.compile(rf"/item/{index + 1}$"))
    assert "3 decided by alice" in page.locator("#progress").inner_text()
    rows = decisions(state.lake, "alice")
    assert [(r["item_id"], r["decision"], r["reason"], r["label"]) for r in rows] == expected
    page.keyboard.press("k")  # back to the third item: it shows the decision
    page.wait_for_url(re.compile(r"/item/2$"))
    assert expected[2][1] in page.locator("#status").inner_text()


def test_two_reviewers_at_once_lose_no_decision(review_app, new_page):
    state, base = review_app
    bob, carol = new_page(), new_page()
    open_queue(bob, base, "bob")
    open_queue(carol, base, "carol")
    n = len(state.sample.items)
    for index in range(n):
        for page in (bob, carol):  # both send before either waits: the server takes them concurrently
            page.keyboard.press("a" if state.sample.items[index].kind == "task" or index % 2 else "l")
            if page.locator("#label-box").is_visible():
                page.keyboard.press("2")
        for page in (bob, carol):
            page.wait_for_url(re.compile(rf"/item/{index + 1}$" if index + 1 < n else r"/done$"))
    for reviewer in ("bob", "carol"):
        rows = decisions(state.lake, reviewer)
        assert sorted(r["item_id"] for r in rows) == sorted(i.item_id for i in state.sample.items)
    assert f"{n} of {n} items decided" in carol.locator("#done").inner_text()


def test_a_script_in_a_request_stays_inert_text(review_app, new_page):
    state, base = review_app
    index = next(i for i, it in enumerate(state.sample.items) if it.item_id == "t-shop-create")
    page = new_page()
    open_queue(page, base, "dave")
    page.goto(f"{base}/item/{index}")
    assert page.locator("#instruction").inner_text() == SCRIPT_REQUEST
    assert page.evaluate("typeof window.__pwned") == "undefined"
    low = next(i for i, it in enumerate(state.sample.items) if it.item_id == "tr-noisy")
    page.goto(f"{base}/item/{low}")  # a judge's reason carrying an <img onerror> is text too
    assert "<img src=x onerror=window.__pwned=1>" in page.locator("table.votes").inner_text()
    assert page.locator("table.votes img").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator(".filmstrip img").count() == 2  # the screenshots come through the blob route
    assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth === 8)")


def test_a_pair_shows_its_replay_screenshots_or_says_there_is_none(review_app, new_page):
    state, base = review_app
    where = {it.item_id: i for i, it in enumerate(state.sample.items)}
    page = new_page()
    open_queue(page, base, "erin")
    page.goto(f"{base}/item/{where['t-shop-create']}")
    assert "tr-replay" in page.locator("main").inner_text()
    assert page.locator(".filmstrip img").count() == 2
    assert "row_exists" in page.locator("main").inner_text() and "insert_addresses" in page.locator("main").inner_text()
    page.goto(f"{base}/item/{where['t-mail-search']}")
    assert page.locator(".filmstrip").count() == 0
    assert "No replay of this task is stored" in page.locator(".note").inner_text()
