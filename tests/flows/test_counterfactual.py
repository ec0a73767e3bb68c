"""The near misses the gate replays, and how a reference reaches a page: pure functions, no browser."""

from flows.task_synthesis.agents.navigation import Navigator
from flows.task_synthesis.app_model import build_app_model
from flows.task_synthesis.counterfactual import detour, names, other_option, variants
from flows.task_synthesis.source import read_source
from flows.task_synthesis.values import another_like


def test_another_value_keeps_its_type():
    assert another_like("Porto") != "Porto" and another_like("Porto")[0].isupper()
    assert another_like("2026-02-28") == "2026-02-27"  # still a date
    assert another_like("4000") == "3999" and another_like("+1 555 123 4567") == "+1 555 123 4566"
    assert another_like("ana.silva12@example.com") == "ana.silva11@example.com"
    assert another_like("Quay") != "Quay"


def test_named_values_are_found_as_whole_words():
    assert names("Set the quantity to 2 please", "2") and not names("Set the quantity to 12", "2")
    assert names("Ship to “Porto”", "porto") and not names("Ship it", "")


REFERENCE = [
    {"action": "left_click", "target": {"role": "link", "name": "Cabin 12"}},
    {"action": "goto", "url": "/addresses/900100/edit"},
    {"action": "type", "target": {"label": "City"}, "text": "Lyon"},
    {"action": "type", "target": {"label": "Notes"}, "text": "unsaid"},
    {"action": "check", "target": {"label": "Use as default"}, "checked": True},
    {"action": "left_click", "target": {"role": "button", "name": "Save"}},
]
INJECTION = [{"skill": "insert_addresses", "args": {"id": 900100, "label": "Cabin 12"}}]


def test_one_replay_per_named_value_one_per_record_and_one_detour():
    found = variants("Move “Cabin 12” to Lyon and tick “Use as default”.", REFERENCE, INJECTION)
    assert [v.stage for v in found] == ["counterfactual", "counterfactual", "other_record"]
    typed, ticked, twin = found
    assert typed.reference[2]["text"] != "Lyon" and typed.reference[3]["text"] == "unsaid"  # unsaid values stay
    assert ticked.reference[4]["checked"] is False
    assert twin.injection[-1]["args"]["id"] == 900101 and twin.injection[-1]["args"]["label"] != "Cabin 12"
    assert twin.reference[0]["target"]["name"] == twin.injection[-1]["args"]["label"]
    assert twin.reference[1]["url"] == "/addresses/900101/edit"
    assert detour("/") == [{"action": "goto", "url": "/"}, {"action": "system_button", "button": "back"}]


def test_another_option_is_read_from_the_page():
    options = [["", "Choose", False], ["3", "Blue", True], ["4", "Red", False]]
    assert other_option(options, {"action": "select", "target": {"label": "Colour"}, "value": "3"}) == (
        {"action": "select", "target": {"label": "Colour"}, "value": "4"}, "Blue")
    assert other_option([["3", "Blue", True]], {"action": "select", "target": {"label": "C"}, "value": "3"}) is None


def test_references_reach_pages_through_links(shop_manifest):
    src = read_source(shop_manifest)
    nav = Navigator(src.files, build_app_model(src))
    link = lambda name: {"action": "left_click", "target": {"role": "link", "name": name}}  # noqa: E731
    assert nav.path_to("/addresses/new") == [link("Addresses"), link("Add a new address")]
    row = {"id": 900100, "label": "Cabin 12", "user_id": 1}
    assert nav.path_to("/addresses/900100/edit", row, "addresses") == [link("Addresses"), link("Cabin 12"), link("Edit address")]
    assert nav.path_to("/addresses/900100/edit", None, "addresses") is None  # no record known: no guessing
    assert nav.home_link() is not None


def test_references_avoid_links_and_forms_a_page_shows_only_under_a_condition():
    """mail (in the repo): "Edit vacation reply" is also a banner shown only while the reply is on, and
    "Delete forever" is shown only for a message in the trash (`{% if message.folder_id == 5 %}`)."""
    from flows.task_synthesis.agents.static import form_conditions
    from sandboxes.registry import select

    (mail,), _ = select(["mail"])
    src = read_source(mail)
    model = build_app_model(src)
    nav = Navigator(src.files, model)
    link = lambda name: {"action": "left_click", "target": {"role": "link", "name": name}}  # noqa: E731
    assert nav.path_to("/settings/vacation") == [link("Settings"), link("Edit vacation reply")]
    forms = {f.label: f for f in model.forms}
    template = nav.templates[forms["Delete message forever"].template]
    assert form_conditions(template, forms["Delete message forever"]) == {"folder_id": 5}
    assert form_conditions(template, forms["Star message"]) == {}  # under `{% else %}` of is_starred: not read
