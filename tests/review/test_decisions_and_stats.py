import pytest

from flywheel.review.decisions import RETIRED_REASON, Decision, DecisionError, record
from flywheel.review.sampling import SampleItem
from flywheel.review.stats import flagged_verifiers, judge_agreement, print_stats

PAIR = SampleItem("task", "t-shop-update", "shop", "update", "stratified")
LOW = SampleItem("trajectory", "tr-noisy", "mail", "delete", "low_agreement")
OK = SampleItem("trajectory", "tr-ok", "shop", "update", "stratified")


def test_flagging_a_verifier_retires_its_task(review_lake):
    record(review_lake, LOW, Decision("flag_verifier", reason="checks the wrong folder"), "ann", "s1", "failed")
    (task,) = review_lake.query("SELECT * FROM tasks WHERE task_id = 't-mail-delete'")
    assert task["status"] == "retired" and task["reason"] == RETIRED_REASON
    assert "checks the wrong folder" in task["reason_detail"] and task["instruction"] == "Delete the draft to Ben."
    assert [r["task_id"] for r in flagged_verifiers(review_lake)] == ["t-mail-delete"]


def test_judge_agreement_counts_accepts_and_relabels(review_lake):
    record(review_lake, OK, Decision("accept"), "ann", "s1", "pass")
    record(review_lake, LOW, Decision("relabel", label="pass"), "ann", "s1", "failed")
    record(review_lake, LOW, Decision("reject", reason="screens are blank"), "bob", "s1", "failed")
    out = judge_agreement(review_lake)
    assert (out["compared"], out["agreed"], out["agreement"]) == (2, 1, 0.5)


def test_the_latest_decision_per_reviewer_counts(review_lake):
    record(review_lake, OK, Decision("relabel", label="failed"), "ann", "s1", "pass")
    record(review_lake, OK, Decision("accept"), "ann", "s1", "pass")  # changed her mind
    assert judge_agreement(review_lake)["agreement"] == 1.0
    assert len(review_lake.query("SELECT * FROM reviews_history")) == 2


def test_a_retried_decision_replaces_its_own_row(review_lake):
    for _ in range(2):
        record(review_lake, PAIR, Decision("accept", review_id="retry-0001"), "ann", "s1", None)
    assert len(review_lake.query("SELECT * FROM reviews_history")) == 1


@pytest.mark.parametrize("item,decision,message", [
    (PAIR, Decision("reject"), "needs a reason"),
    (PAIR, Decision("relabel", label="pass"), "only a judged trajectory"),
    (OK, Decision("relabel", label="great"), "label must be one of"),
    (OK, Decision("approve"), "unknown decision"),
    (OK, Decision("accept", review_id="../../etc"), "review_id"),
])
def test_bad_decisions_are_refused_with_the_fix(review_lake, item, decision, message):
    with pytest.raises(DecisionError, match=message):
        record(review_lake, item, decision, "ann", "s1", None)
    assert not review_lake.files("reviews")


def test_stats_print_agreement_and_flags(review_lake, capsys):
    assert print_stats(review_lake) == 1  # nothing reviewed yet
    record(review_lake, OK, Decision("accept"), "ann", "s1", "pass")
    record(review_lake, PAIR, Decision("flag_verifier", reason="too loose"), "ann", "s1", None)
    assert print_stats(review_lake) == 0
    out = capsys.readouterr().out
    assert "1/1 agree (100%)" in out and "t-shop-update" in out and "tasks retired): 1" in out


def test_reviewer_agreement_is_percent_agreement_and_cohens_kappa_per_pair(review_lake, capsys):
    from flywheel.review.stats import reviewer_agreement

    tasks = [SampleItem("task", t, "shop", "f", "stratified") for t in ("t-shop-create", "t-shop-update", "t-mail-delete", "t-mail-search")]
    ann = ["accept", "accept", "reject", "accept"]
    bob = ["accept", "reject", "reject", "accept"]
    for item, a, b in zip(tasks, ann, bob):
        for who, d in (("ann", a), ("bob", b)):
            record(review_lake, item, Decision(d, reason="no" if d == "reject" else ""), who, "s1", None)
    record(review_lake, OK, Decision("accept"), "ann", "s1", "pass")  # endorses AutoJudge's pass
    record(review_lake, OK, Decision("relabel", label="failed"), "bob", "s1", "pass")
    record(review_lake, OK, Decision("relabel", label="pass"), "carol", "s1", "pass")  # says pass, as ann does
    record(review_lake, LOW, Decision("accept"), "carol", "s1", "failed")  # one reviewer only: not compared
    out = reviewer_agreement(review_lake)
    assert (out["items"], out["pairs"], out["agreed"]) == (5, 7, 4)
    tasks_pair = next(p for p in out["by_pair"] if p["item_kind"] == "task")
    # observed 3/4; chance (3/4 * 2/4) + (1/4 * 2/4) = 1/2; kappa = (0.75 - 0.5) / (1 - 0.5)
    assert tasks_pair["reviewers"] == ("ann", "bob") and tasks_pair["agreement"] == 0.75 and tasks_pair["kappa"] == 0.5
    trajectory = {p["reviewers"]: p for p in out["by_pair"] if p["item_kind"] == "trajectory"}
    assert trajectory[("ann", "carol")]["agreed"] == 1 and trajectory[("ann", "bob")]["agreed"] == 0
    assert trajectory[("ann", "carol")]["kappa"] is None  # one item, both say pass: kappa is undefined
    assert [d["item_id"] for d in out["disagreements"]] == ["t-shop-update", "tr-ok"]
    assert print_stats(review_lake) == 0
    text = capsys.readouterr().out
    assert "between reviewers: 4/7 reviewer pairs agree (57%) on 5 items" in text
    assert "Cohen's kappa 0.50" in text and "n/a (every decision alike)" in text
    assert "disagree on trajectory tr-ok: ann pass, bob failed, carol pass" in text


def test_without_shared_items_stats_say_how_to_get_them(review_lake, capsys):
    record(review_lake, OK, Decision("accept"), "ann", "s1", "pass")
    print_stats(review_lake)
    assert "no item decided by two reviewers yet" in capsys.readouterr().out
