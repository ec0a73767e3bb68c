"""Runs inside the isolated process (never imported by the orchestrator): loads the generated code,
calls its entry function with JSON arguments, writes the JSON result to out.json.

Standard library only, so it runs under `python -I -S` with nothing but the interpreter reachable.
Usage: python -I -S harness.py WORK_DIR   (WORK_DIR holds code.py and in.json)

An audit hook refuses, before the operating system is even asked, what generated code has no business
doing: opening files outside the work dir and the interpreter, sockets, new programs, ctypes. That gives
a clear reason code; the OS limits around this process (user, network namespace, rlimits, container)
are what actually contain code that gets past the hook.
"""

import errno
import json
import os
import sys

FORBIDDEN_EVENTS = {
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "ctypes.dlopen",
    "ctypes.dlsym", "os.kill", "os.killpg",
}
FORBIDDEN_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENETUNREACH, errno.ENETDOWN, errno.EAFNOSUPPORT,
                    errno.EHOSTUNREACH, errno.EAGAIN, errno.EROFS}


class Forbidden(PermissionError):
    pass


def _install_hook(work: str) -> None:
    readable = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, work})
    writable = os.path.realpath(work) + os.sep
    devices = {"/dev/null", "/dev/urandom", "/dev/random"}

    def hook(event, args):
        if event in FORBIDDEN_EVENTS:
            raise Forbidden(f"forbidden in generated code: {event}")
        if event == "open" and isinstance(args[0], (str, bytes)):
            path = os.path.realpath(os.fsdecode(args[0]))
            mode = args[1] if isinstance(args[1], str) else ""
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            writing = any(c in mode for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            if path in devices:
                return
            if writing and not (path + os.sep).startswith(writable):
                raise Forbidden(f"forbidden in generated code: writing {path} outside the work dir")
            if not (path + os.sep).startswith(readable):
                raise Forbidden(f"forbidden in generated code: opening {path} outside the work dir")
        if event == "sqlite3.connect":
            db = os.fsdecode(args[0]) if args and isinstance(args[0], (str, bytes)) else ":memory:"
            if db != ":memory:" and not (os.path.realpath(db) + os.sep).startswith(writable):
                raise Forbidden(f"forbidden in generated code: a database outside the work dir ({db})")

    sys.addaudithook(hook)


def _kind(exc: BaseException) -> str:
    if isinstance(exc, MemoryError):
        return "oom"
    if isinstance(exc, PermissionError) or (isinstance(exc, OSError) and exc.errno in FORBIDDEN_ERRNOS):
        return "forbidden"
    return "error"


def main() -> int:
    work = os.path.realpath(sys.argv[1])
    os.chdir(work)
    with open(os.path.join(work, "in.json")) as fh:
        job = json.load(fh)
    with open(os.path.join(work, "code.py")) as fh:
        source = fh.read()
    out_path = os.path.join(work, "out.json")
    out = open(out_path, "w")  # opened before the hook, so the result can always be written
    if job.get("audit", True):
        _install_hook(work)
    main_pid = os.getpid()
    namespace = {"__name__": "generated"}
    try:
        exec(compile(source, "generated.py", "exec"), namespace)
        entry = namespace.get(job["entry"])
        if not callable(entry):
            raise NameError(f"the code defines no function {job['entry']!r}")
        value = entry(*job.get("args", []))
        text = json.dumps({"ok": True, "value": value})
    except BaseException as exc:  # the code's own misbehaviour is the result, not a crash of the harness
        if os.getpid() != main_pid:  # a child the code forked: only the original process reports
            os._exit(1)
        namespace.clear()
        text = json.dumps({"ok": False, "kind": _kind(exc), "error": f"{type(exc).__name__}: {exc}"[:2000]})
    if os.getpid() != main_pid:
        os._exit(0)
    out.write(text)
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
