"""JUnit XML for CI systems: one ``<testsuite>`` per eval set, one ``<testcase>`` per case and run.

- A FAILED case has a ``<failure>`` whose message lists each failing metric with its score and
  threshold; the element's text repeats them one per line with the reasons recorded, and why
  each metric failed (:func:`~assay.report.why.why`): the judge's verdict as it gave it, and,
  where a judge profile decided it otherwise, the decision and its rule.
- A NOT_EVALUATED case is an ``<error>`` with the reason. It is not ``<skipped>``: CI systems
  (GitHub, GitLab, Jenkins) show skipped tests as neutral, which would hide a case whose agent
  crashed or whose judge was unreachable; an error is shown as a problem, apart from failures,
  and ``assay eval`` does not count such a run as passed either.
- Metrics that do not apply to a case (``assay.not_applicable``) are never failures.
- Each judged metric's judge, and how far it agrees with people (``assay.judge.<metric>``,
  ``assay.judge_agreement.<metric>``), are suite properties; a judge whose verdicts are a smoke
  test (kappa below 0.2) adds ``assay.judge_warning.<metric>`` and a line to the suite's
  ``<system-out>``.

Text from agents, judges and ids is escaped by :mod:`xml.etree.ElementTree`; characters XML 1.0
cannot hold at all (most control characters, lone surrogates) are written as ``\\xNN`` /
``\\uNNNN``, so the file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assay._internal.files import write_atomically
from assay.metrics.base import EvalStatus
from assay.report.judge_agreement import judged_metrics
from assay.report.numbers import score_text
from assay.report.why import why
from assay.results.model import EvalCaseResult, EvalSetResult

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids written as a Python-style escape."""
    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def failing_metrics(case: EvalCaseResult) -> list[str]:
    """``metric: score 0.25 < threshold 0.80`` for every failing metric that applies (numbers
    as every report writes them, :mod:`assay.report.numbers`)."""
    lines = []
    for row in case.overall_eval_metric_results:
        if row.eval_status is not EvalStatus.FAILED or row.metric_name in case.assay.not_applicable:
            continue
        score = score_text(row.score, row.threshold)
        threshold = score_text(row.threshold)
        lines.append(f"{row.metric_name}: score {score} < threshold {threshold}")
    return lines


def _failure(case: EvalCaseResult) -> ET.Element:
    failing = failing_metrics(case)
    message = (
        f"{len(failing)} metric(s) below threshold: " + "; ".join(failing)
        if failing
        else case.assay.reason or "the case failed"
    )
    element = ET.Element("failure", message=_xml_text(message), type="FAILED")
    element.text = _xml_text("\n".join([*failing, *_whys(case), *_reasons(case)]))
    return element


def _whys(case: EvalCaseResult) -> list[str]:
    """``metric: why`` for each applicable metric that failed, or passed by a judge profile's
    decision or a close vote (:func:`~assay.report.why.why`)."""
    lines = []
    for row in case.overall_eval_metric_results:
        if row.metric_name in case.assay.not_applicable:
            continue
        if row.eval_status not in (EvalStatus.FAILED, EvalStatus.PASSED):
            continue
        said = why(case, row)
        if said:
            lines.append(f"{row.metric_name}: {said}")
    return lines


def _reasons(case: EvalCaseResult) -> list[str]:
    """The case's reason, then each applicable metric's reason where it says something else."""
    lines = [case.assay.reason] if case.assay.reason else []
    lines += [
        f"{name}: {why}"
        for name, why in case.assay.metric_reasons.items()
        if name not in case.assay.not_applicable and why != case.assay.reason
    ]
    return lines


def _error(case: EvalCaseResult) -> ET.Element:
    reason = case.assay.reason or "not evaluated"
    element = ET.Element("error", message=_xml_text(reason), type="NOT_EVALUATED")
    element.text = _xml_text("\n".join(_reasons(case) or [reason]))
    return element


def _testcase(result: EvalSetResult, case: EvalCaseResult, runs: bool) -> ET.Element:
    name = f"{case.eval_id} (run {case.assay.run})" if runs else case.eval_id
    element = ET.Element(
        "testcase",
        name=_xml_text(name),
        classname=_xml_text(result.eval_set_id),
        time=_seconds(case.assay.duration_s),
    )
    if case.final_eval_status is EvalStatus.FAILED:
        element.append(_failure(case))
    elif case.final_eval_status is EvalStatus.NOT_EVALUATED:
        element.append(_error(case))
    return element


@dataclass(frozen=True)
class _SuiteCounts:
    """What a ``<testsuite>``'s attributes and its cases' names need, counted in one pass."""

    tests: int
    failures: int
    errors: int
    duration: float
    runs: bool


def _count(result: EvalSetResult) -> _SuiteCounts:
    tests = failures = errors = 0
    duration = 0.0
    runs = False
    for case in result.eval_case_results:
        tests += 1
        failures += case.final_eval_status is EvalStatus.FAILED
        errors += case.final_eval_status is EvalStatus.NOT_EVALUATED
        duration += case.assay.duration_s
        runs = runs or case.assay.run > 1
    if result.assay:
        duration = result.assay.duration_s
    return _SuiteCounts(tests, failures, errors, duration, runs)


def _suite_element(result: EvalSetResult, counts: _SuiteCounts) -> tuple[ET.Element, list[str]]:
    """The ``<testsuite>`` with its properties but no cases, and the warnings for its
    ``<system-out>``."""
    suite = ET.Element(
        "testsuite",
        name=_xml_text(result.eval_set_id),
        tests=str(counts.tests),
        failures=str(counts.failures),
        errors=str(counts.errors),
        skipped="0",
        time=_seconds(counts.duration),
    )
    if result.creation_timestamp:
        stamp = datetime.fromtimestamp(result.creation_timestamp, UTC)
        suite.set("timestamp", stamp.replace(tzinfo=None).isoformat(timespec="seconds"))
    warnings: list[str] = []
    if result.assay is not None:
        properties = ET.SubElement(suite, "properties")
        notes = {
            "assay.version": result.assay.version,
            "assay.eval_set_path": result.assay.eval_set_path,
            "assay.config_source": result.assay.config_source,
        }
        for key, value in notes.items():
            if value is not None:
                ET.SubElement(properties, "property", name=key, value=_xml_text(value))
        for judged in judged_metrics(result):
            for kind, value in (
                ("judge", judged.judge),
                ("judge_agreement", judged.text),
                ("judge_warning", judged.warning),
            ):
                if value:
                    name = f"assay.{kind}.{judged.metric}"
                    ET.SubElement(properties, "property", name=name, value=_xml_text(value))
            if judged.warning:
                warnings.append(f"warning: {judged.warning}")
    return suite, warnings


def _system_out(warnings: list[str]) -> ET.Element:
    element = ET.Element("system-out")
    element.text = _xml_text("\n".join(warnings))
    return element


def _testsuite(result: EvalSetResult) -> ET.Element:
    counts = _count(result)
    suite, warnings = _suite_element(result, counts)
    suite.extend(_testcase(result, case, counts.runs) for case in result.eval_case_results)
    if warnings:
        suite.append(_system_out(warnings))
    return suite


def _root(counts: Sequence[_SuiteCounts]) -> ET.Element:
    root = ET.Element("testsuites", name="assay")
    root.set("tests", str(sum(c.tests for c in counts)))
    root.set("failures", str(sum(c.failures for c in counts)))
    root.set("errors", str(sum(c.errors for c in counts)))
    root.set("skipped", "0")
    root.set("time", _seconds(sum(float(_seconds(c.duration)) for c in counts)))
    return root


def junit_tree(results: Sequence[EvalSetResult]) -> ET.ElementTree:
    """The JUnit document as one tree: ``<testsuites>`` with totals, one ``<testsuite>`` per
    eval set (every case in memory at once; :func:`write_junit` writes the same bytes case by
    case)."""
    suites = [_testsuite(result) for result in results]
    root = _root([_count(result) for result in results])
    root.extend(suites)
    ET.indent(root)
    return ET.ElementTree(root)


_INDENT = "  "


def _xml(element: ET.Element, level: int) -> str:
    """``element`` as :func:`ET.indent` lays it out at ``level`` inside the document (no
    tail)."""
    ET.indent(element, space=_INDENT, level=level)
    return ET.tostring(element, encoding="unicode")


def _open_tag(element: ET.Element) -> str:
    """``<tag attr="...">`` as ElementTree writes it (an empty element is ``<tag ... />``)."""
    bare = ET.Element(element.tag, element.attrib)
    return ET.tostring(bare, encoding="unicode")[: -len(" />")] + ">"


def _suite_text(result: EvalSetResult, counts: _SuiteCounts) -> Iterator[str]:
    """One ``<testsuite>``, a piece per case, laid out as :func:`junit_tree` lays it out."""
    suite, warnings = _suite_element(result, counts)
    head = list(suite)
    if not head and not counts.tests and not warnings:
        yield _xml(suite, 1)
        return
    yield _open_tag(suite)
    inner = "\n" + _INDENT * 2
    for element in head:
        yield inner + _xml(element, 2)
    if counts.tests:
        for case in result.eval_case_results:
            yield inner + _xml(_testcase(result, case, counts.runs), 2)
    if warnings:
        yield inner + _xml(_system_out(warnings), 2)
    yield "\n" + _INDENT + "</testsuite>"


def junit_text(results: Sequence[EvalSetResult]) -> Iterator[str]:
    """The JUnit document in pieces, a case at a time (two passes over each set's cases: one
    for the counts its ``<testsuite>`` opens with, one to write them), byte for byte what
    writing :func:`junit_tree` gives."""
    counts = [_count(result) for result in results]
    root = _root(counts)
    yield "<?xml version='1.0' encoding='utf-8'?>\n"
    if not results:
        yield ET.tostring(root, encoding="unicode")
        return
    yield _open_tag(root)
    for result, counted in zip(results, counts, strict=True):
        yield "\n" + _INDENT
        yield from _suite_text(result, counted)
    yield "\n</testsuites>"


def write_junit(path: Path, results: Sequence[EvalSetResult]) -> None:
    """Write the results as JUnit XML (UTF-8, with an XML declaration) to ``path``, a case at a
    time (through a temporary file beside it)."""
    write_atomically(path, junit_text(results))
