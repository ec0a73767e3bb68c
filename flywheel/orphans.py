"""Processes a CLI run started (Prefect server, apps, browsers, flow runs), found again by a tag in their
environment, so that none outlives the run: ended on SIGTERM/SIGINT or a normal exit, and reaped by the
next start when the run was SIGKILLed (which skips every `finally`).

The CLI puts `FLYWHEEL_RUN_OWNER=<pid>:<start time>` in its environment; every child inherits it (the
subprocess runner passes it on too), however deep and whatever process group it makes. Containers have
their own owner label (sandboxes/container.py). The start time guards against a reused pid.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

OWNER_ENV = "FLYWHEEL_RUN_OWNER"


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[19] if fields[0] != "Z" else None


def owner_tag(pid: int | None = None) -> str:
    pid = pid or os.getpid()
    return f"{pid}:{process_start_time(pid)}"


def owner_alive(tag: str) -> bool:
    """Whether the process an `owner_tag` names still runs (the same pid started at the same time)."""
    return _alive(tag)


def _alive(tag: str) -> bool:
    pid, _, started = tag.partition(":")
    return pid.isdigit() and process_start_time(int(pid)) == started


def _tagged() -> dict[int, str]:
    """pid -> owner tag of every process whose environment carries one (that we may read)."""
    found = {}
    marker = OWNER_ENV.encode() + b"="
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        for var in environ.split(b"\0"):
            if var.startswith(marker):
                found[int(entry)] = var[len(marker):].decode(errors="replace")
                break
    return found


def _kill(pids: list[int]) -> list[int]:
    """SIGTERM, a moment to exit, then SIGKILL for what is left; the pids that were signalled."""
    signalled = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            signalled.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(process_start_time(p) for p in signalled):
        time.sleep(0.05)
    for pid in signalled:
        if process_start_time(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    return signalled


def reap_orphans() -> list[int]:
    """Ends the processes of runs whose CLI is gone (it was SIGKILLed); returns their pids."""
    orphans = [pid for pid, tag in _tagged().items() if not _alive(tag)]
    return _kill(orphans)


RESCAN_PAUSE = 0.05  # seconds before the last scan of /proc that ends a run's children


def end_children(tag: str) -> list[int]:
    """Ends every process still carrying this run's tag (called as the run exits, however it exits).
    /proc is scanned again after each round, and once more after a pause, until a scan finds no process of
    the run not yet signalled: one scan misses a process forked after it lists /proc, or mid-exec while it
    reads its environment (an empty read). A `setsid sleep &` started just before SIGTERM outlived the run
    about one time in five on a loaded 2-core machine. A process that survives its signals (stuck in the
    kernel) is signalled once, not again and again."""
    signalled: list[int] = []

    def unsignalled() -> list[int]:
        return [pid for pid, t in _tagged().items() if t == tag and pid not in signalled and process_start_time(pid)]

    while True:
        left = unsignalled()
        if not left and signalled:
            time.sleep(RESCAN_PAUSE)  # what was mid-exec has its environment by now
            left = unsignalled()
        if not left:
            return signalled
        signalled += _kill(left) or left  # (a pid gone before its signal is not looked for again)


def claim() -> str:
    """Tags this process's environment so everything it starts from now on is found again; returns the tag.
    SIGTERM then unwinds like Ctrl-C (SystemExit), so `finally` blocks close apps and browsers."""
    tag = owner_tag()
    os.environ[OWNER_ENV] = tag

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    return tag
