"""The Android driver: an app on a real device or emulator, reached through an adb server (adbutils).

USB devices, emulators and device farms over adb-over-TCP (`adb connect HOST:PORT`) all look the same
here: a serial on an adb server. Observations are `screencap -p`, the `uiautomator dump` hierarchy
rendered in the ARIA-snapshot shape the web driver produces, and the focused app/activity (`dumpsys
window`). Actions are `input` commands on pixels mapped from the 0..999 grid (pixel = v * size / 1000);
semantic targets (role + name, a field's label, a text) are resolved against the hierarchy's bounds.
State is the app's SQLite DB, read and written with `sqlite3` through `run-as` (a debuggable build);
reset is `pm clear` plus the snapshot DB pushed back. Each driver leases one device, so a pool of
workers spreads over several devices. The hierarchy and target resolution live in android_ui.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from sandboxes.actions import (
    Action,
    CallUser,
    Check,
    Click,
    Drag,
    HScroll,
    Key,
    LongPress,
    OpenApp,
    Screenshot,
    Scroll,
    Swipe,
    SystemButton,
    Tap,
    Target,
    Terminate,
    Type,
    Wait,
)
from sandboxes.android_ui import UINode, find_target, node_at, parse_hierarchy, ui_tree
from sandboxes.app_process import SandboxError
from sandboxes.driver import ActionResult, Health, Observation
from sandboxes.manifest import SandboxManifest
from sandboxes.skills import InjectionError, Skill
from verifier_templates.base import Probe

ADB_FIX = (
    "start an adb server (`adb start-server`) and attach the device (USB, an emulator, or `adb connect HOST:PORT` "
    "for a device farm); point the sandbox at it with [android] adb_host/adb_port/serials or "
    "FLYWHEEL_ADB_HOST / FLYWHEEL_ADB_PORT / FLYWHEEL_ADB_SERIALS"
)
# After input, at most this many hierarchy dumps are taken waiting for two in a row to agree (_settle).
SETTLE_DUMPS = 10
SYSTEM_KEYS = {"back": "KEYCODE_BACK", "home": "KEYCODE_HOME", "enter": "KEYCODE_ENTER", "menu": "KEYCODE_MENU"}
KEYS = {
    "enter": "KEYCODE_ENTER", "return": "KEYCODE_ENTER", "tab": "KEYCODE_TAB", "backspace": "KEYCODE_DEL",
    "delete": "KEYCODE_FORWARD_DEL", "escape": "KEYCODE_BACK", "esc": "KEYCODE_BACK", "space": "KEYCODE_SPACE",
    "up": "KEYCODE_DPAD_UP", "down": "KEYCODE_DPAD_DOWN", "left": "KEYCODE_DPAD_LEFT", "right": "KEYCODE_DPAD_RIGHT",
    "home": "KEYCODE_HOME", "back": "KEYCODE_BACK", "menu": "KEYCODE_MENU", "end": "KEYCODE_MOVE_END",
}
SYSTEM_DIALOG = re.compile(r"Application Error|Application Not Responding|isn't responding|has stopped|keeps stopping", re.I)
FOCUS = re.compile(r"mCurrentFocus=Window\{\S+ \S+ ([^}]*)\}")
FOCUSED_APP = re.compile(r"mFocusedApp=\S*\{\S+ \S+ ([\w.]+/[\w.$]+)")
_SQL_PARAM = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|:(\w+)")


# ---- SQL for the sqlite3 command-line shell (no bound parameters there) -----------------------------
def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def render_sql(statement: str, args: dict[str, Any] | tuple | list) -> str:
    """`?` and `:name` parameters replaced by SQL literals; quoted strings in the statement are left alone."""
    positional = iter(args if isinstance(args, (tuple, list)) else ())

    def sub(m: re.Match) -> str:
        token = m.group(0)
        if token == "?":
            try:
                return sql_literal(next(positional))
            except StopIteration:
                raise InjectionError(f"too few arguments for the ? parameters of {statement!r}") from None
        if token.startswith(":"):
            if not isinstance(args, dict) or m.group(1) not in args:
                raise InjectionError(f"no value for parameter {token} of {statement!r}")
            return sql_literal(args[m.group(1)])
        return token

    return _SQL_PARAM.sub(sub, statement)


def input_text_arg(text: str) -> str:
    """`input text` takes one word: spaces become %s, the rest is shell-quoted for the device's shell."""
    bad = sorted({c for c in text if ord(c) > 126 or c in "\n\t"})
    if bad:
        raise ValueError(
            f"`input text` cannot type {''.join(bad)!r}; type ASCII only or install an IME that accepts broadcasts"
        )
    return shlex.quote(text.replace(" ", "%s"))


# ---- device leases ----------------------------------------------------------------------------------
_LEASES: set[tuple[str, int, str]] = set()
_LEASE_LOCK = threading.Lock()


@dataclass(frozen=True)
class AdbTarget:
    host: str
    port: int
    serials: tuple[str, ...]

    @classmethod
    def of(cls, manifest: SandboxManifest) -> AdbTarget:
        spec = manifest.android
        env_serials = os.environ.get("FLYWHEEL_ADB_SERIALS")
        return cls(
            host=os.environ.get("FLYWHEEL_ADB_HOST") or spec.adb_host,
            port=int(os.environ.get("FLYWHEEL_ADB_PORT") or spec.adb_port),
            serials=tuple(s.strip() for s in env_serials.split(",") if s.strip()) if env_serials else tuple(spec.serials),
        )


def _server_up(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):  # closed at once: the server sees an empty request
            return True
    except OSError:
        return False


def lease_device(manifest: SandboxManifest, target: AdbTarget):
    """An adbutils device no other driver in this process holds; connects farm serials (host:port) first.
    The device is addressed by its transport id, so a command is one connection to the adb server (by
    serial, adbutils asks the server's version first on every command: twice the round trips to a farm)."""
    import adbutils

    if not _server_up(target.host, target.port):  # adbutils would try to spawn a local adb server instead
        raise SandboxError(f"{manifest.name}: no adb server at {target.host}:{target.port}; {ADB_FIX}")
    client = adbutils.AdbClient(host=target.host, port=target.port, socket_timeout=60)
    try:
        online = {d.serial for d in client.list() if d.state == "device"}
        for serial in target.serials:
            if ":" in serial and serial not in online:
                client.connect(serial, timeout=10)
        infos = {d.serial: d for d in client.list(extended=True) if d.state == "device"}
        online = set(infos)
    except adbutils.AdbError as exc:
        raise SandboxError(f"{manifest.name}: the adb server at {target.host}:{target.port} failed: {exc}; {ADB_FIX}") from None
    wanted = [s for s in target.serials if s in online] if target.serials else sorted(online)
    with _LEASE_LOCK:
        for serial in wanted:
            key = (target.host, target.port, serial)
            if key not in _LEASES:
                _LEASES.add(key)
                tid = infos[serial].transport_id
                return client, client.device(transport_id=tid) if tid else client.device(serial), key
    if not wanted:
        missing = f" (wanted {', '.join(target.serials)})" if target.serials else ""
        raise SandboxError(f"{manifest.name}: no device online at {target.host}:{target.port}{missing}; {ADB_FIX}")
    raise SandboxError(
        f"{manifest.name}: all {len(wanted)} device(s) at {target.host}:{target.port} are in use by other workers; "
        "attach more devices (serials) or lower --workers"
    )


def _release(key: tuple[str, int, str] | None) -> None:
    with _LEASE_LOCK:
        _LEASES.discard(key)


# ---- the driver -------------------------------------------------------------------------------------
@dataclass
class LocatedNode:
    node: UINode

    def bounding_box(self) -> dict[str, float]:
        x1, y1, x2, y2 = self.node.bounds
        return {"x": x1, "y": y1, "width": x2 - x1, "height": y2 - y1}

    def is_checked(self) -> bool:
        return self.node.checked


class DeviceApp:
    """The app on the device, as a rollout sees a web app process: healthy / stop / start / log_tail."""

    def __init__(self, driver: AndroidDriver) -> None:
        self.driver = driver

    def healthy(self) -> bool:
        return self.driver.device_online()

    def stop(self) -> None:
        self.driver.shell(f"am force-stop {self.driver.package}")

    def start(self) -> None:
        self.driver.launch()

    def log_tail(self, n: int = 5) -> str:
        try:
            out = self.driver.shell(f"logcat -b crash -d -t {n}", check=False)
        except Exception as exc:  # the device may be gone: say so instead of the log
            return f"no log ({type(exc).__name__}: {exc})"
        return " | ".join(out.strip().splitlines()[-n:])


class AndroidDriver:
    """Drives one app on one leased device: reset, inject, observe, act, probe, health, close."""

    def __init__(self, manifest: SandboxManifest, device: Any, lease: tuple[str, int, str] | None = None,
                 settle_dumps: int = SETTLE_DUMPS, workdir: Path | None = None, client: Any = None,
                 serial: str | None = None) -> None:
        if manifest.android is None:
            raise SandboxError(f"{manifest.name}: not an android sandbox (no [android] table)")
        self.manifest = manifest
        self.spec = manifest.android
        self.package = self.spec.package
        self.device = device
        self.serial = serial or device.serial
        self.settle_dumps = settle_dumps
        self.client = client or device._client
        self._lease = lease
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"flywheel-{manifest.name}-"))
        self.app = DeviceApp(self)
        self.answer: str | None = None
        self.user_calls: list[str] = []
        self.screen_size = self._screen_size()
        self._last_root: UINode | None = None
        self._left_app = False  # the policy itself left the app (home, back past the first screen, open_app)

    # ---- adb plumbing ---------------------------------------------------------------------------
    def _server_check(self) -> None:
        """adbutils starts a local adb server when it cannot connect; a server that went away is an error here."""
        if not _server_up(self.client.host, self.client.port):
            raise SandboxError(f"the adb server at {self.client.host}:{self.client.port} is gone; {ADB_FIX}")

    def shell(self, command: str, check: bool = True) -> str:
        """One shell command (shell v2: exit code and stderr apart); a non-zero exit raises when check."""
        self._server_check()
        result = self.device.shell2(command, v2=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(f"`{command[:120]}` exited {result.returncode}: {(result.stderr or result.output).strip()[:300]}")
        return result.stdout if result.stdout is not None else result.output

    def exec_out(self, command: str, stdin: bytes | None = None) -> bytes:
        """The `exec:` service (adb exec-out / exec-in): raw bytes both ways, no terminal in between."""
        self._server_check()
        c = self.device.open_transport(timeout=120)
        try:
            c.send_command("exec:" + command)
            c.check_okay()
            if stdin is not None:
                c.conn.sendall(stdin)
                c.conn.shutdown(socket.SHUT_WR)
            return c.read_until_close(encoding=None)
        finally:
            c.close()

    def _screen_size(self) -> tuple[int, int]:
        out = self.shell("wm size")
        sizes = dict(re.findall(r"(Physical|Override) size:\s*(\d+x\d+)", out))
        size = sizes.get("Override") or sizes.get("Physical")
        if not size:
            raise SandboxError(f"{self.manifest.name}: `wm size` on {self.serial} said {out.strip()!r}; is the device booted?")
        w, h = size.split("x")
        return int(w), int(h)

    def _dump(self) -> str | None:
        """The screen's hierarchy as uiautomator prints it, or None while the UI would not go idle
        (uiautomator itself waits for idle, then gives up with "could not get idle state")."""
        out = self.shell("uiautomator dump /dev/tty", check=False)
        start, end = out.find("<?xml"), out.rfind("</hierarchy>")
        return out[start if start >= 0 else 0:end + len("</hierarchy>")] if end >= 0 else None

    def _settle(self) -> None:
        """After input the UI animates (a screen slides in, a list scrolls on): it has settled when two
        dumps in a row give the same hierarchy. Follows the device, never the clock; bounded by a count of
        dumps (`settle_dumps`), after which a screen that never stops moving (a spinner, a video) is taken
        as it is."""
        previous = None
        for _ in range(self.settle_dumps):
            dump = self._dump()
            if dump is not None and dump == previous:
                return
            previous = dump

    def _px(self, x: int, y: int) -> tuple[int, int]:
        w, h = self.screen_size
        return int(x * w / 1000), int(y * h / 1000)

    def _grid(self, px: int, py: int) -> tuple[int, int]:
        w, h = self.screen_size
        return min(999, max(0, round(px * 1000 / w))), min(999, max(0, round(py * 1000 / h)))

    # ---- episode lifecycle ----------------------------------------------------------------------
    @property
    def activity(self) -> str:
        return self.spec.activity or ""

    @property
    def snapshot_path(self) -> Path:
        return self.workdir / (self.manifest.state.path or "snapshot.db")

    @property
    def state_path(self) -> Path:
        return self.snapshot_path

    def launch(self) -> None:
        if self.activity:
            self.shell(f"am start -W -n {self.package}/{self.activity}")
        else:
            self.shell(f"monkey -p {self.package} -c android.intent.category.LAUNCHER 1")
        self._settle()

    def take_snapshot(self) -> None:
        """The state of a fresh install, first launch done: clear, launch (the app creates its DB), stop, pull."""
        self.shell(f"am force-stop {self.package}")
        self.shell(f"pm clear {self.package}")
        self.launch()
        self.shell(f"am force-stop {self.package}")
        if self.spec.db_path:
            data = self.exec_out(f"run-as {self.package} cat {self.spec.db_path}")
            if not data.startswith(b"SQLite format 3"):
                raise SandboxError(
                    f"{self.manifest.name}: cannot read {self.spec.db_path} of {self.package} on {self.serial} "
                    f"({data[:120]!r}); install a debuggable build so `run-as` works, or check [android] db_path"
                )
            self.snapshot_path.write_bytes(data)

    def reset(self, new_context: bool = True) -> None:
        """Clear the app's data, push the snapshot DB back, dismiss system dialogs, launch the app."""
        if not self.device_online():
            raise SandboxError(f"{self.manifest.name}: device {self.serial} is not online; {ADB_FIX}")
        if SYSTEM_DIALOG.search(self.focus()):
            self.shell("input keyevent KEYCODE_BACK")
        self.shell(f"am force-stop {self.package}")
        self.shell(f"pm clear {self.package}")
        if self.spec.db_path and self.snapshot_path.exists():
            self._write_app_file(self.spec.db_path, self.snapshot_path.read_bytes())
        self.launch()
        self.answer, self.user_calls, self._last_root, self._left_app = None, [], None, False

    def _write_app_file(self, path: str, data: bytes) -> None:
        folder = path.rsplit("/", 1)[0] if "/" in path else "."
        script = f"mkdir -p {shlex.quote(folder)} && cat > {shlex.quote(path)}"
        out = self.exec_out(f"run-as {self.package} sh -c {shlex.quote(script)}", stdin=data)
        if out.strip():
            raise SandboxError(f"{self.manifest.name}: writing {path} in {self.package} failed: {out[:200]!r}")

    def inject(self, skill: Skill, args: dict[str, Any]) -> None:
        try:
            if skill.kind == "sql":
                if not self.spec.db_path:
                    raise InjectionError(f"{self.manifest.name}: a sql skill needs [android] db_path")
                self.shell(f"am force-stop {self.package}")  # no open connection while the DB changes
                for stmt in skill.spec.get("statements", []):
                    self.shell(f"run-as {self.package} sqlite3 {self.spec.db_path} {shlex.quote(render_sql(stmt, args))}")
            elif skill.kind == "file":  # {"path": "files/x.json", "content": "...{arg}..."}
                self._write_app_file(skill.spec["path"], skill.spec["content"].format(**args).encode())
            elif skill.kind == "intent":  # {"command": "start|broadcast", "component": ".X", "action": "...",
                #                                "extras": [["--el", "note_id", "{id}"], ...]} (am's own extra flags)
                command = skill.spec.get("command", "start")
                parts = ["am", command, *(["-W"] if command == "start" else [])]
                if skill.spec.get("component"):
                    parts += ["-n", f"{self.package}/{skill.spec['component']}"]
                if skill.spec.get("action"):
                    parts += ["-a", skill.spec["action"], "-p", self.package]
                for flag, key, value in skill.spec.get("extras", []):
                    if flag not in ("--es", "--ei", "--el", "--ez", "--ef"):
                        raise InjectionError(f"skill {skill.name}: unknown extra flag {flag!r} (--es, --ei, --el, --ez, --ef)")
                    parts += [flag, key, str(value).format(**args)]
                self.shell(" ".join(shlex.quote(x) for x in parts))
                self._settle()
                return  # the intent put the app where it should be; no relaunch
            elif skill.kind == "content":  # {"uri": "content://...", "values": {"col": "{arg}"}}
                binds = " ".join(
                    f"--bind {shlex.quote(k)}:{'i' if isinstance(v, int) else 's'}:{shlex.quote(str(v).format(**args))}"
                    for k, v in skill.spec["values"].items()
                )
                self.shell(f"content insert --uri {shlex.quote(skill.spec['uri'])} {binds}")
            else:
                raise InjectionError(f"skill kind {skill.kind!r} is not supported on android (sql, file, intent, content)")
        except InjectionError:
            raise
        except (RuntimeError, KeyError) as exc:
            raise InjectionError(f"skill {skill.name} failed on {self.serial}: {exc}") from None
        self.launch()

    def close(self) -> None:
        _release(self._lease)
        self._lease = None
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # ---- observe --------------------------------------------------------------------------------
    def focus(self) -> str:
        """What has the input focus: `pkg/activity`, a system dialog's title, or the launcher."""
        out = self.shell("dumpsys window")
        m = FOCUS.search(out)
        focus = m.group(1).strip() if m else ""
        if "/" not in focus and not SYSTEM_DIALOG.search(focus):
            app = FOCUSED_APP.search(out)
            focus = app.group(1) if app else focus
        return focus

    def hierarchy(self, attempts: int = 3) -> UINode:
        """The screen's hierarchy; uiautomator refuses while the UI animates ("could not get idle
        state", after waiting for idle itself), so it is asked again, a few times."""
        for attempt in range(attempts):
            out = self.shell("uiautomator dump /dev/tty", check=False)
            if "</hierarchy>" in out or attempt == attempts - 1:
                break
        self._last_root = parse_hierarchy(out)
        return self._last_root

    @staticmethod
    def _url(focus: str) -> tuple[str, str]:
        """The focused window as a URL (android-app://package/.Activity) and a title (the activity)."""
        package, _, activity = focus.partition("/")
        short = "." + activity[len(package) + 1:] if activity.startswith(package + ".") else activity
        return (f"android-app://{package}/{short}" if activity else f"android-app://{focus}"), short.lstrip(".") or focus

    def observe(self, screenshot: bool = True) -> Observation:
        url, title = self._url(self.focus())
        root = self.hierarchy()
        return Observation(
            url=url,
            title=title,
            ui_tree=ui_tree(root),
            screenshot=self.exec_out("screencap -p") if screenshot else None,
            screen_size=self.screen_size,
        )

    # ---- targets, as the web driver offers them (flows/rollout/touch.py turns clicks into taps) ---
    @property
    def viewport(self) -> tuple[int, int]:
        return self.screen_size

    def locate(self, target: Target) -> LocatedNode:
        """The node a target names on the current screen, with the web locator's box and checked state."""
        return LocatedNode(find_target(self.hierarchy(), target))

    # ---- act ------------------------------------------------------------------------------------
    def act(self, action: Action) -> ActionResult:
        try:
            return self._act(action)
        except Exception as exc:  # a failed action is a result, never a crash of the episode
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return ActionResult(ok=False, error=f"{action.action}: {message}")

    def _tap_px(self, px: int, py: int, root: UINode | None) -> ActionResult:
        hit = node_at(root, px, py) if root is not None else None
        self.shell(f"input tap {px} {py}")
        self._settle()
        sensitive = self.manifest.sensitive_kind(hit.name) if hit is not None and hit.name else None
        return ActionResult(ok=True, point=self._grid(px, py), sensitive=sensitive)

    def _act(self, action: Action) -> ActionResult:
        if isinstance(action, Terminate):
            self.answer = action.answer
            return ActionResult(ok=True)
        if isinstance(action, CallUser):
            self.user_calls.append(action.reason)
            return ActionResult(ok=True, details={"call_user": action.reason})
        if isinstance(action, Screenshot):
            return ActionResult(ok=True)
        if isinstance(action, Wait):
            time.sleep(action.seconds)
            return ActionResult(ok=True)
        if isinstance(action, (Tap, Click)) and getattr(action, "target", None) is None:
            if isinstance(action, Click) and action.action not in ("left_click", "double_click"):
                return ActionResult(ok=False, error=f"{action.action}: a touch screen has no {action.action.split('_')[0]} button")
            px, py = self._px(action.x, action.y)
            result = self._tap_px(px, py, self._last_root)
            if isinstance(action, Click) and action.action == "double_click":
                self.shell(f"input tap {px} {py}")
            return result
        if isinstance(action, LongPress):
            px, py = self._px(action.x, action.y)
            self.shell(f"input swipe {px} {py} {px} {py} {int(action.duration * 1000)}")
            self._settle()
            return ActionResult(ok=True, point=(action.x, action.y))
        if isinstance(action, (Swipe, Drag)):
            (x1, y1), (x2, y2) = self._px(action.x, action.y), self._px(action.x2, action.y2)
            self.shell(f"input swipe {x1} {y1} {x2} {y2} 300")
            self._settle()
            return ActionResult(ok=True, point=(action.x, action.y))
        if isinstance(action, (Scroll, HScroll)):
            return self._scroll(action)
        if isinstance(action, SystemButton):
            self.shell(f"input keyevent {SYSTEM_KEYS[action.button]}")
            self._settle()
            if action.button == "home" or (action.button == "back" and self._package_of(self.focus()) != self.package):
                self._left_app = True
            return ActionResult(ok=True)
        if isinstance(action, Key):
            codes = [KEYS.get(k.lower()) for k in action.keys]
            if len(codes) != 1 or codes[0] is None:
                return ActionResult(ok=False, error=f"key: {'+'.join(action.keys)} has no single Android key code")
            self.shell(f"input keyevent {codes[0]}")
            self._settle()
            return ActionResult(ok=True)
        if isinstance(action, OpenApp):
            return self._open_app(action.app)
        if isinstance(action, Type):
            return self._type(action)
        if isinstance(action, Click):
            node = find_target(self.hierarchy(), action.target)
            result = self._tap_px(*node.center, self._last_root)
            if action.action == "double_click":
                self.shell(f"input tap {node.center[0]} {node.center[1]}")
            result.sensitive = self.manifest.sensitive_kind(node.name) if node.name else None
            return result
        if isinstance(action, Check):
            node = find_target(self.hierarchy(), action.target)
            if node.checked == action.checked:
                return ActionResult(ok=True, point=self._grid(*node.center))
            return self._tap_px(*node.center, self._last_root)
        return ActionResult(ok=False, error=f"{action.action}: not available in an android sandbox (use tap, type, swipe, open_app)")

    def _type(self, action: Type) -> ActionResult:
        arg = input_text_arg(action.text)
        point, sensitive = None, None
        if action.target is not None:
            node = find_target(self.hierarchy(), action.target)
            self.shell(f"input tap {node.center[0]} {node.center[1]}")
            point = self._grid(*node.center)
            if node.password or (node.name and self.manifest.sensitive_kind(node.name) == "password"):
                sensitive = "password"
            if action.clear and node.text and node.text != node.hint:
                self.shell("input keyevent KEYCODE_MOVE_END " + " ".join(["KEYCODE_DEL"] * len(node.text)))
        if action.text:
            self.shell(f"input text {arg}")
        self._settle()
        return ActionResult(ok=True, point=point, sensitive=sensitive)

    def _scroll(self, action: Scroll | HScroll) -> ActionResult:
        w, h = self.screen_size
        cx, cy = self._px(action.x, action.y) if action.x is not None else (w // 2, h // 2)
        # Qwen-CUA signs: scroll +pixels shows what is above (the finger moves down); hscroll + shows the right
        if isinstance(action, HScroll):
            x2, y2 = max(0, min(w - 1, cx - action.pixels)), cy
        else:
            x2, y2 = cx, max(0, min(h - 1, cy + action.pixels))
        self.shell(f"input swipe {cx} {cy} {x2} {y2} 300")
        self._settle()
        return ActionResult(ok=True, point=self._grid(cx, cy))

    def _open_app(self, app: str) -> ActionResult:
        names = {self.package.lower(), (self.spec.label or "").lower()}
        if app.strip().lower() in names:
            self.launch()
            self._left_app = False
            return ActionResult(ok=True)
        if re.fullmatch(r"[A-Za-z][\w]*(\.[A-Za-z][\w]*)+", app.strip()):
            out = self.shell(f"monkey -p {app.strip()} -c android.intent.category.LAUNCHER 1", check=False)
            if "No activities found" in out:
                return ActionResult(ok=False, error=f"open_app: no app {app!r} installed on {self.serial}")
            self._left_app = True
            self._settle()
            return ActionResult(ok=True)
        known = f"{self.spec.label} ({self.package})" if self.spec.label else self.package
        return ActionResult(ok=False, error=f"open_app: unknown app {app!r}; this sandbox's app is {known}")

    @staticmethod
    def _package_of(focus: str) -> str:
        return focus.split("/", 1)[0] if "/" in focus else ""

    # ---- probe and health -----------------------------------------------------------------------
    def probe(self, probe: Probe) -> Any:
        if probe.kind == "answer":
            return self.answer
        if probe.kind == "sql":
            return self._sql(probe)
        if probe.kind == "url":
            return self._url(self.focus())[0]
        if probe.kind == "page_text":
            return "\n".join(n.text or n.desc for n in self.hierarchy().walk() if n.text or n.desc)
        if probe.kind == "content":  # query = content://authority/path, args = (where,) optionally
            where = f" --where {shlex.quote(probe.args[0])}" if probe.args else ""
            return parse_content_rows(self.shell(f"content query --uri {shlex.quote(probe.query)}{where}"))
        if probe.kind == "file":  # query = a path inside the app's data dir
            return self.exec_out(f"run-as {self.package} cat {shlex.quote(probe.query)}").decode(errors="replace")
        if probe.kind == "prefs":  # query = a shared_prefs file name, e.g. "settings"
            xml = self.exec_out(f"run-as {self.package} cat shared_prefs/{probe.query}.xml").decode(errors="replace")
            return parse_shared_prefs(xml)
        raise ValueError(f"probe kind {probe.kind!r} is not available on android (sql, url, page_text, answer, content, file, prefs)")

    def _sql(self, probe: Probe) -> Any:
        if not self.spec.db_path:
            raise SandboxError(f"{self.manifest.name}: SQL probe but [android] has no db_path")
        query = render_sql(probe.query, probe.args)
        # quote mode prints SQL literals, so types survive (sqlite3 >= 3.22, on Android 10 and later)
        out = self.shell(f"run-as {self.package} sqlite3 -cmd '.mode quote' {self.spec.db_path} {shlex.quote(query)}")
        rows = parse_quoted_rows(out)
        if probe.shape == "rows":
            return rows
        return rows[0][0] if rows and rows[0] else None

    def device_online(self) -> bool:
        if not _server_up(self.client.host, self.client.port):
            return False
        try:
            return any(d.serial == self.serial and d.state == "device" for d in self.client.list())
        except Exception:
            return False

    def health(self) -> Health:
        if not self.device_online():
            return Health(False, f"device {self.serial} is gone from the adb server; {ADB_FIX}")
        try:
            focus = self.focus()
        except Exception as exc:
            return Health(False, f"device {self.serial} does not answer: {exc}")
        if SYSTEM_DIALOG.search(focus):
            return Health(False, f"system dialog on {self.serial}: {focus} (the app crashed or hangs)")
        if self._package_of(focus) != self.package and not self._left_app:
            return Health(False, f"{self.package} is not in the foreground on {self.serial} ({focus or 'nothing'} is)")
        return Health(True)


_QUOTED = re.compile(r"'((?:[^']|'')*)'|[Xx]'([0-9A-Fa-f]*)'|(NULL)|(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?Inf)|(,)|(\r?\n)")


def parse_quoted_rows(out: str) -> list[list[Any]]:
    """Rows as the sqlite3 shell prints them in quote mode: 'text' (quotes doubled), numbers, NULL, X'blob'."""
    rows: list[list[Any]] = []
    row: list[Any] = []
    pos = 0
    for m in _QUOTED.finditer(out):
        if out[pos:m.start()].strip():
            raise SandboxError(f"sqlite3 printed something that is not a quoted row: {out[pos:m.start()][:120]!r}")
        pos = m.end()
        text, blob, null, number, comma, newline = m.groups()
        if newline is not None:
            if row:
                rows.append(row)
            row = []
        elif comma is None:
            if text is not None:
                row.append(text.replace("''", "'"))
            elif blob is not None:
                row.append(bytes.fromhex(blob))
            elif null is not None:
                row.append(None)
            else:
                row.append(float(number) if any(c in number for c in ".eEI") else int(number))
    if out[pos:].strip():
        raise SandboxError(f"sqlite3 printed something that is not a quoted row: {out[pos:][:120]!r}")
    if row:
        rows.append(row)
    return rows


def parse_content_rows(out: str) -> list[dict[str, str]]:
    """`content query` output (`Row: 0 id=1, title=Groceries`) as dicts; values stay text as printed."""
    rows = []
    for line in out.splitlines():
        m = re.match(r"Row: \d+ (.*)", line)
        if m:
            rows.append(dict(re.findall(r"(\w+)=(.*?)(?=, \w+=|$)", m.group(1))))
    return rows


def parse_shared_prefs(xml: str) -> dict[str, Any]:
    """A SharedPreferences XML file as a dict (string, int, long, float, boolean)."""
    out: dict[str, Any] = {}
    for el in ElementTree.fromstring(xml):
        name = el.get("name")
        if el.tag == "string":
            out[name] = el.text or ""
        elif el.tag in ("int", "long"):
            out[name] = int(el.get("value", "0"))
        elif el.tag == "float":
            out[name] = float(el.get("value", "0"))
        elif el.tag == "boolean":
            out[name] = el.get("value") == "true"
    return out


def open_android_driver(manifest: SandboxManifest) -> AndroidDriver:
    """Lease a device, measure its screen, take the fresh-install snapshot; the caller closes the driver."""
    target = AdbTarget.of(manifest)
    client, device, key = lease_device(manifest, target)
    try:
        driver = AndroidDriver(manifest, device, key, client=client, serial=key[2])
        driver.take_snapshot()
        return driver
    except SandboxError:
        _release(key)
        raise
    except Exception as exc:
        _release(key)
        raise SandboxError(f"{manifest.name}: device {key[2]} failed while opening: {exc}; {ADB_FIX}") from None


class DeviceStateCopy:
    """The app's initial DB pulled from a device, for the coding agent to draw parameters from; shaped
    like AppProcess where synthesis uses one (start, close, state_path, snapshot_path). It leases the
    device on first use, and close() gives it back before the gate's pool leases devices."""

    def __init__(self, manifest: SandboxManifest) -> None:
        self.manifest = manifest
        self._driver: AndroidDriver | None = None

    def start(self) -> DeviceStateCopy:
        if self._driver is None:
            self._driver = open_android_driver(self.manifest)
        return self

    @property
    def state_path(self) -> Path | None:
        return self.start()._driver.snapshot_path if self.manifest.android.db_path else None

    @property
    def snapshot_path(self) -> Path:
        return self.start()._driver.snapshot_path

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None
