"""A pool of live replicas of one sandbox: each worker thread owns a driver session (its own app state;
for web sandboxes a browser connection, all of them sharing one Chromium when there is more than one worker)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from sandboxes.app_process import SandboxError
from sandboxes.driver import Driver
from sandboxes.drivers import open_driver
from sandboxes.manifest import SandboxManifest
from sandboxes.web import SharedBrowser

T = TypeVar("T")
R = TypeVar("R")


class SandboxPool:
    def __init__(self, manifest: SandboxManifest, workers: int = 1, share_browser: bool = True, profile: str | None = None) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self.manifest = manifest
        self.workers = workers
        self.share_browser = share_browser
        self.profile = profile  # a device profile for web sandboxes, e.g. "phone"

    def map(
        self, fn: Callable[[Driver, T], R], items: Iterable[T], on_result: Callable[[T, R], None] | None = None
    ) -> list[R]:
        """fn(driver, item) for every item, spread over the workers; results in input order.
        A sandbox that cannot start raises SandboxError after the other workers stop."""
        items = list(items)
        results: list[R | None] = [None] * len(items)
        todo: queue.Queue[int] = queue.Queue()
        for i in range(len(items)):
            todo.put(i)
        errors: list[SandboxError] = []  # list.append is atomic; workers stop at the first error
        lock = threading.Lock()
        shared = (
            SharedBrowser().start()
            if self.manifest.sandbox.kind in ("web", "desktop") and self.share_browser and self.workers > 1 and len(items) > 1
            else None
        )

        def worker() -> None:
            session = None
            try:
                session = open_driver(self.manifest, browser_endpoint=shared.endpoint if shared else None, profile=self.profile)
                driver = session.driver
                while not errors:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        break
                    results[i] = fn(driver, items[i])
                    if on_result:
                        with lock:
                            on_result(items[i], results[i])
            except SandboxError as exc:
                errors.append(exc)
            except Exception as exc:  # a bug in fn must not leave silent holes in the results
                errors.append(SandboxError(f"{self.manifest.name}: worker failed: {type(exc).__name__}: {exc}"))
            finally:
                if session is not None:
                    session.close()

        try:
            threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(self.workers, max(1, len(items))))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            if shared:
                shared.close()
        if errors:
            raise errors[0]
        return results  # type: ignore[return-value]
