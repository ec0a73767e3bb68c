"""Touch gestures for pages under a touch device profile: a tap through Playwright's touchscreen, long
presses and swipes as raw touch events over CDP (Playwright has no API for them).

Waits follow the page, never the clock: a swipe moves once per frame the page draws; after a tap the
page itself says whether the click it makes came (or will not: the touch was cancelled, or only dismissed
a selection) and whether that click started a navigation, which is then waited for until it has begun.
The only bound is the driver's generous cap, which a page that never answers meets as a timeout."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sandboxes.actions import LongPress, Swipe, Tap

SWIPE_STEPS = 10
_NEXT_FRAME = "() => new Promise(r => requestAnimationFrame(() => r()))"


def touch(page: Any, action: Tap | LongPress | Swipe, px: Callable[[int, int], tuple[float, float]],
          cap_s: float = 30.0) -> None:
    """Performs a mobile action with touch events at 0..999 grid points (`px` maps them to CSS pixels)."""
    x, y = px(action.x, action.y)
    if isinstance(action, Tap):
        _tap(page, x, y, cap_s)
        return
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
        if isinstance(action, LongPress):
            page.wait_for_timeout(action.duration * 1000)  # the press lasts as long as the action says
        else:
            x2, y2 = px(action.x2, action.y2)
            for i in range(1, SWIPE_STEPS + 1):
                point = {"x": x + (x2 - x) * i / SWIPE_STEPS, "y": y + (y2 - y) * i / SWIPE_STEPS}
                cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
                page.evaluate(_NEXT_FRAME)  # one move per frame the page draws, as a finger would
        cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    finally:
        cdp.detach()


# The control under a screen point (CSS pixels of the visual viewport: a phone may show the page zoomed out).
_CONTROL_AT = """([x, y]) => {
    const v = window.visualViewport;
    const el = document.elementFromPoint(x / v.scale + v.offsetLeft, y / v.scale + v.offsetTop);
    const c = el && el.closest('button, a, [role=button], input[type=submit], input[type=button]');
    if (!c) return null;
    return {name: (c.getAttribute('aria-label') || c.innerText || c.value || '').trim() || null};
}"""

# Listeners registered last, at the window in the bubbling phase, so they see what the page's own handlers
# decided: whether the touch's end was cancelled (no click follows), whether the click came and whether it
# was let through to follow a link or submit a form (a navigation follows).
_WATCH_TAP = """() => {
    const tap = window.__flywheelTap = {ended: false, cancelled: false, clicked: false, navigates: false,
                                         dismisses: Boolean(String(getSelection() || ''))};
    const loads = (a) => { try { const u = new URL(a.href, location.href);
        return !(u.origin === location.origin && u.pathname === location.pathname && u.search === location.search && u.hash);
    } catch (e) { return false; } };
    addEventListener('touchend', e => { tap.ended = true; tap.cancelled = e.defaultPrevented; }, {once: true});
    addEventListener('click', e => {
        tap.clicked = true;
        const a = e.target.closest && e.target.closest('a[href]');
        if (!e.defaultPrevented && a && !a.target && !a.href.startsWith('javascript:') && loads(a)) tap.navigates = true;
    }, {once: true});
    addEventListener('submit', e => { if (!e.defaultPrevented) tap.navigates = true; }, {once: true});
}"""
# true when nothing more will happen (a click came, or none will), "navigates" when a navigation follows,
# null while the click is still to come; a document that went away has navigated.
_TAP_DONE = """() => { const t = window.__flywheelTap;
    if (!t) return 'navigates';
    if (t.navigates) return 'navigates';
    return t.clicked || t.cancelled || (t.ended && t.dismisses) ? true : null; }"""


def control_name_at(page: Any, x: float, y: float) -> str | None:
    """The visible name of the button or link under a point, so a tap on a control the manifest declares
    sensitive is flagged as a click on it would be."""
    control = page.evaluate(_CONTROL_AT, [x, y])
    return control["name"] if control else None


def _tap(page: Any, x: float, y: float, cap_s: float) -> None:
    """A tap, then what a click waits for: the click the tap makes (it trails the touch, by 100 ms and more
    on a loaded machine) and, when that click follows a link or posts a form, the navigation's start."""
    started: list[Any] = []

    def on_request(request: Any) -> None:
        try:
            if request.is_navigation_request() and request.frame == page.main_frame:
                started.append(request)
        except Exception:
            pass

    page.evaluate(_WATCH_TAP)
    page.on("request", on_request)
    try:
        page.touchscreen.tap(x, y)
        deadline = time.monotonic() + cap_s
        state = None
        while time.monotonic() < deadline:
            try:
                state = page.evaluate(_TAP_DONE)
            except Exception:  # the document was replaced mid-call: a navigation is under way
                state = "navigates"
            if state == "navigates" and started:
                return
            if state is True:
                return
            page.wait_for_timeout(10)  # lets Playwright deliver the page's events
        # the cap: the page never said; the driver's settle decides whether it is still busy
    finally:
        page.remove_listener("request", on_request)
