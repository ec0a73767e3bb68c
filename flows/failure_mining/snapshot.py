"""A fetched repository snapshot (a bare git dir) read at one commit, for the labelled sets' builders.

Files are read as bytes through one `git cat-file --batch` process (a builder may read thousands) and are
never run; names come from `git ls-tree`. `write_jsonl` writes a builder's records as data.jsonl at once.

    with Snapshot(git_dir, commit) as snap:
        for name in snap.names("results/"):
            run = snap.json(name)          # None when missing or not JSON
            ... snap.source(REPO, name, LICENSE)
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class Snapshot:
    """One commit of a bare git dir: its resolved `sha`, file names, and file contents."""

    def __init__(self, git_dir: str | Path, commit: str = "HEAD") -> None:
        self._git = ["git", f"--git-dir={git_dir}"]
        self.sha = self._run("rev-parse", commit).strip()
        self._batch: subprocess.Popen | None = None

    def _run(self, *args: str) -> str:
        return subprocess.run([*self._git, *args], capture_output=True, text=True, check=True).stdout

    def names(self, under: str | None = None) -> list[str]:
        """Every file path of the commit (below `under`, a folder or path prefix git understands), in git's order."""
        return self._run("ls-tree", "-r", "--name-only", self.sha, *([under] if under else [])).splitlines()

    def blob(self, path: str) -> bytes | None:
        """The file's bytes; None when the commit has no such file (or the path could not name one: a line
        break would end the batch request early and leave an answer for the next read)."""
        if "\n" in path or "\r" in path:
            return None
        if self._batch is None:
            self._batch = subprocess.Popen(
                [*self._git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(f"{self.sha}:{path}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            return None
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)  # the newline after each object
        return data

    def text(self, path: str) -> str | None:
        """The file as text (UTF-8, undecodable bytes replaced); None when missing."""
        data = self.blob(path)
        return None if data is None else data.decode("utf-8", "replace")

    def json(self, path: str) -> Any:
        """The file parsed as JSON; None when missing or not JSON."""
        data = self.blob(path)
        try:
            return None if data is None else json.loads(data)
        except ValueError:
            return None

    def source(self, repo: str, path: str, license: str) -> dict:
        """A record's provenance: the repository, this commit, the path (and position) in it, the licence."""
        return {"repo": repo, "commit": self.sha, "path": path, "license": license}

    def close(self) -> None:
        if self._batch is not None:
            assert self._batch.stdin is not None
            self._batch.stdin.close()
            self._batch.wait()
            self._batch = None

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def write_jsonl(out: str | Path, records: Iterable[dict]) -> int:
    """Write records as data.jsonl (one JSON object a line, UTF-8 kept); returns how many."""
    lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in records]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(lines))
    return len(lines)
