"""Finds sandboxes by their sandbox.toml: the ones shipped under sandboxes/, those in the folders that
FLYWHEEL_SANDBOXES lists (os.pathsep-separated), and any folder given by path."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from sandboxes.manifest import ManifestError, SandboxManifest, load_manifest

SHIPPED_DIR = Path(__file__).resolve().parent


def sandbox_roots() -> list[Path]:
    """sandboxes/ first, then each folder of $FLYWHEEL_SANDBOXES (a sandbox folder, or a folder of them)."""
    extra = [Path(p).expanduser().resolve() for p in os.environ.get("FLYWHEEL_SANDBOXES", "").split(os.pathsep) if p]
    return [SHIPPED_DIR, *(p for p in extra if p != SHIPPED_DIR)]


def discover(root: Path | list[Path] | None = None) -> tuple[list[SandboxManifest], dict[str, ManifestError]]:
    """All manifests under the root(s) (default: sandbox_roots()), plus the error of each folder whose
    manifest could not be read. A name found twice keeps the first and reports the second."""
    roots = sandbox_roots() if root is None else [root] if isinstance(root, (str, Path)) else root
    found: list[SandboxManifest] = []
    errors: dict[str, ManifestError] = {}
    for r in roots:
        if not Path(r).is_dir():
            errors[str(r)] = ManifestError(f"{r}: not a folder; fix FLYWHEEL_SANDBOXES (sandbox folders, or folders of them)")
            continue
        single = Path(r) / "sandbox.toml"
        for toml in [single] if single.exists() else sorted(Path(r).glob("*/sandbox.toml")):
            try:
                manifest = load_manifest(toml)
            except ManifestError as exc:
                errors[toml.parent.name] = exc
                continue
            first = next((m for m in found if m.name == manifest.name), None)
            if first is not None:
                errors[str(toml.parent)] = ManifestError(
                    f"{toml}: sandbox name {manifest.name!r} is already taken by {first.folder}; rename one of them"
                )
                continue
            found.append(manifest)
    return found, errors


def select(
    names: list[str] | None, root: Path | list[Path] | None = None
) -> tuple[list[SandboxManifest], list[ManifestError]]:
    """The named sandboxes (a name may also be a folder path), or all of them when names is empty."""
    found, errors = discover(root)
    if not names:
        return found, list(errors.values())
    by_name = {m.name: m for m in found}
    chosen: list[SandboxManifest] = []
    problems: list[ManifestError] = []
    for name in names:
        if name in by_name:
            chosen.append(by_name[name])
        elif name in errors:
            problems.append(errors[name])
        elif Path(name).exists():
            try:
                chosen.append(load_manifest(name))
            except ManifestError as exc:
                problems.append(exc)
        else:
            close = difflib.get_close_matches(name, list(by_name), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(by_name))}"
            problems.append(ManifestError(f"no sandbox named {name!r}; {hint} (a folder path works too)"))
    return chosen, problems
