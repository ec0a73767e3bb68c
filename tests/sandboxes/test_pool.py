import sqlite3

import pytest

from sandboxes.app_process import SandboxError
from sandboxes.pool import SandboxPool
from verifier_templates.base import Probe

pytestmark = [pytest.mark.browser, pytest.mark.slow]

COUNT = Probe("n", "sql", "SELECT count(*) FROM addresses")


def test_two_workers_share_one_chromium_and_keep_state_apart(shop_manifest):
    def job(driver, i):
        driver.reset()
        before = driver.probe(COUNT)
        con = sqlite3.connect(driver.app.state_path)
        con.execute("DELETE FROM addresses")
        con.commit()
        con.close()
        driver.observe(screenshot=False)  # the page opens through the shared browser
        driver.page.wait_for_timeout(400)  # long enough that the second worker is up before the queue drains
        return i, driver.app.port, before, driver.probe(COUNT), driver.host.endpoint

    results = SandboxPool(shop_manifest, workers=2).map(job, range(6))
    assert [r[0] for r in results] == list(range(6)), "results come back in input order"
    assert len({r[1] for r in results}) == 2, "two app replicas served the items"
    assert len({r[4] for r in results}) == 1 and results[0][4], "both workers used one shared Chromium"
    assert all(r[2] > 0 and r[3] == 0 for r in results), "each item starts from the snapshot"


def test_a_failing_job_is_raised_not_lost(shop_manifest):
    def job(driver, i):
        if i == 1:
            raise RuntimeError("bug in the job")
        return i

    with pytest.raises(SandboxError, match="bug in the job"):
        SandboxPool(shop_manifest, workers=1).map(job, range(3))
