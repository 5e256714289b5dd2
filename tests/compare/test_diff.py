"""Matching two runs' cases and deciding which metrics changed significantly."""

from __future__ import annotations

import pytest

from assay.compare import (
    CASE_VERDICT,
    CaseKey,
    CaseRegression,
    Comparison,
    MetricChange,
    compare_runs,
)
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
    assert row.discordant == 2 < row.min_pairs == 6  # McNemar could not be significant...
    assert row.testable  # ...but the interval, from 10 scored cases, could
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
    assert comparison.verdict.left_out == (("not evaluated in the base run", 1),)


def test_a_case_appearing_twice_in_one_run_is_an_input_error_naming_the_run() -> None:
    twice = [eval_set("s", case("a", {})), eval_set("s", case("a", {}))]
    with pytest.raises(InputError, match=r"run-7.*'s / a' appears twice"):
        compare_runs(twice, twice, base_label="run-7")


def test_the_same_seed_gives_the_same_comparison() -> None:
    base, candidate = _many([(0.9, 0.7), (0.5, 0.6), (0.8, 0.8)] * 5)
    first = compare_runs(base, candidate, seed=3, resamples=300)
    assert first == compare_runs(base, candidate, seed=3, resamples=300)


NOT_EVALUATED = EvalStatus.NOT_EVALUATED


def test_a_passed_case_that_fails_or_is_not_evaluated_is_a_case_regression() -> None:
    base = [
        eval_set(
            "s",
            case("fails", {"m": scored(0.9), "n": scored(0.9)}),
            case("crashes", {"m": scored(0.9)}),
            case("was_failing", {"m": scored(0.1)}),
            case("was_not_evaluated", {}, status=NOT_EVALUATED),
            case("holds", {"m": scored(0.9)}),
        )
    ]
    candidate = [
        eval_set(
            "s",
            case("fails", {"m": scored(0.1), "n": scored(0.2)}),
            case("crashes", {}, status=NOT_EVALUATED, reason="agent crashed"),
            case("was_failing", {}, status=NOT_EVALUATED, reason="agent crashed"),
            case("was_not_evaluated", {"m": scored(0.1)}),
            case("holds", {"m": scored(0.85)}),
        )
    ]
    comparison = compare_runs(base, candidate, resamples=100)
    assert comparison.case_regressions == [
        CaseRegression(
            key=CaseKey("s", "fails", 1), became=EvalStatus.FAILED, failed_metrics=("m", "n")
        ),
        CaseRegression(
            key=CaseKey("s", "crashes", 1), became=NOT_EVALUATED, reason="agent crashed"
        ),
    ]
    assert [r.became_label for r in comparison.case_regressions] == ["failed", "not evaluated"]
    # only one of the two is a pass→fail flip the McNemar test sees
    assert comparison.verdict.to_fail == (CaseKey("s", "fails", 1),)


def test_a_lone_regressed_case_is_a_case_regression_but_not_significant() -> None:
    base, candidate = _many([(0.9, 0.1)] + [(0.9, 0.9)] * 30)
    comparison = compare_runs(base, candidate, resamples=300)
    assert [r.key.eval_id for r in comparison.case_regressions] == ["c0"]
    assert comparison.regressions == []


def test_case_regression_notes_refuse_unknown_fields() -> None:
    with pytest.raises(ValueError, match="extra"):
        CaseRegression.model_validate(
            {"key": ("s", "a", 1), "became": EvalStatus.FAILED, "note": "x"}
        )


def test_every_row_accounts_for_every_matched_case() -> None:
    base = [
        eval_set(
            "s",
            case("both", {"m": scored(0.9), "new": scored(0.9)}),
            case("na", {"m": scored(0.9)}, not_applicable=("m",)),
            case("down_later", {"m": scored(0.9)}),
            case("down_both", {"m": (None, NOT_EVALUATED)}, status=NOT_EVALUATED),
            case("no_row_before", {}),
            case("no_score_after", {"m": scored(0.9)}),
        ),
        eval_set("t", case("gone", {"m": scored(0.9)})),
    ]
    candidate = [
        eval_set(
            "s",
            case("both", {"m": scored(0.8), "new": scored(0.9)}),
            case("na", {"m": scored(0.1)}),
            case("down_later", {}, status=NOT_EVALUATED),
            case("down_both", {}, status=NOT_EVALUATED),
            case("no_row_before", {"m": scored(0.9)}),
            case("no_score_after", {"m": (None, NOT_EVALUATED)}, status=EvalStatus.PASSED),
        )
    ]
    comparison = compare_runs(base, candidate, resamples=100)
    assert comparison.matched == 6  # t / gone is only in the base run
    m = _row(comparison, "m")
    assert m.compared == 1 and m.scored == 1
    assert m.left_out == (
        ("not evaluated in the candidate run", 2),  # down_later, no_score_after
        ("not applicable", 1),
        ("not evaluated in either run", 1),
        ("not measured in the base run", 1),
    )
    assert _row(comparison, "new").left_out == (
        ("not measured in either run", 3),  # na, no_row_before, no_score_after
        ("not evaluated in either run", 1),
        ("not evaluated in the candidate run", 1),
    )
    for row in comparison.rows:
        assert row.compared + sum(count for _, count in row.left_out) == comparison.matched
    verdict = comparison.verdict
    assert verdict.compared == 4
    assert verdict.left_out == (  # ties in alphabetical order
        ("not evaluated in either run", 1),
        ("not evaluated in the candidate run", 1),
    )


def test_left_out_reasons_are_listed_most_frequent_first() -> None:
    base = [eval_set("s", *(case(f"c{i}", {"m": scored(0.9)}) for i in range(4)))]
    candidate = [
        eval_set(
            "s",
            case("c0", {"m": scored(0.9)}, not_applicable=("m",)),
            case("c1", {}, status=NOT_EVALUATED),
            case("c2", {}, status=NOT_EVALUATED),
            case("c3", {"m": scored(0.9)}),
        )
    ]
    row = compare_runs(base, candidate, resamples=100).metrics[0]
    assert row.left_out == (("not evaluated in the candidate run", 2), ("not applicable", 1))


@pytest.mark.parametrize(("cases", "regressed"), [(5, False), (6, True)])
def test_an_interval_from_fewer_cases_than_any_test_needs_does_not_decide(
    cases: int, regressed: bool
) -> None:
    # every case a little worse and none flips: the interval lies below 0 at any size, but with
    # 5 pairs not even a sign test could be significant at 0.05 (2 / 2**5 = 0.0625)
    base, candidate = _many([(0.9, 0.85)] * cases)
    row = compare_runs(base, candidate, resamples=300).metrics[0]
    assert row.interval is not None and row.interval.high < 0
    assert row.min_pairs == 6 and row.testable is regressed
    assert row.regressed is regressed


def test_a_single_case_does_not_regress_on_its_point_interval() -> None:
    base, candidate = _many([(0.9, 0.85)])
    row = compare_runs(base, candidate, resamples=100).metrics[0]
    assert row.interval is not None and row.interval.low == row.interval.high < 0
    assert not row.regressed and not row.testable


def test_rows_that_did_not_change_at_all_are_marked_unchanged() -> None:
    base, candidate = _many([(0.9, 0.9), (0.5, 0.5)])
    comparison = compare_runs(base, candidate, resamples=100)
    assert comparison.metrics[0].unchanged and comparison.verdict.unchanged
    moved, _ = _many([(0.9, 0.9), (0.6, 0.5)])
    assert not compare_runs(moved, candidate, resamples=100).metrics[0].unchanged
