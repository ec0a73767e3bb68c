"""The LLM coding agent against a scripted OpenAI-compatible server (a test double on 127.0.0.1), so the
real litellm HTTP path runs: tools, budgets, faults, transcripts and ledger rows, the same validation
gate as the static agent, zero HTTP requests on a re-run, and pairs a new commit breaks get retired."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.agents.llm import AgentBudget, LLMAgent
from flows.task_synthesis.source import read_source
from flywheel.llm import LLMSettings
from tests.doubles.scripted_agent_server import ScriptedAgentServer, calls
from tests.shop_references import ADD_ADDRESS

ROOT = Path(__file__).resolve().parents[2]

PY_SKILL = (
    "import sqlite3\n"
    "def inject(db_path, args):\n"
    "    con = sqlite3.connect(db_path)\n"
    "    con.execute(\"INSERT INTO addresses (user_id, label, full_name, street, city, postcode, country) \"\n"
    "                \"VALUES (1, ?, 'Ana Silva', '2 Dock', 'Porto', '4000', 'Portugal')\", (args['label'],))\n"
    "    con.commit()\n"
    "    con.close()\n"
)
CODE_JUDGE = (
    "def judge(evidence, params):\n"
    "    before, after = evidence['initial']['n'], evidence['final']['n']\n"
    "    return {'passed': after > before, 'reason': f'{before} -> {after} matching addresses'}\n"
)
SHADOW_JUDGE = "def judge(evidence, params):\n    return {'passed': 'root' in open('/etc/shadow').read(), 'reason': 'peeked'}\n"
BOATHOUSE = {"name": "n", "kind": "sql", "query": "SELECT count(*) FROM addresses WHERE label = ? AND city = ?",
             "args": ["Boathouse 7", "Porto"]}


def propose(family: str, verifier: str, params: dict, injection: list | None = None) -> tuple[str, dict]:
    return ("propose_task", {"family": family, "app_area": "addresses", "instruction": "Add my Boathouse 7 address in Porto",
                             "params": params, "injection": injection or [], "verifier": verifier, "reference": ADD_ADDRESS})


SHOP_SCRIPT = [
    calls(("list_files", {}), ("read_file", {"path": "schema.sql", "start": 54, "end": 66})),
    calls(("grep", {"pattern": "addresses/new"}), ("query_app_db", {"sql": "SELECT id, label, city FROM addresses ORDER BY id LIMIT 3"})),
    calls(("write_skill", '{"name": "add_shed", "kind": "python", "code": ')),  # malformed JSON
    calls(("drop_database", {"really": True})),  # no such tool
    calls(
        ("write_skill", {"name": "add_shed", "kind": "python", "description": "an extra address", "code": PY_SKILL}),
        ("write_verifier", {"name": "boathouse_row", "template": "row_exists",
                            "params": {"table": "addresses", "where": {"label": "Boathouse 7", "city": "Porto"}}}),
        ("write_verifier", {"name": "boathouse_code", "probes": [BOATHOUSE], "code": CODE_JUDGE}),
        ("write_verifier", {"name": "peek", "probes": [BOATHOUSE], "code": SHADOW_JUDGE}),
        ("write_verifier", {"name": "any_address", "template": "row_exists", "params": {"table": "addresses", "where": {}}}),
    ),
    calls(("run_in_sandbox", {"skill": "add_shed", "args": {"label": "Old shed"}, "verifier": "boathouse_code"})),
    calls(
        propose("create", "boathouse_row", {"label": "Boathouse 7", "extra": "Old shed"},
                [{"skill": "add_shed", "args": {"label": "Old shed"}}]),
        propose("create", "boathouse_code", {"label": "Boathouse 7", "judge": "code"}),
        propose("create", "peek", {"label": "Boathouse 7", "judge": "peek"}),
        propose("create", "any_address", {"label": "Boathouse 7", "judge": "any"}),
    ),
    lambda body: calls(("validate_task", {"task_id": proposed(body)[1]})),
    calls(("submit", {"summary": "four pairs on the address form"})),
]


def proposed(body: dict) -> list[str]:
    """The task ids the tools reported so far, read from the conversation as a model would."""
    return re.findall(r"proposed (shop-\S+)", " ".join(m.get("content") or "" for m in body["messages"] if m["role"] == "tool"))


@pytest.fixture
def server():
    srv = ScriptedAgentServer(SHOP_SCRIPT).start()
    yield srv
    srv.close()


def settings(srv, tmp_path, **kw) -> LLMSettings:
    return LLMSettings(**({"model": "openai/scripted-coder", "api_base": srv.url, "cache_dir": tmp_path / "cache",
                           "timeout": 3.0} | kw))


def request(shop_manifest, shop_app, lake, count: int = 10) -> SynthesisRequest:
    return SynthesisRequest(shop_manifest, read_source(shop_manifest), shop_app.snapshot_path, count, 0, lake=lake,
                            run_id="r1")


@pytest.mark.browser
def test_the_loop_turns_bad_tool_calls_into_messages_and_keeps_everything(server, shop_manifest, shop_app, lake, tmp_path):
    server.fault_at(1, "status").fault_at(3, "garbage").fault_at(5, "sleep", seconds=8)
    out = LLMAgent(settings(server, tmp_path)).synthesize(request(shop_manifest, shop_app, lake))

    assert out.notes == []  # submitted normally, despite the 500, the body that is not JSON and the stall
    assert len(out.candidates) == 4 and [s.name for s in out.skills] == ["add_shed"]
    assert out.candidates[1].verifier["template"] == "code"
    assert out.candidates[0].provenance["agent"] == "llm" and out.candidates[0].provenance["model"] == "openai/scripted-coder"
    # the 500, the garbled body and the timeout were retried: steps 1, 3 and 5 were asked twice
    steps = [ScriptedAgentServer.position(b) for b in server.requests]
    assert steps == [0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 7, 8]

    rows = lake.query("SELECT * FROM agent_transcripts ORDER BY turn")
    errors = {r["tool_name"]: r["error"] for r in rows if r["role"] == "tool" and r["error"]}
    assert "not valid JSON" in errors["write_skill"] and "unknown tool 'drop_database'" in errors["drop_database"]
    tool_texts = [r["content"] for r in rows if r["role"] == "tool"]
    assert any('"skill": "applied"' in t and '"passed": false' in t for t in tool_texts), "run_in_sandbox judged in isolation"
    assert any("city TEXT NOT NULL" in t for t in tool_texts)  # read_file really read the pinned source
    # what the model was told about its mistakes went back over HTTP
    assert any("error: arguments of write_skill are not valid JSON" in m.get("content", "")
               for m in server.requests[-1]["messages"] if m["role"] == "tool")
    # the agent ran the gate itself on its code-verified pair, in a live sandbox, before submitting
    validated = json.loads(next(r["content"] for r in rows if r["tool_name"] == "validate_task"))
    checks = {c["check"]: c for c in validated["checks"]}
    assert validated["status"] == "verified" and {"initial", "reference", "repeat", "truncated", "counterfactual"} <= set(checks)
    assert checks["reference"]["evidence"] == {"initial": {"n": 0}, "final": {"n": 1}}
    calls_rows = lake.query("SELECT purpose, cache_hit, error, prompt_tokens FROM llm_calls")
    assert len(calls_rows) == 9 and all(r["purpose"] == "agent" and r["error"] is None for r in calls_rows)


def test_a_model_that_stays_down_ends_the_session_with_a_note(server, shop_manifest, shop_app, lake, tmp_path):
    server.fault_at(2, "status", always=True)
    out = LLMAgent(settings(server, tmp_path, num_retries=1)).synthesize(request(shop_manifest, shop_app, lake))
    assert out.candidates == [] and "model call failed after retries" in out.notes[0]
    (event,) = lake.query("SELECT error FROM agent_transcripts WHERE role = 'event'")
    assert event["error"].startswith("llm_error") and "InternalServerError" in event["error"]
    assert lake.query("SELECT count(*) n FROM llm_calls WHERE error IS NOT NULL")[0]["n"] == 1


def test_budgets_stop_the_loop(server, shop_manifest, shop_app, lake, tmp_path):
    out = LLMAgent(settings(server, tmp_path), AgentBudget(max_steps=3)).synthesize(request(shop_manifest, shop_app, lake))
    assert "after 3 steps" in out.notes[0] and len(server.requests) == 3
    out = LLMAgent(settings(server, tmp_path), AgentBudget(max_tokens=10)).synthesize(request(shop_manifest, shop_app, lake))
    assert "token" in out.notes[0] and len(server.requests) == 3  # step 0 again: answered from the cache


@pytest.mark.browser
def test_the_candidate_budget_is_enforced(server, shop_manifest, shop_app, lake, tmp_path):
    out = LLMAgent(settings(server, tmp_path)).synthesize(request(shop_manifest, shop_app, lake, count=2))
    assert len(out.candidates) == 2
    (row,) = lake.query("SELECT content FROM agent_transcripts WHERE tool_name = 'propose_task' AND error IS NOT NULL LIMIT 1")
    assert "budget of 2 candidates" in row["content"]


# ---- end to end, through the CLI ---------------------------------------------------------------------
def flywheel(lake_root: Path, srv, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = os.environ | {"FLYWHEEL_MODEL": "openai/scripted-coder", "FLYWHEEL_API_BASE": srv.url,
                        "FLYWHEEL_LLM_TIMEOUT": "3"}
    exe = Path(sys.executable).with_name("flywheel")
    return subprocess.run([str(exe), "--lake", str(lake_root), "run", "synthesize-tasks", "--agent", "llm", *args],
                          capture_output=True, text=True, timeout=900, env=env, cwd=cwd)


@pytest.mark.browser
@pytest.mark.slow
def test_synthesize_tasks_with_the_llm_agent_through_the_cli(server, tmp_path):
    import duckdb

    server.fault_at(1, "status").fault_at(5, "sleep", seconds=8)
    lake_root = tmp_path / "lake"
    first = flywheel(lake_root, server, "--sandbox", "shop")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    sent = len(server.requests)
    assert sent == 11  # nine steps, a 500 and a timeout retried once each

    con = duckdb.connect(str(lake_root / "catalog.duckdb"), read_only=True)
    tasks = dict(con.execute("SELECT json_extract_string(params_json, '$.judge'), status || ':' || coalesce(reason, '') "
                             "FROM tasks").fetchall())
    assert tasks == {None: "verified:", "code": "verified:", "peek": "rejected:unsafe_code", "any": "rejected:passes_initially"}
    (skill,) = con.execute("SELECT name, kind, agent FROM skills").fetchall()
    assert skill == ("add_shed", "python", "llm")
    assert con.execute("SELECT count(*) FROM agent_transcripts WHERE error IS NOT NULL").fetchone()[0] == 2
    assert con.execute("SELECT count(*), sum(cache_hit::int) FROM llm_calls").fetchone() == (9, 0)
    provenance = json.loads(con.execute("SELECT provenance_json FROM tasks LIMIT 1").fetchone()[0])
    assert provenance["agent"] == "llm" and provenance["synthesiser_version"] == "llm-1"
    con.close()

    again = flywheel(lake_root, server, "--sandbox", "shop")
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(server.requests) == sent, "a re-run makes zero HTTP requests"
    con = duckdb.connect(str(lake_root / "catalog.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM tasks_history").fetchone()[0] == 4  # nothing new
    assert con.execute("SELECT count(*), sum(cache_hit::int) FROM llm_calls").fetchone() == (18, 9)
    con.close()


# ---- a new commit ------------------------------------------------------------------------------------
def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def retire_first_stale(body: dict) -> dict:
    """Reads the stored pairs from the brief, as a model would, and retires the first one it lists."""
    brief = body["messages"][1]["content"]
    task_id = next(line[2:].split(" ")[0] for line in brief.splitlines() if line.startswith("- shop-"))
    return calls(("retire_task", {"task_id": task_id, "reason": "the diff renames addresses.city"}))


@pytest.mark.browser
@pytest.mark.slow
def test_a_commit_that_renames_a_column_retires_the_pairs_it_breaks(tmp_path, monkeypatch):
    from flows.task_synthesis.synthesis import synthesize_sandbox
    from lake import Lake
    from sandboxes.manifest import load_manifest

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "sandboxes" / "shop", repo / "shop", ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shop as shipped")
    manifest, lake = load_manifest(repo / "shop"), Lake(tmp_path / "lake")

    with ScriptedAgentServer(SHOP_SCRIPT[:5] + SHOP_SCRIPT[6:]) as srv:  # no run_in_sandbox this time
        monkeypatch.setenv("FLYWHEEL_MODEL", "openai/scripted-coder")
        monkeypatch.setenv("FLYWHEEL_API_BASE", srv.url)
        monkeypatch.setenv("FLYWHEEL_LLM_CACHE", str(tmp_path / "cache"))
        first = synthesize_sandbox(manifest, lake, "run-1", count=4, agent_name="llm")
        assert first.verified == 2, first.to_json()

        # a commit that changes nothing the pairs use: they are re-gated and live on as new versions
        (repo / "shop" / "README.md").write_text((repo / "shop" / "README.md").read_text() + "\nA note.\n")
        git(repo, "commit", "-qam", "shop: a note in the README")
        srv.script = [calls(("submit", {"summary": "nothing to change"}))]
        middle = synthesize_sandbox(manifest, lake, "run-2", count=4, agent_name="llm")
        assert middle.source_commit != first.source_commit and middle.error is None, middle.to_json()
        successors = lake.query("SELECT task_id, provenance_json, version FROM tasks WHERE status = 'verified'")
        assert len(successors) == 2 and all(r["version"] == 2 for r in successors)
        superseded = {json.loads(r["provenance_json"])["supersedes"] for r in successors}
        assert superseded == {r["task_id"] for r in lake.query(
            "SELECT task_id FROM tasks WHERE status = 'retired' AND reason = 'superseded_on_new_commit'")}

        # a commit that renames a column the pairs read: the agent retires one, the gate the other
        for path in [repo / "shop" / "app.py", repo / "shop" / "schema.sql", repo / "shop" / "seed.py",
                     *(repo / "shop" / "templates").glob("*.html")]:
            path.write_text(re.sub(r"\bcity\b", "town", path.read_text()))
        git(repo, "commit", "-qam", "addresses: rename city to town")
        srv.script = [
            calls(("git_log", {"max_count": 5}), ("git_diff", {"from_commit": middle.source_commit})),
            retire_first_stale,
            calls(("submit", {"summary": "retired what the rename broke"})),
        ]
        last = synthesize_sandbox(manifest, lake, "run-3", count=4, agent_name="llm")

    assert last.source_commit != middle.source_commit and last.error is None, last.to_json()
    log = lake.query("SELECT content FROM agent_transcripts WHERE tool_name = 'git_log'")[0]["content"]
    assert "rename city to town" in log.splitlines()[0]
    diff_text = lake.query("SELECT content FROM agent_transcripts WHERE tool_name = 'git_diff'")[0]["content"]
    assert "-    city TEXT NOT NULL," in diff_text and "+    town TEXT NOT NULL," in diff_text
    retired = lake.query("SELECT reason, reason_detail FROM tasks WHERE status = 'retired' AND run_id = 'run-3' ORDER BY reason")
    assert [r["reason"] for r in retired] == ["retired_by_agent", "verifier_broken_on_new_commit"]
    assert "city" in retired[1]["reason_detail"], retired[1]
    assert lake.query("SELECT count(*) n FROM tasks WHERE status = 'verified'")[0]["n"] == 0
    assert any("new commit" in n for n in last.notes)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("FLYWHEEL_LIVE_MODEL"), reason="opt-in: set FLYWHEEL_LIVE_MODEL=1 with FLYWHEEL_MODEL "
                    "(and FLYWHEEL_API_BASE / FLYWHEEL_API_KEY) to run the agent against a real model")
def test_a_live_model_proposes_candidates(shop_manifest, shop_app, lake):
    out = LLMAgent(LLMSettings.from_env(), AgentBudget(max_steps=30)).synthesize(request(shop_manifest, shop_app, lake, count=3))
    assert out.candidates, out.notes
    assert lake.query("SELECT count(*) n FROM agent_transcripts WHERE role = 'assistant'")[0]["n"] >= 2


@pytest.mark.parametrize("name,arguments,error", [
    ("read_file", '{"path": "schema.sql", "start": "abc"}', "read_file failed: ValueError"),
    ("read_file", '{"nope": 1}', "unexpected keyword argument 'nope'"),
    ("read_file", '{"path": "scheme.sql"}', "no file 'scheme.sql'"),
    ("grep", "[1]", "must be a JSON object"),
    ("grep", '{"pattern": "("}', "bad regular expression"),
    ("propose_task", '{"family": "create", "instruction": "x", "verifier": "v", "reference": []}', "no verifier 'v'"),
    ("write_skill", '{"name": "s", "kind": "python", "code": "def inject(:"}', "code does not parse"),
    ("write_verifier", '{"name": "v", "template": "row_exist", "params": {}}', "unknown verifier template"),
    ("retire_task", '{"task_id": "shop-x", "reason": "r"}', "not a stored pair from an older commit"),
])
def test_tools_answer_bad_arguments_with_an_error_for_the_model(shop_manifest, name, arguments, error):
    from flows.task_synthesis.agents.tools import ToolError, Workbench

    bench = Workbench(SynthesisRequest(shop_manifest, read_source(shop_manifest), None, 3, 0), "m", "h")
    with pytest.raises(ToolError, match=re.escape(error)):
        bench.call(name, arguments)


def test_the_cli_names_the_missing_model_setting(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLYWHEEL_")}
    exe = Path(sys.executable).with_name("flywheel")
    out = subprocess.run([str(exe), "--lake", str(tmp_path / "lake"), "run", "synthesize-tasks", "--agent", "llm"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2 and "FLYWHEEL_MODEL" in out.stderr and "FLYWHEEL_API_BASE" in out.stderr


def test_git_tools_read_history_and_an_uncommitted_change(tmp_path):
    from flows.task_synthesis.agents.tools import Workbench
    from sandboxes.manifest import load_manifest

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "sandboxes" / "shop", repo / "shop", ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shop as shipped")
    base = git(repo, "rev-parse", "HEAD")
    schema = repo / "shop" / "schema.sql"
    schema.write_text(schema.read_text().replace("    city TEXT NOT NULL,", "    town TEXT NOT NULL,"))
    manifest = load_manifest(repo / "shop")
    source = read_source(manifest)
    assert source.commit.startswith(f"{base[:12]}+dirty-")
    bench = Workbench(SynthesisRequest(manifest, source, None, 3, 0), "m", "h")
    assert bench.call("git_log", "{}").endswith("shop as shipped")
    diff = bench.call("git_diff", json.dumps({"from_commit": base}))
    assert "-    city TEXT NOT NULL," in diff and "+    town TEXT NOT NULL," in diff
    assert "town TEXT" in bench.call("read_file", '{"path": "schema.sql", "start": 54, "end": 66}')
