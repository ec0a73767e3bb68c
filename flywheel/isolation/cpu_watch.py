"""How a process tree spends its wall time: on a CPU, waiting for one, or idle (sleeping or blocked).

A time limit on generated code must not depend on how busy the machine is. The CPU the code used and the time
it idled are its own doing; the time it spent runnable in the run queue is the machine's. The kernel keeps both
per task in /proc/<pid>/task/<tid>/schedstat (nanoseconds on a CPU, nanoseconds waiting on a run queue;
Linux with CONFIG_SCHED_INFO, which every distribution kernel has). Where it cannot be read, `sample` returns
None and the caller keeps the plain wall clock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# A run that kept wanting the CPU is given this many times its limit in wall time before the machine is blamed.
STALL_FACTOR = 6.0


@dataclass(frozen=True)
class TreeTime:
    cpu_s: float  # on a CPU, summed over every task of the tree seen so far
    waited_s: float  # runnable but waiting for a CPU, summed likewise


class TreeWatch:
    """Samples the schedstat of a process and its descendants (and, when `uid` is given, of every process of
    that uid: a throwaway uid's processes that left the tree). A task that ended keeps what it was last seen
    with, so a tree that forks short-lived children is not undercounted by more than one sampling interval."""

    def __init__(self, pid: int, uid: int | None = None) -> None:
        self.pid, self.uid = pid, uid
        self.seen: dict[tuple[int, int], tuple[int, int]] = {}

    def _pids(self) -> set[int]:
        children: dict[int, list[int]] = {}
        owned: set[int] = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
                if self.uid is not None and os.stat(f"/proc/{name}").st_uid == self.uid:
                    owned.add(int(name))
            except OSError:  # it ended meanwhile
                continue
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])  # after "pid (comm) state": ppid
            children.setdefault(ppid, []).append(int(name))
        tree, todo = set(), [self.pid]
        while todo:
            pid = todo.pop()
            if pid not in tree:
                tree.add(pid)
                todo.extend(children.get(pid, ()))
        return tree | owned

    def sample(self) -> TreeTime | None:
        """What the tree has used so far; None when the kernel does not say (no schedstat for the root)."""
        read_any = False
        for pid in self._pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        on_cpu, waited = (int(x) for x in f.read().split()[:2])
                except (OSError, ValueError):
                    continue
                read_any = True
                self.seen[(pid, int(tid))] = (on_cpu, waited)
        if not read_any and not self.seen:
            return None
        return TreeTime(sum(c for c, _ in self.seen.values()) / 1e9, sum(w for _, w in self.seen.values()) / 1e9)


def over_limit(wall_s: float, used: TreeTime | None, limit_s: float,
               stall_factor: float = STALL_FACTOR) -> tuple[str, str] | None:
    """(reason, detail) once a run must be stopped, else None. `timeout` is the code's doing — it used its
    limit in CPU-seconds, or idled (slept, blocked) that long; `unavailable` is the machine's — it kept wanting
    a CPU and did not get enough of one in `stall_factor` times its limit. Without schedstat: the wall clock."""
    if used is None:
        return ("timeout", f"still running after {wall_s:.0f}s; killed") if wall_s >= limit_s else None
    if used.cpu_s >= limit_s:
        return "timeout", f"used {used.cpu_s:.1f} CPU-s, over its {limit_s:.0f}s limit; killed"
    idle = wall_s - used.cpu_s - used.waited_s
    if idle >= limit_s:
        return "timeout", f"idle (sleeping or blocked) {idle:.0f}s of {wall_s:.0f}s, over its {limit_s:.0f}s limit; killed"
    if wall_s >= stall_factor * limit_s:
        return ("unavailable", f"not done after {wall_s:.0f}s: {used.cpu_s:.1f} CPU-s used, {used.waited_s:.0f}s waiting "
                "for a CPU (the machine is too loaded); killed, and not held against the code")
    return None
