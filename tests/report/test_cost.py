"""What a run's judges cost, in the words every output shares (:mod:`assay.report.cost`)."""

from __future__ import annotations

from compare._results import case, eval_set, priced, scored

from assay.report.console import cost_line
from assay.report.cost import cost_of, cost_rows, run_cost, usd_change
from assay.results.model import EvalSetResult


def _set(set_id: str = "s") -> EvalSetResult:
    return eval_set(set_id, case("a", {"m": scored(1.0)}))


def test_a_run_costs_the_sum_of_its_sets_per_metric_with_its_cap() -> None:
    one = priced(_set("s1"), {"judge_a": 0.0042, "judge_b": 1.0}, cap=2.0)
    two = priced(_set("s2"), {"judge_a": 0.0008}, cap=2.0)

    found = run_cost([one, two])

    assert found.by_metric == {"judge_a": 0.005, "judge_b": 1.0}
    assert found.total_text() == "$1.00"
    assert found.metric_text("judge_a") == "$0.005"
    assert found.cap_text() == "--max-cost 2.00 not reached"
    assert found.words() == "$1.00 (judge_a $0.005, judge_b $1.00); --max-cost 2.00 not reached"


def test_a_cap_spent_up_to_reads_reached_in_the_console_line_too() -> None:
    result = priced(_set(), {"judge_a": 0.5}, cap=0.5)
    assert run_cost([result]).reached
    assert cost_line([result]) == "judge cost: $0.50; --max-cost 0.50 reached"


def test_an_unpriced_judge_reads_unknown_never_zero() -> None:
    alone = run_cost([priced(_set(), {"judge_a": None})])
    assert alone.total_text() == "unknown"
    assert alone.metric_text("judge_a") == "unknown"
    assert alone.words() == "unknown; price unknown for judge_a"
    both = run_cost([priced(_set(), {"judge_a": None, "judge_b": None})])
    assert both.words() == "unknown; price unknown for judge_a, judge_b"

    some = run_cost([priced(_set(), {"judge_a": 0.0042, "judge_b": None})])
    assert some.words() == "$0.0042 + unknown (judge_a $0.0042, judge_b unknown)"


def test_judges_that_cost_nothing_show_no_cost_anywhere() -> None:
    free = priced(_set(), {"judge_a": 0.0, "judge_b": 0.0})
    assert cost_of([free]) is None
    assert cost_line([free]) is None
    assert cost_of([_set()]) is None  # no judge at all
    assert cost_rows(run_cost([free]), run_cost([_set()])) == []


def test_judges_that_cost_nothing_under_a_cap_say_the_cap_without_a_list_of_zeros() -> None:
    free = priced(_set(), {"judge_a": 0.0, "judge_b": 0.0}, cap=1.0)
    assert cost_line([free]) == "judge cost: $0; --max-cost 1.00 not reached"


def test_one_set_of_several_leaves_the_run_cap_out() -> None:
    result = priced(_set(), {"judge_a": 0.25}, cap=1.0)
    found = cost_of([result], cap=False)
    assert found is not None and found.cap is None and found.words() == "$0.25"


def test_changes_carry_their_sign_and_none_reads_zero() -> None:
    assert usd_change(0.5, 0.25) == "-$0.25"
    assert usd_change(0.001, 0.0052) == "+$0.0042"
    assert usd_change(0.3, 0.3) == "$0"


def test_two_runs_side_by_side_change_only_where_both_costs_are_known() -> None:
    base = run_cost([priced(_set(), {"judge_a": 0.5, "judge_b": 0.25})])
    candidate = run_cost([priced(_set(), {"judge_a": 0.25, "judge_c": None})])

    rows = [(r.what, r.base, r.candidate, r.change) for r in cost_rows(base, candidate)]

    assert rows == [
        ("total", "$0.75", "$0.25 + unknown", ""),
        ("judge_a", "$0.50", "$0.25", "-$0.25"),
        ("judge_b", "$0.25", "–", ""),
        ("judge_c", "–", "unknown", ""),
    ]
