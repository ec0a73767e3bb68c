"""The action space: one typed model, discriminated by `action`.

Reference solutions name their targets semantically (role + visible name, or a field label) so they
replay through the real UI whatever the layout; the driver resolves a target to an element, acts on
it, and reports the point it hit on the normalised 0..999 grid so the step can also be exported in a
coordinate protocol (Qwen-CUA `computer_use`). Coordinates alone (x, y on 0..999) work too.

Beyond the web actions there are the rest of the Qwen-CUA computer actions (mouse_move, drags, scroll
and hscroll, screenshot, call_user), mobile actions (tap, long_press, swipe, system_button, open_app;
`type`, `wait` and `terminate` are shared) and one CLI action (shell). Field names are ours; the Qwen
argument names (`coordinate`, `time`, ...) are mapped in `sandboxes.action_parsing`.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

Coord = Annotated[int, Field(ge=0, le=999)]


class Target(BaseModel):
    """How to find an element: by ARIA role and visible name, by field label, or by visible text."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    role: str | None = None
    name: str | None = None
    label: str | None = None
    text: str | None = None
    within: str | None = None  # restrict to the landmark/form with this accessible name
    nth: int = 0

    @model_validator(mode="after")
    def _one_way(self) -> Target:
        if not (self.role or self.label or self.text):
            raise ValueError("a target needs a role, a label or a text")
        return self

    def describe(self) -> str:
        if self.label:
            return f"field {self.label!r}"
        if self.role:
            return f"{self.role} {self.name!r}" if self.name else self.role
        return f"text {self.text!r}"


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: str  # each action narrows it to a Literal: the union's discriminator, and first in dumps


class Goto(_Action):
    action: Literal["goto"] = "goto"
    url: str  # absolute, or a path on the sandbox's origin


_Clicks = Literal["left_click", "double_click", "right_click", "middle_click", "triple_click"]


class Click(_Action):
    action: _Clicks = "left_click"
    target: Target | None = None
    x: Coord | None = None
    y: Coord | None = None

    @model_validator(mode="after")
    def _where(self) -> Click:
        if self.target is None and (self.x is None or self.y is None):
            raise ValueError("a click needs a target or both x and y")
        return self


class Type(_Action):
    action: Literal["type"] = "type"
    text: str
    target: Target | None = None  # None types into the focused element
    clear: bool = True


class Select(_Action):
    action: Literal["select"] = "select"
    target: Target
    option: str | None = None  # the visible option text
    value: str | None = None  # or the option's value attribute

    @model_validator(mode="after")
    def _which(self) -> Select:
        if (self.option is None) == (self.value is None):
            raise ValueError("a select needs exactly one of option or value")
        return self


class Check(_Action):
    action: Literal["check"] = "check"
    target: Target
    checked: bool = True


class Key(_Action):
    action: Literal["key"] = "key"
    keys: list[str] = Field(min_length=1)


class _Wheel(_Action):
    """A wheel turn, at the pointer or at (x, y); the sign follows Qwen-CUA so exports need no flipping."""

    pixels: int = 300
    x: Coord | None = None
    y: Coord | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> _Wheel:
        if (self.x is None) != (self.y is None):
            raise ValueError("give both x and y, or neither")
        return self


class Scroll(_Wheel):
    action: Literal["scroll"] = "scroll"  # positive pixels scroll up, negative down (Qwen-CUA)


class HScroll(_Wheel):
    action: Literal["hscroll"] = "hscroll"  # positive pixels scroll right, negative left


class Wait(_Action):
    action: Literal["wait"] = "wait"
    seconds: float = Field(default=1.0, ge=0, le=60)


class Terminate(_Action):
    action: Literal["terminate"] = "terminate"
    status: Literal["success", "failure"] = "success"
    answer: str | None = None  # the final answer of an information-retrieval task


class _At(_Action):
    x: Coord
    y: Coord


class _FromTo(_Action):
    """A stroke from (x, y) to (x2, y2)."""

    x: Coord
    y: Coord
    x2: Coord
    y2: Coord


class MouseMove(_At):
    action: Literal["mouse_move"] = "mouse_move"


class Drag(_Action):
    """A left-button drag from (x, y) to (x2, y2); or, semantically, from the element `target` names (by
    its drag handle when it has one) onto the element `to` names: "drag this card onto that board"."""

    action: Literal["left_click_drag"] = "left_click_drag"
    target: Target | None = None
    to: Target | None = None
    x: Coord | None = None
    y: Coord | None = None
    x2: Coord | None = None
    y2: Coord | None = None

    @model_validator(mode="after")
    def _ends(self) -> Drag:
        if self.target is None and (self.x is None or self.y is None):
            raise ValueError("a drag needs a target or both x and y where it starts")
        if self.to is None and (self.x2 is None or self.y2 is None):
            raise ValueError("a drag needs a `to` target or both x2 and y2 where it ends")
        return self


class Screenshot(_Action):
    action: Literal["screenshot"] = "screenshot"


class CallUser(_Action):
    action: Literal["call_user"] = "call_user"
    reason: str = Field(min_length=1)  # what the agent needs from the human


class Tap(_At):
    action: Literal["tap"] = "tap"


class LongPress(_At):
    action: Literal["long_press"] = "long_press"
    duration: float = Field(default=1.0, gt=0, le=60)  # seconds


class Swipe(_FromTo):
    action: Literal["swipe"] = "swipe"


class SystemButton(_Action):
    action: Literal["system_button"] = "system_button"
    button: Literal["back", "home", "enter", "menu"]


class OpenApp(_Action):
    action: Literal["open_app"] = "open_app"
    app: str = Field(min_length=1)  # the app's name or its package id


class Shell(_Action):
    action: Literal["shell"] = "shell"
    command: str = Field(min_length=1)
    cwd: str | None = None
    timeout: float = Field(default=60.0, gt=0, le=3600)  # seconds


Action = Annotated[
    Goto
    | Click
    | Type
    | Select
    | Check
    | Key
    | Scroll
    | Wait
    | Terminate
    | MouseMove
    | Drag
    | HScroll
    | Screenshot
    | CallUser
    | Tap
    | LongPress
    | Swipe
    | SystemButton
    | OpenApp
    | Shell,
    Field(discriminator="action"),
]
ACTIONS = TypeAdapter(list[Action])
ACTION_NAMES = frozenset(  # every `action` value the union accepts
    name for cls in get_args(get_args(Action)[0]) for name in get_args(cls.model_fields["action"].annotation)
)


class Turn(BaseModel):
    """One model turn: a batch of actions run in order, with the reasoning the model gave for it."""

    model_config = ConfigDict(extra="forbid")
    actions: list[Action] = Field(min_length=1)
    thought: str | None = None


def parse_actions(data: list[dict]) -> list[Action]:
    return ACTIONS.validate_python(data)


def dump_actions(actions: list[Action]) -> list[dict]:
    return [a.model_dump(exclude_none=True, exclude_defaults=False) for a in actions]
