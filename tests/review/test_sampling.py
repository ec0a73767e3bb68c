from flywheel.review.sampling import LOW_AGREEMENT, draw_sample


def strata(items):
    return {(i.kind, i.sandbox, i.family) for i in items}


def test_every_stratum_is_drawn_and_rejected_pairs_never(review_lake):
    sample = draw_sample(review_lake, size=50, seed=1)
    ids = [i.item_id for i in sample.items]
    assert len(ids) == len(set(ids))
    assert "t-shop-bad" not in ids  # rejected by the gate: nothing to review
    assert strata(sample.items) == {
        ("task", "shop", "create"), ("task", "shop", "update"), ("task", "mail", "delete"), ("task", "mail", "search"),
        ("trajectory", "shop", "create"), ("trajectory", "shop", "update"), ("trajectory", "mail", "delete"),
    }


def test_a_small_sample_takes_one_item_per_stratum_before_a_second(review_lake):
    sample = draw_sample(review_lake, size=4, seed=0)
    stratified = [i for i in sample.items if i.why == "stratified"]
    assert len(stratified) == 4 and len({(i.kind, i.sandbox, i.family) for i in stratified}) == 4
    assert {(i.kind, i.sandbox) for i in sample.items} == {("task", "shop"), ("task", "mail"),
                                                          ("trajectory", "shop"), ("trajectory", "mail")}


def test_every_low_agreement_case_is_included_whatever_the_size(review_lake):
    for size in (0, 1):
        sample = draw_sample(review_lake, size=size, seed=0)
        low = [i for i in sample.items if i.why == "low_agreement"]
        assert [i.item_id for i in low] == ["tr-noisy"]
        assert len(sample.items) == size + 1
    assert 0.5 < LOW_AGREEMENT


def test_the_same_seed_gives_the_same_sample(review_lake):
    a, b = draw_sample(review_lake, 3, seed=7), draw_sample(review_lake, 3, seed=7)
    assert a == b and a.sample_id.startswith("sample-7-")


def test_an_empty_lake_gives_an_empty_sample(lake):
    assert draw_sample(lake, 10).items == ()
