"""JUnit XML for CI systems: one ``<testsuite>`` per eval set, one ``<testcase>`` per case and run.

- A FAILED case has a ``<failure>`` whose message lists each failing metric with its score and
  threshold; the element's text repeats them one per line with the reasons recorded.
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
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from assay.metrics.base import EvalStatus
from assay.report.judge_agreement import judged_metrics
from assay.results.model import EvalCaseResult, EvalSetResult

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids written as a Python-style escape."""
    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def failing_metrics(case: EvalCaseResult) -> list[str]:
    """``metric: score 0.2500 < threshold 0.8000`` for every failing metric that applies."""
    lines = []
    for row in case.overall_eval_metric_results:
        if row.eval_status is not EvalStatus.FAILED or row.metric_name in case.assay.not_applicable:
            continue
        score = "-" if row.score is None else f"{row.score:.4f}"
        threshold = "-" if row.threshold is None else f"{row.threshold:.4f}"
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
    element.text = _xml_text("\n".join([*failing, *_reasons(case)]))
    return element


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


def _testsuite(result: EvalSetResult) -> ET.Element:
    cases = result.eval_case_results
    runs = any(case.assay.run > 1 for case in cases)
    failures = sum(case.final_eval_status is EvalStatus.FAILED for case in cases)
    errors = sum(case.final_eval_status is EvalStatus.NOT_EVALUATED for case in cases)
    duration = (
        result.assay.duration_s if result.assay else sum(case.assay.duration_s for case in cases)
    )
    suite = ET.Element(
        "testsuite",
        name=_xml_text(result.eval_set_id),
        tests=str(len(cases)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
        time=_seconds(duration),
    )
    if result.creation_timestamp:
        stamp = datetime.fromtimestamp(result.creation_timestamp, UTC)
        suite.set("timestamp", stamp.replace(tzinfo=None).isoformat(timespec="seconds"))
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
        warnings = []
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
    else:
        warnings = []
    suite.extend(_testcase(result, case, runs) for case in cases)
    if warnings:
        ET.SubElement(suite, "system-out").text = _xml_text("\n".join(warnings))
    return suite


def junit_tree(results: Sequence[EvalSetResult]) -> ET.ElementTree:
    """The JUnit document: ``<testsuites>`` with totals, one ``<testsuite>`` per eval set."""
    suites = [_testsuite(result) for result in results]
    root = ET.Element("testsuites", name="assay")
    for attribute in ("tests", "failures", "errors", "skipped"):
        root.set(attribute, str(sum(int(suite.get(attribute, "0")) for suite in suites)))
    root.set("time", _seconds(sum(float(suite.get("time", "0")) for suite in suites)))
    root.extend(suites)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: Path, results: Sequence[EvalSetResult]) -> None:
    """Write the results as JUnit XML (UTF-8, with an XML declaration) to ``path``."""
    junit_tree(results).write(path, encoding="utf-8", xml_declaration=True)
