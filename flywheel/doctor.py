"""`flywheel doctor`: what this machine has, what is missing, and the command that fixes each gap."""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm would fetch a price list at import

@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


PACKAGES = {"prefect": "prefect", "duckdb": "duckdb", "pyarrow": "pyarrow", "polars": "polars", "pydantic": "pydantic",
            "git": "gitpython", "playwright": "playwright", "flask": "flask", "litellm": "litellm"}


def check_packages() -> list[Check]:
    out = []
    for name, dist in PACKAGES.items():
        try:
            importlib.import_module(name)
            try:
                found = version(dist)
            except PackageNotFoundError:
                found = "installed"
            out.append(Check(f"python: {name}", True, found))
        except ImportError as exc:
            out.append(Check(f"python: {name}", False, str(exc), "./bootstrap   (or: .venv/bin/pip install -e .)"))
    return out


def check_browser() -> Check:
    from sandboxes.web import BROWSER_FIX, system_chromium

    bundled = None
    try:
        from playwright._impl._driver import compute_driver_executable  # noqa: F401  (import proves the driver)

        home = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH", Path.home() / ".cache" / "ms-playwright"))
        bundled = next(iter(sorted(home.glob("chromium*/chrome-linux*/chrome"))), None)
    except ImportError:
        pass
    if bundled:
        return Check("browser", True, f"Playwright's Chromium: {bundled}")
    system = system_chromium()
    if system:
        return Check("browser", True, f"system Chromium: {system}")
    return Check("browser", False, "no Chromium found", BROWSER_FIX.replace("install one: ", ""))


def check_docker() -> Check:
    """Through the docker SDK, as container sandboxes and the isolated runner connect (DOCKER_HOST respected);
    the CLI is not needed."""
    from sandboxes.docker_images import engine_available

    ok, detail = engine_available()
    if ok:
        return Check("docker engine", True, f"server {detail}", required=False)
    return Check("docker engine", False, detail.split(";")[0],
                 "scripts/start-docker   (or set DOCKER_HOST); container sandboxes need it", required=False)


def check_adb() -> Check:
    """An adb server where Android sandboxes look for one (FLYWHEEL_ADB_HOST/PORT, default 127.0.0.1:5037)."""
    import os
    import socket

    host, port = os.environ.get("FLYWHEEL_ADB_HOST", "127.0.0.1"), int(os.environ.get("FLYWHEEL_ADB_PORT", "5037"))
    try:
        socket.create_connection((host, port), timeout=2).close()  # adbutils would spawn a local server instead
        import adbutils

        devices = [d.serial for d in adbutils.AdbClient(host=host, port=port, socket_timeout=5).device_list()]
        return Check("adb", True, f"adb server at {host}:{port}, devices online: {', '.join(devices) or 'none'}", required=False)
    except Exception as exc:
        fix = "adb start-server, then attach a device (USB, an emulator, or `adb connect HOST:PORT` for a farm)"
        if not shutil.which("adb"):
            fix = "sudo apt-get install -y adb, then " + fix
        return Check("adb", False, f"no adb server answers at {host}:{port} ({type(exc).__name__}); "
                     "only Android sandboxes need one", fix, required=False)


def check_llm(call: bool = True) -> Check:
    from flywheel import llm

    if not llm.configured():
        return Check("llm", True, "no model set: offline defaults (static agent, scripted policies)", required=False)
    settings = llm.LLMSettings.from_env()
    if not call:
        return Check("llm", True, f"{settings.model} at {settings.api_base or 'provider default'}", required=False)
    result = llm.LLMClient(settings).complete([{"role": "user", "content": "Reply with OK."}], purpose="doctor", max_tokens=5)
    if result.ok:
        return Check("llm", True, f"{settings.model} answered ({result.latency:.1f}s)", required=False)
    return Check("llm", False, f"{settings.model}: {result.error[:160]}",
                 "check FLYWHEEL_MODEL, FLYWHEEL_API_BASE and FLYWHEEL_API_KEY", required=False)


def check_prefect() -> Check:
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return Check("prefect", True, "no PREFECT_API_URL: flows start an ephemeral server (~10 s)", required=False)
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=5) as r:
            return Check("prefect", r.status == 200, f"API at {url}", required=False)
    except OSError as exc:
        return Check("prefect", False, f"{url}: {exc}", "prefect server start --host 127.0.0.1 --port 4200  (or unset PREFECT_API_URL)")


def check_lake() -> Check:
    from lake import Lake

    lake = Lake()
    try:
        lake.root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=lake.root, prefix=".doctor-"):
            pass
        return Check("lake", True, f"writable: {lake.root}")
    except OSError as exc:
        return Check("lake", False, f"{lake.root}: {exc}", "set FLYWHEEL_LAKE to a writable folder, or pass --lake PATH")


def run_checks(call_llm: bool = True) -> list[Check]:
    return [*check_packages(), check_browser(), check_docker(), check_adb(), check_llm(call_llm), check_prefect(), check_lake()]
