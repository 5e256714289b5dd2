"""``assay report SOURCE``: write a finished run's results as HTML, JUnit XML or Markdown."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import click
from rich.markup import escape

from assay.cli.output import make_console
from assay.history.sources import results_for
from assay.report.html import write_html
from assay.report.junit import write_junit
from assay.report.markdown import write_markdown
from assay.results.model import EvalSetResult

_Writer = Callable[[Path, Sequence[EvalSetResult]], None]

_PATH = click.Path(dir_okay=False, writable=True, path_type=Path)


def _write(writer: _Writer, path: Path, results: Sequence[EvalSetResult]) -> None:
    try:
        writer(path, results)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise click.FileError(str(path), hint=reason) from None


@click.command("report")
@click.argument("source", metavar="SOURCE")
@click.option("--html", "html_path", type=_PATH, help="Write a self-contained HTML report.")
@click.option("--junit", "junit_path", type=_PATH, help="Write JUnit XML (one test per case).")
@click.option("--markdown", "markdown_path", type=_PATH, help="Write a Markdown summary.")
@click.option("--title", default=None, help="The HTML report's title.")
def report_command(
    source: str,
    html_path: Path | None,
    junit_path: Path | None,
    markdown_path: Path | None,
    title: str | None,
) -> None:
    """Write reports of SOURCE: a results file (``assay eval --output``) or a run id."""
    if html_path is None and junit_path is None and markdown_path is None:
        raise click.UsageError("give at least one of --html, --junit, --markdown")
    results = results_for(source)
    console = make_console()
    if html_path is not None:
        _write(lambda p, r: write_html(p, r, title=title), html_path, results)
        console.print(f"HTML report written to {escape(str(html_path))}")
    if junit_path is not None:
        _write(write_junit, junit_path, results)
        console.print(f"JUnit report written to {escape(str(junit_path))}")
    if markdown_path is not None:
        _write(write_markdown, markdown_path, results)
        console.print(f"Markdown report written to {escape(str(markdown_path))}")
