"""Runs code the LLM agent wrote (skills, verifiers) somewhere it cannot hurt the machine.

`ContainerRunner` when a Docker engine answers: no network, every capability dropped, no new
privileges, memory/pids/CPU limits, a read-only root with only the work dir writable, a time
limit. `SubprocessRunner` otherwise: rlimits (address space, processes, CPU, file size), a time limit,
a scrubbed environment, and a private root holding only the work dir and read-only binds of the
interpreter on a size-capped tmpfs, with no network: as root through a throwaway uid and namespaces it
makes itself, as any other user through an unprivileged user namespace (flywheel/isolation/userns_jail.py).
A user who is not root on an OS without unprivileged user namespaces gets one clear error instead
(`IsolationUnavailable`): use the container runner there.

A time limit is the code's CPU-seconds or its idle time, never the wall clock alone (flywheel/isolation/
cpu_watch.py): a run that keeps wanting a CPU on a loaded machine is stopped after a multiple of its limit as
`unavailable` — the machine's failing, which the gate records as `sandbox_error`, not a verdict on the code.

Both run flywheel/isolation/harness.py with the interpreter alone (`python -I -S`): the code gets JSON
arguments and returns a JSON value. The code's own misbehaviour is a RunResult with a reason code,
never an exception in the orchestrator.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from flywheel.isolation.cpu_watch import TreeWatch, over_limit

HARNESS = Path(__file__).with_name("harness.py")
JAIL = Path(__file__).with_name("userns_jail.py")
CODE_REASONS = ("timeout", "oom", "killed", "forbidden", "error")  # the code's doing: verdicts on it
REASONS = (*CODE_REASONS, "unavailable")  # the machine's: too loaded to run it, no engine, no isolation
TAIL = 2000
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
WORK_PREFIX = "flywheel-run-"


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
    reason: str | None  # None when ok; else timeout | oom | killed | forbidden | error (the code's doing) | unavailable (the machine's)
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
        shutil.copy(src, work / _plain_name(name))


def _plain_name(name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"work-dir file names are plain names, not {name!r}")
    return name


class IsolationUnavailable(RuntimeError):
    """This machine cannot contain generated code in a subprocess for this user."""


class UnsafeOutput(Exception):
    """The code left something other than a plain regular file where the runner reads its output."""


def _open_output(work: Path, name: str) -> int | None:
    """An fd on work/name if it is a regular file with one link (never following a symlink, never
    blocking on a FIFO); None if it is missing. The code chose what is there, the host reads it as root."""
    try:
        fd = os.open(work / _plain_name(name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        what = "a symbolic link" if exc.errno == errno.ELOOP else f"unreadable ({exc.strerror})"
        raise UnsafeOutput(f"the code left {name} as {what}, not a regular file") from None
    info = os.fstat(fd)
    problem = ("not a regular file" if not stat.S_ISREG(info.st_mode)
               else f"a file with {info.st_nlink} hard links" if info.st_nlink != 1 else None)
    if problem:
        os.close(fd)
        raise UnsafeOutput(f"the code left {name} as {problem}; only a plain file is copied out")
    return fd


def _read_output(work: Path, name: str) -> bytes | None:
    fd = _open_output(work, name)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _finish(job: Job, work: Path, result: RunResult) -> RunResult:
    """Reads out.json, classifies, fetches files; `result` carries what the runner saw from outside."""
    try:
        if result.reason is None:
            try:
                raw = _read_output(work, "out.json")
                out = json.loads(raw) if raw is not None else None
            except ValueError:
                out = None
            if not isinstance(out, dict):
                oom = "MemoryError" in result.stderr_tail
                result.reason = "oom" if oom else "error"
                result.detail = result.detail or f"no result from the code (exit code {result.exit_code})"
            elif not out.get("ok"):
                result.reason = out.get("kind") if out.get("kind") in CODE_REASONS else "error"  # the code cannot blame the machine
                result.detail = str(out.get("error", ""))
            else:
                result.value = out.get("value")
        if result.reason is None:
            fetched = {name: _open_output(work, name) for name in job.fetch}  # all checked before any copy
            for name, fd in fetched.items():
                if fd is not None:
                    with os.fdopen(fd, "rb") as src, open(job.fetch[name], "wb") as dst:
                        shutil.copyfileobj(src, dst)
    except UnsafeOutput as exc:
        result.reason, result.detail, result.value = "forbidden", str(exc), None
    result.ok = result.reason is None
    return result


class _WorkDir:
    """The run's folder: `root/work` is the code's work dir. As root, `root` is a tmpfs of `size_mb`
    (the cap on everything the code can write) that the subprocess runner also makes the code's `/`."""

    def __init__(self, size_mb: int) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-"))
        self.mounted = False
        if os.geteuid() == 0:
            opts = f"size={size_mb}m,mode=0755".encode()
            if _libc().mount(b"tmpfs", os.fsencode(self.root), b"tmpfs", MS_NOSUID | MS_NODEV, opts) != 0:
                err = ctypes.get_errno()
                shutil.rmtree(self.root, ignore_errors=True)
                raise OSError(err, f"cannot mount the run's tmpfs: {os.strerror(err)}")
            self.mounted = True
        self.work = self.root / "work"
        self.work.mkdir()

    def remove(self) -> None:
        if self.mounted:
            _libc().umount2(os.fsencode(self.root), MNT_DETACH)
        shutil.rmtree(self.root, ignore_errors=True)


def _remove_stale_work_dirs() -> None:
    """Unmounts and deletes the run folders of runner processes that died (a SIGKILL skips `finally`)."""
    base = os.path.realpath(tempfile.gettempdir())
    try:
        mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    except OSError:
        mounts = []
    for entry in Path(base).glob(f"{WORK_PREFIX}*-*"):
        pid = entry.name[len(WORK_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        if str(entry) in mounts and os.geteuid() == 0:
            _libc().umount2(os.fsencode(entry), MNT_DETACH)
        shutil.rmtree(entry, ignore_errors=True)


def _hostname() -> str:
    import socket

    return socket.gethostname()


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-TAIL:].decode("utf-8", errors="replace")


# ---- subprocess ----------------------------------------------------------------------------------
class SubprocessRunner:
    """rlimits + timeout + scrubbed env + a private network namespace and a private mount namespace whose
    `/` is the run's size-capped tmpfs, holding only the work dir and read-only binds of /usr and the
    interpreter (no /tmp, /home, /root, /proc, repo or lake to read or fill). As root the runner makes
    them itself and the code runs as a throwaway uid; as another user the jail makes them in an
    unprivileged user namespace and the code runs as that user without capabilities, as pid 1 of its
    own pid namespace."""

    name = "subprocess"

    def __init__(self, memory_mb: int = 1024, max_processes: int = 32, file_size_mb: int = 64,
                 work_mb: int = 256) -> None:
        self.memory_mb, self.max_processes, self.file_size_mb = memory_mb, max_processes, file_size_mb
        self.work_mb = work_mb
        self.as_root = os.geteuid() == 0
        if self.as_root:
            self.network_isolated = _network_namespace_works(True)
        else:
            works, why = _user_namespace_works()
            if not works:
                raise IsolationUnavailable(
                    f"the subprocess runner cannot contain generated code as uid {os.getuid()}: its unprivileged user "
                    f"namespace jail does not start here ({why}). Use the container runner (start a Docker engine; "
                    "FLYWHEEL_ISOLATION=container), allow user namespaces (sysctl user.max_user_namespaces=10000, "
                    "kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0), or run as root.")
            self.network_isolated = True
        _remove_stale_work_dirs()

    def run(self, job: Job) -> RunResult:
        logs = Path(tempfile.mkdtemp(prefix="flywheel-runlog-"))
        uid = _throwaway_uid() if self.as_root else os.getuid()
        started = time.monotonic()
        run_dir = None
        try:
            run_dir = _WorkDir(self.work_mb)
            work = run_dir.work
            _prepare(job, work)
            python = Path(os.path.realpath(sys.executable))
            prefix = Path(os.path.realpath(sys.base_prefix))
            env = {"HOME": "/work", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                   "PYTHONDONTWRITEBYTECODE": "1"} | _owner_env()
            outputs = work
            if self.as_root:
                _lay_out_root(run_dir.root, prefix)
                for p in [work, *work.iterdir()]:
                    os.chown(p, uid, uid)
                os.chmod(work, 0o700)
                command = [str(python), "-I", "-S", "/work/harness.py", "/work"]
            else:  # the jail copies the work dir into its namespace's tmpfs and the outputs back to `outputs`
                outputs = run_dir.root / "outbox"
                outputs.mkdir()
                (run_dir.root / "ns").mkdir()
                command = [str(python), "-I", "-S", str(JAIL), json.dumps(_jail_config(
                    run_dir.root, work, outputs, prefix, python, self.work_mb, env, ["out.json", *job.fetch]))]
            preexec = _preexec(self, job, run_dir.root, prefix, uid)
            with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
                proc = subprocess.Popen(command, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, preexec_fn=preexec, close_fds=True)
            reason, detail = _wait_within_limit(proc.wait, subprocess.TimeoutExpired,
                                                TreeWatch(proc.pid, uid if self.as_root else None), job.timeout_s)
            self._kill_all(proc, uid)
            rc = proc.returncode
            if reason is None and rc is not None and rc < 0:
                sig = -rc
                if sig == signal.SIGXCPU:
                    reason, detail = "timeout", "CPU time limit reached"
                else:
                    reason, detail = "killed", f"killed by signal {signal.Signals(sig).name}"
            elif reason is None and rc in _SETUP_EXITS:
                reason, detail = "unavailable", f"could not isolate the process: {_SETUP_EXITS[rc]}"
            result = RunResult(False, reason, detail, exit_code=rc, stdout_tail=_tail(logs / "stdout"),
                               stderr_tail=_tail(logs / "stderr"), runner=self.name,
                               network_isolated=self.network_isolated)
            if not self.network_isolated:
                result.detail = (result.detail + "; " if result.detail else "") + "no network namespace on this OS"
            result.uid = uid
            result = _finish(job, outputs, result)
        except OSError as exc:  # the runner itself could not start the code
            result = RunResult(False, "unavailable", f"cannot start the isolated process: {exc}", runner=self.name)
        finally:
            if run_dir is not None:
                run_dir.remove()
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


def _owner_env() -> dict[str, str]:
    """The CLI run's owner tag (not a secret), so a run that is SIGKILLed mid-call leaves no code running."""
    from flywheel.orphans import OWNER_ENV

    return {OWNER_ENV: os.environ[OWNER_ENV]} if OWNER_ENV in os.environ else {}


def _remove_dead_owners_containers(client) -> None:
    """Runner containers of this host's flywheel processes that died before removing them."""
    for c in client.containers.list(all=True, filters={"label": "flywheel.runner"}):
        host, _, pid = c.labels.get("flywheel.owner", "").rpartition(":")
        if host == _hostname() and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                c.remove(force=True)
            except Exception:  # another process is removing it too
                pass


# exit codes of the child when setting up its isolation failed (before the code ran)
_SETUP_EXITS = {121: "unshare failed", 122: "making mounts private failed", 123: "a bind mount failed",
                124: "chroot failed", 125: "mounting the run's tmpfs failed"}
# what the code's `/` holds besides its work dir: read-only, no setuid; /bin, /lib* follow the host's layout
_DEVICES = ("null", "zero", "urandom", "random")


def _lay_out_root(root: Path, prefix: Path) -> None:
    """Mount points inside the run's tmpfs for the binds the child makes in its own namespace."""
    for name in ("bin", "lib", "lib64", "sbin"):
        host = Path("/") / name
        if host.is_symlink():
            (root / name).symlink_to(os.readlink(host))
        elif host.is_dir():
            (root / name).mkdir()
    (root / "usr").mkdir()
    (root / prefix.relative_to("/")).mkdir(parents=True)
    (root / "dev").mkdir()
    for name in _DEVICES:
        (root / "dev" / name).touch()
    os.chmod(root, 0o755)


def _bound_dirs(prefix: Path) -> list[Path]:
    """The host folders the code's `/` holds read-only: /usr, the interpreter's prefix, /bin, /lib* when real."""
    dirs = [Path("/usr")] + ([prefix] if prefix != Path("/usr") else [])
    return dirs + [Path("/") / n for n in ("bin", "lib", "lib64", "sbin")
                   if not (Path("/") / n).is_symlink() and (Path("/") / n).is_dir()]


def _jail_config(run_root: Path, work: Path, outbox: Path, prefix: Path, python: Path, work_mb: int,
                 env: dict[str, str], outputs: list[str]) -> dict[str, Any]:
    links = {n: os.readlink(Path("/") / n) for n in ("bin", "lib", "lib64", "sbin") if (Path("/") / n).is_symlink()}
    return {"root": str(run_root / "ns"), "work": str(work), "outbox": str(outbox), "python": str(python),
            "work_mb": work_mb, "env": env, "outputs": outputs, "links": links,
            "dirs": [str(d) for d in _bound_dirs(prefix)]}


def _binds(root: Path, prefix: Path) -> list[tuple[bytes, bytes, bool]]:
    """(source, target, is_dir) of every bind the child makes before it chroots into `root`."""
    dirs = _bound_dirs(prefix)
    binds = [(os.fsencode(d), os.fsencode(root / d.relative_to("/")), True) for d in dirs]
    binds += [(os.fsencode(f"/dev/{n}"), os.fsencode(root / "dev" / n), False) for n in _DEVICES]
    return binds


def _preexec(runner: SubprocessRunner, job: Job, root: Path, prefix: Path, uid: int):
    import resource

    cpu = int(job.timeout_s) + 2
    limits = [
        (resource.RLIMIT_AS, runner.memory_mb * 2**20),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, runner.file_size_mb * 2**20),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, runner.max_processes + (0 if runner.as_root else _processes_of(os.getuid()))),
    ]
    libc = _libc()
    # everything the child needs is computed here: between fork and exec it only makes system calls
    root_flags = CLONE_NEWNS | (CLONE_NEWNET if runner.network_isolated else 0)
    binds = _binds(root, prefix) if runner.as_root else []
    read_only = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    new_root, inner_work = os.fsencode(root), b"/work"

    def preexec() -> None:  # runs in the child between fork and exec
        os.setsid()
        for kind, value in limits:
            resource.setrlimit(kind, (value, value))
        if runner.as_root:
            if libc.unshare(root_flags) != 0:
                os._exit(121)
            if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:  # nothing leaks to the host
                os._exit(122)
            for source, target, is_dir in binds:
                if libc.mount(source, target, None, MS_BIND | (MS_REC if is_dir else 0), None) != 0:
                    os._exit(123)
                if is_dir and libc.mount(None, target, None, read_only, None) != 0:
                    os._exit(123)
            if libc.chroot(new_root) != 0:
                os._exit(124)
            os.chdir(inner_work)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

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
_USERNS: list[tuple[bool, str]] = []


def _user_namespace_works() -> tuple[bool, str]:
    """Whether the jail can set itself up here as this user (checked once, by running it on an empty job)."""
    if not _USERNS:
        run_root = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-"))
        try:
            for name in ("work", "outbox", "ns"):
                (run_root / name).mkdir()
            python = Path(os.path.realpath(sys.executable))
            cfg = _jail_config(run_root, run_root / "work", run_root / "outbox",
                               Path(os.path.realpath(sys.base_prefix)), Path("/bin/true"), 1, {}, [])
            done = subprocess.run([str(python), "-I", "-S", str(JAIL), json.dumps(cfg)], capture_output=True,
                                  text=True, timeout=60, stdin=subprocess.DEVNULL)
            lines = (done.stderr.strip().splitlines() or [f"the jail exited with code {done.returncode}"])
            _USERNS.append((done.returncode == 0, "" if done.returncode == 0 else lines[-1]))
        except (OSError, subprocess.SubprocessError) as exc:
            _USERNS.append((False, str(exc)))
        finally:
            shutil.rmtree(run_root, ignore_errors=True)
    return _USERNS[0]


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

    def __init__(self, memory_mb: int = 256, pids: int = 64, cpus: float = 1.0, work_mb: int = 256) -> None:
        from sandboxes.docker_images import docker_client, ensure_base_image

        self.client = docker_client()
        self.image = ensure_base_image(self.client)
        self.memory_mb, self.pids, self.cpus, self.work_mb = memory_mb, pids, cpus, work_mb
        _remove_stale_work_dirs()
        _remove_dead_owners_containers(self.client)

    def run(self, job: Job) -> RunResult:
        from sandboxes.docker_images import container_python, host_python_mounts

        started = time.monotonic()
        container = run_dir = None
        try:
            run_dir = _WorkDir(self.work_mb)
            work = run_dir.work
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
                labels={"flywheel.runner": self.name, "flywheel.owner": f"{_hostname()}:{os.getpid()}"},
            )
            container.reload()  # its pid on the host, when the engine runs here
            pid = int(container.attrs.get("State", {}).get("Pid") or 0)
            ended: list[int] = []

            def wait(timeout: float) -> None:
                status = container.wait(timeout=timeout)  # the SDK raises a requests timeout when time is up
                ended.append(int(status.get("StatusCode", -1)))

            reason, detail = _wait_within_limit(wait, Exception, TreeWatch(pid) if _local_pid(pid, container.id) else None,
                                                job.timeout_s)
            rc = ended[0] if ended else None
            if reason is not None:
                try:
                    container.kill()
                    container.wait(timeout=30)
                except Exception:  # it ended on its own meanwhile
                    pass
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
            result = RunResult(False, "unavailable", f"container run failed: {type(exc).__name__}: {exc}"[:500],
                               runner=self.name, network_isolated=True)
        finally:
            if container is not None:
                try:
                    container.remove(force=True)
                except Exception:
                    pass
            if run_dir is not None:
                run_dir.remove()
        result.duration_s = time.monotonic() - started
        return result


# ---- time limits ---------------------------------------------------------------------------------
POLL_S = 0.25


def _wait_within_limit(wait, timed_out: type[BaseException], watch: TreeWatch | None,
                       limit_s: float) -> tuple[str | None, str]:
    """Waits for the run to end; (None, "") when it did, else the reason to stop it (cpu_watch.over_limit):
    its CPU-seconds or its idle time over the limit, or — not a verdict — a machine too loaded to run it."""
    started = time.monotonic()
    while True:
        try:
            wait(timeout=POLL_S)
            return None, ""
        except timed_out:
            pass
        stop = over_limit(time.monotonic() - started, watch.sample() if watch else None, limit_s)
        if stop:
            return stop


def _local_pid(pid: int, container_id: str) -> bool:
    """Whether `pid` is the container's process on this host (a remote engine's pids mean nothing here)."""
    try:
        return pid > 0 and container_id[:12] in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False


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
