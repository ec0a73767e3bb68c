"""Attacks by generated code (skills, verifiers) on the machine that runs it, in both runners.

Each test is an attack that worked, or would work, against a runner that trusts what the code leaves in its
work dir or that relies on the harness's audit hook: the code is an attacker who knows how flywheel runs it.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

import pytest

from flywheel.isolation import ContainerRunner, Job, SubprocessRunner
from flywheel.isolation.generated import GeneratedCodeFailed, run_python_skill
from flywheel.isolation.runners import _uid_has_processes
from sandboxes.docker_images import engine_available

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", params=["subprocess", pytest.param("container", marks=pytest.mark.docker)])
def runner(request):
    if request.param == "subprocess":
        return SubprocessRunner()
    ok, why = engine_available()
    if not ok:
        pytest.skip(f"container runner not tested: {why}")
    return ContainerRunner()


@pytest.fixture
def outside(tmp_path):
    """A folder outside any run, traversable by everyone (so only the runner's containment keeps code out)."""
    folder = Path(tempfile.mkdtemp(prefix="flywheel-security-"))
    folder.chmod(0o755)
    yield folder
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()


def app_db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.execute("INSERT INTO notes (body) VALUES ('before')")
    con.commit()
    con.close()
    return path


def secret_db(path: Path, mode: int = 0o600) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE secrets (value TEXT)")
    con.execute("INSERT INTO secrets VALUES ('hunter2')")
    con.commit()
    con.close()
    path.chmod(mode)
    return path


def tables(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()


def skill(body: str) -> str:
    return "import os\ndef inject(db_path, args):\n" + "".join(f"    {line}\n" for line in body.splitlines())


@pytest.mark.parametrize("prefix", ["", "/proc/self/root", "/proc/1/root"])
def test_a_skill_that_swaps_its_db_for_a_symlink_to_a_host_file_copies_nothing_back(runner, tmp_path, prefix):
    db, secret = app_db(tmp_path / "app.sqlite"), secret_db(tmp_path / "root-only.sqlite")
    with pytest.raises(GeneratedCodeFailed) as info:
        run_python_skill(db, skill(f"os.remove(db_path)\nos.symlink({prefix + str(secret)!r}, db_path)"), {},
                         runner=runner)
    assert info.value.result.reason == "forbidden" and "symbolic link" in info.value.result.detail
    assert info.value.gate_reason("inject_error") == "unsafe_code"
    assert tables(db) == {"notes"}


def test_a_skill_that_hard_links_a_host_file_in_place_of_its_db_copies_nothing_back(runner, tmp_path, outside):
    db = app_db(tmp_path / "app.sqlite")
    secret = secret_db(outside / "world-writable.sqlite", mode=0o666)  # the one kind a hard link may reach
    with pytest.raises(GeneratedCodeFailed):
        run_python_skill(db, skill(f"os.remove(db_path)\nos.link({str(secret)!r}, db_path)"), {}, runner=runner)
    assert tables(db) == {"notes"}


def test_a_db_with_a_second_hard_link_is_not_copied_back(runner, tmp_path):
    db = app_db(tmp_path / "app.sqlite")
    with pytest.raises(GeneratedCodeFailed) as info:
        run_python_skill(db, skill("os.link(db_path, 'other.sqlite')"), {}, runner=runner)
    assert info.value.result.reason == "forbidden" and "hard links" in info.value.result.detail


def test_a_fifo_in_place_of_its_result_does_not_hang_the_runner(runner):
    code = "import os\ndef judge(e, p):\n    os.remove('out.json')\n    os.mkfifo('out.json')\n    return {}\n"
    result = runner.run(Job(code, "judge", [{}, {}], timeout_s=5))
    assert not result.ok and result.reason == "forbidden" and "not a regular file" in result.detail


def test_a_result_swapped_for_a_symlink_to_a_host_file_is_not_read(runner, tmp_path):
    host_json = tmp_path / "credentials.json"
    host_json.write_text(json.dumps({"ok": True, "value": {"passed": True, "reason": "TOKEN-abc123"}}))
    host_json.chmod(0o600)
    code = f"import os\ndef judge(e, p):\n    os.remove('out.json')\n    os.symlink({str(host_json)!r}, 'out.json')\n"
    result = runner.run(Job(code, "judge", [{}, {}]))
    assert not result.ok and result.reason == "forbidden"
    assert "TOKEN-abc123" not in json.dumps(result.to_json())


def test_a_double_forked_child_cannot_swap_the_db_after_the_run(runner, tmp_path):
    db, secret = app_db(tmp_path / "app.sqlite"), secret_db(tmp_path / "root-only.sqlite")
    body = (
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        import time\n"
        "        for _ in range(300):\n"
        "            try:\n"
        "                os.remove(db_path)\n"
        f"                os.symlink({str(secret)!r}, db_path)\n"
        "            except OSError:\n"
        "                pass\n"
        "            time.sleep(0.01)\n"
        "    os._exit(0)\n"
    )
    try:
        run_python_skill(db, skill(body), {}, runner=runner)
    except GeneratedCodeFailed as exc:
        assert exc.result.reason in ("forbidden", "error")
        uid = exc.result.uid
    else:
        uid = None
    time.sleep(1.0)
    assert tables(db) == {"notes"}
    if isinstance(runner, SubprocessRunner) and runner.as_root and uid is not None:
        assert not _uid_has_processes(uid)


UNDO_THE_HOOK = (
    "import os, sys\n"
    "def undo():\n"
    "    sys.modules['__main__'].FORBIDDEN_EVENTS.clear()\n"
    "    inside = os.path.join(os.getcwd(), 'x')\n"
    "    os.path.realpath = lambda path, *a, **k: inside\n"
)


def test_undoing_the_audit_hook_reads_no_host_file(runner, outside):
    marker = outside / "world-readable.txt"
    marker.write_text("HOST-FILE-CONTENT")
    marker.chmod(0o644)
    targets = [str(marker), str(ROOT / "README.md"), str(ROOT / "pyproject.toml"), "/etc/passwd",
               "/proc/1/environ", "/proc/self/mounts"]
    code = UNDO_THE_HOOK + (
        "def judge(e, p):\n"
        "    undo()\n"
        "    got = {}\n"
        f"    for path in {targets!r}:\n"
        "        try:\n"
        "            got[path] = open(path).read()[:200]\n"
        "        except OSError as exc:\n"
        "            got[path] = type(exc).__name__\n"
        "    return {'passed': True, 'reason': repr(got)}\n"
    )
    result = runner.run(Job(code, "judge", [{}, {}]))
    assert result.ok, result.detail
    got = eval(result.value["reason"])  # noqa: S307 - a dict literal this test's code printed
    assert got[str(marker)] in ("FileNotFoundError", "PermissionError")
    for repo_file in targets[1:3]:  # neither the README nor pyproject of the repo
        assert got[repo_file] in ("FileNotFoundError", "PermissionError")
    if isinstance(runner, SubprocessRunner) and runner.as_root:  # no /etc, no /proc: only the work dir and /usr
        assert set(got.values()) == {"FileNotFoundError"}, got


def test_undoing_the_audit_hook_cannot_fill_the_disk(tmp_path):
    runner = SubprocessRunner(work_mb=16)
    before = set(Path(tempfile.gettempdir()).glob("fill-*"))
    code = UNDO_THE_HOOK + (
        "def judge(e, p):\n"
        "    undo()\n"
        "    written = {}\n"
        "    for folder in ('/tmp', os.getcwd()):\n"
        "        written[folder] = 0\n"
        "        try:\n"
        "            for i in range(600):\n"
        "                with open(os.path.join(folder, f'fill-{i}'), 'wb') as fh:\n"
        "                    fh.write(b'x' * 2**20)\n"
        "                written[folder] += 1\n"
        "        except OSError:\n"
        "            pass\n"
        "        for i in range(written[folder] + 1):\n"
        "            try:\n"
        "                os.remove(os.path.join(folder, f'fill-{i}'))\n"
        "            except OSError:\n"
        "                pass\n"
        "    return {'passed': True, 'reason': repr(written)}\n"
    )
    result = runner.run(Job(code, "judge", [{}, {}], timeout_s=20))
    assert set(Path(tempfile.gettempdir()).glob("fill-*")) == before
    if runner.as_root:
        assert result.ok, result.detail
        written = eval(result.value["reason"])  # noqa: S307 - a dict literal this test's code printed
        assert written["/tmp"] == 0 and written[os.path.join("/work")] <= 16


def test_undoing_the_audit_hook_reaches_no_unix_socket_on_the_host(runner, outside):
    path = outside / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o777)
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
    code = UNDO_THE_HOOK + (
        "import socket\n"
        "def judge(e, p):\n"
        "    undo()\n"
        "    out = {}\n"
        f"    for target in ({str(path)!r}, '/var/run/docker.sock', '/run/docker.sock'):\n"
        "        s = socket.socket(socket.AF_UNIX)\n"
        "        try:\n"
        "            s.connect(target)\n"
        "            s.sendall(b'GET /containers/json HTTP/1.0\\r\\n\\r\\n')\n"
        "            out[target] = s.recv(200).decode('latin-1')\n"
        "        except OSError as exc:\n"
        "            out[target] = type(exc).__name__\n"
        "    return {'passed': True, 'reason': repr(out)}\n"
    )
    try:
        result = runner.run(Job(code, "judge", [{}, {}]))
    finally:
        stop.set()
        thread.join()
        server.close()
    assert seen == []
    reason = result.value["reason"] if result.ok else result.detail
    assert "HTTP/1" not in reason, reason  # the Docker engine did not answer


def test_generated_code_sees_no_secret_from_the_environment(runner, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-from-the-host")
    code = UNDO_THE_HOOK + (
        "def judge(e, p):\n"
        "    undo()\n"
        "    found = dict(os.environ)\n"
        "    for pid in (os.getppid(), 1):\n"
        "        try:\n"
        "            found[pid] = open(f'/proc/{pid}/environ').read()\n"
        "        except OSError as exc:\n"
        "            found[pid] = type(exc).__name__\n"
        "    return {'passed': True, 'reason': repr(found)}\n"
    )
    result = runner.run(Job(code, "judge", [{}, {}]))
    assert result.ok, result.detail
    assert "sk-secret" not in result.value["reason"]


def test_generated_code_inherits_no_descriptor_but_its_result_file(runner):
    code = (
        "import os, stat\n"
        "def judge(e, p):\n"
        "    open_fds = []\n"
        "    for fd in range(3, 1024):\n"
        "        try:\n"
        "            info = os.fstat(fd)\n"
        "        except OSError:\n"
        "            continue\n"
        "        open_fds.append([fd, stat.S_ISREG(info.st_mode), info.st_size])\n"
        "    return {'passed': True, 'reason': repr(open_fds)}\n"
    )
    result = runner.run(Job(code, "judge", [{}, {}]))
    assert result.ok, result.detail
    open_fds = eval(result.value["reason"])  # noqa: S307 - a list literal this test's code printed
    # out.json (empty, opened by the harness before the code runs) and nothing the runner holds
    assert [fd[1:] for fd in open_fds] == [[True, 0]], open_fds
