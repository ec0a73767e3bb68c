"""People's demonstrations as a check that the miner does not call good actions bad (see
tests/data/mining_eval/HUMAN_DEMOS.md).

A person solving a small web task makes no bad-argument mistakes worth a finding (a misclick happens, but
rarely), so the share of demonstrations with any `bad_args` finding measures false findings: clicks on
native date/time/select inputs, re-clicks on an option already chosen and clicks on labels all leave the
DOM as it was, yet hit something.

`build_miniwob_set` writes the demos of a git snapshot of stanfordnlp/miniwob-plusplus-demos as JSONL in our
trajectory shape (steps converted by `foreign_formats.miniwob_demo_steps`, DOMs kept as UI-tree hashes
only, so the file stays small); `bad_args_share` imports such a file with the real importer and mines it.
`as_screens=True` lets the DOM hash stand in for a screenshot too (an unchanged DOM then proves "no
effect"): what a miner that trusted an unchanged tree would find.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
from pathlib import Path

import polars as pl

from flows.failure_mining.detectors import detect_all, undecidable_counts
from flows.failure_mining.features import attach_trajectories, step_features
from flows.failure_mining.real_eval import load_set
from flows.rollout.foreign_formats import miniwob_demo_steps

MINIWOB_REPO = "stanfordnlp/miniwob-plusplus-demos"


def _blobs(git: list[str], sha: str) -> list[tuple[str, str]]:
    """(path, blob id) of every regular demo file (.json, .json.gz; symlinks are copies, left out)."""
    listing = subprocess.run([*git, "ls-tree", "-r", sha], capture_output=True, text=True, check=True)
    out = []
    for line in listing.stdout.splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, blob = meta.split()
        if mode == "100644" and kind == "blob" and path.endswith((".json", ".json.gz")) and "/" in path:
            out.append((path, blob))
    return sorted(out)


def in_sample(path: str, every: int) -> bool:
    """A fixed 1-in-`every` sample of demo files, by the sha256 of the path."""
    return int(hashlib.sha256(path.encode()).hexdigest(), 16) % every == 0


def build_miniwob_set(git_dir: str | Path, out: str | Path, commit: str = "HEAD", every: int = 1) -> int:
    """data.jsonl of the demos in a snapshot of the MiniWoB++ demos repository (a fixed 1-in-`every` sample
    of them, `in_sample`); returns the demos written.
    One `git cat-file --batch` process reads all blobs; a blob the snapshot lacks (its largest files may be
    listed but absent) is left out."""
    git = ["git", f"--git-dir={git_dir}"]
    sha = subprocess.run([*git, "rev-parse", commit], capture_output=True, text=True, check=True).stdout.strip()
    blobs = [(path, blob) for path, blob in _blobs(git, sha) if in_sample(path, every)]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with (
        subprocess.Popen([*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cat,
        out.open("w") as sink,
    ):
        for path, blob in blobs:
            cat.stdin.write(f"{blob}\n".encode())
            cat.stdin.flush()
            header = cat.stdout.readline().split()
            if len(header) != 3:  # "<blob> missing"
                continue
            content = cat.stdout.read(int(header[2]))
            cat.stdout.read(1)  # the newline after each object
            record = json.loads(gzip.decompress(content) if path.endswith(".gz") else content)
            steps, utterance = miniwob_demo_steps(record)
            line = {
                "task_id": path,
                "policy": "human-miniwob",
                "instruction": utterance,
                "source": {"repo": MINIWOB_REPO, "commit": sha, "path": path, "license": "none stated"},
                "steps": steps,
            }
            sink.write(json.dumps(line, ensure_ascii=False) + "\n")
            written += 1
        cat.stdin.close()
    return written


def bad_args_share(data: str | Path, as_screens: bool = False) -> dict:
    """Import and mine a demo set: episodes, the share with any bad_args finding, findings per reason, and
    how often "hit nothing" / "typed into nothing" could not be decided."""
    frames = load_set(data)
    steps = frames["steps"]
    if as_screens:
        steps = steps.with_columns(screenshot_sha=pl.col("ui_tree_sha"))
    features = attach_trajectories(step_features(steps), frames["trajectories"])
    findings = detect_all(features)
    bad = findings.filter(pl.col("kind") == "bad_args")
    episodes = frames["trajectories"].height
    undecided = undecidable_counts(features)
    task = pl.col("task_id").str.extract(r"^[^/]+/([^/]+)/", 1)
    by_task = (
        bad.join(frames["trajectories"].select("trajectory_id", "task_id"), on="trajectory_id")
        .group_by(task.alias("task"))
        .agg(episodes=pl.col("trajectory_id").n_unique())
        .sort("episodes", descending=True)
    )
    return {
        "episodes": episodes,
        "steps": steps.height,
        "with_bad_args": bad["trajectory_id"].n_unique(),
        "share_with_bad_args": round(bad["trajectory_id"].n_unique() / episodes, 4) if episodes else None,
        "bad_args_by_reason": dict(bad.group_by("reason").len().sort("reason").iter_rows()),
        "bad_args_by_task": dict(by_task.head(15).iter_rows()),
        "undecidable": dict(undecided.group_by("check").agg(pl.col("n").sum()).sort("check").iter_rows()),
    }
