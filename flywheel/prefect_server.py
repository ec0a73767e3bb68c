"""A long-lived local Prefect server that every `flywheel` command reuses, so no run pays for starting one.

`flywheel server start` launches `prefect server start` on 127.0.0.1 in its own session with its state
(SQLite `serve.db`, `server.log`, `server.pid`) under PREFECT_HOME; `stop` and `status` find it by the
pidfile. Before a flow imports Prefect, the CLI calls `use_running_server()`: when the pidfile's server
answers, PREFECT_API_URL points at it; otherwise Prefect falls back to an ephemeral in-process server,
given a start-up timeout that fits a loaded machine. This module never imports prefect.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_PORT = 4299
# Measured on a loaded 2-core box: an ephemeral server took 150-224 s to start (ENVIRONMENT.md).
EPHEMERAL_TIMEOUT_S = 300
QUIET = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_UI_ENABLED": "false",
}


@dataclass(frozen=True)
class ServerState:
    pid: int
    port: int
    api_url: str


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or ".prefect").resolve()


def api_answers(api_url: str, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout_s) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _pidfile(home: Path) -> Path:
    return home / "server.pid"


def read_state(home: Path) -> ServerState | None:
    """The pidfile's server if its process is still a Prefect server (a reused pid is not ours)."""
    try:
        state = ServerState(**json.loads(_pidfile(home).read_text()))
        cmdline = Path(f"/proc/{state.pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, TypeError):
        return None
    return state if b"prefect" in b" ".join(cmdline) and b"server" in cmdline else None


def running(home: Path, timeout_s: float = 2.0) -> ServerState | None:
    state = read_state(home)
    return state if state is not None and api_answers(state.api_url, timeout_s) else None


def start(port: int = DEFAULT_PORT, home: Path | None = None, timeout_s: float = 300.0) -> tuple[ServerState, bool]:
    """Start the server in the background (or find the one already running); (its state, whether it is new)."""
    home = home or prefect_home()
    if (state := running(home)) is not None:
        return state, False
    api_url = f"http://127.0.0.1:{port}/api"
    if api_answers(api_url):
        raise RuntimeError(f"another Prefect server already answers at {api_url}: use it with "
                           f"`export PREFECT_API_URL={api_url}`, or start ours on another --port")
    home.mkdir(parents=True, exist_ok=True)
    env = os.environ | QUIET | {
        "PREFECT_HOME": str(home),
        "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{home / 'serve.db'}",
    }
    env.pop("PREFECT_API_URL", None)
    log = home / "server.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port),
             "--analytics-off", "--no-ui"],
            env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    state = ServerState(proc.pid, port, api_url)
    _pidfile(home).write_text(json.dumps(asdict(state)))
    deadline = time.monotonic() + timeout_s
    while not api_answers(api_url):
        if proc.poll() is not None or time.monotonic() > deadline:
            _end(proc.pid)
            _pidfile(home).unlink(missing_ok=True)
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            why = f"exited with code {proc.returncode}" if proc.returncode is not None else f"did not answer in {timeout_s:.0f} s"
            raise RuntimeError(f"the Prefect server {why}; last lines of {log}:\n  " + "\n  ".join(tail))
        time.sleep(0.5)
    return state, True


def stop(home: Path | None = None) -> ServerState | None:
    """Stop the pidfile's server (its whole process group); the state it had, or None if none ran."""
    home = home or prefect_home()
    state = read_state(home)
    if state is not None:
        _end(state.pid)
    _pidfile(home).unlink(missing_ok=True)
    return state


def _end(pid: int, grace_s: float = 20.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not our child: poll for it
            if not Path(f"/proc/{pid}").exists():
                return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def use_running_server(home: Path | None = None) -> str | None:
    """Point PREFECT_API_URL at our running server (before prefect is imported); the URL in use, or None
    when Prefect will start an ephemeral server, with a start-up timeout that fits a loaded machine."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    state = running(home or prefect_home())
    if state is not None:
        os.environ["PREFECT_API_URL"] = state.api_url
        return state.api_url
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(EPHEMERAL_TIMEOUT_S))
    return None
