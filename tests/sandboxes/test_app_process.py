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


SLOW_AFTER_READY = """
[sandbox]
name = "slow-app"
kind = "web"
[start]
command = ["{python}", "-c", '''
import http.server, sys, time
served = []
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if served:
            time.sleep(3)  # every answer after the first is slow, as on a loaded machine
        served.append(1)
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
''', "{port}"]
[state]
kind = "sqlite"
path = "x.db"
[reset]
strategy = "restart"
"""


@pytest.mark.slow
def test_an_app_that_answers_slowly_is_healthy_not_dead(tmp_path):
    """A request the app took and is slow with is load, not a fault: healthy() waits for the answer."""
    (tmp_path / "sandbox.toml").write_text(SLOW_AFTER_READY)
    with AppProcess(load_manifest(tmp_path)) as app:
        assert app.healthy()


def test_a_database_held_locked_is_the_sandboxes_fault_not_the_skills(tmp_path, monkeypatch):
    import sandboxes.app_process as app_process
    from sandboxes.skills import InjectionError, Skill, run_sql_skill

    monkeypatch.setattr(app_process, "ANSWER_TIMEOUT_S", 0.2)  # the busy wait, short for the test
    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    skill = Skill("add", "any", "sql", "adds a row", {"statements": ["INSERT INTO t VALUES (:x)"]})
    holder = sqlite3.connect(db)
    holder.execute("BEGIN EXCLUSIVE")  # another process writing: the skill cannot get the lock
    try:
        with pytest.raises(SandboxError, match="stayed locked"):
            run_sql_skill(db, skill, {"x": 1})
    finally:
        holder.rollback()
        holder.close()
    run_sql_skill(db, skill, {"x": 1})
    with pytest.raises(InjectionError, match="no such table"):  # the skill's own mistakes stay its own
        run_sql_skill(db, Skill("bad", "any", "sql", "", {"statements": ["INSERT INTO nope VALUES (1)"]}), {})
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 1
    con.close()
