"""A cycle goes on when the environment fails a stage (and says so in its report); a bug in a stage still stops it."""

from __future__ import annotations

from collections import Counter

import pytest

from flows.cycle.report import IterationStats, render_report, summary_table
from flows.cycle.stages import EnvProblem, reported_problems, run_stage
from sandboxes.app_process import SandboxError


class TimeoutError(Exception):  # noqa: A001 - named like Playwright's, which derives from Exception, not OSError
    pass


def _raise(exc: BaseException):
    raise exc


def test_an_environment_failure_is_recorded_and_the_cycle_goes_on():
    problems: list[EnvProblem] = []
    assert run_stage(problems, 3, "explore", lambda: _raise(TimeoutError("Timeout 2000ms exceeded.\ncall log")), "shop") is None
    try:
        raise SandboxError("app did not start")
    except SandboxError as cause:
        wrapped = RuntimeError("explore-sandbox failed")
        wrapped.__cause__ = cause
    assert run_stage(problems, 3, "rollout", lambda: _raise(wrapped)) is None
    assert run_stage(problems, 3, "judge", lambda: _raise(ConnectionResetError("reset"))) is None
    assert run_stage(problems, 3, "curriculum", lambda **kw: kw, x=1) == {"x": 1}
    assert [(p.stage, p.sandbox, p.error) for p in problems] == [
        ("explore", "shop", "TimeoutError: Timeout 2000ms exceeded."),
        ("rollout", "", "RuntimeError: explore-sandbox failed"),
        ("judge", "", "ConnectionResetError: reset"),
    ]


def test_a_bug_in_a_stage_stops_the_cycle():
    with pytest.raises(KeyError):
        run_stage([], 1, "export-sft", lambda: _raise(KeyError("todomvc")))


def test_problems_a_stage_returned_and_raised_are_in_the_report():
    returned = reported_problems(2, "synthesize-tasks", {"sandboxes": [{"sandbox": "mail", "error": "timeout\nmore"},
                                                                       {"sandbox": "shop", "error": None}],
                                                         "errors": ["notes-android: no device"]})
    assert [(p.sandbox, p.error) for p in returned] == [("mail", "timeout"), ("", "notes-android: no device")]
    stats = [IterationStats(1, "r1", [], Counter(), Counter(), {}),
             IterationStats(2, "r2", [], Counter(), Counter(), {}, problems=[*returned, EnvProblem(2, "explore", "shop", "x | y")])]
    report = render_report("simulated-learner", stats, {}, "c.svg", True)
    assert "| 2 | explore | shop | x / y |" in report and "| 2 | synthesize-tasks | mail | timeout |" in report
    assert [r["problems"] for r in summary_table(stats)] == [0, 3]


def test_the_report_so_far_is_written_after_each_iteration(tmp_path):
    from flows.cycle.report import write_report
    from lake import Lake

    lake = Lake(tmp_path / "lake")
    rows = [{"sandbox": "shop", "family": "create", "episodes": 4, "success_rate": 0.5}]
    stats = [IterationStats(1, "r1", rows, Counter(new=4), Counter(), {})]
    _, report, chart = write_report(lake, "cycle-x", "simulated-learner", stats)
    stats.append(IterationStats(2, "r2", [dict(rows[0], success_rate=0.75)], Counter(active=2), Counter(mastered=2), {}))
    markdown, again, chart_again = write_report(lake, "cycle-x", "simulated-learner", stats)
    assert (again, chart_again) == (report, chart) and report.read_text() == markdown
    assert "| shop | create | 50% of 4 | 75% of 4 |" in markdown and "simulator, not a model" in markdown
    svg = chart.read_text()
    assert "iteration 1" in svg and "iteration 2" in svg and "shop · create" in svg and "75% of 4" in svg
