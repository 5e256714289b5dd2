"""JUnit XML: suites per eval set, a testcase per case and run, failures and errors CI can show."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from _support import Example, RunCli
from compare._results import case, eval_set, scored

from assay.history import read_results_file
from assay.metrics.base import EvalStatus
from assay.report.junit import write_junit
from assay.results.model import EvalSetResult
from report._html_cases import ALIGNED_RULE, aligned_case
from report._html_cases import results as aligned_results


def _write(tmp_path: Path, results: list[EvalSetResult]) -> ET.Element:
    path = tmp_path / "junit.xml"
    write_junit(path, results)
    assert path.read_bytes().startswith(b"<?xml version='1.0' encoding='utf-8'?>")
    return ET.parse(path).getroot()


def _check_counts(root: ET.Element) -> None:
    """Every count attribute equals the elements it counts, at suite and top level."""
    assert root.tag == "testsuites"
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        counted = {
            "tests": len(cases),
            "failures": sum(c.find("failure") is not None for c in cases),
            "errors": sum(c.find("error") is not None for c in cases),
            "skipped": sum(c.find("skipped") is not None for c in cases),
        }
        for key, value in counted.items():
            assert int(suite.get(key, "-1")) == value
            totals[key] += value
        for testcase in cases:
            assert testcase.get("classname") == suite.get("name")
            assert float(testcase.get("time", "x")) >= 0
    for key, value in totals.items():
        assert int(root.get(key, "-1")) == value


def test_failed_case_lists_its_failing_metrics_with_score_and_threshold(tmp_path: Path) -> None:
    results = [
        eval_set(
            "travel",
            case("ok", {"m": scored(0.9)}),
            case("bad", {"m": scored(0.25), "r": scored(0.5), "fine": scored(1.0)}),
        )
    ]
    root = _write(tmp_path, results)
    _check_counts(root)
    bad = root.find("testsuite/testcase[@name='bad']")
    assert bad is not None
    failure = bad.find("failure")
    assert failure is not None
    message = failure.get("message", "")
    assert message == (
        "2 metric(s) below threshold: m: score 0.25 < threshold 0.80; "
        "r: score 0.50 < threshold 0.80"
    )
    assert "fine" not in (failure.text or "")
    ok = root.find("testsuite/testcase[@name='ok']")
    assert ok is not None and len(ok) == 0


def test_not_evaluated_case_is_an_error_with_its_reason(tmp_path: Path) -> None:
    crashed = case(
        "crash",
        {"m": (None, EvalStatus.NOT_EVALUATED)},
        status=EvalStatus.NOT_EVALUATED,
        reason="agent raised RuntimeError: boom",
        metric_reasons={"m": "agent raised RuntimeError: boom"},
    )
    root = _write(tmp_path, [eval_set("s", crashed)])
    _check_counts(root)
    error = root.find("testsuite/testcase/error")
    assert error is not None
    assert error.get("message") == "agent raised RuntimeError: boom"
    assert root.find("testsuite/testcase/failure") is None


def test_not_applicable_metrics_are_never_failures(tmp_path: Path) -> None:
    simulated = case("scenario", {"m": scored(1.0), "sim": scored(0.0)}, not_applicable=("sim",))
    root = _write(tmp_path, [eval_set("s", simulated)])
    assert simulated.final_eval_status is EvalStatus.PASSED
    assert root.get("failures") == "0"
    assert root.find(".//failure") is None


def test_one_suite_per_eval_set_and_runs_in_test_names(tmp_path: Path) -> None:
    results = [
        eval_set("first", case("a", {}, run=1), case("a", {}, run=2)),
        eval_set("second", case("a", {})),
    ]
    root = _write(tmp_path, results)
    _check_counts(root)
    assert [s.get("name") for s in root.findall("testsuite")] == ["first", "second"]
    first = [c.get("name") for c in root.findall("testsuite[@name='first']/testcase")]
    assert first == ["a (run 1)", "a (run 2)"]
    assert [c.get("name") for c in root.findall("testsuite[@name='second']/testcase")] == ["a"]
    suite = root.find("testsuite")
    assert suite is not None and suite.get("timestamp") == "2023-11-14T22:13:20"
    assert suite.find("properties/property[@name='assay.version']") is not None


def test_agent_text_is_escaped_and_forbidden_characters_are_written_as_escapes(
    tmp_path: Path,
) -> None:
    nasty = 'x"></testcase><script>alert(1)</script>&amp;\x01\x1b'
    failed = case(
        "bad",
        {"m": scored(0.0)},
        reason=f"judge said: {nasty}\nsecond line",
    )
    root = _write(tmp_path, [eval_set(f"set {nasty}", case(nasty, {}), failed)])
    _check_counts(root)
    names = [c.get("name") for c in root.iter("testcase")]
    assert names[0] == 'x"></testcase><script>alert(1)</script>&amp;\\x01\\x1b'
    assert root.find("testsuite").get("name", "").startswith('set x"></testcase>')  # type: ignore[union-attr]
    failure = root.find(".//failure")
    assert failure is not None and "second line" in (failure.text or "")
    text = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert "<script>" not in text and "\x01" not in text


def test_junit_of_a_real_regressed_run(run_cli: RunCli, example: Example, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    assert (
        run_cli("eval", example.evalset, "--traces", example.regressed, "--output", out).code == 1
    )
    results = read_results_file(out)
    root = _write(tmp_path, results)
    _check_counts(root)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2", "2")
    messages = [f.get("message", "") for f in root.iter("failure")]
    assert any("tool_trajectory_avg_score: score 0.50 < threshold 1.00" in m for m in messages)
    assert all("per_turn_user_simulator_quality_v1" not in m for m in messages)  # n/a there


def test_a_failure_a_profile_decided_says_what_the_judge_said_and_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    write_junit(path, [aligned_results(aligned_case())])

    failure = ET.parse(path).getroot().find(".//failure")

    assert failure is not None
    text = " ".join((failure.text or "").split())
    assert (
        'rubric_based_final_response_quality_v1: turn 1: judge said "yes" (P(yes) 0.94); '
        f'aligned to "no": {ALIGNED_RULE}'
    ) in text
