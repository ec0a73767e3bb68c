"""The workspace sandbox in real Docker containers: isolation, shell actions, probes, file skills, reset,
and synthesize-tasks -> replay rollout -> judge -> mining on verified GUI + CLI pairs.
Without an engine the tests that need one are skipped, with the reason (and the fix) printed."""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sandboxes.actions import parse_actions
from sandboxes.app_process import SandboxError
from sandboxes.container import ContainerApp, ContainerDriver
from sandboxes.docker_images import DockerUnavailable, container_python, engine_available
from sandboxes.manifest import load_manifest
from sandboxes.skills import InjectionError, Skill
from verifier_templates import get_template
from verifier_templates.base import Evidence, Probe

ROOT = Path(__file__).resolve().parents[2]
ENGINE, WHY = engine_available()
pytestmark = pytest.mark.docker


def needs_engine():
    if not ENGINE:
        pytest.skip(f"no Docker engine: {WHY}")


@pytest.fixture(scope="module")
def manifest():
    return load_manifest(ROOT / "sandboxes" / "workspace")


@pytest.fixture(scope="module")
def app(manifest):
    needs_engine()
    with ContainerApp(manifest) as app:
        yield app


@pytest.fixture
def driver(app, browser_host):
    driver = ContainerDriver(app, browser_host)
    driver.reset()
    yield driver
    driver.close()


def shell(driver, command, **kw):
    (action,) = parse_actions([{"action": "shell", "command": command, **kw}])
    return driver.act(action)


def test_without_an_engine_starting_is_one_error_naming_the_fix(manifest, monkeypatch):
    def unavailable():
        raise DockerUnavailable("no Docker engine answers (DockerException); start one with `scripts/start-docker`")

    monkeypatch.setattr("sandboxes.container.docker_client", unavailable)
    with pytest.raises(SandboxError, match=r"^workspace: no Docker engine answers.*scripts/start-docker"):
        ContainerApp(manifest).start()


def test_containers_left_by_a_killed_run_are_removed_on_the_next_start(manifest):
    needs_engine()
    from sandboxes.docker_images import BASE_IMAGE, docker_client

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid belongs to no process now
    client = docker_client()
    orphan = client.containers.run(BASE_IMAGE, ["sleep", "120"], detach=True, network_mode="none",
                                   labels={"flywheel.owner": f"{socket.gethostname()}:{dead.pid}"})
    mine = client.containers.run(BASE_IMAGE, ["sleep", "120"], detach=True, network_mode="none",
                                 labels={"flywheel.owner": f"{socket.gethostname()}:{os.getpid()}"})
    try:
        with ContainerApp(manifest):
            ids = {c.id for c in client.containers.list(all=True)}
        assert orphan.id not in ids and mine.id in ids, "only containers of dead owners go"
    finally:
        for c in (orphan, mine):
            try:
                c.remove(force=True)
            except Exception:
                pass


def test_the_container_runs_with_no_network_limits_and_no_privileges(app, manifest):
    host = app.container.attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == 256 * 1024**2 and host["PidsLimit"] == manifest.container.pids_limit == 128
    assert host["NanoCpus"] == 1_000_000_000
    assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
    assert app.container.attrs["Config"]["User"] == app.user and not app.user.startswith("0:")
    assert app.exec("ls /sys/class/net")["stdout"].split() == ["lo"]


def test_the_limits_hold_inside(manifest):
    """Memory past mem_limit is killed (not mistaken for a timeout); forks past pids_limit fail."""
    needs_engine()
    with ContainerApp(manifest, warm_spare=False) as app:
        hog = app.exec(f"{container_python()} -c \"b = bytearray(600 * 2**20); b[::4096] = b'x' * len(b[::4096])\"", timeout=60)
        assert hog["exit_code"] == 137 and not hog["timed_out"]
        small = app.exec(f"{container_python()} -c \"b = bytearray(64 * 2**20); print(len(b))\"")
        assert small["exit_code"] == 0 and small["stdout"] == f"{64 * 2**20}\n"
        forks = app.exec("for i in $(seq 300); do sleep 30 & done; echo all started", timeout=30)
        assert forks["exit_code"] != 0 and "can't fork" in forks["stderr"] and "all started" not in forks["stdout"]


def test_nothing_outside_the_container_is_reachable_from_a_shell(app):
    """The forwarder's port answers on the host's loopback, and the same address fails inside; so does
    the outside world."""
    with socket.create_connection(("127.0.0.1", app.forwarder.port), timeout=5):
        pass  # reachable from the host: the failures below are the container's isolation
    probe = (
        f"{container_python()} -c \"import socket,sys; host,port=sys.argv[1],int(sys.argv[2]); "
        "socket.create_connection((host,port),timeout=3)\" "
    )
    for host, port in (("127.0.0.1", app.forwarder.port), ("1.1.1.1", 80), ("10.0.0.1", 443)):
        out = app.exec(probe + f"{host} {port}", timeout=20)
        assert out["exit_code"] != 0, f"{host}:{port} was reachable from the container"
        assert "Error" in out["stderr"], out["stderr"]


def test_shell_actions_report_exit_code_output_and_timeouts(driver):
    ok = shell(driver, "ls data && echo note >&2")
    assert ok.ok and "budget.csv" in ok.details["stdout"] and ok.details["stderr"] == "note\n"
    assert ok.details["exit_code"] == 0
    here = shell(driver, "pwd", cwd="notes")
    assert here.ok and here.details["stdout"].strip() == "/workspace/notes"
    bad = shell(driver, "cat missing.txt")
    assert not bad.ok and bad.details["exit_code"] == 1 and "exit 1" in bad.error and "missing.txt" in bad.error
    slow = shell(driver, "sleep 30", timeout=1)
    assert not slow.ok and slow.details["timed_out"] and "killed after 1s" in slow.error


def test_probes_read_files_csv_cells_and_json_fields(driver):
    seen = driver.probe(Probe("f", "file", "data/budget.csv"))
    assert seen["exists"] and seen["text"].startswith("item,category,amount,month\n")
    assert len(seen["sha256"]) == 64 and seen["size"] == len(seen["text"].encode())
    assert driver.probe(Probe("f", "file", "nope/missing.md")) == {"path": "nope/missing.md", "exists": False}
    image = driver.probe(Probe("f", "file", "images/logo.png"))
    assert image["exists"] and image["text"] is None and image["size"] > 50
    assert driver.probe(Probe("f", "file", "images"))["entries"] == ["chart.png", "logo.png"]
    with pytest.raises(ValueError, match="relative to the workspace"):
        driver.probe(Probe("f", "file", "../etc/passwd"))

    cell = {"path": "data/budget.csv", "key_column": "item", "key": "Rent", "column": "amount", "value": "1200"}
    tmpl = get_template("csv_cell_equals")
    values = {p.name: driver.probe(p) for p in tmpl.probes(cell)}
    assert tmpl.judge(Evidence(values, values), cell).passed
    field = {"path": "config/project.json", "field": "max_users", "value": 25}
    tmpl = get_template("json_field_equals")
    values = {p.name: driver.probe(p) for p in tmpl.probes(field)}
    assert tmpl.judge(Evidence(values, values), field).passed


def test_file_skills_write_inside_the_workspace_only(driver, manifest):
    skill = Skill("write_file", "workspace", "files", "writes a file", {"files": {"$path": "$content"}})
    driver.inject(skill, {"path": "inbox/today.md", "content": "# Today\n{braces} stay\n"})
    assert driver.probe(Probe("f", "file", "inbox/today.md"))["text"] == "# Today\n{braces} stay\n"
    assert shell(driver, "cat inbox/today.md").details["stdout"].startswith("# Today")  # the shell's user may read it
    with pytest.raises(InjectionError, match="relative to the workspace"):
        driver.inject(skill, {"path": "../../etc/cron.d/x", "content": "no"})
    with pytest.raises(InjectionError, match="argument 'content'"):
        driver.inject(skill, {"path": "inbox/x.md"})


def test_reset_is_a_fresh_container_with_the_seeded_workspace(driver):
    before = driver.app.container.id
    assert shell(driver, "rm data/budget.csv && echo hi > scratch.txt").ok
    assert not driver.probe(Probe("f", "file", "data/budget.csv"))["exists"]
    driver.reset()
    assert driver.app.container.id != before
    assert driver.probe(Probe("f", "file", "data/budget.csv"))["exists"]
    assert not driver.probe(Probe("f", "file", "scratch.txt"))["exists"]
    assert driver.health().ok


def test_a_gui_edit_lands_in_the_file_and_the_shell_sees_it(driver):
    actions = parse_actions([
        {"action": "goto", "url": "/view/data/budget.csv"},
        {"action": "left_click", "target": {"role": "link", "name": "Edit Gym"}},
        {"action": "type", "target": {"label": "amount", "within": "Save row"}, "text": "45"},
        {"action": "left_click", "target": {"role": "button", "name": "Save row", "within": "Save row"}},
    ])
    results = [driver.act(a) for a in actions]
    assert all(r.ok for r in results), [r.error for r in results]
    assert shell(driver, "grep '^Gym,' data/budget.csv").details["stdout"] == "Gym,health,45,June\n"
    assert "Saved row" in driver.observe(screenshot=False).ui_tree


# ---- the flywheel on the workspace: synthesize (CLI) -> replay rollout -> judge -> mine ------------------
@pytest.fixture(scope="module")
def synthesized_lake(tmp_path_factory):
    needs_engine()
    lake_root = tmp_path_factory.mktemp("workspace") / "lake"
    exe = Path(sys.executable).with_name("flywheel")
    out = subprocess.run(
        [str(exe), "--lake", str(lake_root), "run", "synthesize-tasks", "--sandbox", "workspace", "--count", "6"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return lake_root, out.stdout


@pytest.mark.slow
@pytest.mark.browser
def test_synthesize_tasks_cli_yields_verified_gui_and_cli_pairs(synthesized_lake):
    from lake import Lake

    lake_root, stdout = synthesized_lake
    assert re.search(r"workspace: [5-6] new verified pairs", stdout), stdout[-1500:]
    rows = Lake(lake_root).query("SELECT family, status, reason, reference_json FROM tasks WHERE sandbox = 'workspace'")
    verified = [r for r in rows if r["status"] == "verified"]
    assert len(rows) == 6 and len(verified) >= 5, [(r["family"], r["reason"]) for r in rows]
    kinds = [{a["action"] for a in json.loads(r["reference_json"])} for r in verified]
    assert any("shell" in k and "left_click" in k for k in kinds), "a verified pair mixes GUI and CLI actions"
    assert any(k == {"shell"} for k in kinds) and any("shell" not in k for k in kinds)


@pytest.mark.slow
@pytest.mark.browser
def test_replay_rollout_makes_trajectories_with_shell_and_gui_steps_that_judge_and_mine(synthesized_lake):
    from flows.failure_mining.mining import mine
    from flows.judging.judge import judge_pending
    from flows.rollout.rollout import rollout
    from lake import Lake

    lake = Lake(synthesized_lake[0])
    summary = rollout(lake, "r-ws", "replay", ["workspace"])
    assert not summary.errors and summary.sandboxes["workspace"]["terminated"] == summary.episodes >= 5
    lake.refresh_catalog()
    steps = lake.query(
        "SELECT t.task_id, s.actions_json, s.outputs_json, s.ok FROM steps s JOIN trajectories t USING (trajectory_id) "
        "JOIN tasks k ON k.task_id = t.task_id WHERE k.family = 'mixed' ORDER BY t.task_id, s.step_index"
    )
    actions = [json.loads(s["actions_json"])[0]["action"] for s in steps]
    assert "shell" in actions and "left_click" in actions and all(s["ok"] for s in steps)
    outputs = [json.loads(s["outputs_json"])[0] for s, a in zip(steps, actions) if a == "shell"]
    assert all(o["exit_code"] == 0 and not o["timed_out"] for o in outputs), "the shell's results are kept per step"
    judge_pending(lake, "j-ws")
    lake.refresh_catalog()
    verdicts = lake.query("SELECT verdict, count(*) AS n FROM verdicts GROUP BY 1")
    assert verdicts == [{"verdict": "pass", "n": summary.episodes}]
    mined = mine(lake, "m-ws", write_report=False)
    assert mined.trajectories == summary.episodes and mined.steps > 0
    # a replay's edits are side effects (recorded, no penalty), never failures
    flagged = {k: v for k, v in mined.by_reason.items() if not k.startswith("side_effect/")}
    assert flagged == {}, f"replays of verified pairs, shell steps included, flagged: {mined.by_reason}"


@pytest.mark.slow
@pytest.mark.browser
def test_the_llm_policy_runs_shell_commands_in_the_container_and_reads_their_output(synthesized_lake, monkeypatch, tmp_path):
    """The `llm` policy on a desktop sandbox: offered the shell tool, its command runs in the container, and
    the next request shows the model what the command printed (the OpenAI-server test double plays the model)."""
    from flows.rollout.rollout import load_verified_tasks, rollout
    from lake import Lake
    from tests.doubles.openai_server import FakeOpenAIServer, tool_call

    lake = Lake(synthesized_lake[0])
    task = load_verified_tasks(lake, ["workspace"], None)[0]
    with FakeOpenAIServer() as server:
        server.reply({"content": None, "tool_calls": [tool_call("shell", {"command": "ls"})]},
                     {"content": None, "tool_calls": [tool_call("computer_use", {"action": "terminate", "status": "failure"})]})
        monkeypatch.setenv("FLYWHEEL_MODEL", "openai/fake-cua")
        monkeypatch.setenv("FLYWHEEL_API_BASE", server.url)
        monkeypatch.setenv("FLYWHEEL_LLM_CACHE", str(tmp_path / "cache"))
        summary = rollout(lake, "r-ws-llm", "llm", ["workspace"], task_ids=[task.task_id])
        first, second = server.requests[:2]
    assert summary.sandboxes["workspace"] == {"terminated": 1}, summary.errors
    assert [t["function"]["name"] for t in first["tools"]] == ["computer_use", "shell"]
    lake.refresh_catalog()
    (step, _) = lake.query("SELECT actions_json, outputs_json FROM steps s JOIN trajectories t USING (trajectory_id) "
                           "WHERE t.run_id = 'r-ws-llm' ORDER BY step_index")
    listed = json.loads(step["outputs_json"])[0]["stdout"].split()
    assert json.loads(step["actions_json"])[0]["action"] == "shell" and listed, "ls ran in the seeded workspace"
    seen = second["messages"][1]["content"][0]["text"]
    assert "(shell `ls` exit 0:" in seen and listed[0] in seen
