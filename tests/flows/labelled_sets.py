"""What the tests of the labelled sets' builders share: a made-up snapshot committed as a git dir, the checks
every label file must pass, and a set's KNOWN_SETS entry read as text (those tests never import a detector:
the sets were labelled blind)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def committed(work: Path, message: str = "runs") -> Path:
    """`work` as a git repository with one commit of everything in it; its git dir."""
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", message], check=True)
    return work / ".git"


def checked_labels(labels: Path, runs: int, counts: tuple[int, int], variable: str, folder: str):
    """The label file's records after the checks every set's labels pass: `runs` runs each listed once as clean
    or with labels, `counts` (loop, side-effect) labels, steps in order - and, when the set's data is here
    ($variable or ../shared/mining_eval/<folder>/data.jsonl), every label inside a run of it. Returns
    (records, run ids, {task_id: step count} of the data or None)."""
    records = [json.loads(line) for line in labels.read_text().splitlines()]
    ids = {rec["task_id"] for rec in records}
    assert len(ids) == runs
    assert {rec["kind"] for rec in records} <= {None, "loop", "side_effect"}
    clean = [rec["task_id"] for rec in records if rec["kind"] is None]
    assert len(clean) == len(set(clean)) and not set(clean) & {rec["task_id"] for rec in records if rec["kind"]}
    kinds = [rec["kind"] for rec in records]
    assert (kinds.count("loop"), kinds.count("side_effect")) == counts
    assert all(0 <= rec["step"] <= rec["last_step"] for rec in records if rec["kind"])
    places = (os.environ.get(variable), ROOT.parent / "shared" / "mining_eval" / folder / "data.jsonl")
    data = next((Path(p) for p in places if p and Path(p).is_file()), None)
    if data is None:
        return records, ids, None
    lengths = {r["task_id"]: len(r["steps"]) for r in map(json.loads, data.read_text().splitlines())}
    assert ids <= set(lengths)
    assert all(rec["last_step"] < lengths[rec["task_id"]] for rec in records if rec["kind"])
    return records, ids, lengths


def known_set_entry(name: str) -> tuple[str, str, bool]:
    """(variable, folder, split) of a set's KNOWN_SETS entry, read from real_eval.py's text."""
    tree = ast.parse((ROOT / "flows" / "failure_mining" / "real_eval.py").read_text())
    known = next(
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "KNOWN_SETS" for t in node.targets)
    )  # fmt: skip
    entries = {k.value: v for k, v in zip(known.keys, known.values, strict=True)}
    variable, folder, _labels, split = entries[name].elts
    return variable.value, folder.value, split.value


def imported(out: Path, query: str) -> tuple[object, list[tuple]]:
    """`out` (a data.jsonl) imported by the real importer into a throwaway lake: the import report and the rows
    `query` returns over that lake's views."""
    import tempfile

    from flows.rollout.importers import import_paths
    from lake import Lake

    with tempfile.TemporaryDirectory() as tmp:
        lake = Lake(Path(tmp) / "lake")
        report = import_paths(lake, [Path(out)], run_id="t")
        con = lake.connect()
        try:
            return report, con.sql(query).fetchall()
        finally:
            con.close()


# Claude Code stream-json transcript lines, for the builders of sets recorded that way
def said(*blocks) -> str:
    return json.dumps({"type": "assistant", "message": {"model": "claude-x", "content": list(blocks)}})


def text(words: str) -> dict:
    return {"type": "text", "text": words}


def call(ident: str, name: str, given) -> dict:
    return {"type": "tool_use", "id": ident, "name": name, "input": given}


def result(ident: str, words: str, error: bool = False) -> str:
    block = {"type": "tool_result", "tool_use_id": ident, "content": [{"type": "text", "text": words}]}
    if error:
        block["is_error"] = True
    return json.dumps({"type": "user", "message": {"role": "user", "content": [block]}})
