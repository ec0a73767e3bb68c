"""Runs code the LLM agent wrote (skills, verifiers) somewhere it cannot hurt the machine.

`ContainerRunner` when a Docker engine answers: no network, every capability dropped, no new
privileges, memory/pids/CPU limits, a read-only root with only the work dir writable, a wall-clock
timeout. `SubprocessRunner` otherwise: rlimits (address space, processes, CPU, file size), a timeout,
a private temp dir as cwd and HOME, a scrubbed environment, an unprivileged user and a network
namespace with no interfaces where the OS allows (it says so in each result when it does not).

Both run flywheel/isolation/harness.py with the interpreter alone (`python -I -S`): the code gets JSON
arguments and returns a JSON value. The code's own misbehaviour is a RunResult with a reason code,
never an exception in the orchestrator.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

HARNESS = Path(__file__).with_name("harness.py")
REASONS = ("timeout", "oom", "killed", "forbidden", "error")
TAIL = 2000
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18


@dataclass
class Job:
    """One call into generated code: `entry(*args)` of `code`, with `files` copied into the work dir
    (name -> host path) and `fetch` copied out after a clean run (work-dir name -> host path)."""

    code: str
    entry: str
    args: list[Any] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    fetch: dict[str, Path] = field(default_factory=dict)
    timeout_s: float = 10.0
    audit: bool = True  # the harness's audit hook; off only to test the OS containment beneath it


@dataclass
class RunResult:
    ok: bool
    reason: str | None  # None when ok; else timeout | oom | killed | forbidden | error
    detail: str = ""
    value: Any = None  # what the entry function returned (JSON)
    exit_code: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    runner: str = ""
    network_isolated: bool = False
    duration_s: float = 0.0
    uid: int | None = None  # the uid the code ran as (subprocess runner)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("ok", "reason", "detail", "value", "exit_code", "stdout_tail",
                                               "stderr_tail", "runner", "network_isolated", "duration_s")}


class Runner(Protocol):
    name: str

    def run(self, job: Job) -> RunResult: ...


def _prepare(job: Job, work: Path) -> None:
    shutil.copy(HARNESS, work / "harness.py")
    (work / "code.py").write_text(job.code)
    (work / "in.json").write_text(json.dumps({"entry": job.entry, "args": job.args, "audit": job.audit}))
    for name, src in job.files.items():
        shutil.copy(src, work / name)


def _finish(job: Job, work: Path, result: RunResult) -> RunResult:
    """Reads out.json, classifies, fetches files; `result` carries what the runner saw from outside."""
    if result.reason is None:
        try:
            out = json.loads((work / "out.json").read_text())
        except (OSError, ValueError):
            out = None
        if out is None:
            oom = "MemoryError" in result.stderr_tail
            result.reason = "oom" if oom else "error"
            result.detail = result.detail or f"no result from the code (exit code {result.exit_code})"
        elif not out.get("ok"):
            result.reason = out.get("kind") if out.get("kind") in REASONS else "error"
            result.detail = str(out.get("error", ""))
        else:
            result.value = out.get("value")
    result.ok = result.reason is None
    if result.ok:
        for name, dst in job.fetch.items():
            if (work / name).is_file():
                shutil.copy(work / name, dst)
    return result


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-TAIL:].decode("utf-8", errors="replace")


# ---- subprocess ----------------------------------------------------------------------------------
class SubprocessRunner:
    """rlimits + timeout + private temp dir + scrubbed env; as root also a throwaway uid, a private
    mount and network namespace (the interpreter is bind-mounted into the work dir so that uid can run it)."""

    name = "subprocess"

    def __init__(self, memory_mb: int = 1024, max_processes: int = 32, file_size_mb: int = 64) -> None:
        self.memory_mb, self.max_processes, self.file_size_mb = memory_mb, max_processes, file_size_mb
        self.as_root = os.geteuid() == 0
        self.network_isolated = _network_namespace_works(self.as_root)

    def run(self, job: Job) -> RunResult:
        work = Path(tempfile.mkdtemp(prefix="flywheel-run-"))
        logs = Path(tempfile.mkdtemp(prefix="flywheel-runlog-"))
        uid = _throwaway_uid() if self.as_root else os.getuid()
        started = time.monotonic()
        try:
            _prepare(job, work)
            python = Path(os.path.realpath(sys.executable))
            prefix = Path(os.path.realpath(sys.base_prefix))
            if self.as_root:
                (work / ".python").mkdir()
                python = work / ".python" / python.relative_to(prefix)
                for p in [work, *work.iterdir()]:
                    os.chown(p, uid, uid)
            preexec = _preexec(self, job, work, prefix, uid)
            env = {"HOME": str(work), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
            with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
                proc = subprocess.Popen(
                    [str(python), "-I", "-S", str(work / "harness.py"), str(work)], cwd=work, env=env,
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=preexec, close_fds=True,
                )
            reason, detail = None, ""
            try:
                proc.wait(timeout=job.timeout_s)
            except subprocess.TimeoutExpired:
                reason, detail = "timeout", f"still running after {job.timeout_s:.0f}s; killed"
            self._kill_all(proc, uid)
            rc = proc.returncode
            if reason is None and rc is not None and rc < 0:
                sig = -rc
                if sig == signal.SIGXCPU:
                    reason, detail = "timeout", "CPU time limit reached"
                else:
                    reason, detail = "killed", f"killed by signal {signal.Signals(sig).name}"
            result = RunResult(False, reason, detail, exit_code=rc, stdout_tail=_tail(logs / "stdout"),
                               stderr_tail=_tail(logs / "stderr"), runner=self.name,
                               network_isolated=self.network_isolated)
            if not self.network_isolated:
                result.detail = (result.detail + "; " if result.detail else "") + "no network namespace on this OS"
            result.uid = uid
            result = _finish(job, work, result)
        except OSError as exc:  # the runner itself could not start the code
            result = RunResult(False, "error", f"cannot start the isolated process: {exc}", runner=self.name)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)
        result.duration_s = time.monotonic() - started
        return result

    def _kill_all(self, proc: subprocess.Popen, uid: int) -> None:
        """The process and everything it forked: by its throwaway uid as root (a fork bomb may leave its
        process group), else by process group."""
        for _ in range(50):
            if self.as_root:
                killer = os.fork()
                if killer == 0:  # kill(-1) as that uid reaches exactly that uid's processes
                    try:
                        os.setgid(uid)
                        os.setuid(uid)
                        os.kill(-1, signal.SIGKILL)
                    finally:
                        os._exit(0)
                os.waitpid(killer, 0)
            else:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if proc.poll() is None:
                try:
                    proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    continue
            if not self.as_root or not _uid_has_processes(uid):
                return


def _preexec(runner: SubprocessRunner, job: Job, work: Path, prefix: Path, uid: int):
    import resource

    cpu = int(job.timeout_s) + 2
    limits = [
        (resource.RLIMIT_AS, runner.memory_mb * 2**20),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, runner.file_size_mb * 2**20),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, runner.max_processes + (0 if runner.as_root else _processes_of(os.getuid()))),
    ]
    libc = ctypes.CDLL(None, use_errno=True)
    # everything the child needs is computed here: between fork and exec it only makes system calls
    root_flags = CLONE_NEWNS | (CLONE_NEWNET if runner.network_isolated else 0)
    source, target = os.fsencode(prefix), os.fsencode(work / ".python")

    def preexec() -> None:  # runs in the child between fork and exec
        os.setsid()
        for kind, value in limits:
            resource.setrlimit(kind, (value, value))
        if runner.as_root:
            if libc.unshare(root_flags) != 0:
                os._exit(121)
            if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:  # nothing leaks to the host
                os._exit(122)
            if libc.mount(source, target, None, MS_BIND | MS_REC, None) != 0:
                os._exit(123)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        elif runner.network_isolated:
            libc.unshare(CLONE_NEWUSER | CLONE_NEWNET)

    return preexec


_UID_LOCK = threading.Lock()
_UID_NEXT = [0]


def _throwaway_uid() -> int:
    """A uid no account uses, one per run, so limits and the final kill reach only this run's processes."""
    with _UID_LOCK:
        _UID_NEXT[0] += 1
        return 1_800_000_000 + (os.getpid() % 100_000) * 1000 + _UID_NEXT[0] % 1000


def _uid_of(pid: str) -> int | None:
    """The real uid of a live process (None for zombies: they are dead, waiting for their reaper)."""
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
        if status["State"].split()[0] == "Z":
            return None
        return int(status["Uid"].split()[0])
    except (OSError, ValueError, IndexError, KeyError):
        return None


def _processes_of(uid: int) -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit() and _uid_of(p) == uid)


def _uid_has_processes(uid: int) -> bool:
    return any(p.isdigit() and _uid_of(p) == uid for p in os.listdir("/proc"))


_NETNS: dict[bool, bool] = {}


def _network_namespace_works(as_root: bool) -> bool:
    """Whether this OS lets us give a child its own empty network namespace (checked once)."""
    if as_root not in _NETNS:
        libc = ctypes.CDLL(None, use_errno=True)
        flags = CLONE_NEWNET if as_root else CLONE_NEWUSER | CLONE_NEWNET

        def probe() -> None:
            if libc.unshare(flags) != 0:
                os._exit(3)

        try:
            done = subprocess.run(["/bin/sh", "-c", "exit 0"], preexec_fn=probe, timeout=10)
            _NETNS[as_root] = done.returncode == 0
        except (OSError, subprocess.SubprocessError):
            _NETNS[as_root] = False
    return _NETNS[as_root]


# ---- container -----------------------------------------------------------------------------------
class ContainerRunner:
    """A throwaway container per run from the offline busybox image, with the host interpreter mounted
    read-only: network none, cap_drop ALL, no-new-privileges, mem/pids/CPU limits, read-only root."""

    name = "container"

    def __init__(self, memory_mb: int = 256, pids: int = 64, cpus: float = 1.0) -> None:
        from sandboxes.docker_images import docker_client, ensure_base_image

        self.client = docker_client()
        self.image = ensure_base_image(self.client)
        self.memory_mb, self.pids, self.cpus = memory_mb, pids, cpus

    def run(self, job: Job) -> RunResult:
        from sandboxes.docker_images import container_python, host_python_mounts

        work = Path(tempfile.mkdtemp(prefix="flywheel-run-"))
        started = time.monotonic()
        container = None
        try:
            _prepare(job, work)
            for p in [work, *work.iterdir()]:
                os.chown(p, 65534, 65534) if os.geteuid() == 0 else os.chmod(p, 0o777)
            volumes = host_python_mounts() | {str(work): {"bind": "/sandbox", "mode": "rw"}}
            container = self.client.containers.run(
                self.image, [container_python(), "-I", "-S", "/sandbox/harness.py", "/sandbox"],
                detach=True, user="65534:65534", network_mode="none", cap_drop=["ALL"],
                security_opt=["no-new-privileges"], mem_limit=f"{self.memory_mb}m",
                memswap_limit=f"{self.memory_mb}m", pids_limit=self.pids, nano_cpus=int(self.cpus * 1e9),
                read_only=True, tmpfs={"/tmp": "size=16m"}, volumes=volumes, working_dir="/sandbox",
                environment={"HOME": "/sandbox", "LANG": "C.UTF-8"},
            )
            reason, detail = None, ""
            try:
                status = container.wait(timeout=job.timeout_s)
                rc = int(status.get("StatusCode", -1))
            except Exception:  # the SDK raises a requests timeout (or a connection error) when time is up
                try:
                    container.kill()
                    container.wait(timeout=30)
                except Exception:  # it ended on its own meanwhile
                    pass
                reason, detail, rc = "timeout", f"still running after {job.timeout_s:.0f}s; killed", None
            container.reload()
            state = container.attrs.get("State", {})
            if reason is None and state.get("OOMKilled"):  # an OOM-killed child can leave exit code 0
                reason, detail = "oom", f"memory limit {self.memory_mb} MB reached; OOM-killed"
            elif reason is None and rc == 137:
                reason, detail = "killed", "killed (SIGKILL)"
            result = RunResult(
                False, reason, detail, exit_code=rc, runner=self.name, network_isolated=True,
                stdout_tail=container.logs(stdout=True, stderr=False)[-TAIL:].decode("utf-8", "replace"),
                stderr_tail=container.logs(stdout=False, stderr=True)[-TAIL:].decode("utf-8", "replace"),
            )
            result = _finish(job, work, result)
        except Exception as exc:  # the engine failed us: not the code's fault, but still not a crash
            result = RunResult(False, "error", f"container run failed: {type(exc).__name__}: {exc}"[:500],
                               runner=self.name, network_isolated=True)
        finally:
            if container is not None:
                try:
                    container.remove(force=True)
                except Exception:
                    pass
            shutil.rmtree(work, ignore_errors=True)
        result.duration_s = time.monotonic() - started
        return result


# ---- choice --------------------------------------------------------------------------------------
_DEFAULT: dict[str, Runner] = {}
_DEFAULT_LOCK = threading.Lock()


def default_runner() -> Runner:
    """FLYWHEEL_ISOLATION=container|subprocess|auto (default auto: a container when an engine answers)."""
    choice = os.environ.get("FLYWHEEL_ISOLATION", "auto")
    if choice not in ("auto", "container", "subprocess"):
        raise ValueError(f"FLYWHEEL_ISOLATION={choice!r}; use auto, container or subprocess")
    with _DEFAULT_LOCK:
        if choice not in _DEFAULT:
            if choice == "subprocess":
                _DEFAULT[choice] = SubprocessRunner()
            else:
                from sandboxes.docker_images import DockerUnavailable

                try:
                    _DEFAULT[choice] = ContainerRunner()
                except DockerUnavailable:
                    if choice == "container":
                        raise
                    _DEFAULT[choice] = SubprocessRunner()
        return _DEFAULT[choice]
