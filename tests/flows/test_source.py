import git

from flows.task_synthesis.source import read_source
from sandboxes.manifest import load_manifest

MANIFEST = """[sandbox]
name = "tiny"
kind = "web"
[start]
command = ["{python}", "app.py"]
[state]
kind = "files"
"""


def test_source_is_pinned_to_the_last_commit_that_touched_the_sandbox(tmp_path):
    repo = git.Repo.init(tmp_path)
    app = tmp_path / "sandboxes" / "tiny"
    app.mkdir(parents=True)
    (app / "sandbox.toml").write_text(MANIFEST)
    (app / "app.py").write_text("print('v1')\n")
    repo.index.add(["sandboxes/tiny/sandbox.toml", "sandboxes/tiny/app.py"])
    pinned = repo.index.commit("the app").hexsha
    (tmp_path / "README.md").write_text("elsewhere\n")
    repo.index.add(["README.md"])
    repo.index.commit("unrelated")

    snap = read_source(load_manifest(app))
    assert snap.commit == pinned and snap.files["app.py"] == "print('v1')\n"

    (app / "app.py").write_text("print('v2')\n")  # uncommitted work is read from disk, never as the clean commit
    dirty = read_source(load_manifest(app))
    assert dirty.commit.startswith(pinned[:12] + "+dirty-") and dirty.files["app.py"] == "print('v2')\n"
