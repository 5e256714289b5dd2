"""``assay report SOURCE --html/--junit/--markdown``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import Example, RunCli
from report._html_cases import SCRIPT, case, results

from assay.cli.main import EXIT_INPUT, EXIT_OK, cli
from assay.cli.report import report_command


@pytest.fixture(autouse=True)
def _registered() -> None:
    """Until the lead registers the command in ``assay.cli.main``."""
    if "report" not in cli.commands:
        cli.add_command(report_command)


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
    assert "travel" in page and "<svg" in page and 'class="samples"' in page


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
