"""``assay report SOURCE --html/--junit/--markdown``."""

from __future__ import annotations

import json
from pathlib import Path

from _support import Example, RunCli
from report._html_cases import SCRIPT, case, results

from assay.cli.main import EXIT_INPUT, EXIT_OK


def _results_file(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    data = results(case(f"case_{SCRIPT}", 1), case("b", 2, score=0.0))
    path.write_text(json.dumps(data.model_dump(mode="json")), encoding="utf-8")
    return path


def test_writes_html_junit_and_markdown(run_cli: RunCli, tmp_path: Path) -> None:
    source = _results_file(tmp_path)
    html, junit, md = tmp_path / "r.html", tmp_path / "r.xml", tmp_path / "r.md"
    run = run_cli("report", source, "--html", html, "--junit", junit, "--markdown", md)
    assert run.code == EXIT_OK, run.output
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert SCRIPT not in page
    assert "<testsuite" in junit.read_text(encoding="utf-8")
    assert md.read_text(encoding="utf-8").strip()
    assert f"HTML report written to {html}" in run.out


def test_title_option_sets_the_page_title(run_cli: RunCli, tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    run = run_cli("report", _results_file(tmp_path), "--html", html, "--title", "Nightly")
    assert run.code == EXIT_OK, run.output
    assert "<title>Nightly</title>" in html.read_text(encoding="utf-8")


def test_report_of_a_real_eval_run(run_cli: RunCli, example: Example, tmp_path: Path) -> None:
    out, html = tmp_path / "results.json", tmp_path / "r.html"
    assert run_cli("eval", example.evalset, "--traces", example.traces, "--output", out).code in (
        0,
        1,
    )
    run = run_cli("report", out, "--html", html)
    assert run.code == EXIT_OK, run.output
    page = html.read_text(encoding="utf-8")
    assert "travel" in page and 'class="grid"' in page and '"samples":[[' in page


def test_missing_source_is_an_input_error(run_cli: RunCli, tmp_path: Path) -> None:
    run = run_cli("report", tmp_path / "nope.json", "--html", tmp_path / "r.html")
    assert run.code == EXIT_INPUT
    assert "nope.json" in run.err
    assert "Traceback" not in run.output
    assert not (tmp_path / "r.html").exists()


def test_a_file_that_is_not_results_is_an_input_error(run_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    run = run_cli("report", bad, "--html", tmp_path / "r.html")
    assert run.code == EXIT_INPUT
    assert "bad.json" in run.err


def test_no_output_option_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    run = run_cli("report", _results_file(tmp_path))
    assert run.code == EXIT_INPUT
    assert "--html" in run.err


def test_unwritable_output_is_an_input_error(run_cli: RunCli, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "r.html"
    run = run_cli("report", _results_file(tmp_path), "--html", target)
    assert run.code == EXIT_INPUT
    assert "r.html" in run.err
    assert "Traceback" not in run.output


def test_eval_writes_every_report_asked_for_and_report_reads_the_run_back(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    import xml.etree.ElementTree as ET

    html, junit, md = tmp_path / "e.html", tmp_path / "e.xml", tmp_path / "e.md"
    run = run_cli(
        "eval", example.evalset, "--traces", example.regressed,
        "--html", html, "--junit", junit, "--markdown", md,
    )  # fmt: skip
    assert run.code == 1, run.output  # the regressed traces fail some cases
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) == 5
    assert int(suite.get("failures", "0")) == 2 and int(suite.get("errors", "0")) == 2
    page = html.read_text(encoding="utf-8")
    assert all(eval_id in page for eval_id in ("forecast_paris", "book_flight_lisbon"))
    assert "**1 passed, 2 failed, 2 not evaluated** of 5 case(s)" in md.read_text("utf-8")
    again = tmp_path / "again.xml"
    shown = run_cli("report", "latest", "--junit", again)  # the run from the history
    assert shown.code == EXIT_OK, shown.output
    assert ET.parse(again).getroot().find("testsuite").get("tests") == "5"  # type: ignore[union-attr]
