"""Progress for output that is not a terminal (a log file, CI, a Prefect worker): a plain line every 10% or
every 30 seconds per bar, since a live progress bar prints nothing there until it ends. Same calls as
`rich.progress.Progress` (add_task, advance, update), so flows take either."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, TextIO

log = logging.getLogger("flywheel.progress")


@dataclass
class _Bar:
    description: str
    total: float | None
    completed: float = 0.0
    started: float = 0.0
    last_line: float = 0.0
    last_step: int = -1


class LineProgress:
    def __init__(self, out: TextIO | None = None, every_percent: int = 10, every_seconds: float = 30.0) -> None:
        self.out = out
        self.every_percent = every_percent
        self.every_seconds = every_seconds
        self._bars: dict[int, _Bar] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        for bar in self._bars.values():
            if bar.total is not None and bar.completed < bar.total and bar.last_step != 100:
                self._line(bar, "stopped")

    def add_task(self, description: str, total: float | None = None, **_: Any) -> int:
        now = time.monotonic()
        key = len(self._bars)
        self._bars[key] = _Bar(description, total, started=now, last_line=now, last_step=0)
        self._line(self._bars[key], "started")
        return key

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def update(self, task_id: int, *, advance: float | None = None, total: float | None = None,
               completed: float | None = None, **_: Any) -> None:
        bar = self._bars[task_id]
        if total is not None:
            bar.total = total
        if completed is not None:
            bar.completed = completed
        if advance:
            bar.completed += advance
        now = time.monotonic()
        step = int(100 * bar.completed / bar.total) // self.every_percent * self.every_percent if bar.total else -1
        if (bar.total and step > bar.last_step) or now - bar.last_line >= self.every_seconds:
            bar.last_step = max(step, bar.last_step)
            bar.last_line = now
            self._line(bar)

    def _line(self, bar: _Bar, note: str = "") -> None:
        done = f"{bar.completed:g}/{bar.total:g} ({100 * bar.completed / bar.total:.0f}%)" if bar.total else f"{bar.completed:g}"
        text = f"{bar.description}: {done}, {time.monotonic() - bar.started:.0f}s{f' ({note})' if note else ''}"
        if self.out is not None:
            print(text, file=self.out, flush=True)
        else:
            log.info(text)
