"""App sources published on PyPI: installed once with pip into a target folder of the source cache, every
package pinned by an exact version and its sha256 (pip's hash-checking mode, so a dependency the manifest
does not pin is refused by name). The app's process gets that folder on PYTHONPATH and its scripts on PATH."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sandboxes.npm_source import FETCH_TIMEOUT_S, SourceFetchError, cache_root

_REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*(\[[\w,.-]+\])?)==(?P<version>[\w.+!-]+)(\s+--hash=sha256:[0-9a-f]{64})+")


def check_requirement(line: str) -> str:
    """`name==exact-version --hash=sha256:<64 hex>` (pip's hash-checking syntax; more than one --hash allowed)."""
    line = " ".join(line.split())
    if not _REQUIREMENT.fullmatch(line):
        raise ValueError(
            f"{line!r} is not `name==exact-version --hash=sha256:<hex>`; get the hash with "
            "`pip download --no-deps NAME==VERSION` and `sha256sum` (or the release's JSON on PyPI)"
        )
    return line


def fetch(requirements: list[str]) -> Path:
    """The folder the pinned packages are installed into, installed on first use; later calls read the cache.
    One folder per interpreter too: pip writes the scripts (`django-admin`) with a `#!` line naming the
    Python that installed them, so a folder cached by another checkout's venv, since moved or deleted, would
    start nothing ("django-admin: not found", exit 127)."""
    lines = [check_requirement(r) for r in requirements]
    # the path the scripts' `#!` lines will name, as it is: not resolved, since every venv's python is a symlink
    # to the one base interpreter, and resolved they all shared one folder (scripts naming /check/.../python)
    interpreter = os.path.abspath(sys.executable)
    key = hashlib.sha256("\n".join([*sorted(lines), interpreter]).encode()).hexdigest()[:16]
    folder = cache_root() / "pypi" / key
    if (folder / "requirements.txt").exists():
        return folder / "site"
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".install-", dir=folder.parent))
    try:
        (work / "requirements.txt").write_text("\n".join(lines) + "\n")
        cmd = [sys.executable, "-m", "pip", "install", "--require-hashes", "--only-binary=:all:", "--no-input",
               "--disable-pip-version-check", "--quiet", "--target", str(work / "site"), "-r", str(work / "requirements.txt")]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, stdin=subprocess.DEVNULL,
                                  env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        except subprocess.TimeoutExpired:
            raise SourceFetchError(f"{lines[0]}: `pip install` gave no answer in {FETCH_TIMEOUT_S}s; check that PyPI is reachable") from None
        if done.returncode != 0:
            problem = [ln.strip() for ln in done.stderr.splitlines() if ln.strip() and "is ignored" not in ln]
            raise SourceFetchError(
                f"{lines[0]}: `pip install` of the pinned packages failed ({' '.join(problem[-3:]) or f'exit {done.returncode}'}); "
                "pin every dependency with its hash in source.pypi, and check that PyPI is reachable"
            )
        (work / "site").mkdir(exist_ok=True)
        try:
            work.rename(folder)  # atomic: a concurrent install of the same pins keeps the first
        except OSError:
            if not (folder / "requirements.txt").exists():
                raise
        return folder / "site"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def pin(requirements: list[str]) -> str:
    """What the tasks' source_commit records: a hash over the pinned requirement lines."""
    lines = sorted(check_requirement(r) for r in requirements)
    return "pypi-" + hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
