"""What ``assay compare`` says about each row and the regressed cases, in all three outputs."""

from __future__ import annotations

import io

from rich.console import Console

from assay.compare import (
    Comparison,
    compare_runs,
    print_comparison,
    render_comparison_html,
    render_comparison_markdown,
)
from assay.compare.render import coverage, verdict
from assay.metrics.base import EvalStatus
from compare._results import case, eval_set, priced, scored

NOT_EVALUATED = EvalStatus.NOT_EVALUATED


def _compare(pairs: list[tuple[float, float]], alpha: float = 0.05) -> Comparison:
    """One metric ``m``; case ``c<i>`` scores ``pairs[i]`` (base, candidate)."""
    base = eval_set("s", *(case(f"c{i}", {"m": scored(b)}) for i, (b, _) in enumerate(pairs)))
    cand = eval_set("s", *(case(f"c{i}", {"m": scored(c)}) for i, (_, c) in enumerate(pairs)))
    return compare_runs([base], [cand], alpha=alpha, resamples=200)


def _printed(comparison: Comparison) -> str:
    buffer = io.StringIO()
    print_comparison(Console(file=buffer, width=400, color_system=None), comparison)
    return buffer.getvalue()


def test_too_few_flips_and_cases_say_so_with_the_counts_needed() -> None:
    comparison = _compare([(0.9, 0.1)] * 2 + [(0.9, 0.9)])
    metric, cases = comparison.metrics[0], comparison.verdict
    assert verdict(metric, 0.05) == (
        "too few cases to test: 3 scored and 2 discordant, at least 6 needed at alpha 0.05"
    )
    assert verdict(cases, 0.05) == (
        "too few cases to test: 2 discordant, at least 6 needed at alpha 0.05"
    )
    assert "no significant change" not in _printed(comparison)


def test_the_minimum_follows_alpha() -> None:
    comparison = _compare([(0.9, 0.1)] * 2 + [(0.9, 0.9)] * 4, alpha=0.01)
    assert verdict(comparison.verdict, 0.01) == (
        "too few cases to test: 2 discordant, at least 8 needed at alpha 0.01"
    )
    # 6 scored cases would be enough at 0.05, not at 0.01
    assert verdict(comparison.metrics[0], 0.01).startswith("too few cases to test: 6 scored")


def test_enough_cases_without_a_significant_change_say_no_significant_change() -> None:
    comparison = _compare([(0.81, 0.79)] * 2 + [(0.9, 0.9)] * 8)
    assert verdict(comparison.metrics[0], 0.05) == "no significant change"  # 10 scored
    # but 2 flips of whole cases are still too few for McNemar, the verdict row's only test
    assert verdict(comparison.verdict, 0.05).startswith("too few cases to test: 2 discordant")


def test_identical_rows_say_no_change_and_rows_without_pairs_not_compared() -> None:
    comparison = _compare([(0.9, 0.9), (0.5, 0.5)])
    assert verdict(comparison.metrics[0], 0.05) == "no change"
    assert verdict(comparison.verdict, 0.05) == "no change"
    base = [eval_set("s", case("a", {"m": scored(0.9)}, not_applicable=("m",)))]
    cand = [eval_set("s", case("a", {"m": scored(0.9)}))]
    assert verdict(compare_runs(base, cand, resamples=10).metrics[0], 0.05) == "not compared"


def test_coverage_is_one_sentence_when_every_row_counts_every_matched_case() -> None:
    assert coverage(_compare([(0.9, 0.5)] * 3)) == ["3 matched case(s), counted on every row"]


def test_coverage_explains_each_row_that_counts_fewer() -> None:
    base = [
        eval_set(
            "s",
            case("a", {"m": scored(0.9), "x": scored(0.9)}),
            case("b", {"m": scored(0.9), "x": scored(0.9)}, not_applicable=("x",)),
            case("c", {"m": scored(0.9)}),
            case("gone", {"m": scored(0.9)}),
        )
    ]
    cand = [
        eval_set(
            "s",
            case("a", {"m": scored(0.9), "x": scored(0.9)}),
            case("b", {"m": scored(0.9), "x": scored(0.9)}),
            case("c", {}, status=NOT_EVALUATED),
        )
    ]
    lines = coverage(compare_runs(base, cand, resamples=10))
    assert lines == [
        "3 matched case(s) (1 only in base); a row's n counts only those both runs scored or "
        "judged on it:",
        "n = 1 on x: 1 not applicable, 1 not evaluated in the candidate run",
        "n = 2 on every other row: 1 not evaluated in the candidate run",
    ]


def _regressed() -> Comparison:
    base = eval_set(
        "s",
        case("lost", {"m": scored(0.9)}),
        case("crashed", {"m": scored(0.9)}),
        case("kept", {"m": scored(0.9)}),
    )
    cand = eval_set(
        "s",
        case("lost", {"m": scored(0.2)}),
        case("crashed", {}, status=NOT_EVALUATED, reason="<script>x</script> [bold]boom[/]"),
        case("kept", {"m": scored(0.9)}),
    )
    return compare_runs([base], [cand], resamples=100)


def test_the_terminal_lists_regressed_cases_with_what_they_became() -> None:
    out = _printed(_regressed())
    assert "regressed cases: passed in base, failed or not evaluated in candidate (2)" in out
    assert "  s / lost: passed → failed (failed: m)\n" in out
    assert "  s / crashed: passed → not evaluated (<script>x</script> [bold]boom[/])\n" in out
    assert "s / kept:" not in out
    assert "(case verdict): pass→fail" not in out  # the same case is listed once


def test_markdown_and_html_lead_with_the_regressed_cases() -> None:
    comparison = _regressed()
    markdown = render_comparison_markdown(comparison)
    summary = "**2 case\\(s\\) passed in base and failed or were not evaluated in candidate.**"
    assert markdown.splitlines()[2] == summary
    assert "- s / lost\\: passed → failed \\(failed\\: m\\)" in markdown
    assert "&lt;script&gt;x&lt;/script&gt;" in markdown and "<script>" not in markdown
    page = render_comparison_html(comparison)
    assert '<p class="regressed-cases">2 case(s) passed in base' in page
    assert "<li>s / crashed: passed → not evaluated (&lt;script&gt;x&lt;/script&gt;" in page
    assert "<script>" not in page


def test_no_regressed_cases_no_summary() -> None:
    comparison = _compare([(0.5, 0.9)] * 3)
    assert comparison.case_regressions == []
    assert "passed in base" not in render_comparison_markdown(comparison)
    assert "regressed-cases" not in render_comparison_html(comparison).split("</style>")[1]


def _priced_runs(
    base_costs: dict[str, float | None], candidate_costs: dict[str, float | None]
) -> Comparison:
    pairs = ((0.9, 0.9), (0.5, 0.5))
    base = eval_set("s", *(case(f"c{i}", {"m": scored(b)}) for i, (b, _) in enumerate(pairs)))
    cand = eval_set("s", *(case(f"c{i}", {"m": scored(c)}) for i, (_, c) in enumerate(pairs)))
    return compare_runs([priced(base, base_costs)], [priced(cand, candidate_costs)], resamples=10)


def test_each_runs_judge_cost_and_the_change_show_in_all_three_outputs() -> None:
    comparison = _priced_runs({"m": 0.5, "j": 0.0042}, {"m": 0.25, "j": 0.0052})

    printed = _printed(comparison)
    assert "judge cost: $0.50 → $0.26 (-$0.25)" in printed  # from a cent up, to the cent
    assert "  j: $0.0042 → $0.0052 (+$0.001)" in printed
    assert "  m: $0.50 → $0.25 (-$0.25)" in printed
    markdown = render_comparison_markdown(comparison)
    lines = markdown.splitlines()
    assert "**Judge cost:** \\$0.50 → \\$0.26 \\(-\\$0.25\\)" in lines
    assert "- j: \\$0.0042 → \\$0.0052 \\(\\+\\$0.001\\)" in lines
    assert not [line for line in lines if line.startswith("| j ")]  # the metric table's rows only
    page = render_comparison_html(comparison)
    assert (
        '<tr class="cost-total"><td>total</td><td>$0.50</td><td>$0.26</td><td>-$0.25</td>' in page
    )
    assert "<tr><td>m</td><td>$0.50</td><td>$0.25</td><td>-$0.25</td></tr>" in page


def test_an_unpriced_run_reads_unknown_with_no_change() -> None:
    comparison = _priced_runs({"m": 0.5}, {"m": None})
    assert "judge cost: $0.50 → unknown\n" in _printed(comparison)
    assert "**Judge cost:** \\$0.50 → unknown" in render_comparison_markdown(comparison)
    assert "<td>unknown</td><td></td>" not in render_comparison_html(comparison)
    assert "<td>unknown</td><td>–</td>" in render_comparison_html(comparison)


def test_runs_whose_judges_cost_nothing_show_no_cost() -> None:
    comparison = _priced_runs({"m": 0.0}, {"m": 0.0})
    assert "judge cost" not in _printed(comparison)
    assert "Judge cost" not in render_comparison_markdown(comparison)
    assert "costs" not in render_comparison_html(comparison).split("</style>")[1]
