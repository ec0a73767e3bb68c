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
    assert page.evaluate("Array.from(document.querySelectorAll('.filmstrip img')).every(i => i.complete && i.naturalWidth === 8)")


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


def _index(state, item_id):
    return next(i for i, it in enumerate(state.sample.items) if it.item_id == item_id)


def test_screenshots_open_full_size_and_zoom_with_mouse_and_keyboard(review_app, new_page):
    from tests.review.conftest import NOW, png

    state, base = review_app
    big = state.lake.put_blob(png((40, 90, 200), size=1200))  # a screenshot larger than the 320 px thumbnails
    state.lake.write("steps", [{"trajectory_id": "tr-ok", "step_index": 2, "screenshot_sha": big, "screen_width": 1200,
                                "screen_height": 1200, "url": "http://127.0.0.1/big", "actions_json": "[]", "ok": True,
                                "started_at": NOW, "finished_at": NOW, "run_id": "seed-run"}], "seed-run", "big-step")
    page = new_page()
    open_queue(page, base, "zoe")
    here = f"{base}/item/{_index(state, 'tr-ok')}"
    page.goto(here)
    assert page.locator(".filmstrip img").count() == 3
    assert page.locator(".filmstrip img").nth(2).evaluate("i => i.getBoundingClientRect().width") <= 320
    page.locator(".filmstrip img").nth(2).click()
    viewer, img = page.locator("#viewer"), page.locator("#viewer-img")
    assert viewer.is_visible()
    page.wait_for_function("() => document.getElementById('viewer-img').complete")
    assert img.evaluate("i => i.naturalWidth") == 1200
    fit = img.evaluate("i => i.getBoundingClientRect().height")
    assert 320 < fit <= page.viewport_size["height"]  # fitted to the window, bigger than a thumbnail
    img.click()  # actual size
    assert img.evaluate("i => Math.round(i.getBoundingClientRect().width)") == 1200
    page.keyboard.press("+")
    assert img.evaluate("i => Math.round(i.getBoundingClientRect().width)") == 1800
    page.keyboard.press("0")
    assert img.evaluate("i => i.getBoundingClientRect().height") == fit
    page.keyboard.press("ArrowLeft")  # the previous screenshot, still in the viewer
    page.wait_for_function("() => document.getElementById('viewer-img').naturalWidth === 8")
    assert "step 1" in page.locator("#viewer-caption").inner_text()
    page.keyboard.press("a")  # a decision key does nothing while the viewer is open
    page.keyboard.press("Escape")
    assert not viewer.is_visible()
    assert not decisions(state.lake, "zoe")
    page.keyboard.press("v")  # the keyboard opens it too, at the first screenshot
    assert viewer.is_visible() and "step 0" in page.locator("#viewer-caption").inner_text()
    page.keyboard.press("Escape")
    page.keyboard.press("a")
    page.wait_for_url(lambda url: url != here)
    assert [r["item_id"] for r in decisions(state.lake, "zoe")] == ["tr-ok"]


def test_the_queue_filters_by_sandbox_family_and_verdict_and_stays_inside(review_app, new_page):
    state, base = review_app
    page = new_page()
    open_queue(page, base, "fay")
    page.select_option("#filter-sandbox", "mail")
    page.click("#apply-filters")
    page.wait_for_url(re.compile(r"/item/\d+\?sandbox=mail$"))
    mail = [i for i, it in enumerate(state.sample.items) if it.sandbox == "mail"]
    assert f"of {len(mail)} (sandbox mail)" in page.locator("#progress").inner_text()
    seen = []
    for _ in mail:
        seen.append(int(re.search(r"/item/(\d+)", page.url).group(1)))
        before = page.url
        page.keyboard.press("j")
        page.wait_for_url(lambda url, before=before: url != before)
    assert sorted(seen) == mail and page.url.endswith("/done?sandbox=mail")
    # verdict: only judged trajectories have one; the low-agreement mail trajectory is the failed one
    page.goto(f"{base}/?verdict=failed")
    page.wait_for_url(re.compile(r"/item/\d+\?verdict=failed$"))
    assert "tr-noisy" in page.locator(".meta").first.inner_text()
    assert "of 1 (verdict failed)" in page.locator("#progress").inner_text()
    page.keyboard.press("a")  # deciding the last filtered item ends the filtered queue
    page.wait_for_url(re.compile(r"/done\?verdict=failed$"))
    assert "1 of 1 items decided (verdict failed" in page.locator("#done").inner_text()
    page.goto(f"{base}/?family=search&sandbox=shop")  # nothing matches: said so, with a way back
    assert "No item of this sample matches sandbox shop, family search" in page.locator("#no-match").inner_text()
    page.goto(f"{base}/?sandbox=<script>window.__pwned=1</script>")  # not an option: ignored, never echoed
    page.wait_for_url(re.compile(r"/item/\d+$"))
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert "(sandbox" not in page.locator("#progress").inner_text()
