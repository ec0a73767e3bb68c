"""Touch gestures for pages under a touch device profile: a tap through Playwright's touchscreen, long
presses and swipes as raw touch events over CDP (Playwright has no API for them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandboxes.actions import LongPress, Swipe, Tap

SWIPE_STEPS = 10
TAP_CLICK_WAIT_MS = 1000


def touch(page: Any, action: Tap | LongPress | Swipe, px: Callable[[int, int], tuple[float, float]]) -> None:
    """Performs a mobile action with touch events at 0..999 grid points (`px` maps them to CSS pixels)."""
    x, y = px(action.x, action.y)
    if isinstance(action, Tap):
        # The click a tap makes comes a moment after the touch ends; wait for it, so a link it follows has
        # started loading before the driver settles (on a loaded machine it can trail the touch by 100 ms).
        page.evaluate("() => { window.__flywheelTap = 0; addEventListener('click', () => { window.__flywheelTap = 1 },"
                      " {capture: true, once: true}); }")
        page.touchscreen.tap(x, y)
        try:
            page.wait_for_function("() => window.__flywheelTap === 1", timeout=TAP_CLICK_WAIT_MS)
        except Exception:  # no click (the tap dismissed a selection), or the page is already navigating away
            pass
        return
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
        if isinstance(action, LongPress):
            page.wait_for_timeout(action.duration * 1000)
        else:
            x2, y2 = px(action.x2, action.y2)
            for i in range(1, SWIPE_STEPS + 1):
                point = {"x": x + (x2 - x) * i / SWIPE_STEPS, "y": y + (y2 - y) * i / SWIPE_STEPS}
                cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
                page.wait_for_timeout(16)  # one frame per move, as a finger would
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    finally:
        cdp.detach()


def control_name_at(page: Any, x: float, y: float) -> str | None:
    """The visible name of the button or link under a point (CSS pixels), so a tap on a control the manifest
    declares sensitive is flagged as a click on it would be."""
    return page.evaluate(
        """([x, y]) => {
            const v = window.visualViewport;  // a phone may show the page zoomed out: screen px -> page px
            const el = document.elementFromPoint(x / v.scale + v.offsetLeft, y / v.scale + v.offsetTop);
            const c = el && el.closest('button, a, [role=button], input[type=submit], input[type=button]');
            if (!c) return null;
            return (c.getAttribute('aria-label') || c.innerText || c.value || '').trim() || null;
        }""",
        [x, y],
    )
