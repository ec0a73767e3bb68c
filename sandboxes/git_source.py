"""App sources in a git repository: cloned once with GitPython into the source cache and checked out at
the commit the manifest pins (a branch or tag could move under a pinned task, so only a full commit id
is accepted). The commit becomes the tasks' source_commit."""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from sandboxes.npm_source import SourceFetchError, cache_root

_COMMIT = re.compile(r"[0-9a-f]{40}")


def check_commit(ref: str) -> str:
    if not _COMMIT.fullmatch(ref):
        raise ValueError(f"{ref!r} is not a full 40-hex commit id; pin the commit (`git rev-parse HEAD`), not a branch or tag")
    return ref


def fetch(url: str, commit: str) -> Path:
    """The work tree of `url` at `commit`, cloned on first use; later calls read the cache."""
    import git

    check_commit(commit)
    folder = cache_root() / "git" / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}-{commit[:12]}"
    if (folder / ".git").is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".clone-", dir=folder.parent))
    try:
        try:
            repo = git.Repo.clone_from(url, work / "tree", no_checkout=True)
        except git.GitCommandError as exc:
            last = [ln for ln in str(exc.stderr or exc).splitlines() if ln.strip()]
            raise SourceFetchError(
                f"{url}: `git clone` failed ({last[-1].strip() if last else exc}); check the URL and that the host is reachable"
            ) from None
        try:
            repo.git.checkout(commit, detach=True)
        except git.GitCommandError:
            raise SourceFetchError(
                f"{url}: commit {commit} is not in the repository; check source.ref (`git log` on the branch you mean)"
            ) from None
        repo.close()
        try:
            (work / "tree").rename(folder)  # atomic: a concurrent fetch of the same commit keeps the first
        except OSError:
            if not (folder / ".git").is_dir():
                raise
        return folder
    finally:
        shutil.rmtree(work, ignore_errors=True)
