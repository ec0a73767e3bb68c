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
