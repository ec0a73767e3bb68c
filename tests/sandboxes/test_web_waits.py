"""Load-independent execution: a missing element fails at once, a page that does not settle is the
environment's fault (retried once, then SandboxTimeout), and data names the canonical origin."""

import time

import pytest

from flows.rollout.policies import get_policy
from flows.rollout.rollout import run_episode
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.actions import parse_actions
from sandboxes.web import SandboxTimeout, WebDriver

pytestmark = pytest.mark.browser


def test_a_missing_element_fails_at_once_whatever_the_cap(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)  # the default, generous cap
    driver.reset()
    (action,) = parse_actions([{"action": "left_click", "target": {"role": "button", "name": "No such button"}}])
    t0 = time.monotonic()
    result = driver.act(action)
    assert not result.ok and "no element matches button 'No such button'" in result.error
    assert time.monotonic() - t0 < driver.action_timeout_ms / 1000, "it did not wait for the cap"
    driver.close()


def test_urls_and_trees_name_the_canonical_origin_and_goto_maps_it_back(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    driver.reset()
    (goto,) = parse_actions([{"action": "goto", "url": "http://shop.local/addresses"}])
    assert driver.act(goto).ok
    obs = driver.observe(screenshot=False)
    assert obs.url == "http://shop.local/addresses" and shop_app.base_url not in obs.ui_tree
    driver.close()


def test_a_page_that_never_settles_is_a_sandbox_timeout_and_an_env_error(shop_app, browser_host, lake):
    driver = WebDriver(shop_app, browser_host, action_timeout_ms=1)  # every wait exceeds the cap
    driver.reset()
    (goto,) = parse_actions([{"action": "goto", "url": "/addresses"}])
    with pytest.raises(SandboxTimeout, match="timed out twice"):
        driver.act(goto)
    task = TaskSpec("shop", "t", "retrieve", "addresses", "What is my city?", {}, 1, [],
                    {"template": "answer_equals", "params": {"answer": "x"}}, [{"action": "goto", "url": "/addresses"}])
    episode = run_episode(driver, lake, task, {}, get_policy("replay", None, lambda name: None), 0, "r")
    assert episode.trajectory["ended"] == "env_error" and "timed out twice" in episode.trajectory["end_detail"]
    driver.close()


ONCHANGE_SERVER = """
import http.server, sys, time
PAGES = {
    # choosing a size fetches the next step's screen and shows it, as many apps do; there the next step acts
    "/": '<label for="size">Size</label> <select id="size" onchange="fetch(\\'/next\\').then(r => r.text())'
         '.then(t => { document.body.innerHTML = t; })"><option>S</option><option>M</option></select>',
    "/next": '<button style="position: fixed; inset: 0" onclick="document.title = \\'confirmed\\'">Confirm</button>',
}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/next":
            time.sleep(1)  # a slow answer: the next step must wait for it, however long it takes
        body = PAGES.get(self.path, "").encode()
        self.send_response(200 if body else 404); self.send_header("Content-Type", "text/html"); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_what_a_select_sets_off_lands_before_the_next_step(tmp_path, browser_host):
    """A select whose onchange fetches the next screen: the next step, a click at a point as a policy makes it,
    lands on that screen (a button filling it), because the driver waits for the request the input started
    (not for a time, and not for nothing; Playwright itself waits only for navigations)."""
    from sandboxes.app_process import AppProcess
    from sandboxes.manifest import load_manifest

    (tmp_path / "server.py").write_text(ONCHANGE_SERVER)
    (tmp_path / "sandbox.toml").write_text('[sandbox]\nname = "onchange"\nkind = "web"\n[start]\n'
                                           'command = ["{python}", "server.py", "{port}"]\n[state]\nkind = "files"\n')
    with AppProcess(load_manifest(tmp_path)) as app:
        driver = WebDriver(app, browser_host)
        driver.reset()
        pick, confirm = parse_actions([
            {"action": "select", "target": {"label": "Size"}, "option": "M"},
            {"action": "left_click", "x": 500, "y": 500},
        ])
        assert driver.act(pick).ok
        result = driver.act(confirm)
        assert result.ok, result.error
        obs = driver.observe(screenshot=False)
        assert obs.url == "http://onchange.local/" and obs.title == "confirmed"
        driver.close()


PAGE_TRAITS = """async () => {
  document.body.innerHTML = '<div style="height: 3000px">tall</div>';
  const frame = await new Promise(r => { requestAnimationFrame(() => r(true)); setTimeout(() => r(false), 5000); });
  return {scrollbar: innerWidth - document.documentElement.clientWidth, hover: matchMedia('(hover: hover)').matches,
          visible: document.visibilityState, frame};
}"""


def test_the_shared_browser_of_many_workers_shows_pages_as_the_launched_one_of_one_worker(browser_host):
    """One worker drives a Chromium Playwright launched; several share one started for CDP. A page must look
    and run alike in both (no scrollbar taking room, frames drawn in a page that is not the newest), or the
    worker count would change what a step hits and whether a wait ends."""
    from sandboxes.web import BrowserHost, SharedBrowser
    from tests.conftest import in_own_thread

    def traits(browser) -> list[dict]:
        first, second = (browser.new_context().new_page() for _ in range(2))  # the first is no longer the newest
        return [first.evaluate(PAGE_TRAITS), second.evaluate(PAGE_TRAITS)]

    launched = traits(browser_host.browser)

    def shared_traits() -> list[dict]:
        with SharedBrowser() as shared, BrowserHost(endpoint=shared.endpoint) as host:
            return traits(host.browser)

    assert in_own_thread(shared_traits) == launched
    assert launched[0]["frame"] and launched[0]["scrollbar"] == 0


FIELDS = 8
CAPTURE_SERVER = """
import http.server, sys
STYLE = ('<style>body { font: 16px sans-serif; background: #f8f9fa; } input, select { font: inherit; margin: 4px;'
         ' padding: .4rem .55rem; border: 1px solid #cbd2d9; border-radius: 6px; background: #fff; }'
         ' #panel { width: 200px; height: 100px; background: rgb(255, 255, 255); transition: background-color 600s; }'
         ' #panel.lit { background: rgb(200, 30, 30); }</style>')
def form(filled):
    return STYLE + ''.join(
        f'<label for="f{i}">Field {i}</label> <input id="f{i}" value="{f"value {i}" if filled else ""}"> '
        f'<label for="s{i}">Choice {i}</label> <select id="s{i}"><option>None</option>'
        f'<option {"selected" if filled else ""}>Chosen {i}</option></select><br>' for i in range(FIELD_COUNT))
PAGES = {"/": form(False), "/filled": form(True),
         "/panel": STYLE + '<div id="panel"></div><button onclick="panel.classList.add(\\'lit\\')">Light up</button>'}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGES.get(self.path, "").encode()
        self.send_response(200 if body else 404); self.send_header("Content-Type", "text/html"); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""".replace("FIELD_COUNT", str(FIELDS))


@pytest.fixture(scope="module")
def capture_app(tmp_path_factory):
    from sandboxes.app_process import AppProcess
    from sandboxes.manifest import load_manifest

    folder = tmp_path_factory.mktemp("capture")
    (folder / "server.py").write_text(CAPTURE_SERVER)
    (folder / "sandbox.toml").write_text('[sandbox]\nname = "capture"\nkind = "web"\n[start]\n'
                                         'command = ["{python}", "server.py", "{port}"]\n[state]\nkind = "files"\n')
    with AppProcess(load_manifest(folder)) as app:
        yield app


def _pixels(png: bytes):
    import io

    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


def test_a_screenshot_shows_the_page_not_the_steps_that_painted_it(capture_app, browser_host):
    """Fields filled step by step, then the same filled page loaded at once: the same pixels. With partial raster
    Chromium re-rasters only what each step invalidated, and the rounded edges beside it keep an older raster
    (off by one in a channel), so which frames the steps produced (which depends on load) showed in the data."""
    from PIL import ImageChops

    driver = WebDriver(capture_app, browser_host)
    away = {"action": "left_click", "x": 990, "y": 990}  # focus and pointer on the empty page, in both
    driver.reset()
    steps = [a for i in range(FIELDS) for a in ({"action": "type", "text": f"value {i}", "target": {"label": f"Field {i}"}},
                                                {"action": "select", "target": {"label": f"Choice {i}"}, "option": f"Chosen {i}"})]
    for action in parse_actions([*steps, away]):
        assert driver.act(action).ok
    stepped = driver.observe().screenshot
    driver.reset()
    for action in parse_actions([{"action": "goto", "url": "/filled"}, away]):
        assert driver.act(action).ok
    loaded = driver.observe().screenshot
    driver.close()
    diff = ImageChops.difference(_pixels(stepped), _pixels(loaded))
    assert diff.getbbox() is None, f"pixels differ in {diff.getbbox()}"


def test_a_screenshot_shows_a_transition_at_its_end(capture_app, browser_host):
    """A click starts a (long) colour transition; the screenshot after the step shows where it ends, as a capture
    taken whenever the transition finished would: not a colour of the moment the capture happened to be taken."""
    driver = WebDriver(capture_app, browser_host)
    driver.reset()
    for action in parse_actions([{"action": "goto", "url": "/panel"},
                                 {"action": "left_click", "target": {"role": "button", "name": "Light up"}}]):
        assert driver.act(action).ok
    box = driver.page.locator("#panel").bounding_box()
    shot = driver.observe().screenshot
    driver.close()
    assert _pixels(shot).getpixel((int(box["x"] + box["width"] / 2), int(box["y"] + box["height"] / 2))) == (200, 30, 30)
