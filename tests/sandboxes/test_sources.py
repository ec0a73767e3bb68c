"""Where a sandbox's app comes from: a git repository at a pinned commit (a local bare repository made
here: CI reaches no git host), `subdir` for every source kind, PyPI pins, the `[auth]` table, and
sandbox folders outside sandboxes/."""

import os

import git
import pytest

from flows.task_synthesis.source import read_source
from sandboxes.manifest import ManifestError, load_manifest
from sandboxes.npm_source import SourceFetchError
from sandboxes.registry import discover, select

APP = """
[sandbox]
name = "{name}"
kind = "web"
[source]
{source}
[start]
command = ["{{python}}", "-m", "http.server", "{{port}}"]
[state]
kind = "files"
{extra}
"""


def write(folder, source="", name="tiny", extra=""):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sandbox.toml").write_text(APP.format(name=name, source=source, extra=extra))
    return folder


@pytest.fixture()
def bare_repo(tmp_path, monkeypatch):
    """A bare repository with two commits: v1 and v2 of app/index.html."""
    monkeypatch.setenv("FLYWHEEL_CACHE", str(tmp_path / "cache"))
    work = git.Repo.init(tmp_path / "work")
    with work.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    (tmp_path / "work" / "app").mkdir()
    commits = []
    for text in ("v1", "v2"):
        (tmp_path / "work" / "app" / "index.html").write_text(text)
        work.index.add(["app/index.html"])
        commits.append(work.index.commit(text).hexsha)
    bare = tmp_path / "app.git"
    work.clone(bare, bare=True)
    return bare, commits


def test_git_source_is_checked_out_at_the_pinned_commit(tmp_path, bare_repo):
    bare, (first, second) = bare_repo
    m = load_manifest(write(tmp_path / "sb", f'git = "file://{bare}"\nref = "{first}"\nsubdir = "app"'))
    assert (m.source_dir / "index.html").read_text() == "v1"  # not the branch tip (v2)
    snap = read_source(m)
    assert snap.files == {"index.html": "v1"} and snap.commit == first
    m2 = load_manifest(write(tmp_path / "sb2", f'git = "{bare}"\nref = "{second}"\nsubdir = "app"', name="tiny2"))
    assert (m2.source_dir / "index.html").read_text() == "v2"


def test_a_subdir_symlinked_out_of_a_fetched_source_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("FLYWHEEL_CACHE", str(tmp_path / "cache"))
    work = git.Repo.init(tmp_path / "evil")
    with work.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    (tmp_path / "evil" / "app").symlink_to("/etc")
    work.index.add(["app"])
    commit = work.index.commit("app is /etc").hexsha
    m = load_manifest(write(tmp_path / "sb", f'git = "{tmp_path / "evil"}"\nref = "{commit}"\nsubdir = "app"'))
    with pytest.raises(SourceFetchError, match="leads out of the source"):
        _ = m.source_dir


def test_git_source_needs_a_full_commit(tmp_path, bare_repo):
    bare, _ = bare_repo
    for ref in ('', 'ref = "main"', 'ref = "abc123"', 'ref = "HEAD"'):
        with pytest.raises(ManifestError, match="ref"):
            load_manifest(write(tmp_path / "sb", f'git = "file://{bare}"\n{ref}'))


def test_git_source_with_an_unknown_commit_or_url_says_so(tmp_path, bare_repo):
    bare, _ = bare_repo
    m = load_manifest(write(tmp_path / "sb", f'git = "file://{bare}"\nref = "{"0" * 40}"'))
    with pytest.raises(SourceFetchError, match="is not in the repository"):
        _ = m.source_dir
    m = load_manifest(write(tmp_path / "sb2", f'git = "file://{tmp_path}/nothing.git"\nref = "{"0" * 40}"'))
    with pytest.raises(SourceFetchError, match="git clone"):
        _ = m.source_dir


def test_subdir_applies_to_a_local_path_and_cannot_leave_the_source(tmp_path):
    (tmp_path / "sb" / "site" / "public").mkdir(parents=True)
    m = load_manifest(write(tmp_path / "sb", 'path = "site"\nsubdir = "public"'))
    assert m.source_dir == (tmp_path / "sb" / "site" / "public").resolve()
    with pytest.raises(ManifestError, match="does not exist"):
        load_manifest(write(tmp_path / "sb", 'path = "site"\nsubdir = "nope"'))
    for bad in ("../../etc", "/etc"):
        with pytest.raises(ManifestError, match="inside the source"):
            load_manifest(write(tmp_path / "sb", f'subdir = "{bad}"'))


def test_one_source_kind_at_a_time(tmp_path):
    with pytest.raises(ManifestError, match="one of git, npm or pypi"):
        load_manifest(write(tmp_path / "sb", f'npm = "x@1.0.0"\ngit = "file:///x"\nref = "{"a" * 40}"'))
    with pytest.raises(ManifestError, match="integrity pins an npm tarball"):
        load_manifest(write(tmp_path / "sb", 'integrity = "sha512-x"'))


@pytest.mark.parametrize("line", [
    "Django",  # no version
    "Django>=5 --hash=sha256:" + "a" * 64,  # a range
    "Django==5.2.8",  # no hash
    "Django==5.2.8 --hash=sha256:abc",  # a short hash
    "Django==5.2.8 --hash=sha256:" + "a" * 64 + " --index-url http://evil.example/simple",  # a pip option smuggled in
    "Django==5.2.8 --hash=sha256:" + "a" * 64 + "\n--extra-index-url http://evil.example",  # a second line
    "-r /etc/passwd",
])
def test_pypi_pins_refuse_anything_but_exact_hashed_versions(tmp_path, line):
    with pytest.raises(ManifestError, match="source.pypi"):
        load_manifest(write(tmp_path / "sb", f"pypi = [{line!r}]".replace("'", '"').replace("\n", "\\n")))


def test_pypi_pins_accept_pips_hash_syntax_and_put_the_install_on_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("FLYWHEEL_CACHE", str(tmp_path / "cache"))
    m = load_manifest(write(tmp_path / "sb", f'pypi = "Django==5.2.8   --hash=sha256:{"a" * 64}"'))
    assert m.source.pypi == [f"Django==5.2.8 --hash=sha256:{'a' * 64}"]
    site = tmp_path / "cache" / "sources" / "pypi" / "x" / "site"
    monkeypatch.setattr(type(m), "source_root", property(lambda self: site))
    env = m.process_env({"PATH": "/usr/bin", "PYTHONPATH": "/mine"})
    assert env["PYTHONPATH"].split(":") == [str(site), "/mine"] and env["PATH"].split(":") == [str(site / "bin"), "/usr/bin"]


def test_pypi_installs_are_cached_per_interpreter_whose_path_their_scripts_name(tmp_path, monkeypatch):
    """pip writes an installed script's `#!` line with the installing Python: a folder cached by a venv since
    deleted started nothing (`django-admin: not found`). Each interpreter gets its own folder; a second call
    with the same one reads the cache. (pip itself is replaced by a recorder here: the cache key is tested.)"""
    import subprocess
    import sys

    from sandboxes import pypi_source

    monkeypatch.setenv("FLYWHEEL_CACHE", str(tmp_path / "cache"))
    installs = []

    def pip(cmd, **kw):
        installs.append(cmd[0])
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pypi_source.subprocess, "run", pip)
    pins = [f"Django==5.2.8 --hash=sha256:{'a' * 64}"]
    monkeypatch.setattr(sys, "executable", "/gone/venv/bin/python")
    gone = pypi_source.fetch(pins)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    here, again = pypi_source.fetch(pins), pypi_source.fetch(pins)
    assert gone != here == again and gone.is_dir() and here.is_dir()
    assert installs == ["/gone/venv/bin/python", str(tmp_path / "venv" / "bin" / "python")]
    # two venvs' pythons are symlinks to one base interpreter: their scripts name the venv's path, so two folders
    links = [tmp_path / f"venv{n}" / "bin" / "python" for n in (1, 2)]
    for link in links:
        link.parent.mkdir(parents=True)
        link.symlink_to(os.path.realpath(sys._base_executable))  # the one interpreter both venvs run
    folders = []
    for link in links:
        monkeypatch.setattr(sys, "executable", str(link))
        folders.append(pypi_source.fetch(pins))
    assert folders[0] != folders[1] and installs[-2:] == [str(link) for link in links]


def test_auth_table_is_validated(tmp_path):
    ok = load_manifest(write(tmp_path / "sb", extra='[auth]\nlogin_path = "/admin/login/"\nusername = "a"\npassword = "b"'))
    assert ok.auth.username == "a" and not ok.auth.register_first
    reg = load_manifest(write(tmp_path / "sb", extra='[auth]\nregister = true\nregister_path = "/signup"'))
    assert reg.auth.register_first and reg.auth.login_path == "/login"
    for bad, why in (('username = "a"', "both username and password"), ("", "say how to get in"),
                     ('login_path = "http://x/login"\nregister = true', "starting with '/'"),
                     ('register_path = "/s"\nusername = "a"\npassword = "b"', "register_path needs register"),
                     ('register = true\ntoken = "x"', "auth.token")):
        with pytest.raises(ManifestError, match=why):
            load_manifest(write(tmp_path / "sb", extra=f"[auth]\n{bad}"))


def test_sandbox_folders_outside_sandboxes(tmp_path, monkeypatch):
    write(tmp_path / "many" / "one", name="one")
    write(tmp_path / "many" / "two", name="two")
    write(tmp_path / "single", name="single")
    write(tmp_path / "clash", name="shop")
    monkeypatch.setenv("FLYWHEEL_SANDBOXES", f"{tmp_path / 'many'}:{tmp_path / 'single'}:{tmp_path / 'clash'}:{tmp_path / 'gone'}")
    found, errors = discover()
    names = [m.name for m in found]
    assert {"shop", "one", "two", "single"} <= set(names) and names.count("shop") == 1
    assert any("already taken" in str(e) for e in errors.values()) and any("not a folder" in str(e) for e in errors.values())
    chosen, problems = select(["two"])
    assert [m.name for m in chosen] == ["two"] and not problems
    chosen, _ = select([str(tmp_path / "single")])
    assert [m.name for m in chosen] == ["single"]


def test_an_npm_tarball_with_another_single_top_folder_is_the_package(tmp_path):
    from sandboxes.npm_source import _one_root_as_package

    (tmp_path / "a" / "html5sortable-0.14.0" / "docs").mkdir(parents=True)
    _one_root_as_package("x@1.0.0", tmp_path / "a")
    assert (tmp_path / "a" / "package" / "docs").is_dir()
    (tmp_path / "b" / "one").mkdir(parents=True)
    (tmp_path / "b" / "two").mkdir()
    with pytest.raises(SourceFetchError, match="no package/ folder"):
        _one_root_as_package("x@1.0.0", tmp_path / "b")
