"""A reference solution through the shop's real address form, shared by driver and gate tests."""

ADD_ADDRESS = [
    {"action": "goto", "url": "/addresses/new"},
    {"action": "type", "target": {"label": "Label", "within": "Add address"}, "text": "Boathouse 7"},
    {"action": "type", "target": {"label": "Full name", "within": "Add address"}, "text": "Ana Silva"},
    {"action": "type", "target": {"label": "Street", "within": "Add address"}, "text": "1 Quay"},
    {"action": "type", "target": {"label": "City", "within": "Add address"}, "text": "Porto"},
    {"action": "type", "target": {"label": "Postcode", "within": "Add address"}, "text": "4000"},
    {"action": "type", "target": {"label": "Country", "within": "Add address"}, "text": "Portugal"},
    {"action": "left_click", "target": {"role": "button", "name": "Add address", "within": "Add address"}},
]
