"""Publishing a finished run: the table, each file asked for (whole, or an error naming it), and
what the run amounts to."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from compare._results import case, eval_set, scored
from rich.console import Console

from assay.history import read_results_file
from assay.metrics.base import EvalStatus
from assay.report.publish import OutputError, Outputs, Table, publish, write_outputs
from assay.results.collected import CaseResults, run_summary
from assay.results.model import EvalSetResult, RunSummary


def _console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=120, color_system=None), out


def test_every_file_asked_for_is_written_and_said_in_order(tmp_path: Path) -> None:
    results = [eval_set("s", case("a", {"m": scored(1.0)}), case("b", {"m": scored(0.2)}))]
    console, out = _console()
    outputs = Outputs(
        results=tmp_path / "r.json",
        html=tmp_path / "r.html",
        junit=tmp_path / "r.xml",
        markdown=tmp_path / "r.md",
    )

    published = publish(console, results, outputs, table=Table())

    said = [line for line in out.getvalue().splitlines() if " written to " in line]
    assert said == [
        f"results written to {tmp_path / 'r.json'}",
        f"HTML report written to {tmp_path / 'r.html'}",
        f"JUnit XML written to {tmp_path / 'r.xml'}",
        f"Markdown summary written to {tmp_path / 'r.md'}",
    ]
    assert read_results_file(tmp_path / "r.json") == results
    assert "<testcase" in (tmp_path / "r.xml").read_text()
    assert "1 passed, 1 failed" in out.getvalue()  # the table's summary line, before the files
    assert published.summary == RunSummary(passed=1, failed=1)
    assert not published.clean


def test_a_file_that_cannot_be_written_is_an_error_naming_it_and_nothing_half_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "taken").mkdir()  # a folder where the file should go
    console, out = _console()
    results = [eval_set("s", case("a", {"m": scored(1.0)}))]

    with pytest.raises(OutputError) as raised:
        write_outputs(
            console, results, Outputs(results=tmp_path / "ok.json", html=tmp_path / "taken")
        )

    assert raised.value.path == tmp_path / "taken"
    assert raised.value.reason  # the OS's words, e.g. "Is a directory"
    assert (tmp_path / "ok.json").is_file()  # written before the failing one
    assert list((tmp_path / "taken").iterdir()) == []
    assert "results written to" in out.getvalue()
    assert "HTML report written" not in out.getvalue()


def test_a_passed_case_with_a_metric_not_evaluated_does_not_count_as_clean() -> None:
    unevaluated = case(
        "a",
        {"m": scored(1.0), "judge": (None, EvalStatus.NOT_EVALUATED)},
        status=EvalStatus.PASSED,
    )
    console, _ = _console()

    published = publish(console, [eval_set("s", unevaluated)], Outputs())

    assert published.summary == RunSummary(passed=1)
    assert published.unevaluated == 1
    assert not published.clean
    assert publish(console, [eval_set("s", case("b", {"m": scored(1.0)}))], Outputs()).clean


def test_run_summary_trusts_a_recorded_summary_only_where_it_counts_every_case() -> None:
    def collected(set_id: str, recorded: RunSummary, *scores: float) -> EvalSetResult:
        cases = CaseResults()
        for number, score in enumerate(scores):
            cases.append(case(f"c{number}", {"m": scored(score)}))
        result = eval_set(set_id)
        result.eval_case_results = cases
        assert result.assay is not None
        result.assay.summary = recorded
        return result

    recorded = RunSummary(passed=1, failed=1, not_evaluated=1)  # as the run counted them
    whole = collected("whole", recorded, 1.0, 0.1, 0.9)
    stale = collected("stale", RunSummary(passed=5), 0.0)  # counts cases it does not hold
    listed = eval_set("listed", case("x", {"m": scored(1.0)}))
    assert listed.assay is not None
    listed.assay.summary = RunSummary(failed=7)  # a plain list is always counted

    assert run_summary([whole]) == recorded
    assert run_summary([stale, listed]) == RunSummary(passed=1, failed=1)
