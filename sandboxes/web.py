"""The Playwright web driver: one Chromium per process, a fresh browser context per episode."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from sandboxes.actions import Action, Check, Click, Goto, Key, Scroll, Select, Target, Terminate, Type, Wait
from sandboxes.app_process import AppProcess, SandboxError
from sandboxes.driver import ActionResult, Health, Observation
from sandboxes.skills import InjectionError, Skill, run_sql_skill
from verifier_templates.base import Probe

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER_FIX = "install one: `sudo apt-get install -y chromium` (Debian/Ubuntu) or `playwright install chromium`"
ACTION_TIMEOUT_MS = 5000


def system_chromium() -> str | None:
    for name in SYSTEM_CHROMIUMS:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserHost:
    """Owns Playwright and one Chromium: Playwright's own build when installed, else the system's."""

    def __init__(self, headless: bool = True) -> None:
        self.headless = headless
        self._pw = None
        self.browser = None
        self.executable: str | None = None

    def start(self) -> BrowserHost:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise SandboxError("the playwright package is missing; run `pip install playwright`") from None
        self._pw = sync_playwright().start()
        bundled = self._pw.chromium.executable_path
        self.executable = None if bundled and Path(bundled).exists() else system_chromium()
        if self.executable is None and not (bundled and Path(bundled).exists()):
            self.close()
            raise SandboxError(f"no Chromium browser found; {BROWSER_FIX}")
        try:
            self.browser = self._pw.chromium.launch(
                headless=self.headless, executable_path=self.executable, args=CHROMIUM_ARGS
            )
        except Exception as exc:  # playwright raises its own Error type
            self.close()
            raise SandboxError(f"Chromium would not start ({str(exc).splitlines()[0]}); {BROWSER_FIX}") from None
        return self

    def close(self) -> None:
        if self.browser is not None:
            try:
                self.browser.close()
            except Exception:
                pass
            self.browser = None
        if self._pw is not None:
            self._pw.stop()
            self._pw = None

    def __enter__(self) -> BrowserHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class WebDriver:
    """Drives one web sandbox: a live app process and a browser context that is new each episode."""

    def __init__(self, app: AppProcess, host: BrowserHost, viewport: tuple[int, int] = (1280, 800)) -> None:
        self.app = app
        self.manifest = app.manifest
        self.host = host
        self.viewport = viewport
        self.context = None
        self.page = None
        self.answer: str | None = None
        self._inflight = 0

    # ---- episode lifecycle ----------------------------------------------------------------------
    def reset(self) -> None:
        if not self.app.healthy():
            raise SandboxError(f"{self.manifest.name}: the app is not answering; it was restarted? log: {self.app.log_tail()}")
        self.app.restore()
        self._new_page()

    def _new_page(self) -> None:
        if self.context is not None:
            self.context.close()
        w, h = self.viewport
        self.context = self.host.browser.new_context(viewport={"width": w, "height": h})
        self.context.set_default_timeout(ACTION_TIMEOUT_MS)
        self.page = self.context.new_page()
        self._inflight = 0
        self.page.on("request", self._on_request)
        self.page.on("requestfinished", self._on_request_done)
        self.page.on("requestfailed", self._on_request_done)
        self.answer = None
        self.page.goto(self.app.base_url + "/")

    def _on_request(self, _req: Any) -> None:
        self._inflight += 1

    def _on_request_done(self, _req: Any) -> None:
        self._inflight = max(0, self._inflight - 1)

    def settle(self, timeout_s: float = 10.0) -> None:
        """Wait until the page has loaded and no request is in flight (form posts have landed)."""
        self.page.wait_for_timeout(20)
        deadline = time.monotonic() + timeout_s
        while self._inflight and time.monotonic() < deadline:
            self.page.wait_for_timeout(10)
        self.page.wait_for_load_state("load")

    def inject(self, skill: Skill, args: dict[str, Any]) -> None:
        if skill.kind != "sql" or self.app.state_path is None:
            raise InjectionError(f"skill kind {skill.kind!r} is not supported for {self.manifest.state.kind} state")
        run_sql_skill(self.app.state_path, skill, args)
        self.page.reload()

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
            self.context = None

    # ---- observe and act ------------------------------------------------------------------------
    def observe(self, screenshot: bool = True) -> Observation:
        self.settle()
        return Observation(
            url=self.page.url,
            title=self.page.title(),
            ui_tree=self.page.locator("body").aria_snapshot(),
            screenshot=self.page.screenshot() if screenshot else None,
            screen_size=self.viewport,
        )

    def locate(self, target: Target):
        scope = self.page
        if target.within:
            scope = self.page.locator(f'[aria-label="{target.within}"]').first
        if target.label:
            loc = scope.get_by_label(target.label, exact=True)
        elif target.role:
            loc = scope.get_by_role(target.role, name=target.name, exact=True) if target.name else scope.get_by_role(target.role)
        else:
            loc = scope.get_by_text(target.text, exact=True)
        return loc.nth(target.nth)

    def act(self, action: Action) -> ActionResult:
        try:
            return self._act(action)
        except Exception as exc:  # a failed action is a result, never a crash of the episode
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return ActionResult(ok=False, error=f"{action.action}: {message}")

    def _act(self, action: Action) -> ActionResult:
        page = self.page
        if isinstance(action, Goto):
            page.goto(urljoin(self.app.base_url + "/", action.url))
            return ActionResult(ok=True)
        if isinstance(action, Terminate):
            self.answer = action.answer
            return ActionResult(ok=True)
        if isinstance(action, Wait):
            page.wait_for_timeout(action.seconds * 1000)
            return ActionResult(ok=True)
        if isinstance(action, Key):
            page.keyboard.press("+".join(action.keys))
            self.settle()
            return ActionResult(ok=True)
        if isinstance(action, Scroll):
            page.mouse.wheel(0, action.pixels)
            return ActionResult(ok=True)
        if isinstance(action, Click) and action.target is None:
            w, h = self.viewport
            page.mouse.click(action.x * w / 999, action.y * h / 999)
            self.settle()
            return ActionResult(ok=True, point=(action.x, action.y))
        loc = self.locate(action.target) if getattr(action, "target", None) else None
        point = self._point(loc) if loc is not None else None
        sensitive = None
        if isinstance(action, Click):
            name = action.target.name or action.target.text or ""
            sensitive = self.manifest.sensitive_kind(name) if name else None
            {"left_click": loc.click, "double_click": loc.dblclick, "right_click": lambda: loc.click(button="right")}[
                action.action
            ]()
            self.settle()
        elif isinstance(action, Type):
            if loc is None:
                page.keyboard.type(action.text)
            elif action.clear:
                loc.fill(action.text)
            else:
                loc.press_sequentially(action.text)
            if action.target and action.target.label and self.manifest.sensitive_kind(action.target.label) == "password":
                sensitive = "password"
        elif isinstance(action, Select):
            loc.select_option(label=action.option) if action.option is not None else loc.select_option(value=action.value)
        elif isinstance(action, Check):
            loc.set_checked(action.checked)
        return ActionResult(ok=True, point=point, sensitive=sensitive)

    def _point(self, loc) -> tuple[int, int] | None:
        box = loc.bounding_box()
        if not box:
            return None
        w, h = self.viewport
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        return (max(0, min(999, round(cx * 999 / w))), max(0, min(999, round(cy * 999 / h))))

    # ---- probe and health -----------------------------------------------------------------------
    def probe(self, probe: Probe) -> Any:
        if probe.kind == "sql":
            return self._sql(probe)
        if probe.kind == "answer":
            return self.answer
        self.settle()
        if probe.kind == "url":
            return self.page.url
        if probe.kind == "page_text":
            return self.page.inner_text("body")
        if probe.kind == "js":
            return self.page.evaluate(probe.query)
        raise ValueError(f"unknown probe kind {probe.kind!r}")

    def _sql(self, probe: Probe) -> Any:
        if self.app.state_path is None:
            raise SandboxError(f"{self.manifest.name}: SQL probe but the sandbox declares no sqlite state")
        self.settle()
        con = sqlite3.connect(f"file:{self.app.state_path}?mode=ro", uri=True, timeout=10)
        try:
            rows = con.execute(probe.query, probe.args).fetchall()
        finally:
            con.close()
        if probe.shape == "rows":
            return [list(r) for r in rows]
        return rows[0][0] if rows else None

    def health(self) -> Health:
        if not self.app.healthy():
            return Health(False, f"app not answering at {self.app.base_url}; log: {self.app.log_tail()}")
        if self.page is None or self.page.is_closed():
            return Health(False, "no open page")
        return Health(True)
