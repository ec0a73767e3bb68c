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
    """Where the app's files come from: a local path (default: the manifest's folder), a git repository at
    a pinned commit, an npm package at an exact version, or PyPI packages pinned by hash; `subdir` is the
    app's folder inside any of them."""

    path: str | None = "."
    git: str | None = None  # a clone URL or a local repository; cloned once with GitPython into the cache
    ref: str | None = None  # git: the full 40-hex commit to check out (required with git)
    npm: str | None = None  # "package@exact-version": fetched once with `npm pack` (sandboxes/npm_source.py)
    integrity: str | None = None  # the tarball's sha512 as `npm view PKG@VER dist.integrity` prints it
    pypi: list[str] = []  # "name==X.Y.Z --hash=sha256:<hex>", one per package and dependency (sandboxes/pypi_source.py)
    subdir: str = ""  # the app's folder inside the source

    @field_validator("npm")
    @classmethod
    def _exact(cls, v: str | None) -> str | None:
        from sandboxes.npm_source import check_spec

        return v if v is None else check_spec(v)

    @field_validator("pypi", mode="before")
    @classmethod
    def _pinned(cls, v: object) -> object:
        from sandboxes.pypi_source import check_requirement

        lines = [v] if isinstance(v, str) else v
        return [check_requirement(line) for line in lines] if isinstance(lines, list) and all(isinstance(x, str) for x in lines) else v

    @field_validator("ref")
    @classmethod
    def _commit(cls, v: str | None) -> str | None:
        from sandboxes.git_source import check_commit

        return v if v is None else check_commit(v)

    @field_validator("subdir")
    @classmethod
    def _inside(cls, v: str) -> str:
        if Path(v).is_absolute() or ".." in Path(v).parts:
            raise ValueError(f"{v!r} must be a folder inside the source (relative, no '..')")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> SourceSpec:
        kinds = [k for k in ("git", "npm", "pypi") if getattr(self, k)]
        if len(kinds) > 1:
            raise ValueError(f"give one of git, npm or pypi, not {' and '.join(kinds)}")
        if self.git and not self.ref:
            raise ValueError('a git source needs ref = "<the full commit id to check out>"')
        if self.ref and not self.git:
            raise ValueError("ref pins a git source; add git = \"<clone URL>\" or drop ref")
        if self.integrity and not self.npm:
            raise ValueError("integrity pins an npm tarball; add npm = \"package@version\" or drop integrity")
        return self

    @property
    def fetched(self) -> bool:
        """The files come from a registry or a repository (into the cache), not from a folder here."""
        return bool(self.git or self.npm or self.pypi)


class StartSpec(_Strict):
    command: list[str] = Field(min_length=1)
    ready_path: str = "/"
    home_path: str = "/"  # the page the app opens on (a demo in a package subfolder: "/example/index.html")
    # a generous cap: the wait follows the app (its first 200, or its exit at once), and a loaded machine
    # must start an app slower, not fail it (30 s was met twice by a replica under a CPU hog)
    start_timeout_s: float = 180.0
    isolation: Literal["process", "container"] = "process"
    # web: the page's Math.random draws the same numbers on every load from a reset (an app that makes up its
    # demo data, ids or order per load is then the same app in the walk, the gate and every episode); false
    # leaves the browser's own
    seeded_random: bool = True


class StateSpec(_Strict):
    kind: Literal["sqlite", "http_json", "js", "local_storage", "files"]
    path: str | None = None  # relative to the app's work dir, and inside it
    expression: str | None = None  # js: a JS expression whose (JSON) value is the app's state; any other kind: also read so
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
        """The JS expression that reads the state in the app's page: a `js` app's, or the one the manifest adds
        for a server whose state no file or table shows plainly (asked through the app's own API); None else."""
        if self.kind in ("js", "files", "http_json", "sqlite") and self.expression:
            return self.expression
        if self.kind != "local_storage":
            return None
        path = json.dumps([p for p in self.items.split(".") if p])
        return (
            f"(() => {{ let v = JSON.parse(localStorage.getItem({json.dumps(self.key)}) || 'null'); "
            f"for (const p of {path}) v = v == null ? null : v[p]; return v === undefined ? null : v; }})()"
        )


class AuthSpec(_Strict):
    """How a person gets into the app: log in with these credentials at login_path, or register an account
    first (register = true; the explorer makes one up and then logs in with it). Credentials here are
    sandbox accounts, never real ones: the manifest is committed."""

    login_path: str = "/login"
    username: str | None = None
    password: str | None = None
    register_first: bool = Field(default=False, alias="register")  # `register = true` in the file
    register_path: str | None = None  # the sign-up page when it is not linked from the login page

    @field_validator("login_path", "register_path")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith("/"):
            raise ValueError(f"{v!r} must be a path on the app, starting with '/'")
        return v

    @model_validator(mode="after")
    def _how(self) -> AuthSpec:
        if (self.username is None) != (self.password is None):
            raise ValueError("give both username and password (or neither, with register = true)")
        if self.username is None and not self.register_first:
            raise ValueError('say how to get in: username and password, or register = true')
        if self.register_path and not self.register_first:
            raise ValueError("register_path needs register = true")
        return self


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
    auth: AuthSpec | None = None  # a login (or sign-up) the explorer goes through first
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
        """The app's files; a git, npm or PyPI source is fetched into the cache on first use (SourceFetchError
        if it cannot be)."""
        root = self.source_root
        folder = root / self.source.subdir
        if self.source.subdir and not folder.resolve().is_relative_to(root.resolve()):
            from sandboxes.npm_source import SourceFetchError

            raise SourceFetchError(f"{self.name}: source.subdir {self.source.subdir!r} leads out of the source "
                                   f"(a symlink to {folder.resolve()}); point it at a real folder inside")
        return folder

    @property
    def source_root(self) -> Path:
        """The source without its subdir: the repository, the unpacked package or the install folder."""
        if self.source.npm:
            from sandboxes.npm_source import fetch

            return fetch(self.source.npm, self.source.integrity).package_dir
        if self.source.git:
            from sandboxes import git_source

            return git_source.fetch(self._git_url(), self.source.ref)
        if self.source.pypi:
            from sandboxes import pypi_source

            return pypi_source.fetch(self.source.pypi)
        return (self.folder / (self.source.path or ".")).resolve()

    def _git_url(self) -> str:
        """A relative local repository path is read from the manifest's folder."""
        url = self.source.git or ""
        if "://" in url or url.startswith("git@") or Path(url).is_absolute():
            return url
        return str((self.folder / url).resolve())

    def process_env(self, base: dict[str, str]) -> dict[str, str]:
        """The environment the app's start command runs with: a PyPI source's packages on PYTHONPATH and
        their scripts on PATH."""
        env = dict(base)
        if self.source.pypi:
            site = str(self.source_root)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (site, base.get("PYTHONPATH")) if p)
            env["PATH"] = os.pathsep.join(p for p in (str(Path(site) / "bin"), base.get("PATH")) if p)
        return env

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
    if not manifest.source.fetched:
        _check_source_inside(path, manifest)
        if not manifest.source_dir.exists():
            where = "/".join(p for p in (manifest.source.path or ".", manifest.source.subdir) if p)
            raise ManifestError(f"{path}: the source folder {where!r} does not exist; point source.path (and subdir) at the app")
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
