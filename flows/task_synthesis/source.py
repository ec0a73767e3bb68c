"""Reads a sandbox's source at a pinned commit through GitPython."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from sandboxes.manifest import SandboxManifest

TEXT_SUFFIXES = {".py", ".sql", ".html", ".htm", ".jinja", ".j2", ".js", ".ts", ".css", ".toml", ".md", ".json", ".txt", ".xml", ".java", ".kt", ".csv", ".tsv"}
MAX_FILE_BYTES = 512_000


@dataclass(frozen=True)
class SourceSnapshot:
    """The text files of an app at one commit; `commit` pins what the agent read."""

    sandbox: str
    commit: str
    files: dict[str, str]

    def glob(self, suffix: str) -> dict[str, str]:
        return {p: t for p, t in self.files.items() if p.endswith(suffix)}


def read_source(manifest: SandboxManifest) -> SourceSnapshot:
    """The committed source of the sandbox; a dirty or uncommitted tree is read from disk and its
    commit is marked `+dirty-<content hash>`, so a changed tree never reuses a clean commit's ids."""
    import git

    folder = manifest.source_dir
    if manifest.source.npm:  # pinned by the tarball's integrity hash (and the app's folder inside it)
        from sandboxes.npm_source import fetch

        pin = fetch(manifest.source.npm, manifest.source.integrity).integrity
        snapshot = _from_disk(manifest, folder, "npm")
        return SourceSnapshot(manifest.name, pin + (f":{manifest.source.subdir}" if manifest.source.subdir else ""), snapshot.files)
    if manifest.source.pypi:  # pinned by the requirement lines' hashes (and the app's folder inside the install)
        from sandboxes.pypi_source import pin

        snapshot = _from_disk(manifest, folder, "pypi")
        return SourceSnapshot(manifest.name, pin(manifest.source.pypi) + (f":{manifest.source.subdir}" if manifest.source.subdir else ""), snapshot.files)
    try:
        repo = git.Repo(folder, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return _from_disk(manifest, folder, "nogit")
    rel = folder.relative_to(Path(repo.working_tree_dir).resolve()).as_posix()
    try:
        head = repo.head.commit
    except ValueError:  # a repository without commits
        return _from_disk(manifest, folder, "nocommit")
    # Pin to the last commit that touched the sandbox: commits elsewhere in the repo change nothing here.
    pinned = next(repo.iter_commits(head, paths=rel if rel != "." else None, max_count=1), head)
    if repo.is_dirty(untracked_files=True, path=rel if rel != "." else None):
        return _from_disk(manifest, folder, pinned.hexsha[:12])
    tree = pinned.tree if rel == "." else pinned.tree / rel
    files = {}
    for blob in tree.traverse():
        if blob.type != "blob" or Path(blob.path).suffix not in TEXT_SUFFIXES or blob.size > MAX_FILE_BYTES:
            continue
        files[Path(blob.path).relative_to(rel).as_posix() if rel != "." else blob.path] = (
            blob.data_stream.read().decode("utf-8", errors="replace")
        )
    return SourceSnapshot(manifest.name, pinned.hexsha, files)


def _from_disk(manifest: SandboxManifest, folder: Path, base: str) -> SourceSnapshot:
    files = {}
    root = folder.resolve()
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() or not path.resolve().is_relative_to(root):  # a link may point out of the tree
            continue
        if path.is_file() and path.suffix in TEXT_SUFFIXES and path.stat().st_size <= MAX_FILE_BYTES:
            if any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(folder).parts):
                continue
            files[path.relative_to(folder).as_posix()] = path.read_text(errors="replace")
    digest = hashlib.sha256("".join(f"{p}\0{t}" for p, t in sorted(files.items())).encode()).hexdigest()[:12]
    return SourceSnapshot(manifest.name, f"{base}+dirty-{digest}", files)
