"""The action space: one typed model, discriminated by `action`.

Reference solutions name their targets semantically (role + visible name, or a field label) so they
replay through the real UI whatever the layout; the driver resolves a target to an element, acts on
it, and reports the point it hit on the normalised 0..999 grid so the step can also be exported in a
coordinate protocol (Qwen-CUA `computer_use`). Coordinates alone (x, y on 0..999) work too.
"""

from __future__ import annotations

from typing import Annotated, Literal

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


class Goto(_Action):
    action: Literal["goto"] = "goto"
    url: str  # absolute, or a path on the sandbox's origin


class Click(_Action):
    action: Literal["left_click", "double_click", "right_click"] = "left_click"
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


class Scroll(_Action):
    action: Literal["scroll"] = "scroll"
    pixels: int = 300


class Wait(_Action):
    action: Literal["wait"] = "wait"
    seconds: float = Field(default=1.0, ge=0, le=60)


class Terminate(_Action):
    action: Literal["terminate"] = "terminate"
    status: Literal["success", "failure"] = "success"
    answer: str | None = None  # the final answer of an information-retrieval task


Action = Annotated[
    Goto | Click | Type | Select | Check | Key | Scroll | Wait | Terminate, Field(discriminator="action")
]
ACTIONS = TypeAdapter(list[Action])


def parse_actions(data: list[dict]) -> list[Action]:
    return ACTIONS.validate_python(data)


def dump_actions(actions: list[Action]) -> list[dict]:
    return [a.model_dump(exclude_none=True, exclude_defaults=False) for a in actions]
