"""Attacks through a sandbox.toml: paths that leave the sandbox, and a sandbox that crashes its task in a
multi-sandbox synthesize run."""

from __future__ import annotations

import pytest

from sandboxes.manifest import SOURCE_ROOTS_ENV, ManifestError, load_manifest

WEB = """
[sandbox]
name = "tiny"
kind = "web"
[source]
path = "{source}"
[start]
command = ["{{python}}", "-m", "http.server", "{{port}}"]
[state]
kind = "sqlite"
path = "{state}"
"""


def write(folder, source=".", state="app.db"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sandbox.toml").write_text(WEB.format(source=source, state=state))
    return folder


@pytest.mark.parametrize("state", ["../../../../etc/cron.d/x", "/etc/passwd", "data/../../outside.db"])
def test_a_state_path_outside_the_work_dir_is_one_clear_error(tmp_path, state):
    with pytest.raises(ManifestError) as err:
        load_manifest(write(tmp_path / "s", state=state))
    msg = str(err.value)
    assert "state.path" in msg and "leaves the app's work dir" in msg and "sandbox.toml" in msg


@pytest.mark.parametrize("source", ["/etc", "../..", "/"])
def test_a_source_outside_the_sandbox_and_its_repo_is_one_clear_error(tmp_path, source):
    with pytest.raises(ManifestError) as err:
        load_manifest(write(tmp_path / "a" / "b" / "s", source=source))
    msg = str(err.value)
    assert "source.path" in msg and "outside" in msg and SOURCE_ROOTS_ENV in msg


def test_a_source_elsewhere_in_the_same_repo_or_allowed_explicitly_loads(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "apps" / "tiny").mkdir(parents=True)
    assert load_manifest(write(repo / "sandboxes" / "tiny", source="../../apps/tiny")).source_dir == repo / "apps" / "tiny"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(ManifestError):
        load_manifest(write(tmp_path / "s", source=str(elsewhere)))
    monkeypatch.setenv(SOURCE_ROOTS_ENV, str(elsewhere))
    assert load_manifest(write(tmp_path / "s", source=str(elsewhere))).source_dir == elsewhere


CRASHES = """
[sandbox]
name = "crashes"
kind = "web"
[start]
command = ["/bin/sh", "-c", "mkdir -p {state_path} && exec {python} -m http.server {port} --bind 127.0.0.1"]
[state]
kind = "sqlite"
path = "app.db"
"""


@pytest.mark.browser
@pytest.mark.slow
def test_a_sandbox_that_crashes_is_reported_and_the_others_get_results(prefect_harness, tmp_path):
    """The app makes its state path a folder: snapshotting it raises an sqlite error, not a SandboxError."""
    from flows.task_synthesis.flow import synthesize_tasks

    (tmp_path / "crashes").mkdir()
    (tmp_path / "crashes" / "sandbox.toml").write_text(CRASHES)
    out = synthesize_tasks(sandboxes=[str(tmp_path / "crashes"), "shop"], count=2, seed=1,
                           lake_root=str(tmp_path / "lake"))
    by_name = {s["sandbox"]: s for s in out["sandboxes"]}
    assert by_name["crashes"]["error"] and "crashes" in out["markdown"]
    assert by_name["shop"]["error"] is None and by_name["shop"]["verified"] >= 1
