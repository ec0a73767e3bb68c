"""The Playwright web driver: one Chromium per process, a fresh browser context per episode."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from sandboxes.actions import (
    Action,
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
    Type,
    Wait,
)
from sandboxes.app_process import ANSWER_TIMEOUT_S, AppProcess, SandboxError, free_port, stop_process
from sandboxes.device_profiles import DeviceProfile
from sandboxes.driver import ActionResult, Health, Observation
from sandboxes.skills import InjectionError, Skill, local_storage_entries, run_skill
from sandboxes.touch import control_name_at, touch
from verifier_templates.base import Probe

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    # Sandboxes are offline: a page's request to an outside host (a web font, analytics) fails at once
    # instead of waiting on DNS and holding up the load event (5-12 s for jKanban's demo font here).
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    # A screenshot shows the page, not its paint history: with partial raster Chromium re-rasters only the
    # invalidated part of a tile, so the anti-aliased edges beside it (a rounded field's corner) keep an
    # earlier raster, off by one in a channel; which frames a step produced depends on load, so the same
    # steps gave different screenshots (7 of 56 in bench/stable_origins.py).
    "--disable-partial-raster",
    # Chromium takes the last --disable-features, so this repeats the features Playwright disables
    # and adds RenderDocument: a new frame host per same-site navigation costs ~35% more CPU per
    # page load (measured: 99 -> 62 ms CPU per navigation on the shop; bench/validation.py).
    "--disable-features=AvoidUnnecessaryBeforeUnloadCheckSync,DestroyProfileOnBrowserClose,HttpsUpgrades,"
    "HttpsFirstBalancedModeAutoEnable,LensOverlay,MediaRouter,PaintHolding,ThirdPartyStoragePartitioning,"
    "AvoidCorsURLLoaderRestartOnRedirect,OptimizationHints,NetworkTimeServiceQuerying,Translate,RenderDocument",
]
# What Playwright passes to a Chromium it launches (its chromiumSwitches, and the headless ones) and a Chromium
# started by hand for CDP (SharedBrowser) would miss: without them pages in one browser are backgrounded
# (timers throttled, frames not drawn), back/forward is served from the cache without a load, and scrollbars
# take room, so 4 workers behaved unlike 1 (9 of 13 pairs ended sandbox_error under a CPU hog, where 1 worker
# verified every pair it reached). The same browser for every worker count: verdicts must not depend on it.
PLAYWRIGHT_SWITCHES = [
    "--disable-field-trial-config", "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
    "--disable-back-forward-cache", "--disable-breakpad", "--disable-component-extensions-with-background-pages",
    "--no-default-browser-check", "--disable-default-apps", "--disable-extensions", "--allow-pre-commit-input",
    "--disable-hang-monitor", "--disable-ipc-flooding-protection", "--disable-popup-blocking",
    "--disable-prompt-on-repost", "--disable-renderer-backgrounding", "--force-color-profile=srgb",
    "--metrics-recording-only", "--password-store=basic", "--use-mock-keychain", "--no-service-autorun",
    "--disable-search-engine-choice-screen", "--enable-features=CDPScreenshotNewSurface",
]
PLAYWRIGHT_HEADLESS_SWITCHES = [
    "--headless", "--hide-scrollbars", "--mute-audio",
    "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,availablePointerTypes=4",
]
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER_FIX = "install one: `sudo apt-get install -y chromium` (Debian/Ubuntu) or `playwright install chromium`"
# Waits follow the page (requests in flight, navigations loaded, the page's own next frame), never the
# clock; a missing or hidden element is an error at once. The cap only bounds a page that never settles:
# generous, so a loaded machine is slower but not wrong; a timeout is retried once, then SandboxTimeout.
ACTION_TIMEOUT_MS = 30_000
# Chromium starting, or a Playwright connection to it: ~1 s on a quiet machine; a process that dies fails at once.
BROWSER_START_TIMEOUT_S = 120.0
_NEXT_FRAME = "() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"


class SandboxTimeout(SandboxError):
    """The page did not settle within the cap, twice: the environment's fault, never the task's or policy's."""


def _timed_out(exc: BaseException) -> bool:
    return type(exc).__name__ == "TimeoutError" or isinstance(exc, SandboxTimeout)


# From the element up to its card: the grip inside it (the outermost, when grips nest), or null when the
# card has none (the card: the first ancestor with like siblings, i.e. one item of a list) or several.
_FIND_GRIP = """el => {
  const GRIP = '[class*="handle" i], [class*="grip" i]';
  for (let card = el, up = 0; card && up < 6; card = card.parentElement, up++) {
    const all = [...card.querySelectorAll(GRIP)];
    const grips = all.filter(g => !all.includes(g.parentElement.closest(GRIP)));
    if (grips.length > 1) return null;
    if (grips.length === 1) {
      const r = grips[0].getBoundingClientRect();
      return r.width && r.height ? {x: r.x + r.width / 2, y: r.y + r.height / 2} : null;
    }
    const alike = card.parentElement && [...card.parentElement.children].some(
      c => c !== card && c.tagName === card.tagName && c.className === card.className);
    if (alike) return null;
  }
  return null;
}"""


_IN_VIEW = """el => { const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth; }"""


def canonical_origin(sandbox: str) -> str:
    """The origin data names a sandbox by (`http://shop.local`), whatever port a run serves it on: prompts,
    URLs, trees and errors in the lake and in exports never carry infrastructure."""
    return f"http://{sandbox}.local"


# A page that draws the same on every load from a reset: its Math.random is a function of the sandbox, the
# page's address and what the browser holds for it (storage and cookies), so a load after a reset, and any
# reload that finds nothing new stored, draws the same numbers; a reload after the app stored records draws
# others (an app keeping ids it drew before would meet them again). Its clock reads one fixed instant, in the
# past, until the page has loaded (what start-up code seeds a generator with, or stamps demo data with), then
# the real time (so ids and stamps made later are what they would be). crypto's random is left alone.
SEEDED_RANDOM_JS = r"""(() => {
  const hash = (s, h) => { for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 2654435761) >>> 0; return h; };
  let held = '';
  try {
    const entries = s => Object.keys(s).sort().map(k => k + '=' + s.getItem(k)).join('&');
    held = entries(localStorage) + '|' + entries(sessionStorage) + '|' + document.cookie.split('; ').sort().join('&');
  } catch (e) {}  // an opaque origin has no storage
  let a = hash(location.pathname + '|' + held, hash(%(sandbox)s, 2166136261));
  Math.random = function random() {
    a = (a + 0x6D2B79F5) >>> 0; let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const Real = Date, start = %(start_ms)d;
  let loaded = null;
  addEventListener('load', () => { loaded = true; }, {once: true});
  const now = () => loaded === null ? start : Real.now();
  const PageDate = function Date(...args) {
    if (!new.target) return new Real(now()).toString();
    return args.length ? new Real(...args) : new Real(now());
  };
  PageDate.prototype = Real.prototype; PageDate.now = now; PageDate.parse = Real.parse; PageDate.UTC = Real.UTC;
  window.Date = PageDate;
})()"""
# A debounced input (a search that filters a moment after the last key, a name field whose Create button turns
# on after its pause) acts on a short timer the input set off, and a single-page app fetches after its load
# event or on a press; the browser's network events for such a request can arrive after the driver looked.
# So every page counts, in the page itself, its requests in flight (fetch, XMLHttpRequest) and the short timers
# (at most INPUT_TIMER_MAX_MS) set since the last input event; settling waits until the requests are done (at
# most INPUT_REQUESTS_CAP_MS) and, after an input, until the timers pending then have run or been cleared (at
# most INPUT_TIMERS_CAP_MS); longer timers (polling, a toast's fade) are not waited for. Waits follow the page.
INPUT_TIMER_MAX_MS, INPUT_TIMERS_CAP_MS, INPUT_REQUESTS_CAP_MS = 1000, 3000, 10000
PAGE_WAITS_JS = r"""(() => {
  const set = window.setTimeout.bind(window), clear = window.clearTimeout.bind(window), pending = new Set();
  let requests = 0;
  for (const kind of ['input', 'change', 'keydown', 'pointerdown', 'click'])
    addEventListener(kind, () => pending.clear(), true);  // what is set from here on is this input's
  window.setTimeout = function setTimeout(fn, ms, ...args) {
    if (typeof fn !== 'function') return set(fn, ms, ...args);
    const d = Number(ms) || 0;
    const id = set(function () { pending.delete(id); return fn.apply(this, arguments); }, ms, ...args);
    if (d >= 16 && d <= %(max_ms)d) pending.add(id);
    return id;
  };
  window.clearTimeout = function clearTimeout(id) { pending.delete(id); return clear(id); };
  if (window.fetch) { const real = window.fetch;
    window.fetch = function fetch(...args) { requests++; const p = real.apply(this, args);
      p.then(() => requests--, () => requests--); return p; }; }
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) { requests++;
    this.addEventListener('loadend', () => requests--, {once: true}); return send.apply(this, args); };
  const quiet = timers => new Promise(done => {
    const waited = timers ? new Set(pending) : new Set(), start = performance.now();
    const poll = () => {
      for (const id of waited) if (!pending.has(id)) waited.delete(id);
      const t = performance.now() - start;
      if ((!waited.size || t > %(cap_ms)d) && (!requests || t > %(req_ms)d)) return done(requests);
      set(poll, 20); };
    poll(); });
  Object.defineProperty(window, '__flywheelQuiet', {value: quiet});
})()"""
PAGE_CLOCK_START_MS = 1_704_110_400_000  # 2024-01-01T12:00:00Z: what a reset app's pages read as "now" while loading


def seeded_random_script(sandbox: str) -> str:
    """The init script that makes a sandbox's pages replayable (seeded by name, so runs on any port draw alike)."""
    return SEEDED_RANDOM_JS % {"sandbox": json.dumps(sandbox), "start_ms": PAGE_CLOCK_START_MS}


def system_chromium() -> str | None:
    for name in SYSTEM_CHROMIUMS:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserHost:
    """Playwright plus one Chromium for the calling thread: launched (Playwright's own build when
    installed, else the system's), or a connection to a SharedBrowser that other threads use too."""

    def __init__(self, headless: bool = True, endpoint: str | None = None) -> None:
        self.headless = headless
        self.endpoint = endpoint
        self._pw = None
        self.browser = None
        self.executable: str | None = None

    def start(self) -> BrowserHost:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise SandboxError("the playwright package is missing; run `pip install playwright`") from None
        self._pw = sync_playwright().start()
        if self.endpoint:
            try:
                self.browser = self._pw.chromium.connect_over_cdp(self.endpoint, timeout=BROWSER_START_TIMEOUT_S * 1000)
            except Exception as exc:
                self.close()
                raise SandboxError(f"cannot reach the shared Chromium at {self.endpoint}: {str(exc).splitlines()[0]}") from None
            return self
        bundled = self._pw.chromium.executable_path
        self.executable = None if bundled and Path(bundled).exists() else system_chromium()
        if self.executable is None and not (bundled and Path(bundled).exists()):
            self.close()
            raise SandboxError(f"no Chromium browser found; {BROWSER_FIX}")
        try:
            self.browser = self._pw.chromium.launch(
                headless=self.headless, executable_path=self.executable, args=CHROMIUM_ARGS,
                timeout=BROWSER_START_TIMEOUT_S * 1000,
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


def _find_executable(headless: bool) -> str:
    """The Chromium a BrowserHost would launch. Probed in its own thread: Playwright's sync API
    allows one instance per thread, and the caller's thread may already hold one."""
    found: list[str | BaseException] = []

    def probe() -> None:
        try:
            with BrowserHost(headless) as host:
                found.append(host.executable or host._pw.chromium.executable_path)
        except BaseException as exc:
            found.append(exc)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    if isinstance(found[0], BaseException):
        raise found[0]
    return found[0]


class SharedBrowser:
    """One Chromium process that several threads drive at once, each through its own Playwright
    connection (CDP): one browser, a context per task, many sandboxes in parallel."""

    def __init__(self, headless: bool = True) -> None:
        self.headless = headless
        self.proc: subprocess.Popen | None = None
        self.endpoint = ""
        self._profile = ""

    def start(self) -> SharedBrowser:
        executable = _find_executable(self.headless)
        port = free_port()
        self._profile = tempfile.mkdtemp(prefix="flywheel-chromium-")
        args = [executable, f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1",
                f"--user-data-dir={self._profile}", *PLAYWRIGHT_SWITCHES,
                *(PLAYWRIGHT_HEADLESS_SWITCHES if self.headless else []), *CHROMIUM_ARGS, "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + BROWSER_START_TIMEOUT_S  # follows Chromium: its port opens, or it exits
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.endpoint + "/json/version", timeout=ANSWER_TIMEOUT_S):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.close()
        raise SandboxError(f"Chromium ({executable}) did not open its debugging port; {BROWSER_FIX}")

    def close(self) -> None:
        stop_process(self.proc)
        self.proc = None
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> SharedBrowser:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class WebDriver:
    """Drives one web sandbox: a live app process and a browser context that is new each episode."""

    def __init__(
        self, app: AppProcess, host: BrowserHost, viewport: tuple[int, int] = (1280, 800),
        action_timeout_ms: int = ACTION_TIMEOUT_MS, profile: DeviceProfile | None = None,
    ) -> None:
        self.profile = profile  # a device profile (e.g. the phone's) sets the viewport, touch and user agent
        viewport = profile.viewport if profile else viewport
        self.app = app
        self.action_timeout_ms = action_timeout_ms
        self.manifest = app.manifest
        self.origin = canonical_origin(app.manifest.name)
        self.host = host
        self.viewport = viewport
        self.context = None
        self.page = None
        self.answer: str | None = None
        self.user_calls: list[str] = []
        self._inflight = 0
        self._navigating = 0  # main-frame navigation requests whose document has not loaded yet
        self._at_start = False
        self.page_status: int | None = None  # the HTTP status of the page's document (404: an error page)

    # ---- episode lifecycle ----------------------------------------------------------------------
    def reset(self, new_context: bool = True) -> None:
        """Restore the app's state and open its home page. A new browser context per task; episodes of
        the same task may keep the context with its cookies and storage cleared and a new tab (saves ~100 ms)."""
        if not self.app.healthy():
            raise SandboxError(self.canonical(f"{self.manifest.name}: the app is not answering at {self.app.base_url} "
                                              f"(served on a local port); log: {self.app.log_tail()}"))
        self.app.restore()
        fresh = [new_context]

        def clean_browser() -> None:
            if (fresh[0] or self.context is None or self.page is None or self.page.is_closed()
                    or not self.page.url.startswith(self.app.base_url)):
                # storage can only be cleared from a page of the app's origin: an episode that ended elsewhere
                # (a detour's `back` to about:blank, an error page) gets a fresh context instead
                self._new_context()
            else:
                fresh[0] = True  # should clearing time out, the attempt after it starts a new context
                self.context.clear_cookies()
                self.page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
                # a new tab: the old one's history would let a `back` reach the episode before
                old = self.page
                self._open_page()
                old.close()

        self._retrying("reset", clean_browser)
        self._inflight = 0
        self._navigating = 0
        self.answer = None
        self.user_calls: list[str] = []
        self._at_start = True  # the home page opens lazily: on the first observation or non-goto action

    def canonical(self, text: str) -> str:
        """The live origin (`http://127.0.0.1:<port>`) in `text` replaced by the sandbox's canonical one."""
        return text.replace(self.app.base_url, self.origin) if isinstance(text, str) else text

    def live(self, url: str) -> str:
        """A URL on the canonical origin (or a path) as the live app serves it."""
        if url.startswith(self.origin):
            url = self.app.base_url + url[len(self.origin):]
        return urljoin(self.app.base_url + "/", url)

    def _ensure_started(self) -> None:
        if self._at_start:
            self._at_start = False
            self.page.goto(self.app.base_url + self.manifest.start.home_path)
            self.settle()

    def _new_context(self) -> None:
        if self.context is not None:
            self.context.close()
        w, h = self.viewport
        options = self.profile.context_options() if self.profile else {"viewport": {"width": w, "height": h}}
        self.context = self.host.browser.new_context(**options)
        self.context.set_default_timeout(self.action_timeout_ms)
        if self.manifest.start is None or self.manifest.start.seeded_random:
            self.context.add_init_script(seeded_random_script(self.manifest.name))
        self.context.add_init_script(PAGE_WAITS_JS % {"max_ms": INPUT_TIMER_MAX_MS, "cap_ms": INPUT_TIMERS_CAP_MS,
                                                      "req_ms": INPUT_REQUESTS_CAP_MS})
        self._open_page()

    def _open_page(self) -> None:
        self.page = self.context.new_page()
        self.page.on("request", self._on_request)
        self.page.on("requestfinished", self._on_request_done)
        self.page.on("requestfailed", self._on_request_failed)
        self.page.on("load", self._on_load)
        # a person answers confirm()/alert()/prompt() by accepting (Playwright would dismiss them, and a
        # confirmed delete would silently not happen)
        self.page.on("dialog", lambda dialog: dialog.accept())

    def _main_navigation(self, req: Any) -> bool:
        try:
            return req.is_navigation_request() and req.frame == self.page.main_frame
        except Exception:
            return False

    def _on_request(self, req: Any) -> None:
        self._inflight += 1
        if self._main_navigation(req):
            self._navigating += 1

    def _on_request_done(self, req: Any) -> None:
        self._inflight = max(0, self._inflight - 1)
        if self._main_navigation(req):  # a document with nothing to load (204, a download) never fires load
            try:
                response = req.response()
                self.page_status = response.status if response is not None else None
                empty = response is not None and (response.status == 204 or "attachment" in (response.headers.get("content-disposition") or ""))
            except Exception:
                empty = False
            if empty:
                self._navigating = max(0, self._navigating - 1)

    def _on_request_failed(self, req: Any) -> None:
        self._inflight = max(0, self._inflight - 1)
        if self._main_navigation(req):
            self._navigating = max(0, self._navigating - 1)

    def _on_load(self, *_: Any) -> None:
        self._navigating = 0

    def settle(self, timeout_s: float = ACTION_TIMEOUT_MS / 1000, after_input: bool = False) -> None:
        """Wait until the page has loaded, any navigation it started has loaded its document, and no
        request is in flight (form posts have landed). After a click or key press, first let the page
        run its next frame, so what the input started has begun: waits follow the page, not the clock.
        A page that does not settle within the cap raises SandboxTimeout."""
        if after_input:
            self._next_frame()
            self._page_quiet(timers=True)
        deadline = time.monotonic() + timeout_s
        while self._inflight or self._navigating:
            if time.monotonic() > deadline:
                raise SandboxTimeout(f"{self.manifest.name}: the page did not settle in {timeout_s:.0f}s "
                                     f"({self._inflight} request(s) in flight)")
            self.page.wait_for_timeout(10)  # lets Playwright deliver the page's events
        self.page.wait_for_load_state("load")
        self._next_frame()
        if self._page_quiet(timers=False):  # the page's own count saw requests the network events had not shown yet
            self._next_frame()

    def _page_quiet(self, timers: bool) -> bool:
        """Wait for the requests the page has in flight, and with `timers` for the short timers the last input set
        off (a debounce), as a person waits for the page to react. Whether there was anything to wait for."""
        try:
            return bool(self.page.evaluate(
                "async t => { if (!window.__flywheelQuiet) return 0; const s = performance.now(); await window.__flywheelQuiet(t);"
                " return performance.now() - s > 25; }", timers))
        except Exception as exc:  # a navigation replaced the document mid-call: the wait loop follows it
            if _timed_out(exc):
                raise
            return False

    def _next_frame(self) -> None:
        try:
            self.page.evaluate(_NEXT_FRAME)
        except Exception as exc:  # a navigation replaced the document mid-call: the wait loop follows it
            if _timed_out(exc):
                raise

    def inject(self, skill: Skill, args: dict[str, Any]) -> None:
        if skill.kind == "ui_replay":
            return self._replay_ui(skill, args)
        if skill.kind == "local_storage":
            entries = local_storage_entries(skill, args)

            def store() -> None:  # idempotent, so a timed-out attempt is simply made again
                self._ensure_started()  # storage belongs to the app's origin: be on its page first
                self.page.evaluate("(e) => { for (const [k, v] of Object.entries(e)) localStorage.setItem(k, v); }", entries)
                self.page.reload()
                self.settle()

            return self._retrying("inject", store)
        if skill.kind not in ("sql", "python") or self.app.state_path is None:
            raise InjectionError(f"skill kind {skill.kind!r} is not supported for {self.manifest.state.kind} state")
        run_skill(self.app.state_path, skill, args)
        if not self._at_start:
            self._retrying("reload after inject", self.page.reload)

    def _replay_ui(self, skill: Skill, args: dict[str, Any]) -> None:
        """Set records up through the UI (recorded paths, for apps whose storage no skill can write),
        then check with args.check (a verifier) that they took effect."""
        from sandboxes.actions import parse_actions
        from verifier_templates import get_template
        from verifier_templates.base import Evidence

        try:
            actions = parse_actions(args.get("actions", []))
        except Exception as exc:
            raise InjectionError(f"skill {skill.name}: actions do not parse: {str(exc).splitlines()[0]}") from None
        for i, action in enumerate(actions):
            result = self.act(action)
            if not result.ok:
                raise InjectionError(f"skill {skill.name}: replayed step {i + 1} failed: {result.error}")
        check = args.get("check")
        if check:
            try:
                template = get_template(check["template"])
                final = {p.name: self.probe(p) for p in template.probes(check["params"])}
                verdict = template.judge(Evidence({}, final), check["params"])
            except Exception as exc:
                raise InjectionError(f"skill {skill.name}: its check could not run: {str(exc).splitlines()[0]}") from None
            if not verdict.passed:
                raise InjectionError(f"skill {skill.name}: the replayed UI path did not take effect: {verdict.reason}")
        self.answer = None

    def close(self) -> None:
        if self.context is not None:
            self.context.close()
            self.context = None

    # ---- observe and act ------------------------------------------------------------------------
    def _retrying(self, what: str, fn: Any) -> Any:
        """fn(), once more after a timeout; a second timeout is the environment's (SandboxTimeout)."""
        for attempt in (1, 2):
            try:
                return fn()
            except Exception as exc:
                if not _timed_out(exc):
                    raise
                if attempt == 2:
                    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise SandboxTimeout(self.canonical(f"{self.manifest.name}: {what} timed out twice: {message}")) from None
                try:
                    self.settle()
                except Exception:
                    pass
        raise AssertionError("unreachable")

    def observe(self, screenshot: bool = True) -> Observation:
        return self._retrying("observe", lambda: self._observe(screenshot))

    def _observe(self, screenshot: bool) -> Observation:
        self._ensure_started()
        self.settle()
        return Observation(
            url=self.canonical(self.page.url),
            title=self.page.title(),
            ui_tree=self.canonical(self.page.locator("body").aria_snapshot()),
            screenshot=self._screenshot() if screenshot else None,
            screen_size=self.profile.screen_pixels if self.profile else self.viewport,  # the screenshot's size
        )

    def _screenshot(self) -> bytes:
        """The screen once it has come to rest: CSS transitions and animations finished (a finite one is
        fast-forwarded to its end, an infinite one shown at its start), the text caret hidden, so a capture
        does not depend on how long after the step it was taken."""
        return self.page.screenshot(animations="disabled", caret="hide")

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
        """A failed action is a result; a page that would not settle, twice, raises SandboxTimeout."""
        try:
            return self._retrying(action.action, lambda: self._act(action))
        except SandboxTimeout:
            raise
        except Exception as exc:  # a failed action is a result, never a crash of the episode
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return ActionResult(ok=False, error=self.canonical(f"{action.action}: {message}"))

    def _act(self, action: Action) -> ActionResult:
        page = self.page
        if isinstance(action, Goto):
            self._at_start = False  # nothing was observed yet: opening home first would change nothing
            page.goto(self.live(action.url))
            self.settle()  # a single-page app renders what it fetches after its load event
            return ActionResult(ok=True)
        self._ensure_started()
        if isinstance(action, Terminate):
            self.answer = action.answer
            return ActionResult(ok=True)
        if isinstance(action, Wait):
            page.wait_for_timeout(action.seconds * 1000)
            return ActionResult(ok=True)
        if isinstance(action, Key):
            page.keyboard.press("+".join(action.keys))
            self.settle(after_input=True)
            return ActionResult(ok=True)
        if isinstance(action, (Scroll, HScroll)):
            if action.x is not None:
                page.mouse.move(*self._px(action.x, action.y))
            # Qwen-CUA signs: scroll +pixels goes up, hscroll +pixels goes right
            page.mouse.wheel(action.pixels if isinstance(action, HScroll) else 0, 0 if isinstance(action, HScroll) else -action.pixels)
            return ActionResult(ok=True)
        if isinstance(action, (Screenshot,)):
            return ActionResult(ok=True)  # the harness observes every step anyway
        if isinstance(action, CallUser):
            self.user_calls.append(action.reason)
            return ActionResult(ok=True, details={"call_user": action.reason})
        if isinstance(action, MouseMove):
            page.mouse.move(*self._px(action.x, action.y))
            return ActionResult(ok=True, point=(action.x, action.y))
        if isinstance(action, (Tap, LongPress, Swipe)) and self.profile and self.profile.has_touch:
            name = control_name_at(page, *self._px(action.x, action.y)) if isinstance(action, Tap) else None
            touch(page, action, self._px, self.action_timeout_ms / 1000)
            self.settle(after_input=True)
            sensitive = self.manifest.sensitive_kind(name) if name else None
            return ActionResult(ok=True, point=(action.x, action.y), sensitive=sensitive)
        if isinstance(action, Drag) and (action.target or action.to):
            for end_target in (action.target, action.to):
                if end_target:
                    self._ready(self.locate(end_target), end_target)
            start = self._grip(self.locate(action.target)) if action.target else self._px(action.x, action.y)
            page.mouse.move(*start)
            page.mouse.down()
            # drag libraries (dragula, SortableJS) start on mousemove, HTML5 drags on the first move too
            page.mouse.move(start[0] + 4, start[1] + 4, steps=2)
            end = self._held_target(self.locate(action.to)) if action.to else self._px(action.x2, action.y2)
            page.mouse.move(*end, steps=8)
            page.mouse.up()
            self.settle(after_input=True)
            return ActionResult(ok=True, point=(*self._grid(*start), *self._grid(*end)))
        if isinstance(action, (Drag, Swipe)):
            page.mouse.move(*self._px(action.x, action.y))
            page.mouse.down()
            page.mouse.move(*self._px(action.x2, action.y2), steps=8)
            page.mouse.up()
            self.settle(after_input=True)
            return ActionResult(ok=True, point=(action.x, action.y))
        if isinstance(action, (Tap, LongPress)):
            page.mouse.move(*self._px(action.x, action.y))
            page.mouse.down()
            if isinstance(action, LongPress):
                page.wait_for_timeout(action.duration * 1000)
            page.mouse.up()
            self.settle(after_input=True)
            return ActionResult(ok=True, point=(action.x, action.y))
        if isinstance(action, SystemButton):
            if action.button == "back":
                page.go_back()
                if not page.url.startswith(self.app.base_url):
                    # nothing of the app to go back to (navigating to the page already shown replaces its
                    # history entry): the browser's back button would be greyed out, so the app stays
                    page.go_forward()
            elif action.button == "home":
                page.goto(self.app.base_url + self.manifest.start.home_path)
            elif action.button == "enter":
                page.keyboard.press("Enter")
            else:
                return ActionResult(ok=False, error="system_button: a web page has no menu button")
            self.settle(after_input=True)
            return ActionResult(ok=True)
        if isinstance(action, (OpenApp, Shell)):
            return ActionResult(ok=False, error=f"{action.action}: not available in a web sandbox")
        if isinstance(action, Click) and action.target is None:
            button = {"right_click": "right", "middle_click": "middle"}.get(action.action, "left")
            count = {"double_click": 2, "triple_click": 3}.get(action.action, 1)
            page.mouse.click(*self._px(action.x, action.y), button=button, click_count=count)
            self.settle(after_input=True)
            return ActionResult(ok=True, point=(action.x, action.y))
        loc = self.locate(action.target) if getattr(action, "target", None) else None
        if loc is not None:
            self._ready(loc, action.target)
        point = self._point(loc) if loc is not None else None
        sensitive = None
        if isinstance(action, Click):
            name = action.target.name or action.target.text or ""
            sensitive = self.manifest.sensitive_kind(name) if name else None
            button = {"right_click": "right", "middle_click": "middle"}.get(action.action, "left")
            count = {"double_click": 2, "triple_click": 3}.get(action.action, 1)
            loc.click(button=button, click_count=count)
            self.settle(after_input=True)
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
        if isinstance(action, (Type, Select, Check)):
            # what the input set off (a form an onchange submits, a search as you type) lands before the next step
            self.settle(after_input=True)
        return ActionResult(ok=True, point=point, sensitive=sensitive)

    def _ready(self, loc: Any, target: Target) -> None:
        """The page has settled, so an element is there or it is not: a missing, hidden or disabled one is
        an error at once (deterministic), and only a present, ready one is waited on (up to the cap)."""
        if loc.count() == 0:
            raise LookupError(f"no element matches {target.describe()}")
        if not loc.is_visible():
            raise LookupError(f"{target.describe()} is not visible")
        if not loc.is_enabled():
            raise LookupError(f"{target.describe()} is disabled")

    def _px(self, x: int, y: int) -> tuple[float, float]:
        w, h = self.viewport
        return x * w / 999, y * h / 999

    def _point(self, loc) -> tuple[int, int] | None:
        box = loc.bounding_box()
        if not box:
            return None
        return self._grid(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    def _grid(self, px: float, py: float) -> tuple[int, int]:
        w, h = self.viewport
        return (max(0, min(999, round(px * 999 / w))), max(0, min(999, round(py * 999 / h))))

    def _centre(self, loc, scroll: bool = True) -> tuple[float, float]:
        """The centre of the element's part inside the viewport (scrolled into view first, unless a
        drag is holding something that scrolling would move from under the pointer)."""
        if scroll:
            loc.scroll_into_view_if_needed()
        box, (w, h) = loc.bounding_box(), self.viewport
        left, top = max(0.0, box["x"]) if box else 0.0, max(0.0, box["y"]) if box else 0.0
        right, bottom = (min(w, box["x"] + box["width"]), min(h, box["y"] + box["height"])) if box else (0.0, 0.0)
        if right <= left or bottom <= top:
            raise SandboxError("the element is not on screen")
        return (left + right) / 2, (top + bottom) / 2

    def _held_target(self, loc) -> tuple[float, float]:
        """Where to let go of a held card: the drop target's centre, after scrolling it into view when it is
        off screen. The page scrolls by script while the button stays down (as a person's wheel would), so
        mouse-driven and HTML5 drags alike keep what they hold; the pointer then moves to its new place."""
        if not loc.evaluate(_IN_VIEW):
            loc.evaluate("el => el.scrollIntoView({block: 'center', inline: 'center'})")
            self._next_frame()  # the page's scroll handlers (and sticky layouts) have run
        return self._centre(loc, scroll=False)

    def _grip(self, loc) -> tuple[float, float]:
        """Where a person grabs the element to drag it: its drag handle when the card around it has exactly
        one (an element whose class names a handle or grip), else its centre."""
        self._centre(loc)  # on screen, or one clear error
        grip = loc.evaluate(_FIND_GRIP)
        return (grip["x"], grip["y"]) if grip else self._centre(loc)

    # ---- probe and health -----------------------------------------------------------------------
    def probe(self, probe: Probe) -> Any:
        return self._retrying(f"probe {probe.name}", lambda: self._probe(probe))

    def _probe(self, probe: Probe) -> Any:
        if probe.kind == "sql":
            return self._sql(probe)
        if probe.kind == "answer":
            return self.answer
        self._ensure_started()
        self.settle()
        if probe.kind == "url":
            return self.canonical(self.page.url)
        if probe.kind == "page_text":
            return self.canonical(self.page.inner_text("body"))
        if probe.kind == "js":
            return self.page.evaluate(probe.query)
        raise ValueError(f"unknown probe kind {probe.kind!r}")

    def _sql(self, probe: Probe) -> Any:
        if self.app.state_path is None:
            raise SandboxError(f"{self.manifest.name}: SQL probe but the sandbox declares no sqlite state")
        self.settle()
        con = sqlite3.connect(f"file:{self.app.state_path}?mode=ro", uri=True, timeout=ANSWER_TIMEOUT_S)
        try:
            rows = con.execute(probe.query, probe.args).fetchall()
        except sqlite3.OperationalError as exc:  # held locked by the app past the cap: retried, then the sandbox's
            if "locked" in str(exc) or "busy" in str(exc):
                raise SandboxTimeout(f"{self.manifest.name}: the app's database stayed locked: {exc}") from None
            raise
        finally:
            con.close()
        if probe.shape == "rows":
            return [list(r) for r in rows]
        return rows[0][0] if rows else None

    def health(self) -> Health:
        if not self.app.healthy():
            return Health(False, f"app not answering at {self.origin} (served on a local port); log: {self.app.log_tail()}")
        if self.page is None or self.page.is_closed():
            return Health(False, "no open page")
        return Health(True)
