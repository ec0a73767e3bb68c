"""Numbers and names a careless user types: one clear error from the CLI, before any flow starts."""

from __future__ import annotations

import pytest

from flywheel.cli import main


@pytest.mark.parametrize("argv,flag,why", [
    (["run", "synthesize-tasks", "--count", "-5"], "--count", "too small"),
    (["run", "synthesize-tasks", "--workers", "0"], "--workers", "too small"),
    (["run", "synthesize-tasks", "--count", "many"], "--count", "not a number"),
    (["run", "rollout", "--policy", "replay", "--episodes", "0"], "--episodes", "too small"),
    (["run", "rollout", "--policy", "replay", "--workers", "-1"], "--workers", "too small"),
    (["run", "explore", "--minutes", "0"], "--minutes", "too small"),
    (["run", "explore", "--steps", "-3"], "--steps", "too small"),
    (["run", "export-sft", "--shard-mb", "0"], "--shard-mb", "too small"),
    (["review", "serve", "--port", "70000"], "--port", "too large"),
    (["review", "serve", "--sample", "0"], "--sample", "too small"),
])
def test_a_bad_number_is_one_clear_error(capsys, argv, flag, why):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and why in err and "Traceback" not in err


def test_rollout_on_an_unknown_sandbox_names_it_and_the_close_ones(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FLYWHEEL_LAKE", str(tmp_path / "lake"))
    from flows.rollout.rollout import rollout
    from lake import Lake

    summary = rollout(Lake(tmp_path / "lake"), "r1", "replay", sandboxes=["shopp"])
    assert summary.errors == ["no sandbox named 'shopp'; did you mean shop?"]
