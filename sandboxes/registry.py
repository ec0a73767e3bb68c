"""Finds the sandboxes shipped under sandboxes/ (or any folder given) by their sandbox.toml."""

from __future__ import annotations

import difflib
from pathlib import Path

from sandboxes.manifest import ManifestError, SandboxManifest, load_manifest

SHIPPED_DIR = Path(__file__).resolve().parent


def discover(root: Path = SHIPPED_DIR) -> tuple[list[SandboxManifest], dict[str, ManifestError]]:
    """All manifests under root, plus the error of each folder whose manifest could not be read."""
    found, errors = [], {}
    for toml in sorted(Path(root).glob("*/sandbox.toml")):
        try:
            found.append(load_manifest(toml))
        except ManifestError as exc:
            errors[toml.parent.name] = exc
    return found, errors


def select(
    names: list[str] | None, root: Path = SHIPPED_DIR
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
            problems.append(ManifestError(f"no sandbox named {name!r}; {hint}"))
    return chosen, problems
