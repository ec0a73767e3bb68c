"""Content identity: a task's id is what it asks, starts from and checks; duplicates land once."""

import dataclasses

from flows.task_synthesis.gate import GateResult
from flows.task_synthesis.synthesis import land
from flows.task_synthesis.task_spec import TaskSpec, dedupe

VERIFIER = {"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 7"}}}


def task(**changes):
    base = TaskSpec("shop", "abc123", "create", "addresses", "Please add the address “Boathouse 7”.", {"form": "a"}, 1,
                    [], VERIFIER, [{"action": "goto", "url": "/addresses/new"}])
    return dataclasses.replace(base, **changes)


def test_seed_and_generator_params_do_not_change_the_id():
    assert task().task_id == task(seed=99, params={"form": "b"}).task_id


def test_case_spacing_and_final_punctuation_of_the_request_do_not_change_the_id():
    assert task().task_id == task(instruction="  please add the   address “Boathouse 7” ").task_id


def test_what_is_asked_injected_or_checked_changes_the_id():
    ids = {
        task().task_id,
        task(instruction="Please add the address “Boathouse 8”.").task_id,
        task(injection=[{"skill": "insert_addresses", "args": {"id": 900001}}]).task_id,
        task(verifier={"template": "row_exists", "params": {"table": "addresses", "where": {"label": "Boathouse 8"}}}).task_id,
        task(source_commit="def456").task_id,  # a new commit re-gates stored pairs as new versions
    }
    assert len(ids) == 5


def test_duplicates_collapse_and_land_once(lake):
    a, b, c = task(), task(seed=7), task(instruction="Add “Studio 3”.")
    assert dedupe([a, b, c]) == [a, c]
    results = [(s, GateResult(s.task_id, "verified", None, None, [])) for s in (a, b, c)]
    land(lake, "run-1", "shop", "static", [], results)
    rows = lake.query("SELECT task_id, seed FROM tasks_history ORDER BY seed")
    assert [(r["task_id"], r["seed"]) for r in rows] == [(a.task_id, 1), (c.task_id, 1)]
