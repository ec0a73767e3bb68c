"""The subprocess runner run by a user who is not root: generated code that undoes the harness's audit hook
is still contained (unprivileged user, mount, pid and network namespaces on a size-capped tmpfs root), and on
an OS without unprivileged user namespaces the runner refuses with one clear message.

As root the test drops to `nobody` with setpriv and runs the runner there under an interpreter that user may
read; run by another user it runs as that user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534

# Runs as the non-root user: each attack is generated code run by SubprocessRunner; prints one JSON object.
ATTACKS = textwrap.dedent("""
    import json, os, sys, tempfile
    sys.path.insert(0, sys.argv[1])
    from flywheel.isolation import Job, SubprocessRunner
    from flywheel.isolation.runners import IsolationUnavailable
    marker, sock_path = sys.argv[2], sys.argv[3]
    try:
        runner = SubprocessRunner(work_mb=16)
    except IsolationUnavailable as exc:
        print(json.dumps({"unavailable": str(exc)}))
        sys.exit(0)
    UNDO = (
        "import os, sys, socket\\n"
        "def undo():\\n"
        "    sys.modules['__main__'].FORBIDDEN_EVENTS.clear()\\n"
        "    inside = os.path.join(os.getcwd(), 'x')\\n"
        "    os.path.realpath = lambda path, *a, **k: inside\\n"
    )
    def run(body, **kw):
        code = UNDO + "def judge(e, p):\\n    undo()\\n    out = {}\\n" + "".join(
            f"    {line}\\n" for line in body.strip().splitlines()) + "    return {'passed': True, 'reason': repr(out)}\\n"
        r = runner.run(Job(code, "judge", [{}, {}], **kw))
        return {"ok": r.ok, "reason": r.reason, "detail": r.detail,
                "value": eval(r.value["reason"]) if r.ok else None, "network_isolated": r.network_isolated}
    report = {"uid": os.getuid()}
    report["read"] = run(f'''
    for path in {[marker, sys.argv[1] + "/README.md", "/etc/passwd", "/proc/1/environ", "/proc/self/mounts"]!r}:
        try:
            out[path] = open(path).read()[:100]
        except OSError as exc:
            out[path] = type(exc).__name__
    out["/"] = sorted(os.listdir("/"))
    ''')
    report["fill"] = run('''
    for folder in ('/tmp', '/', '/usr', os.getcwd()):
        out[folder] = 0
        try:
            for i in range(100):
                with open(os.path.join(folder, f'fill-{i}'), 'wb') as fh:
                    fh.write(b'x' * 2**20)
                out[folder] += 1
        except OSError:
            pass
        for i in range(out[folder] + 1):
            try:
                os.remove(os.path.join(folder, f'fill-{i}'))
            except OSError:
                pass
    ''', timeout_s=20)
    report["escape"] = run('''
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    os.makedirs('deeper', exist_ok=True)
    out['chroot'] = libc.chroot(b'deeper')
    for _ in range(20):
        os.chdir('..')
    out['after_chroot'] = sorted(os.listdir('.'))
    out['umount'] = libc.umount2(b'/usr', 2)
    out['remount'] = libc.mount(None, b'/', None, 32 | 4096, None)
    out['tmpfs'] = libc.mount(b'tmpfs', b'/work', b'tmpfs', 0, None)
    out['setuid0'] = libc.setuid(0)
    ''')
    report["socket"] = run(f'''
    for target in ({sock_path!r}, '/var/run/docker.sock', '/run/docker.sock'):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(target)
            out[target] = 'connected'
        except OSError as exc:
            out[target] = type(exc).__name__
    try:
        socket.create_connection(('127.0.0.1', 22), timeout=1)
        out['tcp'] = 'connected'
    except OSError as exc:
        out['tcp'] = type(exc).__name__
    ''')
    report["fork"] = run('''
    out['pid'] = os.getpid()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import time
            time.sleep(120)
        os._exit(0)
    ''')
    left = []  # harness processes of this user still running (the grandchild would sleep 120 s)
    for pid in os.listdir('/proc'):
        try:
            if (pid.isdigit() and int(pid) != os.getpid() and os.stat(f'/proc/{pid}').st_uid == os.getuid()
                    and b'/work/harness.py' in open(f'/proc/{pid}/cmdline', 'rb').read()):
                left.append(pid)
        except OSError:
            pass
    report["left_running"] = left
    symlinked = runner.run(Job("import os\\ndef judge(e, p):\\n    os.remove('out.json')\\n"
                               f"    os.symlink({marker!r}, 'out.json')\\n", "judge", [{}, {}]))
    report["symlinked_result"] = {"ok": symlinked.ok, "reason": symlinked.reason, "detail": symlinked.detail}
    print(json.dumps(report))
""")


def interpreter_for(uid: int) -> str | None:
    """An interpreter the user may run (the venv's may live under /root)."""
    for candidate in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        probe = "import ctypes, json, os, sys; os.stat(os.path.realpath(sys.executable)); os.listdir(sys.base_prefix)"
        if candidate and _runs_as(uid, [candidate, "-c", probe]):
            return candidate
    return None


def _runs_as(uid: int, argv: list[str]) -> bool:
    try:
        return subprocess.run(_as_user(uid) + argv, capture_output=True, timeout=60, cwd="/").returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _as_user(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if os.geteuid() == 0 else []


@pytest.fixture(scope="module")
def attacked():
    uid = NOBODY if os.geteuid() == 0 else os.geteuid()
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is needed to drop to a non-root user")
    python = interpreter_for(uid)
    if python is None:
        pytest.skip(f"no Python interpreter uid {uid} may run")
    if not _runs_as(uid, [python, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); import flywheel.isolation"]):
        pytest.skip(f"uid {uid} cannot read the checkout at {ROOT}")
    folder = Path(tempfile.mkdtemp(prefix="flywheel-nonroot-"))
    folder.chmod(0o755)
    marker = folder / "world-readable.txt"
    marker.write_text("HOST-FILE-CONTENT")
    marker.chmod(0o644)
    sock_path = folder / "service.sock"
    import socket

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    sock_path.chmod(0o777)
    server.listen(5)
    try:
        done = subprocess.run(_as_user(uid) + [python, "-c", ATTACKS, str(ROOT), str(marker), str(sock_path)],
                              capture_output=True, text=True, timeout=300, cwd="/",
                              env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report.get("uid", uid) != 0
    return report


def test_a_non_root_runner_contains_code_that_undid_the_audit_hook_or_refuses(attacked):
    if "unavailable" in attacked:  # the one clear message, naming the ways out
        assert "user namespace" in attacked["unavailable"] and "FLYWHEEL_ISOLATION=container" in attacked["unavailable"]
        pytest.skip(attacked["unavailable"])
    read = attacked["read"]
    assert read["ok"] and read["network_isolated"], read
    got = read["value"]
    assert sorted(got["/"]) == sorted(set(got["/"]) & {"bin", "dev", "lib", "lib64", "sbin", "usr", "work"}), got
    assert {v for k, v in got.items() if k != "/"} == {"FileNotFoundError"}, got  # host file, repo, /etc, /proc


def test_a_non_root_runner_caps_what_the_code_writes(attacked):
    if "unavailable" in attacked:
        pytest.skip(attacked["unavailable"])
    fill = attacked["fill"]
    assert fill["ok"], fill
    written = fill["value"]
    assert written["/tmp"] == 0 and written["/"] == 0 and written["/usr"] == 0, written
    assert 0 < written["/work"] <= 16, written  # the tmpfs's 16 MB, not the host's disk


def test_a_non_root_runner_keeps_no_capability_to_leave_its_root(attacked):
    if "unavailable" in attacked:
        pytest.skip(attacked["unavailable"])
    escape = attacked["escape"]
    assert escape["ok"], escape
    got = escape["value"]
    assert got["chroot"] == got["umount"] == got["remount"] == got["tmpfs"] == got["setuid0"] == -1, got
    assert "work" in got["after_chroot"] and "home" not in got["after_chroot"], got


def test_a_non_root_runner_reaches_no_socket_and_leaves_no_process(attacked):
    if "unavailable" in attacked:
        pytest.skip(attacked["unavailable"])
    sockets = attacked["socket"]["value"]
    assert "connected" not in sockets.values(), sockets
    assert attacked["fork"]["value"]["pid"] == 1  # pid 1 of its own namespace: its end ends its descendants
    assert attacked["left_running"] == []
    symlinked = attacked["symlinked_result"]
    assert symlinked["reason"] == "forbidden" and "symbolic link" in symlinked["detail"], symlinked
