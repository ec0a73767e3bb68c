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
