"""Attacks through the LLM coding agent's tool arguments: the model's text must not become a git option,
a write to the app's DB or to a new file, or a read of a file outside the sandbox's source tree."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.tools import ToolError, Workbench
from flows.task_synthesis.source import read_source
from sandboxes.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def shop_repo(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "sandboxes" / "shop", repo / "shop", ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shop as shipped")
    return repo


def bench_for(repo: Path, app_db: Path | None = None) -> Workbench:
    manifest = load_manifest(repo / "shop")
    return Workbench(SynthesisRequest(manifest, read_source(manifest), app_db, 3, 0), "m", "h")


@pytest.mark.parametrize("field", ["from_commit", "to_commit"])
@pytest.mark.parametrize("option", ["--output={victim}", "--output", "-o{victim}", "--ext-diff"])
def test_git_diff_takes_no_option_from_the_model(shop_repo, tmp_path, field, option):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    bench = bench_for(shop_repo)
    base = git(shop_repo, "rev-parse", "HEAD")
    args = {"from_commit": base, field: option.format(victim=victim)}
    with pytest.raises(ToolError, match="commit"):
        bench.call("git_diff", json.dumps(args))
    assert victim.read_text() == "precious\n"


def test_git_diff_still_diffs_two_real_commits(shop_repo):
    bench = bench_for(shop_repo)
    base = git(shop_repo, "rev-parse", "HEAD")
    (shop_repo / "shop" / "NOTES.md").write_text("a note\n")
    git(shop_repo, "add", ".")
    git(shop_repo, "commit", "-qm", "a note")
    assert "+a note" in bench.call("git_diff", json.dumps({"from_commit": base[:12], "to_commit": "HEAD"}))


@pytest.fixture
def app_db(tmp_path):
    db = tmp_path / "state" / "app.sqlite"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.execute("INSERT INTO notes (body) VALUES ('hello')")
    con.commit()
    con.close()
    return db


@pytest.mark.parametrize("sql", [
    "ATTACH 'file:{out}?mode=rwc' AS x",
    "VACUUM INTO '{out}'",
    "INSERT INTO notes (body) VALUES ('x')",
    "DELETE FROM notes",
    "PRAGMA journal_mode = WAL",
    "PRAGMA query_only = OFF",
    "CREATE TABLE t (x)",
])
def test_query_app_db_writes_nothing_and_creates_no_file(shop_repo, app_db, tmp_path, sql):
    out = tmp_path / "made-by-the-model.sqlite"
    before = app_db.read_bytes()
    bench = bench_for(shop_repo, app_db)
    with pytest.raises(ToolError, match="SQL error"):
        bench.call("query_app_db", json.dumps({"sql": sql.format(out=out)}))
    assert not out.exists()
    assert app_db.read_bytes() == before
    assert sorted(p.name for p in app_db.parent.iterdir()) == ["app.sqlite"]


def test_query_app_db_still_reads_rows_and_table_shapes(shop_repo, app_db):
    bench = bench_for(shop_repo, app_db)
    assert json.loads(bench.call("query_app_db", '{"sql": "SELECT body FROM notes"}')) == [{"body": "hello"}]
    assert "body" in bench.call("query_app_db", '{"sql": "PRAGMA table_info(notes)"}')
    assert "notes" in bench.call("query_app_db", '{"sql": "SELECT name FROM sqlite_master"}')


def test_source_tools_do_not_follow_symlinks_out_of_the_tree(shop_repo, tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-VALUE\n")
    (shop_repo / "shop" / "leak.txt").symlink_to(secret)
    (shop_repo / "shop" / "linked_dir").symlink_to(secret.parent, target_is_directory=True)
    bench = bench_for(shop_repo)  # an uncommitted link: the tree is read from disk
    assert "leak.txt" not in bench.call("list_files", "{}") and "linked_dir" not in bench.call("list_files", "{}")
    assert bench.call("grep", '{"pattern": "TOP-SECRET"}') == "no match"
    with pytest.raises(ToolError):
        bench.call("read_file", '{"path": "leak.txt"}')
    git(shop_repo, "add", ".")
    git(shop_repo, "commit", "-qm", "links")
    bench = bench_for(shop_repo)  # a committed link: git stores its target's name, never the file
    assert bench.call("grep", '{"pattern": "TOP-SECRET"}') == "no match"
