"""Plays any policy on a touch device profile (`flywheel run rollout --profile phone`): the policy's clicks
become taps at the point the element occupies on the phone's screen, wheel turns become swipes, Enter
becomes the system enter button, and a target below the fold is first swiped into view. The steps
then hold the mobile actions a phone agent would emit (tap, swipe, type, system_button)."""

from __future__ import annotations

import json
from typing import Any

from flows.rollout.policies import Policy, PolicyTurn
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.actions import (
    Action,
    Check,
    Click,
    Key,
    Scroll,
    Select,
    Swipe,
    SystemButton,
    Tap,
    Target,
    Type,
)
from sandboxes.driver import Observation

VISIBLE_BAND = (0.08, 0.85)  # a target whose centre lies in this band of the screen height is tapped as is
MAX_SWIPES = 6  # per target: then it is tapped where it is, and the driver reports what happened


class TouchPolicy:
    def __init__(self, inner: Policy, driver: Any, profile: str) -> None:
        self.inner = inner
        self.driver = driver  # a WebDriver under a touch profile: resolves targets to points on screen
        self.name = f"{inner.name}@{profile}"
        self.model = inner.model

    def start(self, task: TaskSpec, episode: int) -> None:
        self.inner.start(task, episode)
        self._pending: list[Action] = []
        self._faults: list[str] = []
        self._swipes = 0

    def next_turn(self, observation: Observation) -> PolicyTurn:
        if not self._pending:
            turn = self.inner.next_turn(observation)
            if getattr(turn, "format_error", None):
                return turn  # nothing to convert: the output did not parse
            self._pending, self._faults = list(turn.actions), list(turn.faults)
        out: list[Action] = []
        while self._pending:
            swipe = self._swipe_into_view(self._pending[0])
            if swipe is not None:  # the action stays pending until its target is on screen
                out = [swipe]
                break
            out.extend(self._convert(self._pending.pop(0)))
            self._swipes = 0
            if out:
                break
        faults, self._faults = self._faults, []
        return PolicyTurn(json.dumps([a.model_dump(exclude_none=True) for a in out]), out, faults)

    # ---- conversion -----------------------------------------------------------------------------
    def _box(self, target: Target) -> dict[str, float] | None:
        try:
            return self.driver.locate(target).bounding_box()
        except Exception:  # no such element: the original action goes through and fails there
            return None

    def _grid(self, x: float, y: float) -> tuple[int, int]:
        w, h = self.driver.viewport
        return max(0, min(999, round(x * 999 / w))), max(0, min(999, round(y * 999 / h)))

    def _swipe_into_view(self, action: Action) -> Swipe | None:
        target = getattr(action, "target", None)
        if target is None or not isinstance(action, (Click, Check, Type, Select)) or self._swipes >= MAX_SWIPES:
            return None
        box = self._box(target)
        if box is None:
            return None
        h = self.driver.viewport[1]
        cy = box["y"] + box["height"] / 2
        low, high = VISIBLE_BAND
        if low * h <= cy <= high * h:
            return None
        self._swipes += 1
        distance = max(-0.6 * h, min(0.6 * h, cy - h / 2))  # > 0: the target is below, move the page up
        start_y = 0.7 * h if distance > 0 else 0.3 * h
        x, y = self._grid(self.driver.viewport[0] / 2, start_y)
        x2, y2 = self._grid(self.driver.viewport[0] / 2, start_y - distance)
        return Swipe(x=x, y=y, x2=x2, y2=y2)

    def _tap_on(self, target: Target) -> Tap | None:
        box = self._box(target)
        if box is None:
            return None
        x, y = self._grid(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        return Tap(x=x, y=y)

    def _convert(self, action: Action) -> list[Action]:
        if isinstance(action, Click):
            if action.target is None:
                return [Tap(x=action.x, y=action.y)]
            tap = self._tap_on(action.target)
            return [tap] if tap else [action]
        if isinstance(action, Check):
            try:
                if self.driver.locate(action.target).is_checked() == action.checked:
                    return []  # already as asked: a finger would not touch it
            except Exception:
                return [action]
            tap = self._tap_on(action.target)
            return [tap] if tap else [action]
        if isinstance(action, (Type, Select)) and action.target is not None:
            tap = self._tap_on(action.target)  # focus the field (open the picker) with a finger, then type (pick)
            return [tap, action] if tap else [action]
        if isinstance(action, Scroll):
            h = self.driver.viewport[1]
            dy = round(max(-0.6 * h, min(0.6 * h, action.pixels)) * 999 / h)  # + scrolls up: the finger moves down
            x, y = (action.x, action.y) if action.x is not None else (500, 500)
            return [Swipe(x=x, y=max(0, min(999, y - dy // 2)), x2=x, y2=max(0, min(999, y + dy // 2)))]
        if isinstance(action, Key) and [k.lower() for k in action.keys] == ["enter"]:
            return [SystemButton(button="enter")]
        return [action]
