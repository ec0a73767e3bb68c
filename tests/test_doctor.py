from flywheel.doctor import check_browser, check_lake, run_checks


def test_doctor_names_a_missing_browser_and_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    monkeypatch.setattr("sandboxes.web.system_chromium", lambda: None)
    check = check_browser()
    assert not check.ok and check.required
    assert "apt-get install -y chromium" in check.fix and "playwright install chromium" in check.fix


def test_doctor_finds_this_machines_browser_and_a_writable_lake(monkeypatch, tmp_path):
    monkeypatch.setenv("FLYWHEEL_LAKE", str(tmp_path / "lake"))
    assert check_browser().ok
    assert check_lake().ok and (tmp_path / "lake").is_dir()


def test_an_unwritable_lake_is_named_with_the_fix(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FLYWHEEL_LAKE", str(blocker / "lake"))
    check = check_lake()
    assert not check.ok and "FLYWHEEL_LAKE" in check.fix


def test_all_checks_run_without_a_model(monkeypatch, tmp_path):
    monkeypatch.delenv("FLYWHEEL_MODEL", raising=False)
    monkeypatch.setenv("FLYWHEEL_LAKE", str(tmp_path / "lake"))
    names = [c.name for c in run_checks()]
    assert {"browser", "docker engine", "adb", "llm", "prefect", "lake"} <= set(names)


def test_an_unreachable_docker_engine_is_named_with_the_fix(monkeypatch, tmp_path):
    from flywheel.doctor import check_docker

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")  # the SDK connects as sandboxes do
    check = check_docker()
    assert not check.ok and not check.required
    assert "no Docker engine answers" in check.detail and "scripts/start-docker" in check.fix


def test_adb_names_the_server_it_asked_and_its_devices(monkeypatch):
    from flywheel.doctor import check_adb
    from tests.doubles.fake_adb import FakeAdbServer, FakeDevice

    server = FakeAdbServer([FakeDevice("emulator-5554")]).start()
    port = server.port
    try:
        monkeypatch.setenv("FLYWHEEL_ADB_HOST", "127.0.0.1")
        monkeypatch.setenv("FLYWHEEL_ADB_PORT", str(port))
        up = check_adb()
        assert up.ok and "emulator-5554" in up.detail
    finally:
        server.close()
    down = check_adb()  # the same port, nothing listening now
    assert not down.ok and f"127.0.0.1:{port}" in down.detail and "adb start-server" in down.fix
