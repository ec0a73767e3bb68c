"""The Android driver against the fake adb server (a test double; real devices are the production path):
the exact adb requests it sends, and that what comes back parses."""

from __future__ import annotations

import json
import shlex
import struct
from pathlib import Path

import pytest

from sandboxes.actions import parse_actions
from sandboxes.android import AndroidDriver, open_android_driver, parse_quoted_rows, render_sql
from sandboxes.android_ui import parse_hierarchy, ui_tree
from sandboxes.app_process import SandboxError
from sandboxes.manifest import load_manifest
from sandboxes.skills import InjectionError, Skill
from tests.doubles.fake_adb import FakeAdbServer, FakeDevice
from verifier_templates.base import Probe

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "sandboxes" / "notes-android"
PKG = "org.flywheel.notes"


@pytest.fixture
def adb(monkeypatch):
    devices = [FakeDevice("emulator-5554", app_source=NOTES), FakeDevice("emulator-5556", app_source=NOTES)]
    with FakeAdbServer(devices) as server:
        monkeypatch.setenv("FLYWHEEL_ADB_PORT", str(server.port))
        monkeypatch.delenv("FLYWHEEL_ADB_SERIALS", raising=False)
        yield server


@pytest.fixture
def manifest():
    return load_manifest(NOTES)


@pytest.fixture
def driver(adb, manifest):
    d = open_android_driver(manifest)
    d.reset()
    yield d
    d.close()


DUMP = "shell,v2:uiautomator dump /dev/tty"


def sent(adb: FakeAdbServer, serial: str, since: int, dumps: bool = False) -> list[str]:
    """Device service requests (shell, exec) sent to one device after a point in the record; without the
    hierarchy dumps unless `dumps` (the driver dumps after every input until the screen is still)."""
    return [r for s, r in adb.requests[since:] if s == serial and not r.startswith("host") and (dumps or r != DUMP)]


def act(driver: AndroidDriver, *actions: dict):
    return [driver.act(a) for a in parse_actions(list(actions))]


def test_opening_leases_a_device_measures_it_and_snapshots_a_fresh_install(adb, manifest):
    d = open_android_driver(manifest)
    try:
        assert d.serial == "emulator-5554" and d.screen_size == (1080, 2340)
        assert sent(adb, "emulator-5554", 0) == [
            "shell,v2:wm size",
            f"shell,v2:am force-stop {PKG}",
            f"shell,v2:pm clear {PKG}",
            f"shell,v2:am start -W -n {PKG}/.NotesListActivity",
            f"shell,v2:am force-stop {PKG}",
            f"exec:run-as {PKG} cat databases/notes.db",
        ]
        assert d.snapshot_path.read_bytes().startswith(b"SQLite format 3")
    finally:
        d.close()


def test_observe_sends_dumpsys_uiautomator_and_screencap_and_parses_them(adb, driver):
    mark = len(adb.requests)
    obs = driver.observe()
    assert sent(adb, driver.serial, mark, dumps=True) == ["shell,v2:dumpsys window", DUMP, "exec:screencap -p"]
    assert obs.url == f"android-app://{PKG}/.NotesListActivity" and obs.title == "NotesListActivity"
    assert obs.screen_size == (1080, 2340)
    assert obs.screenshot[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", obs.screenshot[16:24]) == (1080, 2340)
    lines = obs.ui_tree.splitlines()
    assert lines[0].startswith('- text "Notes" [ref=n') and lines[1].startswith('- button "New note" [ref=n')
    assert lines[2].startswith("- list [ref=n") and lines[-1].startswith('    - text "Personal" [ref=n')
    assert any(line.startswith('  - listitem "Groceries" [ref=n') for line in lines)
    assert driver.observe(screenshot=False).screenshot is None


def test_grid_points_map_to_device_pixels(adb, driver):
    mark = len(adb.requests)
    results = act(
        driver,
        {"action": "tap", "x": 500, "y": 500},
        {"action": "long_press", "x": 100, "y": 200, "duration": 1.5},
        {"action": "swipe", "x": 500, "y": 800, "x2": 500, "y2": 200},
        {"action": "scroll", "pixels": -400},
        {"action": "system_button", "button": "enter"},
        {"action": "key", "keys": ["Tab"]},
    )
    assert all(r.ok for r in results), results
    assert sent(adb, driver.serial, mark) == [
        "shell,v2:input tap 540 1170",
        "shell,v2:input swipe 108 468 108 468 1500",
        "shell,v2:input swipe 540 1872 540 468 300",
        "shell,v2:input swipe 540 1170 540 770 300",
        "shell,v2:input keyevent KEYCODE_ENTER",
        "shell,v2:input keyevent KEYCODE_TAB",
    ]
    assert results[0].point == (500, 500)


def test_semantic_targets_tap_the_centre_of_their_bounds_and_type_escaped_text(adb, driver):
    mark = len(adb.requests)
    new, title, pinned, save = act(
        driver,
        {"action": "left_click", "target": {"role": "button", "name": "New note"}},
        {"action": "type", "target": {"label": "Title"}, "text": "It's 5 o'clock & \"done\""},
        {"action": "check", "target": {"label": "Pinned"}},
        {"action": "left_click", "target": {"role": "button", "name": "Save note"}},
    )
    assert new.ok and title.ok and pinned.ok and save.ok
    # New note sits under the heading, below the status bar: y 244..404 -> centre 324
    assert new.point == (500, 138)
    commands = sent(adb, driver.serial, mark)
    assert "shell,v2:input tap 540 324" in commands
    assert "shell,v2:input text 'It'\"'\"'s%s5%so'\"'\"'clock%s&%s\"done\"'" in commands
    row = driver.probe(Probe("row", "sql", "SELECT title, pinned FROM notes ORDER BY id DESC LIMIT 1", (), "rows"))
    assert row == [["It's 5 o'clock & \"done\"", 1]]
    assert driver.observe(screenshot=False).url.endswith(".NotesListActivity")  # Save finishes the editor


def test_typing_replaces_a_fields_text_and_refuses_what_input_text_cannot_type(adb, driver):
    act(driver, {"action": "left_click", "target": {"text": "Groceries"}}, {"action": "left_click", "target": {"role": "button", "name": "Edit note"}})
    mark = len(adb.requests)
    (result,) = act(driver, {"action": "type", "target": {"label": "Folder"}, "text": "Home"})
    assert result.ok
    commands = sent(adb, driver.serial, mark)
    assert "shell,v2:input keyevent KEYCODE_MOVE_END " + " ".join(["KEYCODE_DEL"] * len("Personal")) in commands
    assert commands[-1] == "shell,v2:input text Home"
    (bad,) = act(driver, {"action": "type", "target": {"label": "Folder"}, "text": "Malmö"})
    assert not bad.ok and "'ö'" in bad.error
    (missing,) = act(driver, {"action": "type", "target": {"label": "Colour"}, "text": "red"})
    assert not missing.ok and "no field 'Colour'" in missing.error and "textbox 'Title'" in missing.error


def test_sensitive_controls_from_the_manifest_are_reported(adb, driver):
    opened, delete = act(
        driver, {"action": "left_click", "target": {"role": "listitem", "name": "Sprint retro"}},
        {"action": "left_click", "target": {"role": "button", "name": "Delete note"}},
    )
    assert opened.ok and opened.sensitive is None
    assert delete.ok and delete.sensitive == "delete"
    assert driver.probe(Probe("n", "sql", "SELECT count(*) FROM notes WHERE title = ?", ("Sprint retro",))) == 0


def test_system_buttons_and_open_app(adb, driver):
    mark = len(adb.requests)
    back, home, reopen, other = act(
        driver,
        {"action": "system_button", "button": "back"},
        {"action": "system_button", "button": "home"},
        {"action": "open_app", "app": "Notes"},
        {"action": "open_app", "app": "Calculator"},
    )
    assert back.ok and home.ok and reopen.ok
    assert not other.ok and "Notes (org.flywheel.notes)" in other.error
    commands = sent(adb, driver.serial, mark)
    assert "shell,v2:input keyevent KEYCODE_BACK" in commands and "shell,v2:input keyevent KEYCODE_HOME" in commands
    assert commands[-1] == f"shell,v2:am start -W -n {PKG}/.NotesListActivity"
    assert driver.health().ok


def test_inject_runs_sql_through_run_as_and_probes_read_it_back(adb, driver):
    skill = Skill("insert_notes", "notes-android", "sql", "add a note", {
        "statements": ["INSERT INTO notes (id, title, body, folder, pinned, created_on) VALUES (:id, :title, :body, :folder, 0, :created_on)"],
    })
    mark = len(adb.requests)
    driver.inject(skill, {"id": 900001, "title": "Pay rent", "body": "Landlord's account", "folder": "Home", "created_on": "2026-11-20"})
    commands = sent(adb, driver.serial, mark)
    assert commands[:2] == [
        f"shell,v2:am force-stop {PKG}",
        f"shell,v2:run-as {PKG} sqlite3 databases/notes.db "
        + shlex.quote(
            "INSERT INTO notes (id, title, body, folder, pinned, created_on) "
            "VALUES (900001, 'Pay rent', 'Landlord''s account', 'Home', 0, '2026-11-20')"
        ),
    ]
    assert commands[-1] == f"shell,v2:am start -W -n {PKG}/.NotesListActivity"  # the list shows the new row
    assert driver.probe(Probe("n", "sql", "SELECT body FROM notes WHERE id = ?", (900001,))) == "Landlord's account"
    assert driver.probe(Probe("rows", "sql", "SELECT id, folder FROM notes WHERE folder = ?", ("Home",), "rows")) == [[900001, "Home"]]
    assert "Pay rent" in driver.probe(Probe("text", "page_text"))
    assert driver.probe(Probe("url", "url")) == f"android-app://{PKG}/.NotesListActivity"
    rows = driver.probe(Probe("provider", "content", f"content://{PKG}.provider/notes", ("id = 900001",)))
    assert rows == [{"id": "900001", "title": "Pay rent", "body": "Landlord's account", "folder": "Home", "pinned": "0", "created_on": "2026-11-20"}]
    assert driver.probe(Probe("file", "file", "databases/notes.db"))[:15] == "SQLite format 3"
    with pytest.raises(InjectionError, match="no such table"):
        driver.inject(Skill("bad", "notes-android", "sql", "", {"statements": ["INSERT INTO nope VALUES (1)"]}), {})
    with pytest.raises(ValueError, match="not available on android"):
        driver.probe(Probe("js", "js", "document.title"))


def test_reset_clears_the_app_and_pushes_the_snapshot_back(adb, driver):
    act(driver, {"action": "left_click", "target": {"text": "Groceries"}}, {"action": "left_click", "target": {"role": "button", "name": "Delete note"}})
    assert driver.probe(Probe("n", "sql", "SELECT count(*) FROM notes")) == 7
    mark = len(adb.requests)
    driver.reset()
    commands = sent(adb, driver.serial, mark)
    assert commands == [
        "shell,v2:dumpsys window",
        f"shell,v2:am force-stop {PKG}",
        f"shell,v2:pm clear {PKG}",
        f"exec:run-as {PKG} sh -c 'mkdir -p databases && cat > databases/notes.db'",
        f"shell,v2:am start -W -n {PKG}/.NotesListActivity",
    ]
    assert driver.probe(Probe("n", "sql", "SELECT count(*) FROM notes")) == 8
    assert driver.observe(screenshot=False).url.endswith(".NotesListActivity")


def test_health_fails_on_crash_dialogs_and_when_the_device_is_gone(adb, driver):
    assert driver.health().ok
    adb.devices[driver.serial].crash(PKG)
    health = driver.health()
    assert not health.ok and "Application Error: org.flywheel.notes" in health.detail
    driver.reset()  # dismisses the dialog and starts again
    assert driver.health().ok
    adb.devices[driver.serial].crash(PKG, "Application Not Responding")
    assert "Not Responding" in driver.health().detail
    adb.remove_device(driver.serial)
    gone = driver.health()
    assert not gone.ok and "gone from the adb server" in gone.detail
    assert not driver.app.healthy()


def test_several_devices_are_leased_one_per_driver(adb, manifest, monkeypatch):
    first = open_android_driver(manifest)
    second = open_android_driver(manifest)
    try:
        assert {first.serial, second.serial} == {"emulator-5554", "emulator-5556"}
        with pytest.raises(SandboxError, match="in use by other workers"):
            open_android_driver(manifest)
    finally:
        first.close()
        second.close()
    monkeypatch.setenv("FLYWHEEL_ADB_SERIALS", "emulator-5556")
    only = open_android_driver(manifest)
    assert only.serial == "emulator-5556"
    only.close()


def test_farm_serials_are_connected_first(adb, manifest, monkeypatch):
    adb.connectable["10.0.0.7:5555"] = FakeDevice("10.0.0.7:5555", app_source=NOTES)
    monkeypatch.setenv("FLYWHEEL_ADB_SERIALS", "10.0.0.7:5555")
    d = open_android_driver(manifest)
    try:
        assert d.serial == "10.0.0.7:5555" and "host:connect:10.0.0.7:5555" in adb.commands()
    finally:
        d.close()


def test_no_adb_server_is_one_clear_error(manifest, monkeypatch):
    from sandboxes.app_process import free_port

    monkeypatch.setenv("FLYWHEEL_ADB_PORT", str(free_port()))
    with pytest.raises(SandboxError, match="no adb server at 127.0.0.1:.*FLYWHEEL_ADB_PORT"):
        open_android_driver(manifest)


def test_hierarchy_names_fields_by_hint_or_the_label_before_them():
    xml = (
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
        '<node class="android.widget.LinearLayout" bounds="[0,0][1080,2340]">'
        '<node class="android.widget.TextView" text="City" bounds="[0,100][1080,180]" />'
        '<node class="android.widget.EditText" text="Porto" clickable="true" bounds="[0,180][1080,330]" />'
        '<node class="android.widget.EditText" text="" hint="Postcode" clickable="true" bounds="[0,330][1080,480]" />'
        '<node class="android.widget.EditText" text="secret" password="true" clickable="true" bounds="[0,480][1080,630]" />'
        '<node class="android.widget.ImageButton" content-desc="Add address" clickable="true" bounds="[900,2000][1040,2140]" />'
        "</node></hierarchy>UI hierchary dumped to: /dev/tty"
    )
    tree = ui_tree(parse_hierarchy(xml)).splitlines()
    assert tree == [
        '- text "City" [ref=n2]',
        '- textbox "City" [ref=n3]: Porto',
        '- textbox "Postcode" [ref=n4]',
        "- textbox [password] [ref=n5]: ••••••",
        '- button "Add address" [ref=n6]',
    ]
    with pytest.raises(SandboxError, match="no hierarchy"):
        parse_hierarchy("ERROR: could not get idle state.")


def test_sql_parameters_become_literals_outside_quoted_strings():
    assert render_sql("SELECT ':x', '?' WHERE a = :a", {"a": "O'Brien"}) == "SELECT ':x', '?' WHERE a = 'O''Brien'"
    assert render_sql("SELECT ? , ?", (None, 2.5)) == "SELECT NULL , 2.5"
    with pytest.raises(InjectionError, match="no value for parameter :b"):
        render_sql("SELECT :b", {})


def test_a_device_lost_mid_episode_ends_it_as_env_error_and_the_judge_agrees(adb, driver, lake):
    from flows.judging.judge import judge_trajectory
    from flows.rollout.policies import ReplayPolicy
    from flows.rollout.rollout import run_episode
    from flows.task_synthesis.task_spec import TaskSpec

    task = TaskSpec(
        sandbox="notes-android", source_commit="test", family="create", app_area="notes", instruction="Add a note titled Rent.",
        params={"title": "Rent"}, seed=0, injection=[],
        verifier={"template": "row_exists", "params": {"table": "notes", "where": {"title": "Rent"}}},
        reference=[
            {"action": "left_click", "target": {"role": "button", "name": "New note"}},
            {"action": "type", "target": {"label": "Title"}, "text": "Rent"},
            {"action": "left_click", "target": {"role": "button", "name": "Save note"}},
        ],
    )

    class UnpluggedAfterOneStep(ReplayPolicy):
        """Replays the reference; the device farm loses the device during the second step."""

        def next_turn(self, observation):
            turn = super().next_turn(observation)
            if len(self._todo) == 2:
                adb.remove_device(driver.serial)
            return turn

    whole = run_episode(driver, lake, task, {}, ReplayPolicy(), 0, "r-ok")
    assert whole.trajectory["ended"] == "terminated"
    assert judge_trajectory(whole.trajectory, task.to_row("verified", None, None, "r", None))["verdict"] == "pass"
    assert whole.steps[0]["url"] == f"android-app://{PKG}/.NotesListActivity" and whole.steps[0]["screen_width"] == 1080
    cut = run_episode(driver, lake, task, {}, UnpluggedAfterOneStep(), 1, "r-cut")
    assert cut.trajectory["ended"] == "env_error" and "gone from the adb server" in cut.trajectory["end_detail"]
    assert len(cut.steps) == 2 and not cut.steps[1]["ok"] and "transport id" in cut.steps[1]["error"]  # typed into a gone device
    verdict = judge_trajectory(cut.trajectory, task.to_row("verified", None, None, "r", None))
    assert verdict["verdict"] == "env_error"


def test_touch_policy_replays_a_reference_as_taps_on_the_device(adb, driver, lake):
    """flows/rollout/touch.py resolves targets through the driver (locate, viewport): the steps hold the
    mobile actions a phone agent emits, and a sensitive tap is still reported as one."""
    from flows.judging.judge import judge_trajectory
    from flows.rollout.policies import ReplayPolicy
    from flows.rollout.rollout import run_episode
    from flows.rollout.touch import TouchPolicy
    from flows.task_synthesis.task_spec import TaskSpec

    task = TaskSpec(
        sandbox="notes-android", source_commit="test", family="multi_step", app_area="notes",
        instruction="Add a pinned note titled Rent, then delete the note Groceries.", params={}, seed=0, injection=[],
        verifier={"template": "all_of", "params": {"checks": [
            {"template": "row_exists", "params": {"table": "notes", "where": {"title": "Rent", "pinned": 1}}},
            {"template": "row_absent", "params": {"table": "notes", "where": {"id": 1}}},
        ]}},
        reference=[
            {"action": "left_click", "target": {"role": "button", "name": "New note"}},
            {"action": "type", "target": {"label": "Title"}, "text": "Rent"},
            {"action": "check", "target": {"label": "Pinned"}},
            {"action": "left_click", "target": {"role": "button", "name": "Save note"}},
            {"action": "left_click", "target": {"text": "Groceries"}},
            {"action": "call_user", "reason": "This will delete (Delete note). Shall I go ahead?"},
            {"action": "left_click", "target": {"role": "button", "name": "Delete note"}},
        ],
    )
    episode = run_episode(driver, lake, task, {}, TouchPolicy(ReplayPolicy(), driver, "android"), 0, "r-touch")
    turns = [[a["action"] for a in json.loads(s["actions_json"])] for s in episode.steps]
    assert turns == [["tap"], ["tap", "type"], ["tap"], ["tap"], ["tap"], ["call_user"], ["tap"], ["terminate"]]
    assert [s["sensitive"] for s in episode.steps][6] == "delete"
    assert judge_trajectory(episode.trajectory, task.to_row("verified", None, None, "r", None))["verdict"] == "pass"


def test_a_busy_screen_is_dumped_again_and_a_screen_that_never_idles_is_an_error(adb, driver):
    adb.devices[driver.serial].busy_dumps = 2
    mark = len(adb.requests)
    assert '- button "New note"' in driver.observe(screenshot=False).ui_tree
    assert sent(adb, driver.serial, mark, dumps=True).count(DUMP) == 3
    adb.devices[driver.serial].busy_dumps = 3
    with pytest.raises(SandboxError, match="could not get idle state"):
        driver.observe(screenshot=False)
    adb.devices[driver.serial].busy_dumps = 3
    (tap,) = act(driver, {"action": "left_click", "target": {"role": "button", "name": "New note"}})
    assert not tap.ok and "could not get idle state" in tap.error


def test_after_input_the_driver_waits_until_the_screen_holds_still_not_for_a_time(adb, driver):
    """The fake screen slides in over 4 dumps after each input; typing into a field found mid-slide would tap
    where the field is not yet (the note would keep no title). Two equal dumps in a row end the wait."""
    device = adb.devices[driver.serial]
    device.animation_dumps = 4
    mark = len(adb.requests)
    results = act(
        driver,
        {"action": "left_click", "target": {"role": "button", "name": "New note"}},
        {"action": "type", "target": {"label": "Title"}, "text": "Slid in"},
        {"action": "left_click", "target": {"role": "button", "name": "Save note"}},
    )
    assert all(r.ok for r in results), results
    row = driver.probe(Probe("row", "sql", "SELECT title FROM notes ORDER BY id DESC LIMIT 1", (), "rows"))
    assert row == [["Slid in"]]
    # the lookup of New note, its tap, then the 4 moving dumps and the 2 still ones
    assert sent(adb, driver.serial, mark, dumps=True)[:8] == [DUMP, "shell,v2:input tap 540 324"] + [DUMP] * 6
    # a screen that never holds still is taken as it is after the bound, and the action stands
    device.animation_dumps = 10**6
    mark = len(adb.requests)
    (tap,) = act(driver, {"action": "tap", "x": 500, "y": 60})
    assert tap.ok and sent(adb, driver.serial, mark, dumps=True).count(DUMP) == driver.settle_dumps


def test_the_app_leaving_the_screen_is_unhealthy_unless_the_policy_left_it(adb, driver):
    act(driver, {"action": "system_button", "button": "home"})
    assert driver.health().ok, "the policy pressed home: its own doing, not the environment's"
    act(driver, {"action": "open_app", "app": "org.flywheel.notes"})
    assert driver.health().ok
    device = adb.devices[driver.serial]
    device.apps[PKG].stop()  # the app's process died without a dialog
    device.foreground_app = None
    health = driver.health()
    assert not health.ok and "is not in the foreground" in health.detail


def test_files_prefs_intents_and_the_content_provider(adb, driver):
    prefs = Skill("sort_prefs", "notes-android", "file", "sort order", {
        "path": "shared_prefs/settings.xml",
        "content": "<?xml version='1.0' encoding='utf-8' standalone='yes' ?><map><string name=\"sort\">{sort}</string>"
                   "<boolean name=\"compact\" value=\"true\" /><int name=\"font\" value=\"14\" /></map>",
    })
    mark = len(adb.requests)
    driver.inject(prefs, {"sort": "title"})
    assert sent(adb, driver.serial, mark)[0] == (
        f"exec:run-as {PKG} sh -c 'mkdir -p shared_prefs && cat > shared_prefs/settings.xml'"
    )
    assert driver.probe(Probe("prefs", "prefs", "settings")) == {"sort": "title", "compact": True, "font": 14}

    add = Skill("add_by_provider", "notes-android", "content", "add a note through NotesProvider", {
        "uri": f"content://{PKG}.provider/notes",
        "values": {"id": "{id}", "title": "{title}", "created_on": "2026-11-02"},
    })
    mark = len(adb.requests)
    driver.inject(add, {"id": 900002, "title": "Call Mum"})
    assert sent(adb, driver.serial, mark)[0] == (
        f"shell,v2:content insert --uri content://{PKG}.provider/notes "
        "--bind id:s:900002 --bind title:s:'Call Mum' --bind created_on:s:2026-11-02"
    )
    assert driver.probe(Probe("n", "sql", "SELECT title FROM notes WHERE id = 900002")) == "Call Mum"

    open_note = Skill("open_note", "notes-android", "intent", "open one note's page", {
        "command": "start", "component": ".NoteActivity", "extras": [["--el", "note_id", "{id}"]],
    })
    mark = len(adb.requests)
    driver.inject(open_note, {"id": 900002})
    assert sent(adb, driver.serial, mark) == [f"shell,v2:am start -W -n {PKG}/.NoteActivity --el note_id 900002"]
    obs = driver.observe(screenshot=False)
    assert obs.url == f"android-app://{PKG}/.NoteActivity" and '- text "Call Mum"' in obs.ui_tree
    with pytest.raises(InjectionError, match="unknown extra flag"):
        driver.inject(Skill("bad", "notes-android", "intent", "", {"extras": [["--eu", "x", "1"]]}), {})


def test_quote_mode_rows_keep_their_types():
    out = "'a, b',-3,2.5,NULL,X'00FF'\n'it''s\non two lines',1e3,0,'',''\n"
    assert parse_quoted_rows(out) == [["a, b", -3, 2.5, None, b"\x00\xff"], ["it's\non two lines", 1000.0, 0, "", ""]]
    assert parse_quoted_rows("") == []
    with pytest.raises(SandboxError, match="not a quoted row"):
        parse_quoted_rows("Error: no such table: nope")


def test_sql_probes_read_types_and_values_with_semicolons(adb, driver):
    skill = Skill("insert_notes", "notes-android", "sql", "", {"statements": [
        "INSERT INTO notes (id, title, body, created_on) VALUES (:id, :title, :body, '2026-11-01')",
    ]})
    driver.inject(skill, {"id": 900003, "title": "Semi; colon", "body": "a;b\nc"})
    row = driver.probe(Probe("r", "sql", "SELECT id, title, body, pinned, NULL, 0.5 FROM notes WHERE id = ?", (900003,), "rows"))
    assert row == [[900003, "Semi; colon", "a;b\nc", 0, None, 0.5]]


def test_a_vanished_adb_server_is_an_error_and_no_local_server_is_started(adb, driver, monkeypatch):
    import adbutils._adb

    spawned = []
    monkeypatch.setattr(adbutils._adb.subprocess, "run", lambda *a, **k: spawned.append(a))  # `adb start-server`
    adb.close()
    assert not driver.health().ok and not driver.app.healthy()
    with pytest.raises(SandboxError, match="adb server at 127.0.0.1:.* is gone"):
        driver.observe()
    (tap,) = act(driver, {"action": "tap", "x": 10, "y": 10})
    assert not tap.ok and "is gone" in tap.error
    assert spawned == []


def test_each_command_is_one_connection_to_the_server_by_transport_id(adb, driver):
    mark = len(adb.requests)
    act(driver, {"action": "tap", "x": 500, "y": 500})
    # the tap, then the two hierarchy dumps that find the screen still
    assert [r for _, r in adb.requests[mark:]] == ["host:transport-id:1", "shell,v2:input tap 540 1170"] + [
        "host:transport-id:1", DUMP] * 2
