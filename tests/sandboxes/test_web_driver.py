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
