"""Where exports live and how a version appears: all at once, or not at all.

Root: `--out DIR`, else `$FLYWHEEL_EXPORTS`, else `exports/` beside the lake (`./exports` for the default
`./lake`). A build is written in `<root>/<name>/.build-<pid>-<id>/` (hidden: never a version), gated, and
only then renamed to `<root>/<name>/vNNNN/` (a directory rename is atomic), `latest` (a symlink) is
swapped to it, and a row is registered in the lake's `exports` table. A killed build leaves only its
hidden folder, which the next export of that name removes once its process is gone. A build the gate
refuses is deleted; its GX result is kept in `<root>/<name>/gate-failures/` and registered with
`gate_success = false`. A published version whose row is missing (a crash right after the rename) is
registered by the next run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from lake import Lake, utcnow

_VERSION = re.compile(r"^v(\d{4,})$")
_BUILD = re.compile(r"^\.build-(\d+)-[0-9a-f]+$")


def export_root(lake: Lake, out: str | Path | None = None) -> Path:
    if out:
        return Path(out).resolve()
    env = os.environ.get("FLYWHEEL_EXPORTS")
    return Path(env).resolve() if env else lake.root.parent / "exports"


def start_build(name_dir: Path) -> Path:
    name_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_builds(name_dir)
    folder = name_dir / f".build-{os.getpid()}-{uuid.uuid4().hex[:12]}"
    folder.mkdir()
    return folder


def remove_stale_builds(name_dir: Path) -> list[Path]:
    """Hidden build folders whose process is gone (killed mid-export): never published, safe to delete."""
    removed = []
    for d in name_dir.glob(".build-*"):
        m = _BUILD.match(d.name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def versions(name_dir: Path) -> list[str]:
    """Published versions, oldest first."""
    if not name_dir.is_dir():
        return []
    found = [d.name for d in name_dir.iterdir() if _VERSION.match(d.name) and (d / "manifest.json").exists()]
    return sorted(found, key=lambda v: int(v[1:]))


def latest_manifest_hash(name_dir: Path) -> tuple[str | None, str | None]:
    """(version, manifest sha256) of the newest published version, or (None, None)."""
    import hashlib

    published = versions(name_dir)
    if not published:
        return None, None
    return published[-1], hashlib.sha256((name_dir / published[-1] / "manifest.json").read_bytes()).hexdigest()


def publish(folder: Path, name_dir: Path) -> Path:
    """Rename the gated build into the next free vNNNN and point `latest` at it."""
    n = int(versions(name_dir)[-1][1:]) + 1 if versions(name_dir) else 1
    while True:
        target = name_dir / f"v{n:04d}"
        if not target.exists():
            try:
                os.rename(folder, target)
                break
            except OSError:  # another export took this number first
                pass
        n += 1
    link = name_dir / f".latest-{uuid.uuid4().hex[:8]}"
    os.symlink(target.name, link)
    os.replace(link, name_dir / "latest")
    return target


def reject(folder: Path, name_dir: Path, gate: dict[str, Any]) -> Path:
    """Keep the refused build's GX result, delete the build."""
    failures = name_dir / "gate-failures"
    failures.mkdir(exist_ok=True)
    path = failures / f"{utcnow().strftime('%Y%m%dT%H%M%S')}-{folder.name.rsplit('-', 1)[-1]}.json"
    path.write_text(json.dumps(gate, indent=1, default=str))
    shutil.rmtree(folder, ignore_errors=True)
    return path


def register(lake: Lake, manifest: dict[str, Any], manifest_hash: str, gate_path: Path, gate_success: bool,
             version: str | None, path: Path | None, run_id: str) -> None:
    c = manifest["counts"]
    row = {
        "name": manifest["name"], "version": version, "format": manifest["config"]["format"],
        "config_hash": manifest["config_hash"], "config_json": json.dumps(manifest["config"], sort_keys=True),
        "rows": c["rows"], "steps": c["steps"], "trajectories": c["trajectories"],
        "files_json": json.dumps(manifest["files"]), "manifest_hash": manifest_hash,
        "gate_result_path": str(gate_path), "gate_success": gate_success,
        "lineage_json": json.dumps(manifest["lineage"], sort_keys=True), "path": str(path) if path else None,
        "run_id": run_id, "recorded_at": utcnow(),
    }
    lake.write("exports", [row], run_id, f"{manifest['name']}-{version or 'refused'}")


def register_missing(lake: Lake, name_dir: Path, name: str) -> list[str]:
    """Register published versions that have no `exports` row (the process died right after the rename)."""
    import hashlib

    published = versions(name_dir)
    if not published:
        return []
    # a version number is unique per (name, export root): the row's path says which root it is in
    known = ({r["path"] for r in lake.query("SELECT path FROM exports WHERE name = ? AND path IS NOT NULL", [name])}
             if lake.files("exports") else set())
    added = []
    for v in published:
        folder = name_dir / v
        if str(folder) in known:
            continue
        data = (folder / "manifest.json").read_bytes()
        gate = folder / "gate.json"
        success = json.loads(gate.read_text()).get("success", False) if gate.exists() else False
        register(lake, json.loads(data), hashlib.sha256(data).hexdigest(), gate, success, v, folder, f"recovered-{v}")
        added.append(v)
    return added
