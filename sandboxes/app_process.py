"""Runs a sandbox app as a local process on a free port, with its state in a private work dir."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from sandboxes.manifest import SandboxManifest


class SandboxError(Exception):
    """The sandbox cannot be used; the message names the problem and what to do about it."""


# How long one request to a live app may take before it counts as not answering. A refused connection
# (nothing listening, the process gone) answers at once, so this cap is only ever met by an app that took
# the request and is slow with it: on a loaded machine that is load, not a fault, so the cap is generous.
ANSWER_TIMEOUT_S = 30.0


def stop_process(proc: subprocess.Popen | None, grace_s: float = 5.0) -> None:
    """Terminate, then kill if it will not go."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppProcess:
    """One running instance of a sandbox app. State is snapshotted once ready and restored on reset."""

    def __init__(self, manifest: SandboxManifest, workdir: Path | None = None) -> None:
        self.manifest = manifest
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"flywheel-{manifest.name}-"))
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path = self.workdir / "app.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def state_path(self) -> Path | None:
        st = self.manifest.state
        return self.workdir / st.path if st.kind == "sqlite" and st.path else None

    @property
    def snapshot_path(self) -> Path:
        return self.workdir / "snapshot.sqlite"

    def start(self) -> AppProcess:
        self.port = free_port()
        values = {"python": sys.executable, "port": str(self.port), "state_path": str(self.state_path or ""),
                  "workdir": str(self.workdir)}
        try:
            cmd = [part.format(**values) for part in self.manifest.start.command]
        except KeyError as exc:
            raise SandboxError(
                f"{self.manifest.name}: start.command uses unknown placeholder {exc}; "
                "use {python}, {port}, {state_path} or {workdir}"
            ) from None
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                cmd, cwd=self.manifest.source_dir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.manifest.process_env(dict(os.environ)),
            )
        except OSError as exc:
            raise SandboxError(f"{self.manifest.name}: cannot run {cmd[0]!r} ({exc}); fix start.command") from None
        finally:
            log.close()
        self._wait_ready()
        if self.manifest.reset.strategy == "snapshot" and self.state_path:
            self.snapshot()
        return self

    def _wait_ready(self) -> None:
        """Follows the app: ready at its first HTTP 200, failed at once when it exits. The start-up cap only
        bounds an app that neither answers nor exits (generous, so a loaded machine starts slower, not never);
        each poll waits for an answer once the app has taken the connection."""
        deadline = time.monotonic() + self.manifest.start.start_timeout_s
        url = self.base_url + self.manifest.start.ready_path
        delay = 0.02
        while time.monotonic() < deadline:
            if self.proc and self.proc.poll() is not None:
                raise SandboxError(
                    f"{self.manifest.name}: the app exited with code {self.proc.returncode} before it was ready; "
                    f"last log lines: {self.log_tail()!r} — run the start command by hand to see why"
                )
            if self.healthy(timeout=max(1.0, min(ANSWER_TIMEOUT_S, deadline - time.monotonic()))):
                return
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        self.stop()
        raise SandboxError(
            f"{self.manifest.name}: no HTTP 200 from {url} within {self.manifest.start.start_timeout_s:.0f}s; "
            f"last log lines: {self.log_tail()!r} — check start.ready_path or raise start.start_timeout_s"
        )

    def healthy(self, timeout: float = ANSWER_TIMEOUT_S) -> bool:
        """The process lives and its ready path answers 200; a slow answer is waited for (up to `timeout`)."""
        if self.proc is None or self.proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(self.base_url + self.manifest.start.ready_path, timeout=timeout) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def log_tail(self, n: int = 5) -> str:
        try:
            return " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-n:])
        except OSError:
            return ""

    # ---- state --------------------------------------------------------------------------------
    def snapshot(self) -> None:
        sqlite_copy(self.state_path, self.snapshot_path)

    def restore(self) -> None:
        """Put the DB back to the snapshot: SQLite's backup API, safe while the app is serving."""
        if self.manifest.state.in_page:
            return  # the state lives in the browser: the driver's fresh context (or cleared storage) resets it
        if self.manifest.reset.strategy == "restart" or not self.state_path:
            self.stop()
            if self.state_path:
                self.state_path.unlink(missing_ok=True)
            self._clear_state_files()
            self.start()
            return
        sqlite_copy(self.snapshot_path, self.state_path)

    def _clear_state_files(self) -> None:
        """A `files` state folder in the work dir starts empty again, as on the first start."""
        st = self.manifest.state
        if st.kind == "files" and st.path:
            folder = (self.workdir / st.path).resolve()
            if folder.is_relative_to(self.workdir.resolve()) and folder != self.workdir.resolve():
                shutil.rmtree(folder, ignore_errors=True)

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None

    def close(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> AppProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def sqlite_copy(src: Path | None, dst: Path | None) -> None:
    """Copies a live SQLite database consistently (the backup API), whoever else has it open."""
    if src is None or dst is None or not src.exists():
        raise SandboxError(f"state database {src} is missing; did the app create it at state.path?")
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=ANSWER_TIMEOUT_S)
    target = sqlite3.connect(dst, timeout=ANSWER_TIMEOUT_S)
    try:
        source.backup(target)
    except sqlite3.OperationalError as exc:  # locked past the cap by a writer: the environment's, never a verdict
        raise SandboxError(f"copying the state database {src.name} failed: {exc}") from None
    finally:
        source.close()
        target.close()
