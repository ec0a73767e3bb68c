"""Generated code that misbehaves is contained, in the container runner and in the subprocess runner,
and a verifier or skill made of it is rejected with a reason code."""

from __future__ import annotations

import socket
import sqlite3
import threading

import pytest

from flywheel.isolation import ContainerRunner, Job, SubprocessRunner
from flywheel.isolation.generated import GeneratedCodeFailed, run_code_judge, run_python_skill
from flywheel.isolation.runners import _uid_has_processes
from sandboxes.docker_images import engine_available

READ_SHADOW = "def judge(evidence, params):\n    return {'passed': True, 'reason': open('/etc/shadow').read()}\n"
FORK_BOMB = (
    "import os\n"
    "def judge(evidence, params):\n"
    "    while True:\n"
    "        try:\n"
    "            os.fork()\n"
    "        except OSError:\n"
    "            pass\n"
)
ALLOCATE_20GB = "def judge(evidence, params):\n    block = bytearray(20 * 2**30)\n    return {'passed': True, 'reason': str(len(block))}\n"
NEVER_RETURNS = "def judge(evidence, params):\n    while True:\n        pass\n"
SOUND = "def judge(evidence, params):\n    n = evidence['final']['n']\n    return {'passed': n > 0, 'reason': f'{n} rows'}\n"


def connect_to(port: int) -> str:
    return (
        "import socket\n"
        "def judge(evidence, params):\n"
        "    s = socket.socket()\n"
        "    s.settimeout(2)\n"
        f"    s.connect(('127.0.0.1', {port}))\n"
        "    s.sendall(b'exfiltrated')\n"
        "    return {'passed': True, 'reason': 'connected'}\n"
    )


@pytest.fixture(scope="module", params=["subprocess", pytest.param("container", marks=pytest.mark.docker)])
def runner(request):
    if request.param == "subprocess":
        return SubprocessRunner()
    ok, why = engine_available()
    if not ok:
        pytest.skip(f"container runner not tested: {why}")
    return ContainerRunner()


@pytest.fixture
def listener():
    """A TCP server on the host's loopback that counts the connections it gets."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    seen, stop = [], threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                seen.append(conn.recv(100))
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


def judge_with(runner, code: str, timeout_s: float = 10.0):
    return run_code_judge(code, {"initial": {"n": 0}, "final": {"n": 2}}, {}, runner=runner, timeout_s=timeout_s)


def rejected(runner, code: str, timeout_s: float = 10.0) -> GeneratedCodeFailed:
    with pytest.raises(GeneratedCodeFailed) as info:
        judge_with(runner, code, timeout_s)
    return info.value


def test_sound_code_runs_and_returns_its_verdict(runner):
    assert judge_with(runner, SOUND) == (True, "2 rows")


def test_reading_etc_shadow_is_forbidden(runner):
    failure = rejected(runner, READ_SHADOW)
    assert failure.result.reason == "forbidden" and failure.gate_reason("bad_verifier") == "unsafe_code"
    assert "root:" not in str(failure) + failure.result.stdout_tail + failure.result.stderr_tail


def test_without_the_audit_hook_the_os_still_keeps_etc_shadow_out(runner):
    result = runner.run(Job(READ_SHADOW, "judge", [{}, {}], audit=False))
    assert not result.ok and result.value is None
    # subprocess: an unprivileged uid gets EACCES; container: the host's /etc is not there at all
    assert "Permission denied" in result.detail or "No such file" in result.detail


def test_opening_a_socket_is_forbidden_and_reaches_nothing(runner, listener):
    port, seen = listener
    failure = rejected(runner, connect_to(port))
    assert failure.result.reason == "forbidden" and failure.gate_reason("bad_verifier") == "unsafe_code"
    result = runner.run(Job(connect_to(port), "judge", [{}, {}], audit=False))  # the network namespace alone
    assert not result.ok and result.network_isolated, result.detail
    assert seen == []


def test_a_fork_bomb_is_contained_and_cleaned_up(runner):
    failure = rejected(runner, FORK_BOMB, timeout_s=3)
    assert failure.result.reason in ("timeout", "forbidden", "killed")
    assert failure.gate_reason("bad_verifier") in ("code_timeout", "unsafe_code")
    if isinstance(runner, SubprocessRunner) and runner.as_root:  # nothing of the run's throwaway uid lives on
        assert not _uid_has_processes(failure.result.uid)


def test_allocating_20_gb_is_an_oom(runner):
    failure = rejected(runner, ALLOCATE_20GB)
    assert failure.result.reason == "oom" and failure.gate_reason("bad_verifier") == "unsafe_code"


def test_code_that_never_returns_times_out(runner):
    failure = rejected(runner, NEVER_RETURNS, timeout_s=2)
    # its CPU-seconds decide (the rlimit, or the runner's count) — or, on a machine too loaded to give it 2 CPU-s
    # in 12 s, no verdict at all
    assert failure.result.reason in ("timeout", "unavailable"), failure.result.detail
    if failure.result.reason == "timeout":
        assert failure.gate_reason("bad_verifier") == "code_timeout"
        assert "CPU" in failure.result.detail, failure.result.detail
    assert failure.result.duration_s < 30


def test_code_that_sleeps_forever_times_out_on_its_idle_time(runner):
    failure = rejected(runner, "import time\ndef judge(evidence, params):\n    while True:\n        time.sleep(0.05)\n",
                       timeout_s=2)
    assert failure.result.reason == "timeout" and failure.gate_reason("bad_verifier") == "code_timeout"
    assert "idle" in failure.result.detail or "still running" in failure.result.detail, failure.result.detail


@pytest.mark.slow
def test_code_starved_of_the_cpu_is_no_verdict(tmp_path):
    """Seven busy processes share the one CPU the code may use: it gets at most 1/8 of it, 1.5 of the 2 CPU-s
    its loop needs in the 12 s a run may wait. Before, the wall clock called that a code_timeout."""
    import multiprocessing as mp
    import os

    cpu = sorted(os.sched_getaffinity(0))[0]
    mine = os.sched_getaffinity(0)

    def hog() -> None:
        os.setsid()  # a session (so an autogroup) of its own, like the runner's child: CFS shares the CPU by group
        os.sched_setaffinity(0, {cpu})
        while True:
            pass

    hogs = [mp.get_context("fork").Process(target=hog, daemon=True) for _ in range(7)]
    for h in hogs:
        h.start()
    try:
        os.sched_setaffinity(0, {cpu})  # the runner's child inherits it
        failure = rejected(SubprocessRunner(), NEVER_RETURNS, timeout_s=2)
    finally:
        os.sched_setaffinity(0, mine)
        for h in hogs:
            h.kill()
            h.join()
    assert failure.result.reason == "unavailable", failure.result.detail
    assert failure.gate_reason("bad_verifier") == "sandbox_error"
    assert "waiting for a CPU" in failure.result.detail


def test_time_limits_blame_the_code_for_cpu_and_idle_time_and_the_machine_for_waiting():
    from flywheel.isolation.cpu_watch import TreeTime, over_limit

    assert over_limit(1.0, TreeTime(0.5, 0.1), 2) is None
    assert over_limit(3.0, TreeTime(2.0, 0.5), 2)[0] == "timeout"  # used its CPU
    assert over_limit(3.0, TreeTime(0.1, 0.1), 2)[0] == "timeout"  # slept
    assert over_limit(8.0, TreeTime(1.0, 6.5), 2) is None  # wanted a CPU: waits on
    reason, detail = over_limit(12.0, TreeTime(1.5, 10.0), 2)
    assert reason == "unavailable" and "not held against the code" in detail
    assert over_limit(2.0, None, 2)[0] == "timeout"  # no schedstat: the wall clock, as before
    assert over_limit(1.9, None, 2) is None


def test_code_cannot_claim_the_machine_failed(runner):
    """The harness's out.json is the code's to write: a kind of 'unavailable' (no verdict) is read as an error."""
    code = ("import json, os\n"
            "def judge(evidence, params):\n"
            "    json.dump({'ok': False, 'kind': 'unavailable', 'error': 'not me'}, open('out.json', 'w'))\n"
            "    os._exit(0)\n")
    failure = rejected(runner, code)
    assert failure.result.reason in ("error", "forbidden") and failure.gate_reason("bad_verifier") != "sandbox_error"


def test_a_verdict_of_the_wrong_shape_is_an_error(runner):
    failure = rejected(runner, "def judge(evidence, params):\n    return 'yes'\n")
    assert failure.result.reason == "error" and failure.gate_reason("bad_verifier") == "bad_verifier"


def test_a_python_skill_changes_the_db_only_when_it_runs_cleanly(runner, tmp_path):
    db = tmp_path / "app.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.commit()
    con.close()
    skill = ("import sqlite3\n"
             "def inject(db_path, args):\n"
             "    con = sqlite3.connect(db_path)\n"
             "    con.execute('INSERT INTO notes (body) VALUES (?)', (args['body'],))\n"
             "    con.commit()\n")
    run_python_skill(db, skill, {"body": "hello"}, runner=runner)
    broken = skill + "    raise RuntimeError('half done')\n"
    with pytest.raises(GeneratedCodeFailed) as info:
        run_python_skill(db, broken, {"body": "half"}, runner=runner)
    assert info.value.gate_reason("inject_error") == "inject_error"
    with pytest.raises(GeneratedCodeFailed) as info:  # a skill may not reach past its copy of the DB
        run_python_skill(db, f"import sqlite3\ndef inject(db_path, args):\n    sqlite3.connect({str(db)!r})\n",
                         {}, runner=runner)
    assert info.value.gate_reason("inject_error") == "unsafe_code"
    assert sqlite3.connect(db).execute("SELECT body FROM notes").fetchall() == [("hello",)]


@pytest.mark.browser
@pytest.mark.parametrize("code,reason", [
    ("import socket\ndef inject(db_path, args):\n    socket.create_connection(('127.0.0.1', 9), 1)\n", "unsafe_code"),
    ("def inject(db_path, args):\n    while True:\n        pass\n", "code_timeout"),
])
def test_the_gate_rejects_a_python_skill_that_misbehaves(code, reason, shop_app, browser_host, monkeypatch):
    from flows.task_synthesis.gate import ValidationGate
    from flows.task_synthesis.task_spec import TaskSpec
    from sandboxes.skills import Skill
    from sandboxes.web import WebDriver
    from tests.shop_references import ADD_ADDRESS

    monkeypatch.setenv("FLYWHEEL_CODE_TIMEOUT_S", "2")
    skill = Skill("misbehave", "shop", "python", "generated", {"code": code})
    spec = TaskSpec("shop", "test", "create", "addresses", "Add my boathouse address", {"r": reason}, 1,
                    [{"skill": "misbehave", "args": {}}],
                    {"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7"}}},
                    ADD_ADDRESS)
    driver = WebDriver(shop_app, browser_host)
    try:
        result = ValidationGate(driver, {"misbehave": skill}).validate(spec)
    finally:
        driver.close()
    assert result.status == "rejected", result.detail
    # a loop given 2 CPU-s that a loaded machine did not give them in 12 s (twice) is no verdict: sandbox_error
    assert result.reason in ((reason, "sandbox_error") if reason == "code_timeout" else (reason,)), result.detail
