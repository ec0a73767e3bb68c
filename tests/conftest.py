"""Shared fixtures. Real components only: a real lake on disk, real app processes, real Chromium."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_UI_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test server per session, shared by every test that runs a flow."""
    from prefect.testing.utilities import prefect_test_harness

    from flywheel.prefect_server import EPHEMERAL_TIMEOUT_S

    with prefect_test_harness(server_startup_timeout=EPHEMERAL_TIMEOUT_S):  # minutes on a loaded machine
        yield


@pytest.fixture
def lake(tmp_path):
    from lake import Lake

    return Lake(tmp_path / "lake")


@pytest.fixture(scope="session")
def shop_manifest():
    from sandboxes.manifest import load_manifest

    return load_manifest(ROOT / "sandboxes" / "shop")


@pytest.fixture(scope="session")
def browser_host():
    from sandboxes.web import BrowserHost

    host = BrowserHost().start()
    yield host
    host.close()


def npm_sandbox(name: str):
    """The manifest of a shipped sandbox whose app comes from npm, fetched on first use; when npm or the
    registry cannot be reached the calling test is skipped with the reason printed."""
    from sandboxes.manifest import load_manifest
    from sandboxes.npm_source import SourceFetchError

    manifest = load_manifest(ROOT / "sandboxes" / name)
    try:
        manifest.source_dir  # noqa: B018 - fetches the package on first use
    except SourceFetchError as exc:
        print(f"SKIPPED: cannot fetch {manifest.source.npm}: {exc}")
        pytest.skip(f"cannot fetch {manifest.source.npm} from the npm registry: {exc}")
    return manifest


def in_own_thread(fn):
    """fn() in a new thread, its result returned and its error re-raised. Playwright's sync API allows one
    instance per thread and the session's browser_host holds the main thread's, so a test that opens a
    driver of its own (open_driver starts a Playwright) runs it through here."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


@pytest.fixture(scope="module")
def shop_app(shop_manifest):
    from sandboxes.app_process import AppProcess

    app = AppProcess(shop_manifest).start()
    yield app
    app.close()
