"""Planted bad verifiers: pairs built on the live shop (Flask + SQLite, in the repo), each wrong in one way a
reviewer has seen in the wild, each rejected by the real gate with its own reason code. A sound pair of each
shape is verified alongside, so a rejection is the planted fault's and not the shape's."""

import types

import pytest

from flows.task_synthesis.gate import ValidationGate
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.skills import Skill
from sandboxes.web import WebDriver
from verifier_templates import TEMPLATES
from verifier_templates.base import Probe, Verdict

pytestmark = pytest.mark.browser

WITHIN = "Add address"
ADD = [
    {"action": "goto", "url": "/addresses/new"},
    {"action": "type", "target": {"label": "Label", "within": WITHIN}, "text": "Boathouse 7"},
    {"action": "type", "target": {"label": "Full name", "within": WITHIN}, "text": "Ana Silva"},
    {"action": "type", "target": {"label": "Street", "within": WITHIN}, "text": "1 Quay"},
    {"action": "type", "target": {"label": "City", "within": WITHIN}, "text": "Porto"},
    {"action": "type", "target": {"label": "Postcode", "within": WITHIN}, "text": "4000"},
    {"action": "type", "target": {"label": "Country", "within": WITHIN}, "text": "Portugal"},
    {"action": "left_click", "target": {"role": "button", "name": "Add address", "within": WITHIN}},
]
ADD_SAYS = "Add an address “Boathouse 7” for Ana Silva at 1 Quay, Porto, postcode 4000, Portugal."
ALL_NAMED = {"label": "Boathouse 7", "full_name": "Ana Silva", "street": "1 Quay", "city": "Porto", "postcode": "4000",
             "country": "Portugal"}

CABIN = {"id": 900100, "label": "Cabin 12"}
EDIT = [
    {"action": "goto", "url": "/addresses/900100/edit"},
    {"action": "type", "target": {"label": "City", "within": "Save address"}, "text": "Lyon"},
    {"action": "left_click", "target": {"role": "button", "name": "Save address", "within": "Save address"}},
]
EDIT_SAYS = "Change the city of my address “Cabin 12” to “Lyon”."
INSERT = ("INSERT INTO addresses (id, user_id, label, full_name, street, city, postcode, country) "
          "VALUES (:id, 1, :label, 'Ines Rossi', '9 Birch Way', 'Graz', '8010', 'Austria')")
SKILLS = {
    "insert_addresses": Skill("insert_addresses", "shop", "sql", "add an address", {"table": "addresses", "statements": [INSERT]}),
    # phantom: claims the row, then takes it away again, so the task would start from a state it does not describe
    "phantom_addresses": Skill("phantom_addresses", "shop", "sql", "add an address",
                               {"table": "addresses", "statements": [INSERT, "DELETE FROM addresses WHERE id = :id"]}),
}


def pair(instruction, verifier, reference, injection=(), family="create"):
    return TaskSpec("shop", "planted", family, "addresses", instruction, {}, 1, list(injection), verifier, reference)


def row_exists(**where):
    return {"template": "row_exists", "params": {"table": "addresses", "where": where}}


@pytest.fixture(scope="module")
def gate(shop_app, browser_host):
    driver = WebDriver(shop_app, browser_host)
    yield ValidationGate(driver, SKILLS)
    driver.close()


def outcome(gate, spec):
    result = gate.validate(spec)
    return result.status, result.reason, result.detail


def test_sound_pairs_of_both_shapes_are_verified(gate):
    status, _, detail = outcome(gate, pair(ADD_SAYS, row_exists(**ALL_NAMED), ADD))
    assert status == "verified", detail
    edit = pair(EDIT_SAYS, row_exists(id=900100, city="Lyon"), EDIT, [{"skill": "insert_addresses", "args": CABIN}], "update")
    result = gate.validate(edit)
    assert result.status == "verified", result.detail
    stages = [c.check for c in result.checks]
    assert stages[:2] == ["injected", "initial"] and "other_record" in stages and "counterfactual" in stages


def test_always_pass(gate):
    assert outcome(gate, pair(ADD_SAYS, row_exists(), ADD))[:2] == ("rejected", "passes_initially")


def test_never_pass(gate):
    assert outcome(gate, pair(ADD_SAYS, row_exists(label="Never typed"), ADD))[:2] == ("rejected", "fails_after_reference")


def test_flaky(gate, monkeypatch):
    changed = {"n": 0}

    def judge(evidence, params):  # passes every other time the state changed
        if evidence.final["n"] == evidence.initial["n"]:
            return Verdict(False, "nothing changed")
        changed["n"] += 1
        return Verdict(changed["n"] % 2 == 1, f"coin {changed['n']}")

    coin = types.SimpleNamespace(NAME="coin", HOLDS_INITIALLY=False, judge=judge,
                                 probes=lambda params: [Probe("n", "sql", "SELECT count(*) FROM addresses")])
    monkeypatch.setitem(TEMPLATES, "coin", coin)
    assert outcome(gate, pair(ADD_SAYS, {"template": "coin", "params": {}}, ADD))[:2] == ("rejected", "flaky")


def test_checks_a_subset_of_the_named_values(gate):
    subset = row_exists(label="Boathouse 7", full_name="Ana Silva", city="Porto")  # street, postcode, country unchecked
    status, reason, detail = outcome(gate, pair(ADD_SAYS, subset, ADD))
    assert (status, reason) == ("rejected", "underspecified_verifier")
    assert "'1 Quay'" in detail, "names the first value the verifier does not check"


def test_checks_the_wrong_record(gate):
    # "the city of Cabin 12 is Lyon" is what was asked; "some address is in Lyon" is what this checks
    wrong = pair(EDIT_SAYS, row_exists(city="Lyon"), EDIT, [{"skill": "insert_addresses", "args": CABIN}], "update")
    status, reason, detail = outcome(gate, wrong)
    assert (status, reason) == ("rejected", "passes_on_other_record"), detail


def test_phantom_injection(gate):
    phantom = pair(EDIT_SAYS, row_exists(id=900100, city="Lyon"), EDIT, [{"skill": "phantom_addresses", "args": CABIN}], "update")
    result = gate.validate(phantom)
    assert (result.status, result.reason) == ("rejected", "inject_no_effect")
    assert [c.check for c in result.checks] == ["injected"] and "id=900100" in result.detail


def test_reads_a_transient_message(gate):
    # the flash message shows once, after the post; the address itself stays
    flash = {"template": "page_contains", "params": {"text": "added."}}
    status, reason, detail = outcome(gate, pair("Add my boathouse address.", flash, ADD))
    assert (status, reason) == ("rejected", "brittle_verifier"), detail
