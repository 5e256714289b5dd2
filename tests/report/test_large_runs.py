"""Reports of runs too large to hold: each reads the cases in order, at most twice, holding only
what it shows; JUnit streams the same bytes as the whole tree; HTML switches layout."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from compare._results import case as scored_case
from compare._results import eval_set, scored
from rich.console import Console

from assay.metrics.base import EvalStatus
from assay.report import html_large
from assay.report.console import print_results
from assay.report.html import render_html, write_html
from assay.report.html_summary import ScoreBins, histogram
from assay.report.junit import junit_tree, write_junit
from assay.report.markdown import LISTED, render_markdown
from assay.results.model import EvalSetResult, RunSummary, SetNotes
from report._html_cases import case
from report._lazy import CountedCases, lazy_result, many

TEMPLATE = case("x", 1, score=0.9)


def _tree_bytes(tmp_path: Path, results: list[EvalSetResult]) -> bytes:
    path = tmp_path / "tree.xml"
    junit_tree(results).write(path, encoding="utf-8", xml_declaration=True)
    return path.read_bytes()


@pytest.mark.parametrize(
    "results",
    [
        [],
        [eval_set("empty")],
        [EvalSetResult(eval_set_result_id="r", eval_set_id="bare")],
        [
            eval_set(
                "a", scored_case("ok", {"m": scored(0.9)}), scored_case("no", {"m": scored(0.1)})
            ),
            eval_set(
                "b <&>",
                scored_case("x", {}, run=1),
                scored_case("x", {}, run=2, status=EvalStatus.NOT_EVALUATED, reason="boom\x01"),
            ),
        ],
    ],
    ids=["nothing", "empty set", "no notes", "two sets"],
)
def test_streamed_junit_is_byte_for_byte_the_whole_tree(
    tmp_path: Path, results: list[EvalSetResult]
) -> None:
    out = tmp_path / "junit.xml"
    write_junit(out, results)
    assert out.read_bytes() == _tree_bytes(tmp_path, results)


def test_junit_of_a_lazy_run_reads_the_cases_twice_and_lists_each(tmp_path: Path) -> None:
    cases = CountedCases(many(600, 10, TEMPLATE))
    out = tmp_path / "junit.xml"
    write_junit(out, [lazy_result(cases)])
    root = ET.parse(out).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("600", "30", "30")
    assert len(root.findall("testsuite/testcase")) == 600
    assert cases.passes == 2


def test_markdown_of_a_lazy_run_reads_the_cases_once_and_lists_the_first_failures() -> None:
    cases = CountedCases(many(600, 10, TEMPLATE))
    text = render_markdown([lazy_result(cases)])
    assert cases.passes == 1
    assert "**540 passed, 30 failed, 30 not evaluated** of 600 case(s)" in text
    assert "### Failing cases (30)" in text and f"…and {30 - LISTED} more" in text
    assert "travel / case-00009" in text and "case-00599" not in text


def test_console_of_a_lazy_run_reads_the_cases_once_and_lists_only_what_did_not_pass() -> None:
    cases = CountedCases(many(600, 10, TEMPLATE))
    console = Console(file=StringIO(), width=200, color_system=None)
    print_results(console, [lazy_result(cases)], RunSummary(passed=540, failed=30), max_cases=5)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert cases.passes == 1
    assert "travel: 600 cases" in output and "case-00009" in output
    assert "5 of the 60 cases that did not pass, of 600" in output
    assert "case-00000" not in output


def test_html_of_a_large_run_lists_only_the_cases_that_did_not_pass_reading_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(html_large, "LARGE_RUN", 500)
    monkeypatch.setattr(html_large, "FULL_CASES", 40)
    cases = CountedCases(many(1_000, 10, TEMPLATE))
    out = tmp_path / "report.html"
    write_html(out, [lazy_result(cases)])
    page = out.read_text(encoding="utf-8")
    assert cases.passes == 1
    assert page.count('<details class="case"') == 40  # in full
    assert page.count('<li id="m') == 60  # by name
    assert all(f"case-{n:05d}" in page for n in range(9, 1_000, 10))  # every one reachable
    assert "case-00000" not in page  # passing cases are counted only
    assert "900 passed (counted, not listed)" in page
    assert "tool_trajectory_avg_score" in page and 'class="hist"' in page


def test_html_of_a_small_lazy_run_is_the_page_of_the_same_listed_run() -> None:
    cases = CountedCases(many(30, 10, TEMPLATE))
    lazy = render_html([lazy_result(cases)])
    listed = lazy_result(cases).model_copy(update={"eval_case_results": list(cases)})
    assert cases.passes == 2
    strip = "generated "
    assert lazy.split(strip)[0] == render_html([listed]).split(strip)[0]
    assert lazy.count('<details class="case"') == 30


def test_score_bins_give_histograms_bars_for_scores_in_zero_to_one() -> None:
    values = [0.0, 0.05, 0.3, 0.3, 0.95, 1.0, 1.0, 0.999]
    bins = ScoreBins()
    for value in values:
        bins.add(value)
    assert bins.histogram() == histogram(values)


def test_score_bins_count_every_value_outside_zero_to_one_in_its_bin() -> None:
    values = [0.5, 1.0, 12.0, -3.0, 250.0, 7.5]
    bins = ScoreBins()
    for value in values:
        bins.add(value)
    drawn = bins.histogram()
    assert drawn is not None and sum(bar.count for bar in drawn.bars) == len(values)
    last = drawn.bars[-1].label
    for value in values:
        [bar] = [b for b in drawn.bars if _inside(b.label, value, last=b.label == last)]
        assert bar.count >= 1


def _inside(label: str, value: float, *, last: bool) -> bool:
    """Whether ``value`` falls in the bar labelled ``label``: bars are half-open, the last one
    also holds its upper edge."""
    low, high = (float(x) for x in label.split(":")[0].split("–"))
    return low <= value < high or (last and value == high)


def test_set_notes_without_cases_render_in_the_large_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(html_large, "LARGE_RUN", 5)
    cases = CountedCases(many(10, 100, TEMPLATE))
    other = EvalSetResult(eval_set_result_id="o", eval_set_id="other", assay=SetNotes(version="0"))
    page = render_html([lazy_result(cases), other])
    assert "All eval sets" in page and "10 passed (counted, not listed)" in page
