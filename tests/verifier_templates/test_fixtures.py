import json
from pathlib import Path

import pytest

from verifier_templates import TEMPLATES, get_template
from verifier_templates.base import Evidence, normalise

FIXTURES = Path(__file__).resolve().parents[2] / "verifier_templates" / "fixtures"


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_each_template_passes_its_pass_fixture_and_fails_its_fail_fixture(name):
    fixture = json.loads((FIXTURES / f"{name}.json").read_text())
    tmpl = get_template(name)
    assert tmpl.probes(fixture["params"]), "a template must observe something"
    passed = tmpl.judge(Evidence.from_json(fixture["pass"]), fixture["params"])
    failed = tmpl.judge(Evidence.from_json(fixture["fail"]), fixture["params"])
    assert passed.passed, passed.reason
    assert not failed.passed, failed.reason
    assert failed.reason and passed.reason


def test_every_fixture_names_a_registered_template():
    assert {p.stem for p in FIXTURES.glob("*.json")} == set(TEMPLATES)


def test_unknown_template_lists_close_names():
    with pytest.raises(KeyError, match="row_exists"):
        get_template("row_exist")


def test_sql_identifiers_from_params_are_refused_unless_plain():
    with pytest.raises(ValueError, match="identifier"):
        get_template("row_exists").probes({"table": "users; DROP TABLE users", "where": {}})


@pytest.mark.parametrize("a,b", [("$129.00", "129"), ("1,024", "1024"), ("  Ana  Silva ", "ana silva"), ("3.50", "3.5")])
def test_normalise_treats_equal_values_alike(a, b):
    assert normalise(a) == normalise(b)


def test_normalise_keeps_different_numbers_apart():
    assert normalise("$12.90") != normalise("129")
