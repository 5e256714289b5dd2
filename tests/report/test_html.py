"""The HTML report's rendering: escaping, trajectory mismatches, summary numbers, histograms."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from assay.report.html import histogram, render_html, trajectory, write_html
from assay.results.model import EvalSetResult
from report._html_cases import HOSTILE, IMG, SCRIPT, case, results

PASSED, FAILED, NOT_EVALUATED = 1, 2, 3


def _hostile_page() -> str:
    hostile = case(HOSTILE, FAILED, user=HOSTILE, agent=HOSTILE, rationale=HOSTILE, score=0.0)
    return render_html([results(hostile)])


def test_agent_user_judge_and_id_text_is_escaped_everywhere() -> None:
    page = _hostile_page()
    assert SCRIPT not in page
    assert IMG not in page
    assert "<img" not in page
    assert page.count("<script") == 1  # the report's own script, and nothing else
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;" in page


def test_hostile_eval_id_is_escaped_in_attributes() -> None:
    page = _hostile_page()
    quoted = re.findall(r'data-q="([^"]*)"', page)
    assert quoted and all("<" not in value for value in quoted)


def test_title_is_escaped(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    write_html(out, [results(case("a", PASSED))], title=SCRIPT)
    text = out.read_text(encoding="utf-8")
    assert f"<title>{SCRIPT}" not in text
    assert "<title>&lt;script&gt;" in text


def test_mismatched_tool_calls_are_highlighted_beside_the_expected_ones() -> None:
    wrong = case(
        "wrong_city",
        FAILED,
        score=0.0,
        actual_calls=[{"name": "search_flights", "args": {"to": "OPO"}}],
        expected_calls=[{"name": "search_flights", "args": {"to": "LIS"}}],
    )
    page = render_html([results(wrong)])
    row = re.search(r'<tr class="mismatch">(.*?)</tr>', page, re.S)
    assert row is not None
    assert "OPO" in row.group(1) and "LIS" in row.group(1)
    assert '<tr class="match">' not in page


def test_matching_tool_calls_are_not_highlighted() -> None:
    page = render_html([results(case("fine", PASSED))])
    assert '<tr class="match">' in page
    assert '<tr class="mismatch">' not in page


def test_missing_and_extra_calls_are_mismatches() -> None:
    res = results(
        case(
            "extra",
            FAILED,
            actual_calls=[{"name": "a", "args": {}}, {"name": "b", "args": {}}],
            expected_calls=[{"name": "a", "args": {}}],
        )
    )
    row = res.eval_case_results[0].eval_metric_result_per_invocation[0]
    rows = trajectory(row.actual_invocation, row.expected_invocation)
    assert [r.match for r in rows] == [True, False]
    assert rows[1].expected is None and rows[1].actual == "b({})"


def test_summary_shows_pass_rate_counts_and_mean_score() -> None:
    page = render_html(
        [results(case("a", PASSED, score=1.0), case("b", FAILED, score=0.0))],
    )
    assert "50.0%" in page
    assert re.search(r"tool_trajectory_avg_score</td><td class=\"num\">0\.5000</td>", page)


def test_overall_summary_appears_for_several_eval_sets() -> None:
    first = results(case("a", PASSED), eval_set_id="one")
    second = results(case("b", NOT_EVALUATED), eval_set_id="two")
    page = render_html([first, second])
    assert "All eval sets" in page
    assert page.count('class="summary set"') == 2


def test_score_distribution_is_an_inline_svg_histogram() -> None:
    page = render_html([results(case("a", PASSED, score=1.0), case("b", FAILED, score=0.0))])
    svg = re.search(r'<svg class="hist".*?</svg>', page, re.S)
    assert svg is not None
    assert svg.group(0).count("<rect") == 10


def test_histogram_bins_scores_over_zero_to_one() -> None:
    chart = histogram([0.0, 0.05, 1.0])
    assert chart is not None
    counts = [bar.count for bar in chart.bars]
    assert counts == [2, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert chart.bars[0].height > chart.bars[-1].height > 0
    assert histogram([]) is None


def test_histogram_of_values_outside_zero_to_one_uses_their_range() -> None:
    chart = histogram([100.0, 300.0])
    assert chart is not None
    assert (chart.low, chart.high) == ("100", "300")


def test_case_shows_judge_samples_rubrics_sentence_labels_and_usage() -> None:
    page = render_html([results(case("a", PASSED, rationale="grounded in the tool output"))])
    assert "answers: yes" in page  # the sample's verdict
    assert "grounded in the tool output" in page  # rationale, in the rubric table and labels
    assert '<tr class="label-contradictory">' in page
    assert "openai:stub (ASSAY_JUDGE_MODEL)" in page
    assert '<td class="num">120</td>' in page  # the judge's prompt tokens


def test_page_is_self_contained() -> None:
    page = render_html([results(case("a", PASSED))])
    assert "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<style>" in page and "<script>" in page


def test_empty_results_render() -> None:
    empty = EvalSetResult(eval_set_result_id="r", eval_set_id="empty")
    page = render_html([empty])
    assert "0 of 0 cases" in page


def test_templates_ship_inside_the_package() -> None:
    folder = resources.files("assay.report") / "templates"
    assert (folder / "report.html.j2").is_file()
    assert (folder / "report.js").is_file()
