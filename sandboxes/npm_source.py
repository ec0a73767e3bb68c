"""App sources published on the npm registry: fetched once with `npm pack`, unpacked into a cache
outside the repo, and pinned by the tarball's integrity hash (which becomes the tasks' source_commit)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandboxes.app_process import SandboxError

FETCH_TIMEOUT_S = 300
_SPEC = re.compile(r"(?P<name>(@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*)@(?P<version>\d+\.\d+\.\d+[\w.+-]*)")


class SourceFetchError(SandboxError):
    """The npm source cannot be had; the message names the problem and the fix. A SandboxError, so
    every flow reports it for that sandbox and goes on with the others."""


@dataclass(frozen=True)
class NpmSource:
    package_dir: Path  # the unpacked tarball (npm's `package/` folder)
    integrity: str  # sha512-<base64>, as npm prints it


def cache_root() -> Path:
    """`$FLYWHEEL_CACHE/sources`, else `$XDG_CACHE_HOME/flywheel/sources`, else `~/.cache/flywheel/sources`."""
    if os.environ.get("FLYWHEEL_CACHE"):
        return Path(os.environ["FLYWHEEL_CACHE"]) / "sources"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flywheel" / "sources"


def check_spec(spec: str) -> str:
    """`package@exact-version`: a range or a tag could change under a pinned task, so neither is accepted."""
    if not _SPEC.fullmatch(spec):
        raise ValueError(f"{spec!r} is not `package@exact-version` (e.g. todomvc@0.1.1; no ranges or tags)")
    return spec


def fetch(spec: str, integrity: str | None = None) -> NpmSource:
    """The unpacked package, fetched on first use; later calls read the cache. With `integrity`, a
    tarball whose hash differs is refused."""
    check_spec(spec)
    folder = cache_root() / spec.replace("/", "__").replace("@", "-").lstrip("-")
    marker = folder / "integrity.txt"
    if marker.exists():
        cached = marker.read_text().strip()
        _check_pin(spec, cached, integrity)
        return NpmSource(folder / "package", cached)
    npm = shutil.which("npm")
    if npm is None:
        raise SourceFetchError(
            f"{spec}: npm is not installed; install Node.js with npm (`sudo apt-get install -y npm`, or ./bootstrap)"
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fetch-", dir=folder.parent))
    try:
        tarball = _pack(npm, spec, work)
        got = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
        _check_pin(spec, got, integrity)
        with tarfile.open(tarball) as tar:
            tar.extractall(work / "unpacked", filter="data")
        _one_root_as_package(spec, work / "unpacked")
        (work / "unpacked" / "integrity.txt").write_text(got + "\n")
        try:
            (work / "unpacked").rename(folder)  # atomic: a concurrent fetch of the same spec keeps the first
        except OSError:
            if not marker.exists():
                raise
        return NpmSource(folder / "package", marker.read_text().strip())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _pack(npm: str, spec: str, work: Path) -> Path:
    try:
        done = subprocess.run(
            [npm, "pack", spec, "--json", "--silent", "--pack-destination", str(work)],
            cwd=work, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise SourceFetchError(f"{spec}: `npm pack` gave no answer in {FETCH_TIMEOUT_S}s; check that the npm registry is reachable (`npm ping`)") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        raise SourceFetchError(
            f"{spec}: `npm pack` failed ({lines[-1] if lines else f'exit {done.returncode}'}); check the name and "
            f"version (`npm view {spec} version`) and that the npm registry is reachable (`npm ping`)"
        )
    try:
        filename = json.loads(done.stdout)[0]["filename"]
    except (ValueError, LookupError, TypeError):
        tgz = sorted(work.glob("*.tgz"))
        if not tgz:
            raise SourceFetchError(f"{spec}: `npm pack` wrote no tarball; run it by hand to see why") from None
        return tgz[0]
    return work / filename.replace("/", "-").lstrip("@")


def _one_root_as_package(spec: str, unpacked: Path) -> None:
    """npm packs into `package/`, but some published tarballs have another single top folder
    (`name-1.2.3/`): that folder is the package."""
    if (unpacked / "package").is_dir():
        return
    roots = [p for p in unpacked.iterdir() if p.is_dir()]
    if len(roots) != 1 or any(p.is_file() for p in unpacked.iterdir()):
        raise SourceFetchError(f"{spec}: the tarball has no package/ folder (nor one top folder); is it an npm package?")
    roots[0].rename(unpacked / "package")


def _check_pin(spec: str, got: str, pinned: str | None) -> None:
    if pinned and got != pinned:
        raise SourceFetchError(
            f"{spec}: tarball integrity {got} differs from the pinned {pinned}; if the package was republished on "
            "purpose, update source.integrity in sandbox.toml (and expect new task ids)"
        )
