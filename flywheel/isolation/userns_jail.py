"""The subprocess runner's containment for a user who is not root: run by the runner as
`python -I -S userns_jail.py CONFIG_JSON`, it gives itself an unprivileged user namespace (its own uid
mapped to itself), a private mount, network and pid namespace, builds a root on a size-capped tmpfs
holding only read-only binds of /usr and the interpreter and a copy of the work dir, and starts the
harness there as pid 1 of the new pid namespace:

- the harness runs with a non-zero uid, so exec drops every capability the namespace gave: it cannot
  chroot out, mount, unmount or remount anything, and the tmpfs root is read-only except /work;
- no /tmp, /home, /proc, repo or lake exists in its root, and all it can write is the tmpfs's cap;
- when it or this process dies, the kernel kills everything it forked (pid 1 of its namespace, parent
  death signal);
- after it exits, this process copies out only the named outputs, each only if it is a plain regular
  file with one link; anything else is recreated in the outbox as what it was (a symlink, a FIFO, a
  second link) so the runner refuses it with its usual reason.

Standard library only; it imports nothing of flywheel (the runner passes everything in CONFIG_JSON).
"""

import ctypes
import errno
import json
import os
import signal
import stat
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
FLAGS = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET
DEVICES = ("null", "zero", "urandom", "random")
# exit codes when setting up failed (the runner names them)
UNSHARE, PRIVATE, BIND, CHROOT, TMPFS = 121, 122, 123, 124, 125

libc = ctypes.CDLL(None, use_errno=True)


def fail(code: int, what: str) -> None:
    err = ctypes.get_errno()
    sys.stderr.write(f"isolation setup: {what}: {os.strerror(err) if err else 'failed'}\n")
    sys.stderr.flush()
    os._exit(code)


def mount(source, target, fstype, flags, data, code, what) -> None:
    enc = lambda v: os.fsencode(v) if isinstance(v, str) else v
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        fail(code, what)


def enter_namespaces() -> None:
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(FLAGS) != 0:
        fail(UNSHARE, "unshare of user, mount, pid and network namespaces")
    with open("/proc/self/setgroups", "w") as fh:
        fh.write("deny")
    with open("/proc/self/uid_map", "w") as fh:
        fh.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as fh:
        fh.write(f"{gid} {gid} 1")
    mount("none", "/", None, MS_REC | MS_PRIVATE, None, PRIVATE, "making mounts private")


def build_root(cfg: dict) -> str:
    root = cfg["root"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, f"size={cfg['work_mb']}m,mode=0755", TMPFS, "the run's tmpfs")
    for name, link in cfg["links"].items():
        os.symlink(link, os.path.join(root, name))
    for folder in cfg["dirs"]:
        target = os.path.join(root, folder.lstrip("/"))
        os.makedirs(target, exist_ok=True)
        mount(folder, target, None, MS_BIND | MS_REC, None, BIND, f"bind of {folder}")
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None, BIND,
              f"read-only {folder}")
    os.mkdir(os.path.join(root, "dev"))
    for name in DEVICES:
        target = os.path.join(root, "dev", name)
        open(target, "w").close()
        mount(f"/dev/{name}", target, None, MS_BIND, None, BIND, f"bind of /dev/{name}")
    work = os.path.join(root, "work")
    os.mkdir(work, 0o700)
    for name in os.listdir(cfg["work"]):
        with open(os.path.join(cfg["work"], name), "rb") as src, open(os.path.join(work, name), "wb") as dst:
            dst.write(src.read())
    mount(work, work, None, MS_BIND, None, BIND, "bind of /work")  # stays writable when `/` becomes read-only
    mount(None, root, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None, BIND, "read-only /")
    return work


def run_harness(cfg: dict) -> int:
    """Fork the harness into the jail; its wait status."""
    alive_r, alive_w = os.pipe()  # EOF on alive_r: this process is gone (getppid says 0 across pid namespaces)
    child = os.fork()
    if child == 0:
        try:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.close(alive_w)
            os.set_blocking(alive_r, False)
            try:
                if os.read(alive_r, 1) == b"":
                    os._exit(1)  # died before the death signal was set
            except BlockingIOError:
                pass
            os.close(alive_r)
            if libc.chroot(os.fsencode(cfg["root"])) != 0:
                fail(CHROOT, "chroot")
            os.chdir("/work")
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            os.execve(cfg["python"], [cfg["python"], "-I", "-S", "/work/harness.py", "/work"], cfg["env"])
        finally:
            os._exit(127)
    os.close(alive_r)
    while True:
        try:
            return os.waitpid(child, 0)[1]
        except InterruptedError:
            continue


def copy_out(work: str, outbox: str, names: list) -> None:
    for name in names:
        path, dest = os.path.join(work, name), os.path.join(outbox, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                os.symlink(os.readlink(path), dest)
            continue
        with os.fdopen(fd, "rb") as src:
            info = os.fstat(src.fileno())
            if not stat.S_ISREG(info.st_mode):
                os.mkfifo(dest)
                continue
            with open(dest, "xb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            if info.st_nlink != 1:
                os.link(dest, dest + ".second-link")


def main() -> None:
    cfg = json.loads(sys.argv[1])
    enter_namespaces()
    work = build_root(cfg)
    status = run_harness(cfg)
    copy_out(work, cfg["outbox"], cfg["outputs"])
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
