"""Opens a live driver for a sandbox by its manifest: the one place that maps a sandbox kind (and its
isolation) to the driver that runs it. New kinds register an opener in OPENERS."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack

from sandboxes.app_process import AppProcess, SandboxError
from sandboxes.container import open_container_driver
from sandboxes.driver import Driver
from sandboxes.manifest import SandboxManifest


class DriverSession:
    """A started driver plus everything started for it; close() stops them all, newest first."""

    def __init__(self, driver: Driver, stack: ExitStack) -> None:
        self.driver = driver
        self._stack = stack

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Driver:
        return self.driver

    def __exit__(self, *exc: object) -> None:
        self.close()


Opener = Callable[[SandboxManifest, ExitStack, str | None], Driver]


def _open_web(manifest: SandboxManifest, stack: ExitStack, browser_endpoint: str | None, profile: str | None = None) -> Driver:
    from sandboxes.device_profiles import device_profile
    from sandboxes.web import BrowserHost, WebDriver

    app = AppProcess(manifest)
    stack.callback(app.close)
    app.start()
    host = BrowserHost(endpoint=browser_endpoint)
    stack.callback(host.close)
    host.start()
    driver = WebDriver(app, host, profile=device_profile(profile) if profile else None)
    stack.callback(driver.close)
    return driver


def _open_android(manifest: SandboxManifest, stack: ExitStack, _browser_endpoint: str | None) -> Driver:
    from sandboxes.android import open_android_driver

    driver = open_android_driver(manifest)  # leases a device from [android] / FLYWHEEL_ADB_*
    stack.callback(driver.close)
    return driver


# kind -> opener(manifest, stack, browser_endpoint); the opener registers its own clean-up on the stack
OPENERS: dict[str, Opener] = {"web": _open_web, "desktop": open_container_driver, "android": _open_android}


def open_driver(manifest: SandboxManifest, browser_endpoint: str | None = None, profile: str | None = None) -> DriverSession:
    """A live driver for the sandbox; raises SandboxError (having stopped what it started) when it cannot.
    `profile` (e.g. "phone") runs a web sandbox under a device profile (sandboxes/device_profiles.py)."""
    if profile and manifest.sandbox.kind != "web":
        raise SandboxError(f"{manifest.name}: device profiles (--profile {profile}) apply to web sandboxes only")
    opener = OPENERS.get(manifest.sandbox.kind)
    if opener is None:
        raise SandboxError(
            f"{manifest.name}: no driver for sandbox kind {manifest.sandbox.kind!r}; "
            f"kinds with a driver: {', '.join(sorted(OPENERS))}"
        )
    stack = ExitStack()
    try:
        return DriverSession(opener(manifest, stack, browser_endpoint, **({"profile": profile} if profile else {})), stack)
    except BaseException:
        stack.close()
        raise
