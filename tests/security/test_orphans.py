"""A CLI run's child processes do not outlive it: SIGTERM ends them, and after a SIGKILL (which runs no
clean-up) the next start reaps them, even those that left its process group or session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from flywheel import orphans

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for `flywheel run ...`: claims its children like the CLI, then starts three kinds of them
# (a plain child, one in its own session, a double-forked grandchild) and prints their pids.
RUN = textwrap.dedent("""
    import os, subprocess, sys, time
    from flywheel import orphans
    tag = orphans.claim()
    try:
        plain = subprocess.Popen(["sleep", "300"])
        session = subprocess.Popen(["sleep", "301"], start_new_session=True)
        double = subprocess.Popen(["/bin/sh", "-c", "setsid sleep 302 & echo $!"], stdout=subprocess.PIPE, text=True)
        grandchild = int(double.stdout.readline())
        print(plain.pid, session.pid, grandchild, flush=True)
        time.sleep(300)
    finally:
        orphans.end_children(tag)
""")


def start_run() -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-c", RUN], stdout=subprocess.PIPE, text=True,
                            env=os.environ | {"PYTHONPATH": str(ROOT)})
    children = [int(p) for p in proc.stdout.readline().split()]
    assert len(children) == 3
    return proc, children


def alive(pid: int) -> bool:
    return orphans.process_start_time(pid) is not None


def wait_gone(pids: list[int], seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_sigterm_ends_every_child_of_the_run():
    proc, children = start_run()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert wait_gone(children) == []


def test_after_a_sigkill_the_next_start_reaps_what_the_run_left():
    proc, children = start_run()
    proc.kill()
    proc.wait(timeout=30)
    time.sleep(0.2)
    assert all(alive(p) for p in children)  # SIGKILL ran no clean-up: the children are orphans now
    reaped = orphans.reap_orphans()
    assert set(children) <= set(reaped)
    assert wait_gone(children) == []


def test_reaping_spares_the_children_of_live_runs():
    proc, children = start_run()
    try:
        assert not set(children) & set(orphans.reap_orphans())
        assert all(alive(p) for p in children)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert wait_gone(children) == []
