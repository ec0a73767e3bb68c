"""Fixtures shared by the flow tests: one synthesised lake per session (the Prefect harness is in tests/conftest.py)."""

import pytest


@pytest.fixture(scope="session")
def synthesized(prefect_harness, tmp_path_factory):
    from flows.task_synthesis.flow import synthesize_tasks

    root = tmp_path_factory.mktemp("flow")
    broken = root / "broken"
    broken.mkdir()
    (broken / "sandbox.toml").write_text("[sandbox]\nname = 'broken'\n")  # missing kind, start, state
    lake_root = root / "lake"
    first = synthesize_tasks(sandboxes=["shop", str(broken)], count=12, seed=3, lake_root=str(lake_root))
    second = synthesize_tasks(sandboxes=["shop"], count=12, seed=3, lake_root=str(lake_root))
    return lake_root, first, second


