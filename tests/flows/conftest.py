"""Fixtures shared by the flow tests: one Prefect harness and one synthesised lake per session."""

import pytest


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness

    from flywheel.prefect_server import EPHEMERAL_TIMEOUT_S

    with prefect_test_harness(server_startup_timeout=EPHEMERAL_TIMEOUT_S):  # minutes on a loaded machine
        yield


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


