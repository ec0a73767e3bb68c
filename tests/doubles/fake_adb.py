"""TEST DOUBLE, not a device: a fake adb server on 127.0.0.1 with fake devices behind it.

It speaks the adb host protocol the way adbutils uses it (host:version, host:devices[-l],
host:transport-id:<id> / host:transport:<serial> / host:tport:serial:<serial>, host-serial:<serial>:features|get-state,
host:connect:<addr>, then shell:, shell,v2: and exec: services), records every request it receives
(`server.requests`, e.g. ("emulator-5554", "shell,v2:input tap 540 1170")), and answers like a device:
`wm size`, `dumpsys window`, `uiautomator dump`, `screencap -p`, `input ...`, `am`, `monkey`, `pm clear`,
`run-as <pkg> sqlite3|cat|sh -c`, `content query`.

A fake device may host a SIMULATION of the notes-android sandbox app (`SimulatedNotesApp`): its screens
are inflated from the app's own layout XML and strings, filled from a real SQLite file created from the
app's assets/schema.sql and seed.sql, and its button handlers are Python mirrors of the Java ones. It
exists so the driver, the validation gate and rollouts can run end to end without an Android device;
real devices and emulators are the production path (README: "Android sandboxes").

Run one by hand: `python -m tests.doubles.fake_adb --port 5037 --app sandboxes/notes-android`.
"""

from __future__ import annotations

import argparse
import datetime
import re
import shlex
import shutil
import socket
import socketserver
import sqlite3
import struct
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree
from xml.sax.saxutils import quoteattr

ANDROID_NS = "{http://schemas.android.com/apk/res/android}"
TOOLS_NS = "{http://schemas.android.com/tools}"
LAUNCHER = "com.android.launcher3/com.android.launcher3.Launcher"
STATUS_BAR, NAV_BAR = 84, 126
KEYCODES = {"3": "HOME", "4": "BACK", "66": "ENTER", "67": "DEL", "82": "MENU", "123": "MOVE_END"}


# ---- the simulated app ------------------------------------------------------------------------------
@dataclass
class View:
    """One inflated view: what `uiautomator dump` prints for it."""

    cls: str
    id: str = ""
    text: str = ""
    clickable: bool = False
    focusable: bool = False
    checkable: bool = False
    checked: bool = False
    scrollable: bool = False
    password: bool = False
    on_click: str = ""
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)
    children: list[View] = field(default_factory=list)
    row_id: int | None = None  # a list row: the id of the note it shows

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


WIDGETS = {
    "TextView": "android.widget.TextView",
    "EditText": "android.widget.EditText",
    "Button": "android.widget.Button",
    "CheckBox": "android.widget.CheckBox",
    "LinearLayout": "android.widget.LinearLayout",
    "androidx.recyclerview.widget.RecyclerView": "androidx.recyclerview.widget.RecyclerView",
}


def _height(el: ElementTree.Element) -> int:
    tag = el.tag
    if tag == "EditText":
        return 300 if "Multi" in el.get(ANDROID_NS + "inputType", "") else 150
    if tag == "Button":
        return 160
    if tag == "CheckBox":
        return 130
    if tag == "TextView":
        return 160 if "Large" in el.get(ANDROID_NS + "textAppearance", "") else 100 if "Medium" in el.get(ANDROID_NS + "textAppearance", "") else 80
    return sum(_height(c) for c in el)


class SimulatedNotesApp:
    """SIMULATION of sandboxes/notes-android on a fake device. Layouts and strings come from the app's
    source; queries and handlers mirror NotesListActivity, NoteActivity and EditNoteActivity."""

    package = "org.flywheel.notes"
    launcher = "org.flywheel.notes.NotesListActivity"
    layouts = {
        "org.flywheel.notes.NotesListActivity": "activity_notes_list",
        "org.flywheel.notes.NoteActivity": "activity_note",
        "org.flywheel.notes.EditNoteActivity": "activity_edit_note",
    }

    def __init__(self, source_dir: Path, data_dir: Path, screen: tuple[int, int]) -> None:
        self.source = Path(source_dir) / "app" / "src" / "main"
        self.data_dir = data_dir  # /data/data/<package>
        self.screen = screen
        self.stack: list[dict[str, Any]] = []  # activities: {"name", "extras", "state": {view id: value}}
        self.focused: str | None = None
        strings = ElementTree.parse(self.source / "res" / "values" / "strings.xml").getroot()
        self.strings = {s.get("name"): s.text or "" for s in strings.iter("string")}
        self.label = self.strings["app_name"]

    # -- state on "disk" ---------------------------------------------------------------------------
    @property
    def db_path(self) -> Path:
        return self.data_dir / "databases" / "notes.db"

    def _db(self) -> sqlite3.Connection:
        """NotesDbHelper: open databases/notes.db, creating it from the assets on first use."""
        if not self.db_path.exists():
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.db_path)
            for asset in ("schema.sql", "seed.sql"):  # NotesDbHelper.runScript: drop comments, split on ';'
                for statement in re.sub(r"--[^\n]*", "", (self.source / "assets" / asset).read_text()).split(";"):
                    if statement.strip():
                        con.execute(statement)
            con.commit()
            con.close()
        con = sqlite3.connect(self.db_path, timeout=10)
        con.row_factory = sqlite3.Row
        return con

    # -- lifecycle -----------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return bool(self.stack)

    @property
    def top(self) -> str:
        return self.stack[-1]["name"]

    def start(self, activity: str | None = None, extras: dict[str, Any] | None = None) -> None:
        name = activity or self.launcher
        if not self.stack or activity:
            self._push(name, extras or {})
        self._db().close()  # onResume queries the DB: the first launch creates it

    def _push(self, name: str, extras: dict[str, Any]) -> None:
        self.stack.append({"name": name, "extras": extras, "state": {}})
        self.focused = None
        if name.endswith("EditNoteActivity") and extras.get("note_id") is not None:
            with self._db() as con:
                row = con.execute("SELECT title, body, folder, pinned FROM notes WHERE id = ?", [extras["note_id"]]).fetchone()
            if row:
                self.stack[-1]["state"] = {"title": row["title"], "body": row["body"], "folder": row["folder"], "pinned": row["pinned"] == 1}

    def finish(self) -> None:
        if self.stack:
            self.stack.pop()
        self.focused = None

    def stop(self) -> None:
        self.stack = []
        self.focused = None

    # -- rendering -----------------------------------------------------------------------------------
    def _string(self, value: str | None) -> str:
        if value and value.startswith("@string/"):
            return self.strings[value.split("/", 1)[1]]
        return value or ""

    def _inflate(self, layout: str) -> ElementTree.Element:
        return ElementTree.parse(self.source / "res" / "layout" / f"{layout}.xml").getroot()

    def render(self) -> View:
        w, h = self.screen
        root = View("android.widget.FrameLayout", bounds=(0, 0, w, h))
        if not self.stack:
            return root
        content = self._inflate(self.layouts[self.top])
        data = self._bind()
        top, bottom = STATUS_BAR, h - NAV_BAR
        fixed = sum(_height(c) for c in content if c.get(ANDROID_NS + "layout_weight") is None)
        view = View(WIDGETS["LinearLayout"], bounds=(0, top, w, bottom))
        y = top
        for el in content:
            weight = el.get(ANDROID_NS + "layout_weight")
            height = (bottom - top - fixed) if weight else _height(el)
            view.children.append(self._view(el, (0, y, w, y + height), data))
            y += height
        root.children.append(view)
        return root

    def _view(self, el: ElementTree.Element, bounds: tuple[int, int, int, int], data: dict[str, Any]) -> View:
        vid = el.get(ANDROID_NS + "id", "").split("/")[-1]
        tag = el.tag
        v = View(WIDGETS.get(tag, "android.view.View"), id=vid, bounds=bounds, on_click=el.get(ANDROID_NS + "onClick", ""))
        state = self.stack[-1]["state"]
        if tag == "TextView":
            v.text = self._string(el.get(ANDROID_NS + "text")) or str(data.get(vid, ""))
        elif tag == "EditText":
            v.text, v.clickable, v.focusable = str(state.get(vid, "")), True, True
        elif tag == "CheckBox":
            v.text, v.clickable, v.checkable, v.checked = self._string(el.get(ANDROID_NS + "text")), True, True, bool(state.get(vid))
        elif tag == "Button":
            v.text, v.clickable, v.focusable = self._string(el.get(ANDROID_NS + "text")), True, True
        elif tag.endswith("RecyclerView"):
            v.scrollable = True
            item = self._inflate(el.get(TOOLS_NS + "listitem").split("/")[-1])
            row_h = _height(item)
            y = bounds[1]
            for row in data.get(vid, []):
                if y + row_h > bounds[3]:
                    break  # a RecyclerView only lays out the rows that fit on the screen
                child = self._view(item, (bounds[0], y, bounds[2], y + row_h), dict(row))
                child.clickable, child.focusable, child.row_id = True, True, row["id"]
                v.children.append(child)
                y += row_h
            return v
        y = bounds[1]
        if tag == "LinearLayout":
            for c in el:
                ch = _height(c)
                v.children.append(self._view(c, (bounds[0], y, bounds[2], y + ch), data))
                y += ch
        return v

    def _bind(self) -> dict[str, Any]:
        """onResume of the top activity: the rows and fields it shows."""
        name, extras = self.top, self.stack[-1]["extras"]
        with self._db() as con:
            if name.endswith("NotesListActivity"):
                return {"notes": [dict(r) for r in con.execute("SELECT id, title, folder FROM notes ORDER BY id DESC")]}
            if name.endswith("NoteActivity") and not name.endswith("EditNoteActivity"):
                row = con.execute("SELECT title, folder, created_on, body FROM notes WHERE id = ?", [extras.get("note_id")]).fetchone()
                if row is None:
                    self.finish()  # deleted meanwhile
                    return self._bind() if self.stack else {}
                return dict(row)
        return {}

    # -- input ---------------------------------------------------------------------------------------
    def tap(self, x: int, y: int) -> None:
        hit = None
        for v in self.render().walk():
            x1, y1, x2, y2 = v.bounds
            if x1 <= x < x2 and y1 <= y < y2 and (v.clickable or v.checkable):
                hit = v  # the deepest clickable view under the finger
        if hit is None:
            return
        state = self.stack[-1]["state"]
        if hit.cls.endswith("EditText"):
            self.focused = hit.id
        elif hit.checkable:
            state[hit.id] = not state.get(hit.id, False)
        elif hit.row_id is not None:
            self._push("org.flywheel.notes.NoteActivity", {"note_id": hit.row_id})  # NotesListActivity.openNote
        elif hit.on_click:
            getattr(self, "on_" + hit.on_click)()

    def type_text(self, text: str) -> None:
        if self.focused is not None and self.stack:
            state = self.stack[-1]["state"]
            state[self.focused] = str(state.get(self.focused, "")) + text

    def key(self, key: str) -> None:
        if key == "BACK":
            self.finish()
        elif key == "DEL" and self.focused is not None:
            state = self.stack[-1]["state"]
            state[self.focused] = str(state.get(self.focused, ""))[:-1]

    # -- handlers: Python mirrors of the Java onClick methods -------------------------------------
    def on_newNote(self) -> None:
        self._push("org.flywheel.notes.EditNoteActivity", {})

    def on_editNote(self) -> None:
        self._push("org.flywheel.notes.EditNoteActivity", {"note_id": self.stack[-1]["extras"]["note_id"]})

    def on_deleteNote(self) -> None:
        with self._db() as con:
            con.execute("DELETE FROM notes WHERE id = ?", [self.stack[-1]["extras"]["note_id"]])
        self.finish()

    def on_saveNote(self) -> None:
        state, extras = self.stack[-1]["state"], self.stack[-1]["extras"]
        title = str(state.get("title", "")).strip()
        if not title:
            return  # title.setError(...): stays on the screen
        values = {
            "title": title,
            "body": str(state.get("body", "")).strip(),
            "folder": str(state.get("folder", "")).strip() or "Personal",
            "pinned": 1 if state.get("pinned") else 0,
        }
        with self._db() as con:
            if extras.get("note_id") is None:
                values["created_on"] = datetime.date.today().isoformat()
                con.execute(f"INSERT INTO notes ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})", list(values.values()))
            else:
                sets = ", ".join(f"{k} = ?" for k in values)
                con.execute(f"UPDATE notes SET {sets} WHERE id = ?", [*values.values(), extras["note_id"]])
        self.finish()


# ---- the fake device --------------------------------------------------------------------------------
class FakeDevice:
    """Answers shell commands like an Android device would; hosts simulated apps by package."""

    def __init__(self, serial: str, size: tuple[int, int] = (1080, 2340), app_source: Path | None = None) -> None:
        self.serial = serial
        self.size = size
        self.root = Path(tempfile.mkdtemp(prefix=f"fake-adb-{serial.replace(':', '_')}-"))
        self.apps: dict[str, SimulatedNotesApp] = {}
        self.foreground_app: str | None = None
        self.dialog: str | None = None  # "Application Error" | "Application Not Responding"
        self.busy_dumps = 0  # this many `uiautomator dump` calls fail as on a screen that never idles
        # after input (or an activity start) the screen slides in from the right over this many dumps: each
        # shows every view further right than the next, the last one where it stays (taps hit that one)
        self.animation_dumps = 0
        self.frames_left = 0
        self.lock = threading.Lock()
        if app_source is not None:
            self.install(SimulatedNotesApp(app_source, self.root / "data" / "data" / SimulatedNotesApp.package, size))

    def install(self, app: SimulatedNotesApp) -> None:
        self.apps[app.package] = app

    def crash(self, package: str, kind: str = "Application Error") -> None:
        """The app dies (or hangs) and the system shows its dialog on top of the launcher."""
        self.apps[package].stop()
        self.foreground_app = None
        self.dialog = f"{kind}: {package}"

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # -- dispatch ------------------------------------------------------------------------------------
    def run(self, command: str, stdin: bytes = b"") -> tuple[bytes, bytes, int]:
        with self.lock:
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                return b"", f"/system/bin/sh: syntax error: {exc}\n".encode(), 1
            if not argv:
                return b"", b"", 0
            handler = getattr(self, "_cmd_" + argv[0].replace("-", "_"), None)
            if handler is None:
                return b"", f"/system/bin/sh: {argv[0]}: inaccessible or not found\n".encode(), 127
            if argv[0] in ("input", "monkey") or argv[:2] == ["am", "start"]:
                self.frames_left = self.animation_dumps
            out = handler(argv[1:], stdin)
            if isinstance(out, tuple):
                return out
            return (out.encode() if isinstance(out, str) else out), b"", 0

    def _app(self) -> SimulatedNotesApp | None:
        return self.apps.get(self.foreground_app or "")

    def _cmd_echo(self, args: list[str], _stdin: bytes) -> str:
        return " ".join(args) + "\n"

    def _cmd_logcat(self, args: list[str], _stdin: bytes) -> str:
        return f"E AndroidRuntime: FATAL EXCEPTION: main ({self.dialog})\n" if self.dialog else ""

    def _cmd_wm(self, args: list[str], _stdin: bytes) -> str:
        return f"Physical size: {self.size[0]}x{self.size[1]}\n"

    def _cmd_dumpsys(self, args: list[str], _stdin: bytes) -> str:
        if args[:1] != ["window"]:
            return ""
        app = self._app()
        if self.dialog:
            focus = self.dialog
        elif app is not None and app.running:
            focus = f"{app.package}/{app.top}"
        else:
            focus = LAUNCHER
        focused_app = f"{app.package}/{app.top}" if app is not None and app.running else LAUNCHER
        return (
            "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
            f"  mCurrentFocus=Window{{4f2a1c u0 {focus}}}\n"
            f"  mFocusedApp=ActivityRecord{{9e1d3b u0 {focused_app} t12}}\n"
        )

    def _cmd_uiautomator(self, args: list[str], _stdin: bytes) -> str | tuple[bytes, bytes, int]:
        if args[:1] != ["dump"]:
            return b"", b"usage: uiautomator dump [file]\n", 1
        if self.busy_dumps:  # the UI is animating: uiautomator gives up, as it does on a device
            self.busy_dumps -= 1
            return b"ERROR: could not get idle state.\n", b"", 0
        target = args[1] if len(args) > 1 else "/sdcard/window_dump.xml"
        xml = self.hierarchy_xml(shift=self.frames_left * self.size[0] // 4)
        self.frames_left = max(0, self.frames_left - 1)
        if target == "/dev/tty":
            return xml + "UI hierchary dumped to: /dev/tty\n"
        return f"UI hierchary dumped to: {target}\n"

    def hierarchy_xml(self, shift: int = 0) -> str:
        """What `uiautomator dump` prints; `shift` moves every view right by that many pixels (mid-animation)."""
        app = self._app()
        package = app.package if app is not None and app.running and not self.dialog else "com.android.launcher3"
        root = app.render() if app is not None and app.running and not self.dialog else View("android.widget.FrameLayout", bounds=(0, 0, *self.size))
        if self.dialog:
            root.children.append(View("android.widget.TextView", text=self.dialog.split(": ")[0].replace("Error", "has stopped"), bounds=(90, 1000, 990, 1100)))
            root.children.append(View("android.widget.Button", id="aerr_close", text="Close app", clickable=True, bounds=(90, 1100, 990, 1240)))
        parts: list[str] = []

        def emit(v: View, index: int) -> None:
            x1, y1, x2, y2 = v.bounds
            x1, x2 = x1 + shift, x2 + shift
            rid = f"{package}:id/{v.id}" if v.id else ""
            attrs = (
                f'index="{index}" text={quoteattr(v.text)} resource-id="{rid}" class="{v.cls}" package="{package}" '
                f'content-desc="" checkable="{str(v.checkable).lower()}" checked="{str(v.checked).lower()}" '
                f'clickable="{str(v.clickable).lower()}" enabled="true" focusable="{str(v.focusable).lower()}" '
                f'focused="{str(app is not None and v.id == app.focused and v.cls.endswith("EditText")).lower()}" '
                f'scrollable="{str(v.scrollable).lower()}" long-clickable="false" password="{str(v.password).lower()}" '
                f'selected="false" bounds="[{x1},{y1}][{x2},{y2}]"'
            )
            if not v.children:
                parts.append(f"<node {attrs} />")
                return
            parts.append(f"<node {attrs}>")
            for i, c in enumerate(v.children):
                emit(c, i)
            parts.append("</node>")

        emit(root, 0)
        return "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">" + "".join(parts) + "</hierarchy>"

    def _cmd_screencap(self, args: list[str], _stdin: bytes) -> bytes:
        return png_of(self.hierarchy_xml(), self.size)

    def _cmd_input(self, args: list[str], _stdin: bytes) -> str | tuple[bytes, bytes, int]:
        app = self._app()
        if not args:
            return b"", b"Usage: input [<source>] <command> [<arg>...]\n", 1
        verb, rest = args[0], args[1:]
        if self.dialog:
            closing = verb == "tap" and 90 <= int(float(rest[0])) < 990 and 1100 <= int(float(rest[1])) < 1240
            if closing or (verb == "keyevent" and rest[:1] in (["4"], ["KEYCODE_BACK"])):
                self.dialog = None  # "Close app", or back dismisses the system dialog
            return ""
        if verb == "tap" and app is not None and app.running:
            app.tap(int(float(rest[0])), int(float(rest[1])))
        elif verb == "swipe":
            x1, y1, x2, y2 = (int(float(v)) for v in rest[:4])
            if app is not None and app.running and abs(x1 - x2) < 10 and abs(y1 - y2) < 10:
                app.tap(x1, y1)  # a long press on these views does what a tap does
        elif verb == "text" and app is not None and app.running:
            app.type_text(rest[0].replace("%s", " "))
        elif verb == "keyevent":
            for code in rest:
                key = KEYCODES.get(code, code.removeprefix("KEYCODE_"))
                if key == "HOME":
                    self.foreground_app = None
                elif app is not None and app.running:
                    app.key(key)
                    if not app.running:
                        self.foreground_app = None
        return ""

    def _cmd_am(self, args: list[str], _stdin: bytes) -> str | tuple[bytes, bytes, int]:
        if args[:1] == ["force-stop"] and args[1] in self.apps:
            self.apps[args[1]].stop()
            if self.foreground_app == args[1]:
                self.foreground_app = None
            return ""
        if args[:1] == ["start"] and "-n" in args:
            component = args[args.index("-n") + 1]
            package, _, activity = component.partition("/")
            app = self.apps.get(package)
            if app is None:
                return f"Starting: Intent {{ cmp={component} }}\nError type 3\nError: Activity class {{{component}}} does not exist.\n"
            activity = package + activity if activity.startswith(".") else activity
            extras = {args[i + 1]: int(args[i + 2]) if args[i] in ("--ei", "--el") else args[i + 2]
                      for i in range(len(args) - 2) if args[i] in ("--es", "--ei", "--el")}
            if activity == app.launcher and not extras:
                app.start()  # the launcher activity: bring the task to front
            else:
                app.start(activity, extras)
            self.foreground_app = package
            return f"Starting: Intent {{ act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] cmp={component} }}\nStatus: ok\nLaunchState: COLD\nActivity: {component}\nWaitTime: 312\nComplete\n"
        if args[:1] == ["broadcast"]:
            return "Broadcasting: Intent { flg=0x400000 }\nBroadcast completed: result=0\n"
        return b"", f"am: unknown command {' '.join(args)}\n".encode(), 1

    def _cmd_monkey(self, args: list[str], _stdin: bytes) -> str:
        package = args[args.index("-p") + 1] if "-p" in args else ""
        app = self.apps.get(package)
        if app is None:
            return "** No activities found to run, monkey aborted.\n"
        app.start()
        self.foreground_app = package
        return "  bash arg: -p\n  bash arg: " + package + "\nEvents injected: 1\n"

    def _cmd_pm(self, args: list[str], _stdin: bytes) -> str:
        if args[:1] == ["clear"] and len(args) > 1 and args[1] in self.apps:
            app = self.apps[args[1]]
            app.stop()
            shutil.rmtree(app.data_dir, ignore_errors=True)
            if self.foreground_app == args[1]:
                self.foreground_app = None
            return "Success\n"
        if args[:2] == ["list", "packages"]:
            return "".join(f"package:{p}\n" for p in self.apps)
        return "Failed\n"

    def _cmd_run_as(self, args: list[str], stdin: bytes) -> str | tuple[bytes, bytes, int]:
        package, cmd = args[0], args[1:]
        app = self.apps.get(package)
        if app is None:
            return b"", f"run-as: unknown package: {package}\n".encode(), 1
        cwd = app.data_dir
        cwd.mkdir(parents=True, exist_ok=True)
        if cmd[:1] == ["sqlite3"]:
            return _sqlite3_cli(cwd, cmd[1:])
        if cmd[:1] == ["cat"]:
            path = cwd / cmd[1]
            if not path.exists():
                return b"", f"cat: {cmd[1]}: No such file or directory\n".encode(), 1
            return path.read_bytes()
        if cmd[:2] == ["sh", "-c"]:
            # the one script the driver sends to restore a file: mkdir -p DIR && cat > FILE
            m = re.fullmatch(r"mkdir -p (\S+) && cat > (\S+)", cmd[2])
            if not m:
                return b"", f"sh: unsupported script in this fake: {cmd[2]}\n".encode(), 2
            (cwd / m.group(1)).mkdir(parents=True, exist_ok=True)
            (cwd / m.group(2)).write_bytes(stdin)
            return ""
        return b"", f"run-as: {cmd[:1]}: not supported by this fake\n".encode(), 1

    def _cmd_content(self, args: list[str], _stdin: bytes) -> str | tuple[bytes, bytes, int]:
        """`content query|insert --uri content://org.flywheel.notes.provider/notes ...` (the app's NotesProvider)."""
        if args[:1] not in (["query"], ["insert"]) or "--uri" not in args:
            return b"", b"usage: content query|insert --uri <URI> [--where ...] [--bind COL:TYPE:VALUE ...]\n", 1
        uri = args[args.index("--uri") + 1]
        m = re.fullmatch(r"content://([\w.]+)\.provider/(\w+)", uri)
        app = self.apps.get(m.group(1)) if m else None
        if app is None:
            return b"", f"Error while accessing provider:{uri}\njava.lang.IllegalArgumentException: Unknown authority\n".encode(), 1
        with app._db() as con:
            if args[0] == "insert":
                binds = [args[i + 1].split(":", 2) for i in range(len(args) - 1) if args[i] == "--bind"]
                values = {col: int(v) if kind in ("i", "l") else v for col, kind, v in binds}
                con.execute(f"INSERT INTO {m.group(2)} ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})", list(values.values()))
                return ""
            sql = f"SELECT * FROM {m.group(2)}"
            if "--where" in args:
                sql += " WHERE " + args[args.index("--where") + 1]
            rows = [dict(r) for r in con.execute(sql)]
        if not rows:
            return "No result found.\n"
        return "".join(f"Row: {i} " + ", ".join(f"{k}={'NULL' if v is None else v}" for k, v in r.items()) + "\n" for i, r in enumerate(rows))


def _sqlite3_cli(cwd: Path, args: list[str]) -> tuple[bytes, bytes, int]:
    """The sqlite3 command-line shell: `sqlite3 [-cmd '.mode quote'] DB 'SQL'` (what the driver sends)."""
    positional, mode = [], "list"
    items = iter(args)
    for a in items:
        if a == "-cmd":
            command = next(items, "")
            if command.startswith(".mode "):
                mode = command.split()[1]
        elif a.startswith("-"):
            return b"", f"sqlite3: Error: unknown option: {a}\n".encode(), 1
        else:
            positional.append(a)
    if len(positional) != 2:
        return b"", b"sqlite3: expected DB and SQL\n", 1
    path = cwd / positional[0]
    if not path.exists():
        return b"", f"Error: unable to open database \"{positional[0]}\"\n".encode(), 1
    con = sqlite3.connect(path, timeout=10)
    try:
        statements, buffer = [], ""
        for piece in positional[1].split(";"):  # whole statements only: a ';' may sit inside a string literal
            buffer += piece + ";"
            if sqlite3.complete_statement(buffer):
                if buffer.strip(" ;\n"):
                    statements.append(buffer)
                buffer = ""
        rows: list[tuple] = []
        for st in statements:
            rows = con.execute(st).fetchall()
        con.commit()
    except sqlite3.Error as exc:
        return b"", f"Error: {exc}\n".encode(), 1
    finally:
        con.close()

    def literal(v: Any) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, bytes):
            return "X'" + v.hex().upper() + "'"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        return repr(v)

    if mode == "quote":
        return "".join(",".join(literal(v) for v in r) + "\n" for r in rows).encode(), b"", 0
    return "".join("|".join("" if v is None else str(v) for v in r) + "\n" for r in rows).encode(), b"", 0


def png_of(text: str, size: tuple[int, int]) -> bytes:
    """A real PNG of the screen's size whose bands change with what is on the screen."""
    w, h = size
    digest = zlib.crc32(text.encode())
    bands = [bytes([(digest >> s) & 0xFF, (digest >> (s + 8)) & 0xFF, 180]) * w for s in (0, 8, 16)]
    raw = b"".join(b"\x00" + bands[(y * 3) // h] for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


# ---- the adb server ---------------------------------------------------------------------------------
class FakeAdbServer:
    """TEST DOUBLE for an adb server: fake devices by serial, every request recorded."""

    VERSION = 41

    def __init__(self, devices: list[FakeDevice] | None = None, port: int = 0, latency_s: float = 0.0) -> None:
        self.devices: dict[str, FakeDevice] = {d.serial: d for d in devices or []}
        self.transport_ids = {d.serial: i + 1 for i, d in enumerate(devices or [])}  # stable, never reused
        self.connectable: dict[str, FakeDevice] = {}  # host:port -> device, for `adb connect`
        self.requests: list[tuple[str | None, str]] = []
        self.latency_s = latency_s  # a round trip to a remote server (a device farm): per connection and per request
        self._lock = threading.Lock()
        self._port = port
        self._server: socketserver.ThreadingTCPServer | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else 0

    def start(self) -> FakeAdbServer:
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    server._serve(self.request)
                except (ConnectionError, OSError):
                    pass

        socketserver.ThreadingTCPServer.allow_reuse_address = True
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for d in {**self.devices, **self.connectable}.values():
            d.close()

    def __enter__(self) -> FakeAdbServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def remove_device(self, serial: str) -> None:
        """The device is gone (unplugged, farm lease lost): it leaves the list, transports fail."""
        with self._lock:
            self.devices.pop(serial, None)

    def commands(self, serial: str | None = None) -> list[str]:
        with self._lock:
            return [r for s, r in self.requests if serial is None or s == serial]

    # -- protocol ------------------------------------------------------------------------------------
    def _record(self, serial: str | None, request: str) -> None:
        with self._lock:
            self.requests.append((serial, request))

    def _serve(self, sock: socket.socket) -> None:
        serial: str | None = None
        if self.latency_s:
            time.sleep(self.latency_s)  # the TCP handshake's round trip
        while True:
            request = _read_request(sock)
            if request is None:
                return
            self._record(serial, request)
            if self.latency_s:
                time.sleep(self.latency_s)
            if request == "host:version":
                return _okay(sock, f"{self.VERSION:04x}")
            if request in ("host:devices", "host:devices-l"):
                lines = []
                for s in sorted(self.devices):
                    extra = f" product:sdk_phone64 model:Fake_Pixel device:fake transport_id:{self.transport_ids[s]}" if request.endswith("-l") else ""
                    lines.append(f"{s}\tdevice{extra}" if not extra else f"{s}  device{extra}")
                return _okay(sock, "".join(line + "\n" for line in lines))
            if request.startswith("host:connect:"):
                addr = request.split(":", 2)[2]
                if addr in self.connectable:
                    self.devices[addr] = self.connectable[addr]
                    self.transport_ids.setdefault(addr, max(self.transport_ids.values(), default=0) + 1)
                    return _okay(sock, f"connected to {addr}")
                return _okay(sock, f"failed to connect to '{addr}': Connection refused")
            m = re.fullmatch(r"host-(serial|transport-id):(.+):(features|get-state)", request)
            if m:
                by_id = {str(t): s for s, t in self.transport_ids.items()}
                who = by_id.get(m.group(2), "") if m.group(1) == "transport-id" else m.group(2)
                if who not in self.devices:
                    return _fail(sock, f"device '{m.group(2)}' not found")
                return _okay(sock, "shell_v2,cmd,stat_v2" if m.group(3) == "features" else "device")
            m = re.fullmatch(r"host:transport-id:(\d+)", request)
            if m:
                by_id = {t: s for s, t in self.transport_ids.items() if s in self.devices}
                if int(m.group(1)) not in by_id:
                    return _fail(sock, f"no device with transport id '{m.group(1)}'")
                serial = by_id[int(m.group(1))]
                sock.sendall(b"OKAY")
                continue
            m = re.fullmatch(r"host:(?:transport:|tport:serial:)(.+)", request)
            if m:
                if m.group(1) not in self.devices:
                    return _fail(sock, f"device '{m.group(1)}' not found")
                serial = m.group(1)
                sock.sendall(b"OKAY" + (struct.pack("<Q", 1) if request.startswith("host:tport") else b""))
                continue
            device = self.devices.get(serial or "")
            if device is None:
                return _fail(sock, f"unknown host service or no device: {request}")
            service, _, command = request.partition(":")
            if service == "shell,v2":
                out, err, code = device.run(command)
                sock.sendall(b"OKAY")
                for kind, data in ((1, out), (2, err)):
                    if data:
                        sock.sendall(bytes([kind]) + struct.pack("<I", len(data)) + data)
                sock.sendall(bytes([3]) + struct.pack("<I", 1) + bytes([code & 0xFF]))
                return
            if service in ("shell", "exec"):
                sock.sendall(b"OKAY")  # the service is open; a command that reads stdin gets it until EOF
                stdin = _read_until_eof(sock) if re.search(r"cat > ", command) else b""
                out, err, _code = device.run(command, stdin)
                sock.sendall(out + (err if service == "shell" else b""))
                return
            return _fail(sock, f"unsupported service in this fake: {service}")


def _read_request(sock: socket.socket) -> str | None:
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    body = _recv_exact(sock, int(head, 16))
    return body.decode() if body is not None else None


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read_until_eof(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _okay(sock: socket.socket, payload: str) -> None:
    data = payload.encode()
    sock.sendall(b"OKAY" + f"{len(data):04x}".encode() + data)


def _fail(sock: socket.socket, message: str) -> None:
    data = message.encode()
    sock.sendall(b"FAIL" + f"{len(data):04x}".encode() + data)


def main() -> None:
    parser = argparse.ArgumentParser(description="TEST DOUBLE: a fake adb server with simulated devices (no real device)")
    parser.add_argument("--port", type=int, default=5037)
    parser.add_argument("--app", type=Path, default=Path("sandboxes/notes-android"), help="the notes-android sandbox folder")
    parser.add_argument("--serial", action="append", default=None, help="device serials (default: emulator-5554)")
    args = parser.parse_args()
    devices = [FakeDevice(s, app_source=args.app) for s in (args.serial or ["emulator-5554"])]
    server = FakeAdbServer(devices, port=args.port).start()
    print(f"fake adb server (TEST DOUBLE) on 127.0.0.1:{server.port} with {', '.join(d.serial for d in devices)}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.close()


if __name__ == "__main__":
    main()
