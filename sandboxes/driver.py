"""The driver interface every sandbox kind implements: reset, inject, observe, act, probe, health, close."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from sandboxes.actions import Action
from sandboxes.skills import Skill
from verifier_templates.base import Probe


@dataclass
class Observation:
    url: str
    title: str
    ui_tree: str  # ARIA snapshot (YAML) for web; the same shape for other kinds
    screenshot: bytes | None = None
    screen_size: tuple[int, int] | None = None


@dataclass
class ActionResult:
    ok: bool
    error: str | None = None
    point: tuple[int, ...] | None = None  # where it landed, on the 0..999 grid; a drag: (x, y, x2, y2)
    sensitive: str | None = None  # the sensitive kind of the control acted on, if any
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Health:
    ok: bool
    detail: str = ""


class Driver(Protocol):
    def reset(self, new_context: bool = True) -> None: ...
    def inject(self, skill: Skill, args: dict[str, Any]) -> None: ...
    def observe(self, screenshot: bool = True) -> Observation: ...
    def act(self, action: Action) -> ActionResult: ...
    def probe(self, probe: Probe) -> Any: ...
    def health(self) -> Health: ...
    def close(self) -> None: ...
