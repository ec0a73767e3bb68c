"""Reading a fetched repository snapshot at one commit (flows/failure_mining/snapshot.py): the builders of the
labelled sets read every file through it, never run one, and skip what a snapshot does not carry."""

from __future__ import annotations

import json
import subprocess

from flows.failure_mining.snapshot import Snapshot, write_jsonl


def _repo(tmp_path):
    work = tmp_path / "repo"
    (work / "results" / "deep").mkdir(parents=True)
    (work / "results" / "run.json").write_text(json.dumps({"goal": "Öffne die App"}, ensure_ascii=False))
    (work / "results" / "deep" / "broken.json").write_text("{not json")
    (work / "results" / "deep" / "bytes.log").write_bytes(b"ok \xff\xfe end")
    (work / "README.md").write_text("outside results\n")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (work / "results" / "later.json").write_text("[]")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "second"], check=True)
    return work / ".git", first


def test_a_snapshot_reads_the_files_of_its_commit_and_says_none_for_what_is_missing_or_not_json(tmp_path):
    git_dir, first = _repo(tmp_path)
    with Snapshot(git_dir, first) as snap:
        assert snap.sha == first
        assert snap.names("results/") == ["results/deep/broken.json", "results/deep/bytes.log", "results/run.json"]
        assert "README.md" in snap.names() and "results/later.json" not in snap.names()  # the later commit's file
        assert snap.json("results/run.json") == {"goal": "Öffne die App"}
        assert snap.json("results/deep/broken.json") is None  # not JSON
        assert snap.blob("results/later.json") is None and snap.text("nowhere.txt") is None  # not in this commit
        assert snap.text("results/deep/bytes.log") == "ok \ufffd\ufffd end"  # undecodable bytes replaced
        # reads after a missing one still line up (one `git cat-file --batch` serves them all)
        assert snap.json("results/run.json")["goal"] == "Öffne die App"
        assert snap.source("o/r", "results/run.json", "MIT") == {
            "repo": "o/r", "commit": first, "path": "results/run.json", "license": "MIT"}  # fmt: skip


def test_a_path_crafted_to_break_the_batch_protocol_reads_as_missing(tmp_path):
    git_dir, first = _repo(tmp_path)
    with Snapshot(git_dir, first) as snap:
        # a newline would end the request early and leave an answer unread for the next one
        assert snap.blob("results/run.json\nresults/deep/bytes.log") is None
        assert snap.json("results/run.json") == {"goal": "Öffne die App"}


def test_records_are_written_as_one_json_object_a_line_with_their_text_kept(tmp_path):
    out = tmp_path / "sub" / "data.jsonl"
    assert write_jsonl(out, [{"task_id": "a", "instruction": "点击“保存”"}, {"task_id": "b"}]) == 2
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"task_id": "a", "instruction": "点击“保存”"}, {"task_id": "b"}]  # fmt: skip
    assert "点击" in out.read_text()
