"""Device profiles a web sandbox can run under: the phone profile exercises mobile action spaces
(tap, long press, swipe through touch events) on our own apps."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    viewport: tuple[int, int]  # CSS pixels
    device_scale_factor: float
    is_mobile: bool
    has_touch: bool
    user_agent: str | None

    @property
    def screen_pixels(self) -> tuple[int, int]:
        """The screenshot's size: the viewport in device pixels (what a phone agent's screenshots measure)."""
        return round(self.viewport[0] * self.device_scale_factor), round(self.viewport[1] * self.device_scale_factor)

    def context_options(self) -> dict[str, Any]:
        """Keyword arguments for Playwright's browser.new_context."""
        w, h = self.viewport
        options: dict[str, Any] = {
            "viewport": {"width": w, "height": h}, "device_scale_factor": self.device_scale_factor,
            "is_mobile": self.is_mobile, "has_touch": self.has_touch,
        }
        if self.user_agent:
            options["user_agent"] = self.user_agent
        return options


PHONE = DeviceProfile(
    name="phone",
    viewport=(390, 844),
    device_scale_factor=3,
    is_mobile=True,
    has_touch=True,
    user_agent=(
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/126.0.0.0 Mobile Safari/537.36"
    ),
)
PROFILES: dict[str, DeviceProfile] = {p.name: p for p in (PHONE,)}


def device_profile(name: str) -> DeviceProfile:
    try:
        return PROFILES[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(PROFILES), n=2)
        raise ValueError(f"unknown device profile {name!r}; available: {', '.join(close or sorted(PROFILES))}") from None
