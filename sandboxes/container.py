"""Container sandboxes: the app runs in a Docker container beside a shell, for hybrid GUI + CLI work.

Every container runs with no network (`network_mode="none"`), all capabilities dropped, no new
privileges, as an unprivileged user, with memory, pids and CPU limits from the manifest's
`[container]` table. Reset is a fresh container from the image with the workspace seed copied in.

With no network the app cannot listen on a port anyone reaches, so it listens on a unix socket in a
private host folder bind-mounted into the container, and a small forwarder on 127.0.0.1 hands the
browser's TCP connections to that socket. The browser side is the ordinary WebDriver (composition);
shell actions run through `docker exec` in the workspace; file probes and file skills go through the
engine's archive API, so they work whatever tools the image lacks.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import math
import os
import selectors
import shutil
import socket
import tarfile
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from string import Template
from typing import Any

from sandboxes.actions import Action, Shell
from sandboxes.app_process import ANSWER_TIMEOUT_S, SandboxError
from sandboxes.docker_images import (
    BASE_IMAGE,
    DockerUnavailable,
    container_python,
    docker_client,
    ensure_base_image,
    host_python_mounts,
)
from sandboxes.driver import ActionResult, Health, Observation
from sandboxes.manifest import SandboxManifest
from sandboxes.skills import InjectionError, Skill
from verifier_templates.base import Probe

SOCKET_DIR = "/run/flywheel"  # inside the container; a private host folder is mounted here
APP_MOUNT = "/app"  # the sandbox's source, read-only
MAX_PROBE_TEXT = 256_000
OUTPUT_LIMIT = 64_000  # bytes of stdout / stderr kept per shell action
TIMEOUT_EXIT = 137  # busybox `timeout -s KILL` kills the command: 128 + SIGKILL


class UnixForwarder:
    """Forwards 127.0.0.1:<port> to a unix socket, one thread, so a browser reaches an app that has no network."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.port = 0
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread: threading.Thread | None = None
        self._peers: dict[socket.socket, socket.socket] = {}

    def start(self) -> UnixForwarder:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._run, name=f"forward-{self.port}", daemon=True)
        self._thread.start()
        return self

    def retarget(self, socket_path: Path) -> None:
        """New connections go to this socket (a fresh container's); open ones are closed."""
        self.socket_path = socket_path
        self.drop_connections()

    def drop_connections(self) -> None:
        """Close every open connection (the app behind them was replaced); the browser reconnects."""
        self._wake_w.send(b"d")

    def close(self) -> None:
        if self._thread is not None:
            self._wake_w.send(b"q")
            self._thread.join(timeout=5)
            self._thread = None
        for s in (self._listener, self._wake_r, self._wake_w):
            if s is not None:
                s.close()

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ, "accept")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while True:
                for key, _ in sel.select(timeout=1.0):
                    if key.data == "accept":
                        self._accept(sel)
                    elif key.data == "wake":
                        command = self._wake_r.recv(16)
                        for s in list(self._peers):
                            self._drop(sel, s)
                        if b"q" in command:
                            return
                    elif key.fileobj in self._peers:
                        self._pump(sel, key.fileobj)
        finally:
            for s in list(self._peers):
                self._drop(sel, s)
            sel.close()

    def _accept(self, sel: selectors.BaseSelector) -> None:
        client, _ = self._listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.settimeout(5)
            upstream.connect(str(self.socket_path))
        except OSError:
            client.close()
            upstream.close()
            return
        for s in (client, upstream):
            s.settimeout(30)
        self._peers[client], self._peers[upstream] = upstream, client
        sel.register(client, selectors.EVENT_READ)
        sel.register(upstream, selectors.EVENT_READ)

    def _pump(self, sel: selectors.BaseSelector, s: socket.socket) -> None:
        try:
            data = s.recv(65536)
            if data:
                self._peers[s].sendall(data)
                return
        except OSError:
            pass
        self._drop(sel, s)

    def _drop(self, sel: selectors.BaseSelector, s: socket.socket) -> None:
        peer = self._peers.pop(s, None)
        for x in (s, peer):
            if x is None:
                continue
            self._peers.pop(x, None)
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def workspace_path(workspace_dir: str, rel: str) -> str:
    """An absolute path inside the workspace; refuses absolute paths and `..` (a skill or probe stays inside)."""
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts:
        raise ValueError(f"path {rel!r} must be relative to the workspace, without '..'")
    return str(PurePosixPath(workspace_dir) / p)


def render_files_skill(skill: Skill, args: dict[str, Any]) -> dict[str, bytes]:
    """A `files` skill: {"files": {path template: content template}}, `$name` placeholders filled from args."""
    files = skill.spec.get("files")
    if not isinstance(files, dict) or not files:
        raise InjectionError(f"skill {skill.name}: a files skill needs a non-empty 'files' mapping of path to content")
    try:
        return {Template(p).substitute(args): Template(c).substitute(args).encode() for p, c in files.items()}
    except (KeyError, ValueError) as exc:
        raise InjectionError(f"skill {skill.name}: argument {exc} missing or malformed; pass it in the injection args") from None


@dataclass
class _Booted:
    """A started container whose app answers on the unix socket in its own private folder."""

    container: Any
    socket_dir: Path

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / "app.sock"


class ContainerApp:
    """One sandbox app in a container, shaped like AppProcess (start, healthy, restore, stop, close,
    base_url, log_tail) so the WebDriver and the rollout use it unchanged.

    With `warm_spare`, the next fresh container boots in the background while an episode runs, so a reset
    only swaps it in (the forwarder points at the new socket) and the old one is removed off the clock."""

    def __init__(self, manifest: SandboxManifest, client: Any = None, warm_spare: bool = True) -> None:
        self.manifest = manifest
        self.spec = manifest.container
        self.client = client
        self.warm_spare = warm_spare
        self.forwarder: UnixForwarder | None = None
        self._current: _Booted | None = None
        self._spare: _Booted | BaseException | None = None
        self._spare_thread: threading.Thread | None = None
        self._spare_client: Any = None  # its own engine connection: the spare boots beside the episode
        self._rundir: Path | None = None
        uid = os.getuid()
        # Unprivileged inside: the host user's ids, or nobody when the host runs as root.
        self.user = f"{uid}:{os.getgid()}" if uid != 0 else "65534:65534"

    state_path = None  # no database: the state is the workspace's files

    @property
    def container(self) -> Any:
        return self._current.container if self._current else None

    @property
    def socket_path(self) -> Path | None:
        return self._current.socket_path if self._current else None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.forwarder.port if self.forwarder else 0}"

    @property
    def workspace_dir(self) -> str:
        return self.spec.workspace_dir

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> ContainerApp:
        if self.manifest.start is None:
            raise SandboxError(f"{self.manifest.name}: a container sandbox needs a [start] command")
        try:
            if self.client is None:
                self.client = docker_client()
            if self.spec.image == BASE_IMAGE:
                ensure_base_image(self.client)
        except DockerUnavailable as exc:
            raise SandboxError(f"{self.manifest.name}: {exc}") from None
        self._remove_orphans()
        if self._rundir is None:
            self._rundir = Path(tempfile.mkdtemp(prefix=f"flywheel-{self.manifest.name}-"))
        self._current = self._boot(self.client)
        if self.forwarder is None:
            self.forwarder = UnixForwarder(self._current.socket_path).start()
        else:
            self.forwarder.retarget(self._current.socket_path)
        self._boot_spare()
        return self

    def _boot(self, client: Any) -> _Booted:
        values = {"python": container_python(), "socket": f"{SOCKET_DIR}/app.sock", "workspace": self.workspace_dir}
        try:
            command = [part.format(**values) for part in self.manifest.start.command]
        except KeyError as exc:
            raise SandboxError(
                f"{self.manifest.name}: start.command uses unknown placeholder {exc}; in a container use "
                "{python}, {socket} or {workspace}"
            ) from None
        socket_dir = Path(tempfile.mkdtemp(prefix="run-", dir=self._rundir))
        if os.getuid() == 0:
            os.chown(socket_dir, 65534, 65534)
        volumes = host_python_mounts() | {
            str(self.manifest.source_dir): {"bind": APP_MOUNT, "mode": "ro"},
            str(socket_dir): {"bind": SOCKET_DIR, "mode": "rw"},
        }
        booted = _Booted(None, socket_dir)
        try:
            booted.container = client.containers.create(
                self.spec.image, command, detach=True, user=self.user, working_dir=self.workspace_dir,
                network_mode="none", cap_drop=["ALL"], security_opt=["no-new-privileges"],
                mem_limit=self.spec.mem_limit, memswap_limit=self.spec.mem_limit, pids_limit=self.spec.pids_limit,
                nano_cpus=int(self.spec.cpus * 1e9), volumes=volumes,
                environment={"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"},
                labels={"flywheel.sandbox": self.manifest.name, "flywheel.owner": f"{socket.gethostname()}:{os.getpid()}"},
            )
            booted.container.put_archive("/", self._seed_tar())
            booted.container.start()
            self._wait_ready(booted)
        except SandboxError:
            _dispose(booted)
            raise
        except Exception as exc:  # the SDK's APIError, ImageNotFound, ...
            _dispose(booted)
            raise SandboxError(f"{self.manifest.name}: the container would not start ({exc}); check [container] in sandbox.toml") from None
        return booted

    def _boot_spare(self, dispose: _Booted | None = None) -> None:
        if not self.warm_spare:
            _dispose(dispose)
            return

        def boot() -> None:
            _dispose(dispose)
            try:
                if self._spare_client is None:
                    self._spare_client = docker_client()
                self._spare = self._boot(self._spare_client)
            except BaseException as exc:
                self._spare = exc

        self._spare_thread = threading.Thread(target=boot, name=f"spare-{self.manifest.name}", daemon=True)
        self._spare_thread.start()

    def _take_spare(self) -> _Booted | None:
        if self._spare_thread is not None:
            self._spare_thread.join()
            self._spare_thread = None
        spare, self._spare = self._spare, None
        if isinstance(spare, _Booted) and _answers(spare, self.manifest.start.ready_path, 2.0):
            return spare
        if isinstance(spare, _Booted):
            _dispose(spare)
        return None

    def _remove_orphans(self) -> None:
        """Containers of this host's flywheel processes that died without closing them (killed runs)."""
        host = socket.gethostname()
        for c in self.client.containers.list(all=True, filters={"label": "flywheel.owner"}):
            owner_host, _, pid = c.labels.get("flywheel.owner", "").rpartition(":")
            if owner_host == host and pid.isdigit() and not _alive(int(pid)):
                try:
                    c.remove(force=True)
                except Exception:  # another process is removing it too
                    pass

    def _seed_tar(self) -> bytes:
        """The workspace folder, owned by the container's user, with the seed's files when there is one."""
        files: dict[str, bytes] = {}
        if self.spec.workspace_seed:
            seed = self.manifest.source_dir / self.spec.workspace_seed
            if not seed.is_dir():
                raise SandboxError(f"{self.manifest.name}: container.workspace_seed {self.spec.workspace_seed!r} is not a folder in the source")
            files = {p.relative_to(seed).as_posix(): p.read_bytes() for p in sorted(seed.rglob("*")) if p.is_file()}
        return self._tar(files, include_root=True)

    def _tar(self, files: dict[str, bytes], include_root: bool = False) -> bytes:
        uid, gid = (int(x) for x in self.user.split(":"))
        root = PurePosixPath(self.workspace_dir.lstrip("/"))
        dirs = {root} if include_root else set()
        for rel in files:
            dirs.update(p for p in (root / rel).parents if root in p.parents)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for d in sorted(dirs, key=lambda p: len(p.parts)):
                info = tarfile.TarInfo(str(d))
                info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, 0o755, uid, gid, time.time()
                tar.addfile(info)
            for rel, data in files.items():
                info = tarfile.TarInfo(str(root / rel))
                info.size, info.mode, info.uid, info.gid, info.mtime = len(data), 0o644, uid, gid, time.time()
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def _wait_ready(self, booted: _Booted) -> None:
        deadline = time.monotonic() + self.manifest.start.start_timeout_s
        delay = 0.02
        while time.monotonic() < deadline:
            if _answers(booted, self.manifest.start.ready_path, max(1.0, min(ANSWER_TIMEOUT_S, deadline - time.monotonic()))):
                return
            booted.container.reload()
            if booted.container.status not in ("created", "running"):
                raise SandboxError(
                    f"{self.manifest.name}: the app in the container exited before it was ready; last log lines: "
                    f"{_logs(booted.container)!r} — run the start command in the image by hand to see why"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        raise SandboxError(
            f"{self.manifest.name}: no HTTP 200 from {self.manifest.start.ready_path} on the app's socket within "
            f"{self.manifest.start.start_timeout_s:.0f}s; last log lines: {_logs(booted.container)!r} — raise "
            "start.start_timeout_s or fix the app"
        )

    def healthy(self, timeout: float = ANSWER_TIMEOUT_S) -> bool:
        if self._current is None:
            return False
        try:
            self._current.container.reload()
        except Exception:
            return False
        return self._current.container.status == "running" and _answers(self._current, self.manifest.start.ready_path, timeout)

    def restore(self) -> None:
        """A fresh container from the image with the seed copied in: nothing of the last episode survives."""
        old = self._current
        self._current = self._take_spare() or self._boot(self.client)
        self.forwarder.retarget(self._current.socket_path)
        self._boot_spare(dispose=old)

    def stop(self) -> None:
        spare = self._take_spare()
        for booted in (spare, self._current):
            _dispose(booted)
        self._current = None

    def close(self) -> None:
        self.stop()
        if self._spare_client is not None:
            self._spare_client.close()
            self._spare_client = None
        if self.forwarder is not None:
            self.forwarder.close()
            self.forwarder = None
        if self._rundir is not None:
            shutil.rmtree(self._rundir, ignore_errors=True)
            self._rundir = None

    def log_tail(self, n: int = 5) -> str:
        return _logs(self.container, n)

    def __enter__(self) -> ContainerApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- shell and files ------------------------------------------------------------------------
    def exec(self, command: str, cwd: str | None = None, timeout: float = 60.0) -> dict[str, Any]:
        """Runs `sh -c command` in the workspace (or cwd, relative to it) as the sandbox's user; the
        command is killed after `timeout` seconds. Returns exit_code, stdout, stderr, timed_out."""
        if self.container is None:
            raise SandboxError(f"{self.manifest.name}: no running container for a shell command")
        workdir = workspace_path(self.workspace_dir, cwd) if cwd and not cwd.startswith("/") else (cwd or self.workspace_dir)
        seconds = max(1, math.ceil(timeout))
        api = self.client.api
        previous, api.timeout = api.timeout, seconds + 30  # the engine answers after the command ends
        started = time.monotonic()
        try:
            result = self.container.exec_run(
                ["timeout", "-s", "KILL", str(seconds), "sh", "-c", command], workdir=workdir, user=self.user,
                demux=True, environment={"HOME": "/tmp"},
            )
        finally:
            api.timeout = previous
        out, err = result.output if result.output else (None, None)
        return {
            "exit_code": result.exit_code,
            "stdout": (out or b"")[-OUTPUT_LIMIT:].decode(errors="replace"),
            "stderr": (err or b"")[-OUTPUT_LIMIT:].decode(errors="replace"),
            # 137 is also the OOM killer's SIGKILL: only a command that ran its full time was timed out
            "timed_out": result.exit_code == TIMEOUT_EXIT and time.monotonic() - started >= seconds - 0.5,
        }

    def read_file(self, rel: str) -> dict[str, Any]:
        """What a file probe sees: exists, size, sha256 and (for text) the content; a folder lists its names."""
        import docker.errors

        path = workspace_path(self.workspace_dir, rel)
        try:
            stream, _ = self.container.get_archive(path)
        except docker.errors.NotFound:
            return {"path": rel, "exists": False}
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            members = tar.getmembers()
            top = members[0]
            if top.isdir():
                names = sorted(m.name.split("/", 1)[1] for m in members[1:] if m.name.count("/") == 1)
                return {"path": rel, "exists": True, "is_dir": True, "entries": names}
            data = tar.extractfile(top).read() if top.isfile() else b""
        try:
            text = data[:MAX_PROBE_TEXT].decode()
        except UnicodeDecodeError:
            text = None
        return {"path": rel, "exists": True, "is_dir": False, "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "text": text}

    def write_files(self, files: dict[str, bytes]) -> None:
        for rel in files:
            workspace_path(self.workspace_dir, rel)  # refuses paths that leave the workspace
        self.container.put_archive("/", self._tar(files))


def _answers(booted: _Booted, path: str, timeout: float) -> bool:
    conn = _UnixHTTPConnection(booted.socket_path, timeout)
    try:
        conn.request("GET", path)
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _dispose(booted: _Booted | None) -> None:
    if booted is None:
        return
    if booted.container is not None:
        try:
            booted.container.remove(force=True)
        except Exception:  # already gone
            pass
    shutil.rmtree(booted.socket_dir, ignore_errors=True)


def _logs(container: Any, n: int = 5) -> str:
    try:
        text = container.logs(tail=n).decode(errors="replace") if container is not None else ""
    except Exception:
        return ""
    return " | ".join(text.strip().splitlines()[-n:])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ContainerDriver:
    """The driver of a container sandbox: GUI actions through a WebDriver on the app's forwarded port,
    shell actions through `docker exec`, file probes and file skills through the engine."""

    def __init__(self, app: ContainerApp, host: Any, **web_options: Any) -> None:
        from sandboxes.web import WebDriver

        self.app = app
        self.manifest = app.manifest
        self.web = WebDriver(app, host, **web_options)

    @property
    def answer(self) -> str | None:
        return self.web.answer

    @property
    def user_calls(self) -> list[str]:
        return self.web.user_calls

    def reset(self, new_context: bool = True) -> None:
        self.web.reset(new_context)

    def inject(self, skill: Skill, args: dict[str, Any]) -> None:
        if skill.kind != "files":
            raise InjectionError(f"skill kind {skill.kind!r} is not supported for a container sandbox; use 'files'")
        try:
            self.app.write_files(render_files_skill(skill, args))
        except ValueError as exc:
            raise InjectionError(f"skill {skill.name}: {exc}") from None
        if self.web.page is not None and self.web.page.url.startswith(self.app.base_url):
            self.web.page.reload()

    def observe(self, screenshot: bool = True) -> Observation:
        return self.web.observe(screenshot)

    def act(self, action: Action) -> ActionResult:
        if not isinstance(action, Shell):
            return self.web.act(action)
        try:
            out = self.app.exec(action.command, action.cwd, action.timeout)
        except Exception as exc:  # a failed action is a result, never a crash of the episode
            return ActionResult(ok=False, error=f"shell: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        if out["timed_out"]:
            return ActionResult(ok=False, error=f"shell: killed after {action.timeout:g}s", details=out)
        if out["exit_code"] != 0:
            code = out["exit_code"]
            tail = out["stderr"].strip().splitlines()[-1:] or [f"killed by signal {code - 128}" if code > 128 else ""]
            return ActionResult(ok=False, error=f"shell: exit {code}: {tail[0][:200]}", details=out)
        return ActionResult(ok=True, details=out)

    def probe(self, probe: Probe) -> Any:
        if probe.kind == "file":
            return self.app.read_file(probe.query)
        return self.web.probe(probe)

    def health(self) -> Health:
        if not self.app.healthy():
            return Health(False, f"the app's container is not answering; log: {self.app.log_tail()}")
        return self.web.health()

    def close(self) -> None:
        self.web.close()


def open_container_driver(manifest: SandboxManifest, stack: ExitStack, browser_endpoint: str | None) -> ContainerDriver:
    """The OPENERS entry for container sandboxes: a started container app, a browser, a driver."""
    from sandboxes.web import BrowserHost

    if manifest.start is None or manifest.start.isolation != "container":
        raise SandboxError(f"{manifest.name}: a {manifest.sandbox.kind} sandbox runs in a container; set start.isolation = \"container\"")
    app = ContainerApp(manifest)
    stack.callback(app.close)
    app.start()
    host = BrowserHost(endpoint=browser_endpoint)
    stack.callback(host.close)
    host.start()
    driver = ContainerDriver(app, host)
    stack.callback(driver.close)
    return driver
