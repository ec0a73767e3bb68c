import re
import threading

import pytest

from sandboxes.actions import parse_actions
from sandboxes.app_process import SandboxError
from sandboxes.web import BrowserHost, WebDriver
from tests.shop_references import ADD_ADDRESS
from verifier_templates.base import Probe

pytestmark = pytest.mark.browser


def test_missing_browser_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))  # no bundled browser here
    monkeypatch.setattr("sandboxes.web.system_chromium", lambda: None)
    errors = []

    def start():  # its own thread: Playwright's sync API allows one instance per thread
        try:
            BrowserHost().start()
        except SandboxError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=start)
    thread.start()
    thread.join()
    assert len(errors) == 1
    assert re.search(r"no Chromium browser found.*apt-get install -y chromium", errors[0])


def test_actions_land_through_the_real_ui(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    driver.reset()
    actions = parse_actions(ADD_ADDRESS)
    results = [driver.act(a) for a in actions]
    assert all(r.ok for r in results), [r.error for r in results]
    click = results[-1]
    assert click.point is not None and all(0 <= c <= 999 for c in click.point)
    n = driver.probe(Probe("n", "sql", "SELECT count(*) FROM addresses WHERE label = ?", ("Boathouse 7",)))
    assert n == 1
    obs = driver.observe(screenshot=True)
    assert obs.screenshot[:8] == b"\x89PNG\r\n\x1a\n" and "Boathouse 7" in obs.ui_tree
    driver.reset()  # snapshot restore: the address is gone again
    assert driver.probe(Probe("n", "sql", "SELECT count(*) FROM addresses WHERE label = ?", ("Boathouse 7",))) == 0
    driver.close()


def test_a_missing_element_is_a_failed_action_not_a_crash(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    driver.reset()
    (action,) = parse_actions([{"action": "left_click", "target": {"role": "button", "name": "No such button"}}])
    result = driver.act(action)
    assert not result.ok and "left_click" in result.error
    driver.close()


def test_sensitive_controls_are_flagged(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    driver.reset()
    (go, delete) = parse_actions([
        {"action": "goto", "url": "/addresses/1/edit"},
        {"action": "left_click", "target": {"role": "button", "name": "Delete"}},
    ])
    assert driver.act(go).ok
    result = driver.act(delete)
    assert result.ok and result.sensitive == "delete"
    driver.close()


# A page of our own: two boards whose second list sits far below the first (off screen at 1280x800).
# "mouse" moves cards on mousedown / mousemove / mouseup (like dragula), "html5" with native drag events.
FAR_LISTS_PAGE = """<body style="margin:0">
<ul aria-label="Near" style="height:100px"><li>Mouse card</li><li draggable="true">Native card</li></ul>
<div style="height:2400px"></div>
<ul aria-label="Far" style="min-height:100px;border:1px solid"><li>Already here</li></ul>
<script>
let held = null, moved = false;
document.addEventListener('mousedown', e => { const c = e.target.closest('li'); if (c && !c.draggable) { held = c; moved = false; } });
document.addEventListener('mousemove', e => { if (held && e.buttons === 1) moved = true; });
document.addEventListener('mouseup', e => {
  const list = document.elementFromPoint(e.clientX, e.clientY)?.closest('ul');
  if (held && moved && list) list.appendChild(held);
  held = null;
});
let dragged = null;
document.addEventListener('dragstart', e => { dragged = e.target.closest('li'); e.dataTransfer.setData('text/plain', 'x'); });
document.addEventListener('dragover', e => { if (e.target.closest('ul')) e.preventDefault(); });
document.addEventListener('drop', e => { e.preventDefault(); const list = e.target.closest('ul'); if (dragged && list) list.appendChild(dragged); });
</script></body>"""


def test_a_drag_to_a_list_off_screen_scrolls_while_holding_the_card(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    probe = Probe("lists", "js", "[...document.querySelectorAll('ul')].map(u => [...u.children].map(li => li.textContent))")
    got = {}
    for card in ("Mouse card", "Native card"):  # mouse-driven and HTML5 drag and drop alike
        driver.reset()
        driver.observe(screenshot=False)
        driver.page.set_content(FAR_LISTS_PAGE)
        drag = {"action": "left_click_drag", "target": {"text": card}, "to": {"role": "list", "name": "Far"}}
        result = driver.act(parse_actions([drag])[0])
        got[card] = (result.ok, result.error, driver.probe(probe))
    driver.close()
    assert got["Mouse card"] == (True, None, [["Native card"], ["Already here", "Mouse card"]])
    assert got["Native card"] == (True, None, [["Mouse card"], ["Already here", "Native card"]])


RANDOM_PAGE = """<!doctype html><body><p id="drawn"></p><script>
  // what a demo makes up at start-up: numbers from Math.random and a stamp from the clock
  document.getElementById('drawn').textContent = JSON.stringify({r: [Math.random(), Math.random()], at: new Date().toISOString()});
</script></body>"""


def _drawn_at_load(driver, shop_app) -> dict:
    import json

    if not getattr(driver.context, "_fw_routed", False):  # a page of the app's origin that draws at start-up
        driver.context.route(f"{shop_app.base_url}/drawn", lambda route: route.fulfill(content_type="text/html", body=RANDOM_PAGE))
        driver.context._fw_routed = True
    assert driver.act(parse_actions([{"action": "goto", "url": "/drawn"}])[0]).ok
    return json.loads(driver.probe(Probe("drawn", "js", "document.getElementById('drawn').textContent")))


def test_a_page_draws_the_same_random_numbers_and_clock_on_every_load_from_a_reset(shop_app, browser_host):
    """An app that makes up its data per load (random titles, shuffled order, a start-up stamp) is the same
    app in the walk, the gate and every episode, however often it is loaded; a reload after the app stored
    something draws differently (ids it drew before the reload stay unique)."""
    driver = WebDriver(shop_app, browser_host)
    driver.reset(new_context=True)
    first = _drawn_at_load(driver, shop_app)
    reloaded = _drawn_at_load(driver, shop_app)  # a second load of the same episode, nothing stored
    driver.page.evaluate("() => localStorage.setItem('todos', JSON.stringify([{id: 0.123}]))")
    after_storing = _drawn_at_load(driver, shop_app)
    driver.reset(new_context=False)
    after_clearing = _drawn_at_load(driver, shop_app)
    driver.reset(new_context=True)
    in_a_new_context = _drawn_at_load(driver, shop_app)
    clock_runs = driver.probe(Probe("t", "js", "new Promise(r => { const a = Date.now(); setTimeout(() => r(Date.now() - a), 300); })"))
    driver.close()
    assert first == reloaded == after_clearing == in_a_new_context
    assert first["at"] == "2024-01-01T12:00:00.000Z"
    assert after_storing["r"] != first["r"], "a reload after the app stored records draws other numbers"
    assert clock_runs >= 250, "after the page has loaded its clock is the real one"


def test_a_manifest_can_leave_the_pages_own_random_numbers(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    driver.manifest = driver.manifest.model_copy(update={"start": driver.manifest.start.model_copy(update={"seeded_random": False})})
    drawn = []
    for _ in range(2):
        driver.reset(new_context=True)
        drawn.append(_drawn_at_load(driver, shop_app))
    driver.close()
    assert drawn[0]["r"] != drawn[1]["r"]
    assert drawn[0]["at"] != "2024-01-01T12:00:00.000Z"


def test_back_in_an_episode_never_reaches_the_episode_before(shop_app, browser_host):
    """Episodes of one task may keep the browser context (cookies and storage cleared); each gets a new tab,
    so the browser's back button finds nothing of the episode before."""
    driver = WebDriver(shop_app, browser_host)
    try:
        driver.reset(new_context=True)
        assert driver.act(parse_actions([{"action": "goto", "url": "/addresses/new"}])[0]).ok
        assert driver.observe(screenshot=False).url.endswith("/addresses/new")
        driver.reset(new_context=False)
        home = driver.observe(screenshot=False).url
        assert not home.endswith("/addresses/new")
        assert driver.act(parse_actions([{"action": "system_button", "button": "back"}])[0]).ok
        assert driver.observe(screenshot=False).url == home, "back reached the previous episode's page"
    finally:
        driver.close()
