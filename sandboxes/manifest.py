"""`sandbox.toml`: the manifest that tells flywheel how to start, probe, reset and police an app."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class ManifestError(Exception):
    """A sandbox.toml that cannot be used; the message names the file, the problem and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SandboxInfo(_Strict):
    name: str
    kind: Literal["web", "android", "desktop", "cli"]
    description: str = ""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", v):
            raise ValueError("must be lowercase letters, digits and dashes")
        return v


class SourceSpec(_Strict):
    path: str | None = "."
    git: str | None = None
    ref: str | None = None
    npm: str | None = None  # "package@exact-version": fetched once with `npm pack` (sandboxes/npm_source.py)
    subdir: str = ""  # the app's folder inside the npm package
    integrity: str | None = None  # the tarball's sha512 as `npm view PKG@VER dist.integrity` prints it

    @field_validator("npm")
    @classmethod
    def _exact(cls, v: str | None) -> str | None:
        from sandboxes.npm_source import check_spec

        return v if v is None else check_spec(v)


class StartSpec(_Strict):
    command: list[str] = Field(min_length=1)
    ready_path: str = "/"
    home_path: str = "/"  # the page the app opens on (a demo in a package subfolder: "/example/index.html")
    start_timeout_s: float = 30.0
    isolation: Literal["process", "container"] = "process"


class StateSpec(_Strict):
    kind: Literal["sqlite", "http_json", "js", "local_storage", "files"]
    path: str | None = None  # relative to the app's work dir, and inside it
    expression: str | None = None  # js: a JS expression whose (JSON) value is the app's state
    key: str | None = None  # local_storage: the key the app keeps its state under (js: where injections write)
    items: str = ""  # local_storage: dotted path to the records inside the stored JSON ("" = the value itself)

    @field_validator("path")
    @classmethod
    def _inside_work_dir(cls, v: str | None) -> str | None:
        if v is not None and (Path(v).is_absolute() or ".." in Path(v).parts):
            raise ValueError(f"{v!r} leaves the app's work dir; give a path inside it, e.g. \"app.db\"")
        return v

    @model_validator(mode="after")
    def _page_state(self) -> StateSpec:
        if self.kind == "js" and not self.expression:
            raise ValueError('state kind "js" needs expression = "<a JS expression>"')
        if self.kind == "local_storage" and not self.key:
            raise ValueError('state kind "local_storage" needs key = "<the localStorage key>"')
        return self

    @property
    def in_page(self) -> bool:
        """The state lives in the browser page: a fresh context resets it, a JS probe reads it."""
        return self.kind in ("js", "local_storage")

    def page_expression(self) -> str | None:
        """The JS expression that reads the state of an in-page app, or None for other kinds."""
        if self.kind == "js":
            return self.expression
        if self.kind != "local_storage":
            return None
        path = json.dumps([p for p in self.items.split(".") if p])
        return (
            f"(() => {{ let v = JSON.parse(localStorage.getItem({json.dumps(self.key)}) || 'null'); "
            f"for (const p of {path}) v = v == null ? null : v[p]; return v === undefined ? null : v; }})()"
        )


class ResetSpec(_Strict):
    strategy: Literal["snapshot", "restart"] = "snapshot"


class SensitiveControl(_Strict):
    kind: Literal["pay", "send", "delete", "submit", "password"]
    name: str  # a regex over the visible name of the control

    @field_validator("name")
    @classmethod
    def _regex(cls, v: str) -> str:
        re.compile(v)
        return v


class AndroidSpec(_Strict):
    """Where an Android sandbox's app runs: a device or emulator behind an adb server (USB or adb-over-TCP)."""

    package: str
    activity: str | None = None  # the launch activity, e.g. ".NotesListActivity"; default: the launcher's
    label: str | None = None  # the name a person calls the app by (open_app)
    db_path: str | None = None  # the app's SQLite DB, relative to its data dir, e.g. "databases/notes.db"
    adb_host: str = "127.0.0.1"
    adb_port: int = 5037
    serials: list[str] = []  # devices to use, one per parallel worker; empty: every device the server lists


class ContainerSpec(_Strict):
    """How a sandbox with start.isolation = "container" runs: network none, capabilities dropped, limits."""

    image: str = "flywheel/base:busybox"  # built offline by sandboxes/docker_images.py
    mem_limit: str = "256m"
    pids_limit: int = Field(default=128, ge=8)
    cpus: float = Field(default=1.0, gt=0)
    workspace_seed: str | None = None  # a folder in the source copied into workspace_dir of every fresh container
    workspace_dir: str = "/workspace"


class SandboxManifest(_Strict):
    sandbox: SandboxInfo
    source: SourceSpec = SourceSpec()
    start: StartSpec | None  # required for every kind but android (its app is on a device, not started here)
    state: StateSpec
    reset: ResetSpec = ResetSpec()
    sensitive: list[SensitiveControl] = []
    android: AndroidSpec | None = None
    container: ContainerSpec = ContainerSpec()
    # Where the manifest was read from; set by load_manifest, not by the file.
    folder: Path = Field(default=Path("."), exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _no_start_on_android(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("sandbox"), dict) and data["sandbox"].get("kind") == "android":
            data.setdefault("start", None)
        return data

    @model_validator(mode="after")
    def _android_table(self) -> SandboxManifest:
        if self.sandbox.kind == "android" and self.android is None:
            raise ValueError("an android sandbox needs an [android] table (package, db_path, adb host/port, serials)")
        return self

    @property
    def name(self) -> str:
        return self.sandbox.name

    @property
    def source_dir(self) -> Path:
        """The app's files; an npm source is fetched into the cache on first use (SourceFetchError if it cannot be)."""
        if self.source.npm:
            from sandboxes.npm_source import fetch

            return fetch(self.source.npm, self.source.integrity).package_dir / self.source.subdir
        return (self.folder / (self.source.path or ".")).resolve()

    def sensitive_kind(self, control_name: str) -> str | None:
        """The sensitive kind of a control by its visible name, or None."""
        for s in self.sensitive:
            if re.fullmatch(s.name, control_name.strip(), flags=re.IGNORECASE):
                return s.kind
        return None


def load_manifest(path: str | Path) -> SandboxManifest:
    path = Path(path)
    if path.is_dir():
        path = path / "sandbox.toml"
    if not path.exists():
        raise ManifestError(f"{path}: no sandbox.toml here; write one (see sandboxes/sandbox.example.toml)")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML ({exc}); fix the syntax at that line") from None
    try:
        manifest = SandboxManifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise ManifestError(
            f"{path}: {problems} — fix these keys (see sandboxes/sandbox.example.toml)"
        ) from None
    manifest.folder = path.parent.resolve()
    if manifest.source.git is None and manifest.source.npm is None:
        _check_source_inside(path, manifest)
    if manifest.source.git is None and manifest.source.npm is None and not manifest.source_dir.exists():
        raise ManifestError(f"{path}: source.path {manifest.source.path!r} does not exist; point it at the app")
    return manifest


SOURCE_ROOTS_ENV = "FLYWHEEL_SOURCE_ROOTS"  # more folders a local source.path may point into, `:`-separated


def _check_source_inside(path: Path, manifest: SandboxManifest) -> None:
    """A local source.path stays in the sandbox's folder or its git repository (the agent reads it, the
    app runs from it): `/etc` or `../../..` would hand the whole machine to both."""
    source = manifest.source_dir
    repo = next((p for p in [manifest.folder, *manifest.folder.parents] if (p / ".git").exists()), None)
    extra = [Path(p).resolve() for p in os.environ.get(SOURCE_ROOTS_ENV, "").split(os.pathsep) if p]
    roots = [manifest.folder] + ([repo] if repo else []) + extra
    if not any(source == root or source.is_relative_to(root) for root in roots):
        where = f"its folder ({manifest.folder})" + (f" or its repository ({repo})" if repo else "")
        raise ManifestError(f"{path}: source.path {manifest.source.path!r} resolves to {source}, outside {where}; "
                            f"put the app there, or add its folder to {SOURCE_ROOTS_ENV} to allow it")
