import sqlite3

import pytest

from sandboxes.app_process import AppProcess, SandboxError
from sandboxes.manifest import load_manifest

FAILING = """
[sandbox]
name = "broken-app"
kind = "web"
[start]
command = ["{python}", "-c", "import sys; print('boom: missing settings'); sys.exit(3)"]
start_timeout_s = 10
[state]
kind = "sqlite"
path = "x.db"
"""


def test_an_app_that_will_not_start_gives_one_clear_error(tmp_path):
    (tmp_path / "sandbox.toml").write_text(FAILING)
    app = AppProcess(load_manifest(tmp_path))
    with pytest.raises(SandboxError) as err:
        app.start()
    msg = str(err.value)
    assert "broken-app" in msg and "exited with code 3" in msg and "boom: missing settings" in msg
    app.close()


@pytest.mark.slow
def test_snapshot_restore_puts_the_db_back(shop_manifest):
    with AppProcess(shop_manifest) as app:
        con = sqlite3.connect(app.state_path)
        before = con.execute("SELECT count(*) FROM addresses").fetchone()[0]
        con.execute("DELETE FROM addresses")
        con.commit()
        con.close()
        app.restore()
        con = sqlite3.connect(app.state_path)
        assert con.execute("SELECT count(*) FROM addresses").fetchone()[0] == before > 0
        con.close()
        assert app.healthy()
