"""The gate against a live shop: a sound pair is verified; each kind of bad verifier gets its own reason."""

import types

import pytest

from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.skills import Skill
from sandboxes.web import WebDriver
from tests.shop_references import ADD_ADDRESS
from verifier_templates import TEMPLATES
from verifier_templates.base import Probe, Verdict

pytestmark = pytest.mark.browser



def spec(verifier, reference=ADD_ADDRESS, injection=(), instruction="Add my “Boathouse 7” address in Porto"):
    return TaskSpec("shop", "test", "create", "addresses", instruction, {"v": repr(verifier)}, 1,
                    list(injection), verifier, reference)


@pytest.fixture
def gate(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    insert = Skill("insert_addresses", "shop", "sql", "add an address", {"statements": [
        "INSERT INTO addresses (id, user_id, label, full_name, street, city, postcode, country) "
        "VALUES (:id, 1, :label, 'A B', 'S', 'C', 'P', 'X')"]})
    yield ValidationGate(driver, {"insert_addresses": insert})
    driver.close()


def test_a_sound_pair_is_verified(gate):
    result = gate.validate(spec({"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7", "city": "Porto"}}}))
    assert result.status == "verified", result.detail
    assert [c.check for c in result.checks] == [
        "initial", "reference", "repeat", "truncated", "counterfactual", "counterfactual", "unrelated_navigation"]
    assert all(c.ok for c in result.checks)
    assert [c.evidence["changed"] for c in result.checks if c.check == "counterfactual"] == [
        "step 2 types 'Boathouse 6' instead of 'Boathouse 7'", "step 5 types 'Graz' instead of 'Porto'"]


def test_a_verifier_that_always_passes_is_rejected_as_passes_initially(gate):
    result = gate.validate(spec({"template": "row_exists", "params": {"table": "addresses", "where": {}}}))
    assert (result.status, result.reason) == ("rejected", "passes_initially")


def test_a_verifier_that_never_passes_is_rejected_as_fails_after_reference(gate):
    result = gate.validate(spec({"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Never typed"}}}))
    assert (result.status, result.reason) == ("rejected", "fails_after_reference")


def test_a_flaky_verifier_is_rejected_as_flaky(gate, monkeypatch):
    calls = {"changed": 0}

    def judge(evidence, params):  # passes the first time the state changed, not the second
        if evidence.final["n"] == evidence.initial["n"]:
            return Verdict(False, "nothing changed")
        calls["changed"] += 1
        return Verdict(calls["changed"] % 2 == 1, f"coin {calls['changed']}")

    flaky = types.SimpleNamespace(
        NAME="coin", HOLDS_INITIALLY=False, judge=judge,
        probes=lambda params: [Probe("n", "sql", "SELECT count(*) FROM addresses")],
    )
    monkeypatch.setitem(TEMPLATES, "coin", flaky)
    result = gate.validate(spec({"template": "coin", "params": {}}))
    assert (result.status, result.reason) == ("rejected", "flaky")


def test_a_verifier_satisfied_before_the_last_action_is_rejected_as_passes_truncated(gate):
    result = gate.validate(spec({"template": "url_matches", "params": {"pattern": "/addresses"}}))
    assert (result.status, result.reason) == ("rejected", "passes_truncated")


def test_injection_that_fails_is_rejected_as_inject_error(gate):
    bad = [{"skill": "insert_addresses", "args": {"id": 1, "label": "dup id"}}]  # id 1 exists already
    result = gate.validate(spec({"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7"}}}, injection=bad))
    assert (result.status, result.reason) == ("rejected", "inject_error")
    assert "UNIQUE" in result.detail


def test_a_reference_that_does_not_parse_is_rejected(gate):
    result = gate.validate(spec({"template": "row_exists", "params": {"table": "addresses", "where": {"label": "x"}}},
                                reference=[{"action": "teleport"}]))
    assert (result.status, result.reason) == ("rejected", "bad_reference")


def test_a_sandbox_that_fails_once_is_gated_again_and_twice_is_a_sandbox_error(gate, monkeypatch):
    from sandboxes.web import SandboxTimeout

    real_act, calls = gate.driver.act, {"n": 0}

    def act_failing_first(action):  # the page would not settle, twice, on the first step only
        calls["n"] += 1
        if calls["n"] == 1:
            raise SandboxTimeout("shop: left_click timed out twice")
        return real_act(action)

    sound = spec({"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7", "city": "Porto"}}})
    monkeypatch.setattr(gate.driver, "act", act_failing_first)
    assert gate.validate(sound).status == "verified", "a transient sandbox failure is no verdict on the pair"

    def act_failing(action):
        raise SandboxTimeout("shop: left_click timed out twice")

    monkeypatch.setattr(gate.driver, "act", act_failing)
    result = gate.validate(sound)
    assert (result.status, result.reason) == ("rejected", "sandbox_error") and "timed out twice" in result.detail
