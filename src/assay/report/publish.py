"""What a finished run leaves behind, in one call: its table, its results file, its reports and
its verdicts sent on as OpenTelemetry events.

``assay eval`` runs, then publishes; ``assay report`` publishes a run read back. Each file is
written whole or not at all (:class:`OutputError` names it and why), each written one said on the
console; a failed verdict export is a warning, never an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from assay._internal.files import write_bytes_atomically
from assay.results.collected import run_summary, unevaluated_in_passed
from assay.results.model import EvalSetResult, RunSummary
from assay.results.output import result_bytes


class OutputError(Exception):
    """A file the run was asked to write could not be written."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Outputs:
    """Where a run's results go; each None is not written."""

    results: Path | None = None
    """ADK EvalSetResult JSON (a list for several eval sets)."""
    html: Path | None = None
    junit: Path | None = None
    markdown: Path | None = None
    html_title: str | None = None
    export_url: str | None = None
    """An OTLP/HTTP endpoint the verdicts are sent to (``/v1/logs``)."""

    @property
    def paths(self) -> tuple[tuple[str, Path | None], ...]:
        """Each file with what it is (as a message names it)."""
        return (
            ("results", self.results),
            ("HTML report", self.html),
            ("JUnit XML", self.junit),
            ("Markdown summary", self.markdown),
        )


@dataclass(frozen=True)
class Table:
    """How the results table is printed."""

    detailed: bool = False
    """A per-invocation table for every case listed, too."""
    max_cases: int = 0
    """A set of more cases gets its table per metric, then the cases that did not pass (0: no
    limit)."""


@dataclass(frozen=True)
class Published:
    """What the run amounted to."""

    summary: RunSummary
    unevaluated: int
    """Applicable metrics not evaluated in cases that still passed."""

    @property
    def clean(self) -> bool:
        """Every case passed and every metric they apply was evaluated."""
        return self.summary.failed == 0 and self.summary.not_evaluated == 0 and not self.unevaluated


SpanIds = Mapping[tuple[str | None, str], tuple[str, str] | None]
"""Each case's session's root span (trace id, span id), by (eval set id, eval id)."""


def publish(
    console: Console,
    results: Sequence[EvalSetResult],
    outputs: Outputs,
    *,
    table: Table | None = None,
    after_table: Callable[[], None] | None = None,
    spans: SpanIds | None = None,
    err: Console | None = None,
) -> Published:
    """Print the results table (``table``; none when None), then write each file ``outputs``
    names and send the verdicts on (about ``spans``); ``err`` takes the export's lines."""
    summary = run_summary(results)
    if table is not None:
        from assay.report.console import print_results

        print_results(console, results, summary, detailed=table.detailed, max_cases=table.max_cases)
    if after_table is not None:
        after_table()
    write_outputs(console, results, outputs)
    if outputs.export_url:
        export(err or console, outputs.export_url, results, spans or {})
    return Published(summary, unevaluated_in_passed(results))


def write_outputs(console: Console, results: Sequence[EvalSetResult], outputs: Outputs) -> None:
    """Each file ``outputs`` names, written whole and said; the first that cannot be written
    raises :class:`OutputError`."""
    for what, path in outputs.paths:
        if path is None:
            continue
        try:
            _writer(what, outputs)(path, results)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.filename is not None and str(exc.filename) != str(path):
                reason += f": {exc.filename}"
            raise OutputError(path, reason) from None
        console.print(f"{what} written to {escape(str(path))}")


def _writer(what: str, outputs: Outputs) -> Callable[[Path, Sequence[EvalSetResult]], None]:
    if what == "results":
        return lambda path, results: write_bytes_atomically(path, result_bytes(results))
    if what == "HTML report":
        from assay.report.html import write_html

        return lambda path, results: write_html(path, results, title=outputs.html_title)
    if what == "JUnit XML":
        from assay.report.junit import write_junit

        return write_junit
    from assay.report.markdown import write_markdown

    return write_markdown


def export(console: Console, url: str, results: Sequence[EvalSetResult], spans: SpanIds) -> None:
    """Each verdict sent to ``url``, about its case's session's root span (if any; headers
    from ``OTEL_EXPORTER_OTLP_HEADERS``); a failure is one warning, the results as they are."""
    from assay.report import otel_events as otel

    warn = lambda message: console.print(f"[yellow]warning:[/] {escape(message)}")  # noqa: E731
    exporter = otel.VerdictExporter(url, headers=otel.otlp_headers(os.environ), warn=warn)
    unparented = exporter.add_all(otel.case_targets(results, spans))
    exporter.close()
    if not exporter.failed:
        without = f" ({unparented} case(s) without a span)" if unparented else ""
        console.print(f"{exporter.sent} verdict(s) exported to {escape(exporter.where)}{without}")
