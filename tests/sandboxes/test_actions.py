import json

import pytest
from pydantic import ValidationError

from sandboxes.action_parsing import (
    COMPUTER_ACTIONS,
    COMPUTER_USE_TOOL,
    SHELL_TOOL,
    parse_model_output,
    to_openai_tool_calls,
    to_qwen_xml,
)
from sandboxes.actions import (
    ACTION_NAMES,
    ACTIONS,
    CallUser,
    Check,
    Click,
    Drag,
    Goto,
    HScroll,
    Key,
    LongPress,
    MouseMove,
    OpenApp,
    Screenshot,
    Scroll,
    Select,
    Shell,
    Swipe,
    SystemButton,
    Tap,
    Target,
    Terminate,
    Turn,
    Type,
    Wait,
    dump_actions,
    parse_actions,
)

# One of every action, with the awkward values: grid edges, text that looks like JSON or has
# surrounding whitespace, non-ASCII, non-default options.
SAMPLES = [
    Goto(url="/orders?page=2"),
    Click(target=Target(role="button", name="Save", within="Billing", nth=1)),
    *(
        Click(action=a, x=0, y=999)
        for a in ("left_click", "right_click", "middle_click", "double_click", "triple_click")
    ),
    Type(text='  Zoë said "hi"\nbye  '),
    Type(text="123", target=Target(label="Quantity"), clear=False),
    Type(text="[1, 2]"),
    Select(target=Target(label="Country"), option="Ireland"),
    Select(target=Target(label="Country"), value="ie"),
    Check(target=Target(label="Subscribe"), checked=False),
    Key(keys=["ctrl", "shift", "t"]),
    Scroll(pixels=-450, x=500, y=600),
    Scroll(),
    HScroll(pixels=120),
    Wait(seconds=2.5),
    Wait(),
    Terminate(status="failure"),
    Terminate(answer="42 orders"),
    MouseMove(x=999, y=0),
    Drag(x=10, y=20, x2=900, y2=950),
    Screenshot(),
    CallUser(reason="Which of the two addresses is current?"),
    Tap(x=123, y=456),
    LongPress(x=5, y=6, duration=2.0),
    LongPress(x=5, y=6),
    Swipe(x=500, y=800, x2=500, y2=200),
    SystemButton(button="back"),
    OpenApp(app="com.android.settings"),
    Shell(command="ls -la | grep '\"x\"'", cwd="/tmp", timeout=5),
    Shell(command="pwd"),
]


def call(name, **arguments):
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_samples_cover_every_action():
    assert {a.action for a in SAMPLES} == ACTION_NAMES


# ---- the model ---------------------------------------------------------------------------------------


def test_existing_reference_solutions_still_validate():
    data = [
        {"action": "goto", "url": "/login"},
        {"action": "type", "text": "alice", "target": {"label": "Username"}},
        {"action": "left_click", "target": {"role": "button", "name": "Sign in"}},
        {"action": "double_click", "x": 10, "y": 20},
        {"action": "right_click", "target": {"text": "Row 3"}},
        {"action": "select", "target": {"label": "Size"}, "option": "L"},
        {"action": "check", "target": {"label": "Agree"}},
        {"action": "key", "keys": ["Enter"]},
        {"action": "scroll", "pixels": 300},
        {"action": "wait", "seconds": 0.5},
        {"action": "terminate", "status": "success", "answer": "done"},
    ]
    actions = parse_actions(data)
    assert [type(a) for a in actions] == [
        Goto,
        Type,
        Click,
        Click,
        Click,
        Select,
        Check,
        Key,
        Scroll,
        Wait,
        Terminate,
    ]
    assert actions[2].target.describe() == "button 'Sign in'"
    assert parse_actions(dump_actions(actions)) == actions
    assert dump_actions([Click(x=1, y=2)]) == [{"action": "left_click", "x": 1, "y": 2}]


@pytest.mark.parametrize(
    "bad",
    [
        {"action": "left_click"},  # neither target nor x, y
        {"action": "left_click", "x": 5},
        {"action": "left_click", "x": 1000, "y": 5},
        {"action": "select", "target": {"label": "Size"}, "option": "L", "value": "l"},
        {"action": "left_click", "target": {"name": "Save"}},  # a target needs a role, label or text
        {"action": "type", "text": "x", "color": "red"},
        {"action": "scroll", "pixels": 100, "x": 5},  # x without y
        {"action": "tap", "x": 5},
        {"action": "system_button", "button": "volume_up"},
        {"action": "call_user", "reason": ""},
        {"action": "shell", "command": "ls", "timeout": 0},
        {"action": "middle_click", "x": -1, "y": 0},
    ],
)
def test_invalid_actions_are_rejected(bad):
    with pytest.raises(ValidationError):
        parse_actions([bad])


def test_turn_is_a_non_empty_batch_with_a_thought():
    turn = Turn.model_validate(
        {"actions": [{"action": "tap", "x": 1, "y": 2}, {"action": "wait"}], "thought": "t"}
    )
    assert turn.actions == [Tap(x=1, y=2), Wait()] and turn.thought == "t"
    with pytest.raises(ValidationError):
        Turn(actions=[])
    assert ACTIONS.validate_python(Turn(actions=[Screenshot()]).model_dump()["actions"]) == [Screenshot()]


# ---- reading model output -----------------------------------------------------------------------------


def test_openai_message_with_several_tool_calls_is_one_batch():
    message = {
        "role": "assistant",
        "content": "Open the menu, then pick Settings.",
        "tool_calls": [
            call("computer_use", action="left_click", coordinate=[500, 300]),
            call("computer_use", action="key", keys=["ctrl", "s"]),
        ],
    }
    parsed = parse_model_output(message)
    assert parsed.format_error is None
    assert parsed.actions == [Click(x=500, y=300), Key(keys=["ctrl", "s"])]
    assert parsed.thought == "Open the menu, then pick Settings."
    assert json.loads(parsed.raw) == message
    assert parse_model_output(message["tool_calls"]).actions == parsed.actions
    assert parsed.turn == Turn(actions=parsed.actions, thought=parsed.thought)


def test_openai_message_without_a_tool_parser_is_read_from_its_content():
    content = [
        {"type": "text", "text": '<tool_call>{"name": "computer_use", "arguments": {"action": "screenshot"}}'}
    ]
    assert parse_model_output({"role": "assistant", "content": content}).actions == [Screenshot()]


def test_qwen_json_tool_calls_keep_the_text_before_them_as_thought():
    text = (
        "<think>The form is below the fold.</think>\nI will scroll, then click Save.\n"
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "scroll", "pixels": -300}}\n</tool_call>\n'
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [12, 987]}}\n'
        "</tool_call>"
    )
    parsed = parse_model_output(text)
    assert parsed.actions == [Scroll(pixels=-300), Click(x=12, y=987)]
    assert parsed.thought == "The form is below the fold.\nI will scroll, then click Save."
    assert parsed.raw == text


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call><function=computer_use><parameter=action>left_click</parameter>"
        "<parameter=coordinate>[500, 300]</parameter></function></tool_call>",
        "<tool_call>\n<function=computer_use>\n<parameter=action>\nleft_click\n</parameter>\n"
        "<parameter=coordinate>\n[500, 300]\n</parameter>\n</function>\n</tool_call>",
        "<function=computer_use><parameter=action>left_click<parameter=coordinate>(500, 300)</function>",
    ],
)
def test_qwen_xml_function_form(text):
    parsed = parse_model_output(text)
    assert parsed.format_error is None and parsed.actions == [Click(x=500, y=300)]


def test_qwen_xml_form_batch_and_typed_values():
    text = (
        "Type the quantity and confirm.\n"
        "<tool_call><function=computer_use><parameter=action>type</parameter>"
        "<parameter=text>007</parameter></function></tool_call>\n"
        "<tool_call><function=computer_use><parameter=action>wait</parameter>"
        "<parameter=time>1.5</parameter></function></tool_call>"
        "<tool_call><function=shell><parameter=command>echo [1]</parameter>"
        "<parameter=timeout>5</parameter></function></tool_call>"
    )
    parsed = parse_model_output(text)
    assert parsed.actions == [Type(text="007"), Wait(seconds=1.5), Shell(command="echo [1]", timeout=5)]
    assert parsed.thought == "Type the quantity and confirm."


@pytest.mark.parametrize(
    "text, thought",
    [
        ('{"action": "mouse_move", "coordinate": [1, 2]}', None),
        (
            '[{"action": "mouse_move", "coordinate": [1, 2]}, {"action": "terminate", "status": "success"}]',
            None,
        ),
        ('Moving there.\n```json\n{"action": "mouse_move", "coordinate": [1, 2]}\n```', "Moving there."),
        (
            '```\n{"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [1, 2]}}\n```',
            None,
        ),
        ('{"action": "mouse_move", "x": 1, "y": 2}', None),  # our own field names
    ],
)
def test_plain_json(text, thought):
    parsed = parse_model_output(text)
    assert parsed.actions[0] == MouseMove(x=1, y=2) and parsed.thought == thought
    assert parsed.actions[1:] in ([], [Terminate()])


@pytest.mark.parametrize(
    "arguments, expected",
    [
        (
            {"action": "left_click_drag", "coordinate": [1, 2], "coordinate2": [3, 4]},
            Drag(x=1, y=2, x2=3, y2=4),
        ),
        (
            {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [3, 4]},
            Drag(x=1, y=2, x2=3, y2=4),
        ),
        (
            {"action": "swipe", "coordinate": [500, 900], "coordinate2": [500, 100]},
            Swipe(x=500, y=900, x2=500, y2=100),
        ),
        ({"action": "hscroll", "pixels": -200, "coordinate": [50, 60]}, HScroll(pixels=-200, x=50, y=60)),
        ({"action": "scroll", "pixels": 200}, Scroll(pixels=200)),  # positive is up, as in Qwen-CUA: no flip
        ({"action": "wait", "time": 3}, Wait(seconds=3)),
        ({"action": "long_press", "coordinate": [7, 8], "time": 2}, LongPress(x=7, y=8, duration=2)),
        ({"action": "key", "keys": "Return"}, Key(keys=["Return"])),
        ({"action": "terminate", "status": "success", "answer": "3"}, Terminate(answer="3")),
        ({"action": "call_user", "text": "Need the 2FA code"}, CallUser(reason="Need the 2FA code")),
        ({"action": "call_user", "reason": "Need the 2FA code"}, CallUser(reason="Need the 2FA code")),
        ({"action": "open_app", "app": "Gmail"}, OpenApp(app="Gmail")),
        ({"action": "system_button", "button": "Home"}, SystemButton(button="home")),
        ({"action": "shell", "command": "make test"}, Shell(command="make test")),
    ],
)
def test_qwen_arguments_map_to_our_fields(arguments, expected):
    assert parse_model_output([call("computer_use", **arguments)]).actions == [expected]


def test_mobile_use_and_shell_function_names():
    calls = [
        call("mobile_use", action="click", coordinate=[10, 20]),
        call("mobile_use", action="open", text="Settings"),
        call("mobile_use", action="system_button", button="Back"),
        call("mobile_use", action="key", text="volume_up"),
        call("shell", command="ls", cwd="/srv"),
    ]
    assert parse_model_output(calls).actions == [
        Tap(x=10, y=20),
        OpenApp(app="Settings"),
        SystemButton(button="back"),
        Key(keys=["volume_up"]),
        Shell(command="ls", cwd="/srv"),
    ]


TRUNCATED = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [50'


@pytest.mark.parametrize(
    "output, code",
    [
        ('{"action": "left_click", "coordinate": [1', "unparseable_json"),
        (TRUNCATED, "unparseable_json"),
        ("```json\n{'action': 'wait'}\n```", "unparseable_json"),
        (
            [{"type": "function", "function": {"name": "computer_use", "arguments": '{"action": "wait"'}}],
            "unparseable_json",
        ),
        ("<tool_call></tool_call>", "unparseable_json"),
        ("[" * 100_000, "unparseable_json"),
        ('{"action": "fly_to", "coordinate": [1, 2]}', "unknown_action"),
        (
            [call("computer_use", action="click", coordinate=[1, 2])],
            "unknown_action",
        ),  # click is mobile_use only
        ([call("browser", url="https://x.test")], "unknown_action"),
        ('{"action": ["left_click"]}', "unknown_action"),
        ('{"action": "left_click", "coordinate": [1000, 10]}', "invalid_arguments"),
        ('{"action": "tap", "coordinate": [10, -1]}', "invalid_arguments"),
        (
            "<tool_call><function=computer_use><parameter=action>left_click</parameter>"
            "<parameter=coordinate>[500, 1200]</parameter></function></tool_call>",
            "invalid_arguments",
        ),
        ('{"action": "left_click", "coordinate": [1, 2, 3]}', "invalid_arguments"),
        ('{"action": "left_click"}', "invalid_arguments"),
        ('{"action": "type"}', "invalid_arguments"),
        ('{"action": "left_click_drag", "coordinate": [1, 2]}', "invalid_arguments"),
        ('{"coordinate": [1, 2]}', "invalid_arguments"),
        ([call("computer_use", coordinate=[1, 2])], "invalid_arguments"),
        ('{"action": "left_click", "coordinate": [1, 2], "button": "left"}', "invalid_arguments"),
        ('{"action": "wait", "time": "soon"}', "invalid_arguments"),
        ('{"name": "computer_use", "arguments": [1, 2]}', "invalid_arguments"),
        ("[1, 2]", "invalid_arguments"),
        ("I have finished the task.", "no_tool_call"),
        ("", "no_tool_call"),
        ({"role": "assistant", "content": None, "tool_calls": []}, "no_tool_call"),
        (None, "no_tool_call"),
        (42, "no_tool_call"),
    ],
)
def test_malformed_output_is_a_format_error_never_an_exception(output, code):
    parsed = parse_model_output(output)
    assert parsed.actions == [] and parsed.turn is None
    assert parsed.error_code == code, parsed.format_error
    assert len(parsed.format_error) > len(code) + 2  # a message after the code
    assert parsed.raw == (output if isinstance(output, str) else json.dumps(output))


def test_one_bad_call_makes_the_whole_batch_a_format_error():
    text = (
        "Click, then type.\n"
        '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [5, 5]}}</tool_call>'
        '<tool_call>{"name": "computer_use", "arguments": {"action": "type"}}</tool_call>'
    )
    parsed = parse_model_output(text)
    assert parsed.actions == [] and parsed.error_code == "invalid_arguments"
    assert "type" in parsed.format_error and "text" in parsed.format_error
    assert parsed.thought == "Click, then type."


def test_text_without_a_tool_call_is_kept_as_thought():
    parsed = parse_model_output("<think>Looks done.</think> The order is placed.")
    assert parsed.error_code == "no_tool_call" and parsed.thought == "Looks done. The order is placed."


# ---- writing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", SAMPLES, ids=lambda a: a.action)
@pytest.mark.parametrize("write", ["qwen-json", "qwen-xml", "openai"])
def test_round_trip(action, write):
    if write == "openai":
        parsed = parse_model_output(
            {"role": "assistant", "content": None, "tool_calls": to_openai_tool_calls([action])}
        )
    else:
        parsed = parse_model_output(to_qwen_xml([action], style=write.removeprefix("qwen-")))
    assert parsed.format_error is None
    assert parsed.actions == [action]


@pytest.mark.parametrize("style", ["json", "xml"])
def test_round_trip_of_a_turn_with_thought(style):
    turn = Turn(actions=SAMPLES, thought="Several steps at once.")
    parsed = parse_model_output(to_qwen_xml(turn.actions, turn.thought, style=style))
    assert parsed.turn == turn


def test_writers_use_qwen_names_and_leave_out_our_defaults():
    (tool_call,) = to_openai_tool_calls([Click(x=500, y=300)])
    assert tool_call["type"] == "function" and tool_call["function"]["name"] == "computer_use"
    assert json.loads(tool_call["function"]["arguments"]) == {
        "action": "left_click",
        "coordinate": [500, 300],
    }
    actions = [
        Type(text="hi"),
        Scroll(),
        Wait(),
        Terminate(),
        LongPress(x=1, y=2),
        Drag(x=1, y=2, x2=3, y2=4),
    ]
    args = [
        json.loads(c["function"]["arguments"]) for c in to_openai_tool_calls([*actions, Shell(command="ls")])
    ]
    assert args == [
        {"action": "type", "text": "hi"},  # clear=True is our default, not a Qwen argument
        {"action": "scroll", "pixels": 300},  # Qwen requires pixels, time and status: always written
        {"action": "wait", "time": 1.0},
        {"action": "terminate", "status": "success"},
        {"action": "long_press", "coordinate": [1, 2], "time": 1.0},
        {"action": "left_click_drag", "coordinate": [1, 2], "coordinate2": [3, 4]},
        {"command": "ls"},
    ]
    assert (
        to_qwen_xml([Screenshot()])
        == '<tool_call>\n{"name": "computer_use", "arguments": {"action": "screenshot"}}\n</tool_call>'
    )


def test_computer_use_tool_describes_what_the_writer_emits():
    fn = COMPUTER_USE_TOOL["function"]
    assert fn["name"] == "computer_use" and json.loads(json.dumps(COMPUTER_USE_TOOL)) == COMPUTER_USE_TOOL
    props = fn["parameters"]["properties"]
    assert set(props["action"]["enum"]) == set(COMPUTER_ACTIONS) <= ACTION_NAMES
    assert not {"tap", "swipe", "shell", "goto"} & set(COMPUTER_ACTIONS)  # desktop coordinate actions only
    assert props["coordinate"]["items"]["maximum"] == 999 and props["coordinate"]["minItems"] == 2
    computer = [a for a in SAMPLES if a.action in COMPUTER_ACTIONS and getattr(a, "target", None) is None]
    assert {a.action for a in computer} == set(COMPUTER_ACTIONS)
    for tool_call in to_openai_tool_calls(computer):
        assert set(json.loads(tool_call["function"]["arguments"])) <= set(props)
    shell_props = SHELL_TOOL["function"]["parameters"]["properties"]
    (shell_call,) = to_openai_tool_calls([Shell(command="ls", cwd="/", timeout=3)])
    assert shell_call["function"]["name"] == "shell" and set(
        json.loads(shell_call["function"]["arguments"])
    ) == set(shell_props)
