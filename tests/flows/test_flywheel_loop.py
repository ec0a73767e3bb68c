"""The flywheel's steering: pools choose rollouts, failure seeds choose new tasks, exports route by quality,
the simulated learner improves on what was exported. Real lakes on disk (the real schemas and views); the last
test turns the loop on TodoMVC (fetched from npm, MIT) through Chromium and the real validation gate."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.curriculum.curriculum import update_pools
from flows.curriculum.sampling import plan_rollout
from flows.rollout.policies import NoiseRates, SimulatedLearnerPolicy, get_policy, training_exposure
from flows.sft_export.config import ExportConfig
from flows.sft_export.export import export_sft
from flows.task_synthesis import from_failures
from flows.task_synthesis.task_spec import TaskSpec
from flywheel.cli import hoist_global_options
from flywheel.progress import LineProgress
from lake import Lake, utcnow
from tests.flows.export_data import T0, add_task, add_trajectory

POLICY = "simulated-learner"


def _verdicts(lake: Lake, task_id: str, verdicts: list[str], run: str, minutes: int) -> None:
    """Judged episodes of `task_id` from one rollout run `run` of the policy."""
    when = T0 + dt.timedelta(minutes=minutes)
    ids = [f"{task_id}-{run}-{i}" for i in range(len(verdicts))]
    lake.write("trajectories", [{
        "trajectory_id": t, "task_id": task_id, "task_version": 1, "sandbox": "shop", "source_commit": "commit-shop",
        "policy": POLICY, "episode": i, "num_steps": 1, "ended": "terminated", "run_id": run, "recorded_at": when,
    } for i, t in enumerate(ids)], run, task_id)
    lake.write("verdicts", [{"trajectory_id": t, "task_id": task_id, "sandbox": "shop", "policy": POLICY, "verdict": v,
                             "run_id": "judge", "recorded_at": when} for t, v in zip(ids, verdicts)], f"judge-{run}", task_id)


def _specs(lake: Lake) -> list[TaskSpec]:
    return [TaskSpec.from_row(r) for r in lake.query("SELECT * FROM tasks WHERE status = 'verified' ORDER BY task_id")]


def test_pools_choose_what_a_rollout_runs(lake):
    ids = {name: _store(lake, _spec("create", f"Add {name}", {"n": name}, _row_exists(title=name), []))
           for name in ("easy", "hard", "mixed", "fresh", "other")}
    _verdicts(lake, ids["easy"], ["pass", "pass"], "r1", 0)
    _verdicts(lake, ids["hard"], ["failed", "failed"], "r1", 0)
    _verdicts(lake, ids["mixed"], ["pass", "failed"], "r1", 0)
    update_pools(lake, "cur-1")
    pools = {r["task_id"]: r["pool"] for r in lake.query("SELECT task_id, pool FROM pools")}
    assert pools == {ids["easy"]: "mastered", ids["hard"]: "monitoring", ids["mixed"]: "active"}

    plan = plan_rollout(lake, POLICY, _specs(lake))
    assert {t.task_id for t in plan.tasks} == {ids["mixed"], ids["fresh"], ids["other"]}  # new tasks enter as active
    assert plan.chosen["shop"] == Counter(active=1, new=2)
    assert plan.left_out["shop"] == Counter(mastered=1, monitoring_not_due=1)
    assert {t.task_id for t in plan_rollout(lake, POLICY, _specs(lake), budget=2).tasks} == {ids["fresh"], ids["other"]}
    retired = [t for t in _specs(lake) if t.task_id in (ids["easy"], ids["hard"])]
    plan = plan_rollout(lake, POLICY, retired)  # nothing else to roll out: the failed task is re-checked early
    assert plan.chosen["shop"] == Counter(monitoring=1) and plan.left_out["shop"] == Counter(mastered=1)

    _verdicts(lake, ids["mixed"], ["pass"], "r2", 10)  # a second rollout ran: the hard task is due for a re-check
    plan = plan_rollout(lake, POLICY, _specs(lake))
    assert ids["hard"] in {t.task_id for t in plan.tasks} and plan.chosen["shop"]["monitoring"] == 1
    assert plan.tasks[-1].task_id == ids["hard"]  # re-checks come after active and new tasks
    assert plan_rollout(lake, "another-policy", _specs(lake)).chosen["shop"] == Counter(new=5)
    with pytest.raises(ValueError, match="at least 1"):
        plan_rollout(lake, POLICY, _specs(lake), budget=0)


def _store(lake: Lake, spec: TaskSpec, status: str = "verified") -> str:
    lake.write("tasks", [spec.to_row(status, None, None, "synth", T0)], "synth", spec.task_id)
    return spec.task_id


def _seed(lake: Lake, task_id: str, kind: str, trajectory: str) -> None:
    lake.write("failure_seeds", [{
        "seed_id": f"{task_id}:{kind}:r:mining-1", "task_id": task_id, "sandbox": "shop", "kind": kind, "reason": f"{kind}_reason",
        "context_json": json.dumps({"trajectory_id": trajectory}), "run_id": "mine", "recorded_at": T0,
    }], "mine", f"{task_id}-{kind}")


def _pool(lake: Lake, task_id: str, pool: str) -> None:
    lake.write("pools", [{"policy": POLICY, "task_id": task_id, "sandbox": "shop", "family": "x", "pool": pool,
                          "success_rate": {"active": 0.5, "monitoring": 0.0, "mastered": 1.0}[pool], "episodes": 2,
                          "run_id": "cur", "recorded_at": T0}], "cur", task_id)


def _row_exists(**where) -> dict:
    return {"template": "row_exists", "params": {"table": "notes", "where": where}}


def _spec(family: str, instruction: str, params: dict, verifier: dict, reference: list[dict], injection=None) -> TaskSpec:
    return TaskSpec("shop", "c1", family, "notes", instruction, params, 0, injection or [], verifier, reference,
                    {"agent": "static"})


def test_failure_seeds_become_targeted_tasks_by_pool_with_lineage(lake):
    add_note = _spec("create", "Add the note “Budget review 42”.", {"values": {"title": "Budget review 42"}},
                     _row_exists(title="Budget review 42"),
                     [{"action": "goto", "url": "/notes"}, {"action": "type", "target": {"label": "Title"}, "text": "Budget review 42"},
                      {"action": "left_click", "target": {"name": "Save"}}])
    sibling = _spec("create", "Add the note “Team lunch”.", {"values": {"title": "Team lunch"}}, _row_exists(title="Team lunch"),
                    [{"action": "goto", "url": "/notes"}, {"action": "type", "target": {"label": "Title"}, "text": "Team lunch"},
                     {"action": "left_click", "target": {"name": "Save"}}])
    two_steps = _spec("multi_step", "Could you add the note “A1”, and then star the note “B2”?",
                      {"steps": [{"title": "A1"}, {"star": "B2"}]},
                      {"template": "all_of", "params": {"checks": [_row_exists(title="A1"), _row_exists(title="B2", starred=1)]}},
                      [{"action": "goto", "url": "/notes"}, {"action": "type", "target": {"label": "Title"}, "text": "A1"},
                       {"action": "goto", "url": "/notes/2"}, {"action": "left_click", "target": {"name": "Star"}}])
    mastered = _spec("update", "Star the note “C3”.", {"star": "C3"}, _row_exists(title="C3", starred=1),
                     [{"action": "goto", "url": "/notes/3"}, {"action": "left_click", "target": {"name": "Star"}},
                      {"action": "terminate", "status": "success"}], injection=[{"skill": "insert_notes", "args": {"title": "C3"}}])
    partner = _spec("update", "Star the note “D4”.", {"star": "D4"}, _row_exists(title="D4", starred=1),
                    [{"action": "goto", "url": "/notes/4"}, {"action": "left_click", "target": {"name": "Star"}}])
    ids = [_store(lake, s) for s in (add_note, sibling, two_steps, mastered, partner)]
    add_trajectory(lake, "traj-1", task_id=ids[0], policy=POLICY, verdict="failed")
    for tid, pool in zip(ids[1:], ("active", "monitoring", "mastered", "mastered")):
        _pool(lake, tid, pool)
    _seed(lake, ids[0], "loop", "traj-1")  # no pool yet -> a variant (after the bad_args seed below)
    _seed(lake, ids[2], "premature", "traj-1")  # monitoring -> the first sub-goal
    _seed(lake, ids[3], "bad_args", "traj-1")  # mastered -> a longer chain
    _seed(lake, ids[0], "bad_args", "traj-1")  # two seeds of one task: one now, the other after every task had one

    made, tally = from_failures.targeted_candidates(lake, "shop", count=3, policy=POLICY)
    assert tally == Counter(variant=1, subgoal=1, chain=1)
    by = {s.provenance["strategy"]: s for s in made}
    variant, sub, chain = by["variant"], by["subgoal"], by["chain"]
    assert variant.provenance["parent_task_id"] == ids[0] and variant.provenance["failure_kind"] == "bad_args"
    # "Team lunch" (the sibling's value) would make the sibling itself: the number is redrawn instead
    new_title = variant.provenance["substituted"]["Budget review 42"]
    assert new_title.startswith("Budget review ") and new_title != "Budget review 42"
    assert new_title in variant.instruction and variant.verifier == _row_exists(title=new_title)
    assert variant.reference[1]["text"] == new_title and variant.task_id not in ids
    assert sub.family == "subgoal" and sub.instruction == "Could you add the note “A1”?"
    assert sub.verifier == _row_exists(title="A1") and [a.get("text") for a in sub.reference] == [None, "A1"]
    assert chain.family == "chain" and chain.provenance["partner_task_id"] == ids[4]
    assert chain.instruction == "Star the note “C3”, and then star the note “D4”."
    assert [c["params"]["where"]["title"] for c in chain.verifier["params"]["checks"]] == ["C3", "D4"]
    assert all(a["action"] != "terminate" for a in chain.reference) and len(chain.reference) == 4
    for spec in made:  # lineage is stored in the task row
        row = spec.to_row("verified", None, None, "targeted-1", T0)
        assert json.loads(row["provenance_json"])["seed_id"].startswith(spec.provenance["parent_task_id"])

    from flows.task_synthesis.gate import GateResult
    from flows.task_synthesis.synthesis import land

    land(lake, "targeted-1", "shop", "from-failures", [], [(s, GateResult(s.task_id, "verified", None, None, [])) for s in made])
    again, tally = from_failures.targeted_candidates(lake, "shop", count=10, policy=POLICY)
    assert [s.provenance["seed_id"] for s in again] == [f"{ids[0]}:loop:r:mining-1"]  # each seed is used once
    assert tally == Counter(variant=1)
    # a chain's recorded steps split it again when it lands in monitoring
    chain_spec = TaskSpec.from_row(lake.query("SELECT * FROM tasks WHERE family = 'chain'")[0])
    first = from_failures.subgoal(chain_spec)
    assert first.instruction == "Star the note “C3”." and first.verifier == _row_exists(title="C3", starred=1)


def test_a_variant_never_swaps_what_the_verifier_does_not_check():
    ask = _spec("retrieve", "What is the price of “Blue Mug”?", {"product": "Blue Mug"},
                {"template": "answer_equals", "params": {"expected": "12.00"}},
                [{"action": "goto", "url": "/p/1"}, {"action": "terminate", "status": "success", "answer": "12.00"}])
    other = _spec("retrieve", "What is the price of “Red Lamp”?", {"product": "Red Lamp"},
                  {"template": "answer_equals", "params": {"expected": "30.00"}}, [])
    import random

    assert from_failures.variant(ask, [ask, other], random.Random(0)) is None  # the answer would silently be wrong


def test_exports_route_by_quality(lake, tmp_path):
    for t in ("kept", "learning"):
        add_task(lake, t)
    add_task(lake, "unverified", status="candidate")  # e.g. imported trajectories of a task never gated
    add_trajectory(lake, "p-kept", task_id="kept", verdict="pass")
    add_trajectory(lake, "p-unverified", task_id="unverified", verdict="pass", minutes=1)
    add_trajectory(lake, "f-learning", task_id="learning", verdict="failed", minutes=2)
    add_trajectory(lake, "p-learning", task_id="learning", verdict="pass", minutes=3,
                   turns=[[{"action": "goto", "url": "/x"}], [{"action": "terminate", "status": "success"}]])
    add_trajectory(lake, "f-kept", task_id="kept", verdict="failed", minutes=4,
                   turns=[[{"action": "goto", "url": "/y"}], [{"action": "terminate", "status": "failure"}]])
    update_pools(lake, "cur")  # kept and learning: 1 of 2 passed -> active; unverified -> mastered
    lake.write("pools", [{"policy": "scripted-noisy", "task_id": "kept", "sandbox": "shop", "family": "create",
                          "pool": "mastered", "success_rate": 1.0, "episodes": 3, "run_id": "cur2",
                          "recorded_at": utcnow() + dt.timedelta(days=1)}], "cur2", "kept")
    lake.write("failures", [{"failure_id": "x1", "trajectory_id": "f-learning", "task_id": "learning", "sandbox": "shop",
                             "policy": "scripted-noisy", "first_step": 1, "last_step": 2, "kind": "loop",
                             "reason": "exact_repeat", "severity": 0.5, "evidence_json": "{}", "detector_version": "mining-1",
                             "run_id": "mine", "recorded_at": T0}], "mine", "x1")
    out = tmp_path / "exports"

    def ids(route: str, fmt: str = "messages"):
        res = export_sft(lake, ExportConfig(name=f"r-{route}", route=route, format=fmt), out=out)
        data = pq.read_table(f"{res.path}/data").to_pylist() if res.path else []
        return res, sorted({r["trajectory_id"] for r in data})

    res, got = ids("sft")
    assert got == ["p-kept", "p-learning"] and res.counts["dropped"]["task_not_verified"] == 1
    res, got = ids("rl", "action-rl")
    assert got == ["f-learning", "p-learning"] and res.counts["dropped"]["not_active"] >= 2
    res, got = ids("negatives")
    assert got == ["f-learning"] and res.counts["dropped"]["no_failure_mined"] == 1
    reasons = pq.read_table(f"{res.path}/failures.parquet").to_pylist()
    assert [(r["trajectory_id"], r["kind"], r["reason"]) for r in reasons] == [("f-learning", "loop", "exact_repeat")]
    from flows.sft_export.shards import file_sha256

    listed = json.loads((Path(res.path) / "manifest.json").read_text())["sidecars"]  # published files are all listed
    assert [(f["path"], f["rows"], f["sha256"]) for f in listed] == [
        ("failures.parquet", 1, file_sha256(Path(res.path) / "failures.parquet"))]
    assert "failures.parquet" in (Path(res.path) / "README.md").read_text()
    with pytest.raises(ValueError, match="--format action-rl"):
        ExportConfig(name="bad", route="rl")
    assert ExportConfig(name="a").config_hash == ExportConfig(name="b", route=None).config_hash


def test_the_simulated_learner_makes_fewer_faults_in_families_it_was_exported(lake, tmp_path):
    add_task(lake, "t-create", family="create")
    add_task(lake, "t-delete", family="delete")
    add_trajectory(lake, "p1", task_id="t-create", verdict="pass")
    add_trajectory(lake, "f1", task_id="t-delete", verdict="failed", minutes=1)
    assert training_exposure(lake) == {}
    export_sft(lake, ExportConfig(name="loop", route="sft"), out=tmp_path / "x")
    assert training_exposure(lake) == {("shop", "create"): 1}
    add_trajectory(lake, "p2", task_id="t-create", verdict="pass", minutes=2,
                   turns=[[{"action": "goto", "url": "/z"}], [{"action": "terminate", "status": "success"}]])
    export_sft(lake, ExportConfig(name="loop", route="sft"), out=tmp_path / "x")
    exposure = training_exposure(lake)
    assert exposure == {("shop", "create"): 2}
    policy = get_policy(POLICY, None, None, exposure)
    assert isinstance(policy, SimulatedLearnerPolicy) and policy.name == "simulated-learner"
    specs = {t.family: t for t in (TaskSpec.from_row(r) for r in lake.query("SELECT * FROM tasks"))}
    policy.start(specs["create"], 0)
    assert policy.rates.loop == pytest.approx(SimulatedLearnerPolicy.UNTRAINED.loop / 4)
    policy.start(specs["delete"], 0)
    assert policy.rates == SimulatedLearnerPolicy.UNTRAINED
    assert get_policy(POLICY, "loop=0.1", None, exposure).base == NoiseRates(loop=0.1)


def test_global_options_are_accepted_anywhere():
    assert hoist_global_options(["run", "judge", "--lake", "L"]) == ["--lake", "L", "run", "judge"]
    assert hoist_global_options(["lake", "sql", "SELECT 1", "--lake=L"]) == ["--lake=L", "lake", "sql", "SELECT 1"]
    assert hoist_global_options(["x", "--", "--lake", "L"]) == ["x", "--", "--lake", "L"]


def test_progress_prints_lines_when_not_a_terminal():
    out = io.StringIO()
    with LineProgress(out, every_percent=25, every_seconds=3600) as p:
        bar = p.add_task("shop: validating", total=8)
        for _ in range(8):
            p.advance(bar)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("shop: validating: 0/8 (0%)")
    assert [line.split(": ", 2)[2].split(",")[0] for line in lines[1:]] == ["2/8 (25%)", "4/8 (50%)", "6/8 (75%)", "8/8 (100%)"]


@pytest.mark.slow
@pytest.mark.browser
def test_one_turn_on_todomvc_rolls_out_by_pool_and_verifies_tasks_born_from_failures(lake):
    from flows.failure_mining.mining import mine
    from flows.judging.judge import judge_pending
    from flows.rollout.rollout import rollout
    from flows.task_synthesis.synthesis import synthesize_sandbox
    from tests.conftest import in_own_thread, npm_sandbox

    manifest = npm_sandbox("todomvc")
    summary = in_own_thread(lambda: synthesize_sandbox(manifest, lake, "synth-1", count=8, seed=1))
    assert summary.verified >= 6
    noisy = "loop=0.6,bad_args=0.3,premature=0.4"
    first = in_own_thread(lambda: rollout(lake, "rollout-1", POLICY, ["todomvc"], noise=noisy))
    assert first.plan.chosen["todomvc"] == Counter(new=summary.verified)
    judge_pending(lake, "judge-1")
    mine(lake, "mine-1", write_report=False)
    update_pools(lake, "cur-1")
    pools = Counter(r["pool"] for r in lake.query("SELECT pool FROM pools"))
    assert pools["mastered"] and pools["monitoring"], pools
    # one episode per task puts each at 0% or 100%: mastered ones retire; failed ones are re-checked every second
    # rollout, or at once when nothing else is left to roll out
    second = in_own_thread(lambda: rollout(lake, "rollout-2", POLICY, ["todomvc"], noise=noisy))
    plan = second.plan
    assert plan.left_out["todomvc"]["mastered"] == pools["mastered"]
    if pools["active"]:
        assert plan.chosen["todomvc"] == Counter(active=pools["active"])
        assert plan.left_out["todomvc"]["monitoring_not_due"] == pools["monitoring"]
    else:
        assert plan.chosen["todomvc"] == Counter(monitoring=pools["monitoring"]) and not plan.left_out["todomvc"]["monitoring_not_due"]
    assert second.episodes == sum(plan.chosen["todomvc"].values()) < summary.verified

    born = in_own_thread(lambda: from_failures.synthesize_from_failures(manifest, lake, "targeted-1", count=4, policy=POLICY))
    assert born.candidates and born.verified >= 1, born
    rows = lake.query("SELECT provenance_json FROM tasks WHERE run_id = 'targeted-1' AND status = 'verified'")
    lineage = [json.loads(r["provenance_json"]) for r in rows]
    assert all(p["parent_task_id"] and p["seed_id"] and p["failure_kind"] and p["strategy"] for p in lineage)
