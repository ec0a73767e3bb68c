"""Touch gestures for pages under a touch device profile: a tap through Playwright's touchscreen, long
presses and swipes as raw touch events over CDP (Playwright has no API for them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandboxes.actions import LongPress, Swipe, Tap

SWIPE_STEPS = 10
TAP_CLICK_WAIT_MS = 1000
NAVIGATION_WAIT_MS = 10_000


def touch(page: Any, action: Tap | LongPress | Swipe, px: Callable[[int, int], tuple[float, float]]) -> None:
    """Performs a mobile action with touch events at 0..999 grid points (`px` maps them to CSS pixels)."""
    x, y = px(action.x, action.y)
    if isinstance(action, Tap):
        _tap(page, x, y)
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


# The control under a screen point (CSS pixels of the visual viewport: a phone may show the page zoomed out).
_CONTROL_AT = """([x, y]) => {
    const v = window.visualViewport;
    const el = document.elementFromPoint(x / v.scale + v.offsetLeft, y / v.scale + v.offsetTop);
    const c = el && el.closest('button, a, [role=button], input[type=submit], input[type=button]');
    if (!c) return null;
    const submits = c.form && (c.tagName === 'BUTTON' ? (c.type || 'submit') === 'submit' : c.type === 'submit');
    const follows = c.tagName === 'A' && c.href && !c.href.startsWith('javascript:') && !c.target;
    return {name: (c.getAttribute('aria-label') || c.innerText || c.value || '').trim() || null,
            navigates: Boolean(submits || follows)};
}"""


def control_name_at(page: Any, x: float, y: float) -> str | None:
    """The visible name of the button or link under a point, so a tap on a control the manifest declares
    sensitive is flagged as a click on it would be."""
    control = page.evaluate(_CONTROL_AT, [x, y])
    return control["name"] if control else None


def _tap(page: Any, x: float, y: float) -> None:
    """A tap, then what a click waits for: a link followed or a form posted has started loading (the click
    a tap makes trails the touch, by 100 ms and more on a loaded machine)."""
    control = page.evaluate(_CONTROL_AT, [x, y])
    if control and control["navigates"]:
        try:
            with page.expect_navigation(timeout=NAVIGATION_WAIT_MS):
                page.touchscreen.tap(x, y)
        except Exception:  # a handler kept the page: nothing to wait for
            pass
        return
    page.evaluate("() => { window.__flywheelTap = 0; addEventListener('click', () => { window.__flywheelTap = 1 },"
                  " {capture: true, once: true}); }")
    page.touchscreen.tap(x, y)
    try:
        page.wait_for_function("() => window.__flywheelTap === 1", timeout=TAP_CLICK_WAIT_MS)
    except Exception:  # no click (the tap dismissed a selection), or a script navigated away
        pass
