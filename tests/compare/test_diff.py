"""Matching two runs' cases and deciding which metrics changed significantly."""

from __future__ import annotations

import pytest

from assay.compare import CASE_VERDICT, CaseKey, Comparison, MetricChange, compare_runs
from assay.errors import InputError
from assay.metrics.base import EvalStatus
from assay.results.model import EvalSetResult
from compare._results import case, eval_set, scored

INFO = EvalStatus.INFORMATIONAL


def _row(comparison: Comparison, name: str) -> MetricChange:
    return next(row for row in comparison.rows if row.name == name)


def test_cases_match_by_set_case_and_run_and_unmatched_ones_are_listed() -> None:
    base = [
        eval_set("s", case("a", {"m": scored(1.0)}), case("a", {"m": scored(1.0)}, run=2)),
        eval_set("t", case("a", {"m": scored(1.0)})),
    ]
    candidate = [
        eval_set("s", case("a", {"m": scored(0.5)}), case("b", {"m": scored(1.0)})),
    ]
    comparison = compare_runs(base, candidate, resamples=100)
    assert comparison.matched == 1
    assert comparison.only_in_base == [CaseKey("s", "a", 2), CaseKey("t", "a", 1)]
    assert comparison.only_in_candidate == [CaseKey("s", "b", 1)]
    row = comparison.metrics[0]
    assert (row.scored, row.base_mean, row.candidate_mean) == (1, 1.0, 0.5)
    assert row.to_fail == (CaseKey("s", "a", 1),)


def test_case_key_labels_name_later_runs() -> None:
    assert CaseKey("s", "a", 1).label == "s / a"
    assert CaseKey("s", "a", 3).label == "s / a (run 3)"


def test_flips_and_pass_rates_count_only_cases_judged_in_both_runs() -> None:
    base = [
        eval_set(
            "s",
            case("up", {"m": scored(0.5)}),
            case("down", {"m": scored(0.9)}),
            case("same", {"m": scored(0.9)}),
            case("gone", {"m": (None, EvalStatus.NOT_EVALUATED)}),
        )
    ]
    candidate = [
        eval_set(
            "s",
            case("up", {"m": scored(0.85)}),
            case("down", {"m": scored(0.1)}),
            case("same", {"m": scored(0.95)}),
            case("gone", {"m": scored(0.9)}),
        )
    ]
    row = compare_runs(base, candidate, resamples=200).metrics[0]
    assert row.judged == 3 and row.scored == 3
    assert (row.base_passed, row.candidate_passed) == (2, 2)
    assert row.pass_rate_change == 0.0
    assert row.to_fail == (CaseKey("s", "down", 1),)
    assert row.to_pass == (CaseKey("s", "up", 1),)
    assert row.mean_change == pytest.approx((0.35 - 0.8 + 0.05) / 3)
    assert row.p_value == 1.0


def test_metrics_not_applicable_to_a_case_are_left_out_for_it() -> None:
    base = [eval_set("s", case("a", {"m": scored(1.0), "sim": scored(1.0)}))]
    candidate = [
        eval_set("s", case("a", {"m": scored(1.0), "sim": scored(0.0)}, not_applicable=("sim",)))
    ]
    row = _row(compare_runs(base, candidate, resamples=100), "sim")
    assert row.scored == 0 and row.judged == 0
    assert not row.to_fail


def _many(scores: list[tuple[float, float]]) -> tuple[list[EvalSetResult], list[EvalSetResult]]:
    """One eval set per run, case ``c<i>`` scoring ``scores[i]`` (base, candidate)."""
    base = eval_set("s", *(case(f"c{i}", {"m": scored(b)}) for i, (b, _) in enumerate(scores)))
    cand = eval_set("s", *(case(f"c{i}", {"m": scored(c)}) for i, (_, c) in enumerate(scores)))
    return [base], [cand]


def test_a_metric_whose_interval_lies_below_zero_regressed() -> None:
    base, candidate = _many([(0.9, 0.85)] * 20)  # every case a little worse, none flips
    row = compare_runs(base, candidate, resamples=500).metrics[0]
    assert row.interval is not None and row.interval.high < 0
    assert row.regressed and not row.improved
    assert not row.to_fail


def test_a_significant_excess_of_pass_to_fail_flips_regressed_even_if_the_mean_rose() -> None:
    # 8 cases slip just under the threshold; 2 failing ones improve a lot but still fail
    base, candidate = _many([(0.81, 0.79)] * 8 + [(0.0, 0.75)] * 2)
    row = compare_runs(base, candidate, resamples=1000).metrics[0]
    assert row.mean_change is not None and row.mean_change > 0
    assert row.interval is not None and row.interval.high > 0
    assert len(row.to_fail) == 8 and row.p_value == pytest.approx(2 / 256)
    assert row.regressed


def test_too_few_flips_are_not_significant() -> None:
    base, candidate = _many([(0.81, 0.79)] * 2 + [(0.9, 0.9)] * 8)
    comparison = compare_runs(base, candidate, resamples=500)
    row = comparison.metrics[0]
    assert row.p_value == 0.5
    assert not row.regressed  # the interval's upper end is 0: 8 cases did not change
    assert comparison.regressions == []


def test_a_significant_improvement_is_not_a_regression() -> None:
    base, candidate = _many([(0.5, 0.9)] * 10)
    comparison = compare_runs(base, candidate, resamples=500)
    assert comparison.metrics[0].improved
    assert comparison.verdict.improved
    assert comparison.regressions == []


def test_informational_metrics_never_regress() -> None:
    base = [eval_set("s", *(case(f"c{i}", {"tokens": (900.0, INFO)}) for i in range(10)))]
    cand = [eval_set("s", *(case(f"c{i}", {"tokens": (100.0, INFO)}) for i in range(10)))]
    row = compare_runs(base, cand, resamples=200).metrics[0]
    assert row.informational and row.interval is not None and row.interval.high < 0
    assert not row.regressed and not row.improved


def test_case_verdicts_are_compared_like_a_metric() -> None:
    base, candidate = _many([(0.9, 0.1)] * 7 + [(0.9, 0.9)] * 3)
    comparison = compare_runs(base, candidate, alpha=0.05, resamples=200)
    verdict = comparison.verdict
    assert verdict.name == CASE_VERDICT
    assert (verdict.base_passed, verdict.candidate_passed, verdict.judged) == (10, 3, 10)
    assert verdict.p_value == pytest.approx(2 / 128)
    assert verdict.regressed
    assert [row.name for row in comparison.regressions] == ["m", CASE_VERDICT]


def test_not_evaluated_cases_do_not_enter_the_verdict_row() -> None:
    base = [eval_set("s", case("a", {}, status=EvalStatus.NOT_EVALUATED, reason="agent crashed"))]
    candidate = [eval_set("s", case("a", {"m": scored(1.0)}))]
    comparison = compare_runs(base, candidate, resamples=100)
    assert comparison.matched == 1 and comparison.verdict.judged == 0


def test_a_case_appearing_twice_in_one_run_is_an_input_error_naming_the_run() -> None:
    twice = [eval_set("s", case("a", {})), eval_set("s", case("a", {}))]
    with pytest.raises(InputError, match=r"run-7.*'s / a' appears twice"):
        compare_runs(twice, twice, base_label="run-7")


def test_the_same_seed_gives_the_same_comparison() -> None:
    base, candidate = _many([(0.9, 0.7), (0.5, 0.6), (0.8, 0.8)] * 5)
    first = compare_runs(base, candidate, seed=3, resamples=300)
    assert first == compare_runs(base, candidate, seed=3, resamples=300)
