"""js_state_matches: judging page state, and picking the verifier that matches an observed change."""

import pytest

from verifier_templates import js_state_matches as tmpl
from verifier_templates.base import Evidence

EXPR = "JSON.parse(localStorage.getItem('todos') || '[]')"
MILK = {"id": 1, "title": "Buy oat milk", "completed": False}
DOG = {"id": 2, "title": "Walk the dog", "completed": False}


def verdict(state, where, count):
    return tmpl.judge(Evidence({}, {"state": state}), {"expression": EXPR, "where": where, "count": count})


def test_counts_records_by_fields_with_text_normalised_and_nested_paths():
    assert verdict([MILK, DOG], {"title": " buy OAT milk"}, 1).passed
    assert not verdict([MILK, DOG], {"completed": True}, 1).passed
    assert verdict({"step": 3, "address": {"city": "Porto"}}, {"address.city": "porto"}, 1).passed
    assert verdict(["a", "b"], {"": "b"}, 1).passed
    assert "null" in verdict(None, {}, 0).reason


def test_a_probe_needs_an_expression():
    with pytest.raises(ValueError, match="expression"):
        tmpl.probes({"where": {}, "count": 1})


@pytest.mark.parametrize(
    "before,after,family,where,count",
    [
        ([MILK], [MILK, {"id": 9, "title": "Pay the gas bill", "completed": False}], "create",
         {"title": "Pay the gas bill", "completed": False}, 1),
        ([MILK, DOG], [DOG], "delete", {"title": "Buy oat milk"}, 0),
        ([MILK, DOG], [MILK | {"completed": True}, DOG], "update", {"title": "Buy oat milk", "completed": True}, 1),
        ([MILK, DOG], [MILK | {"title": "Buy rice milk"}, DOG], "update", {"title": "Buy rice milk"}, 1),
        ([MILK, DOG], [MILK | {"completed": True}, DOG | {"completed": True}], "update", {"completed": False}, 0),
        ({"step": 1, "name": ""}, {"step": 2, "name": "Ana"}, "update", {"step": 2, "name": "Ana"}, 1),
    ],
    ids=["added", "removed", "toggled", "renamed", "all-toggled", "wizard-step"],
)
def test_from_change_picks_a_verifier_that_fails_before_and_passes_after(before, after, family, where, count):
    got_family, verifier, what = tmpl.from_change(before, after, EXPR, typed=("Pay the gas bill",))
    assert (got_family, verifier["params"]["where"], verifier["params"]["count"]) == (family, where, count), what
    assert not verdict(before, where, count).passed and verdict(after, where, count).passed


def test_from_change_gives_none_without_a_clear_change():
    assert tmpl.from_change([MILK], [MILK], EXPR) is None
    assert tmpl.from_change("text", "other text", EXPR) is None
    swapped = [MILK | {"title": "x"}, DOG | {"completed": True}]
    assert tmpl.from_change([MILK, DOG], swapped, EXPR) is None
