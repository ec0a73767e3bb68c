from tests.flows.conftest import prefect_harness  # noqa: F401 - one Prefect test server for the corpus flows
