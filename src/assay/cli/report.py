"""``assay report SOURCE``: write a finished run's results as HTML, JUnit XML or Markdown."""

from __future__ import annotations

from pathlib import Path

import click

from assay.cli.output import make_console

_PATH = click.Path(dir_okay=False, writable=True, path_type=Path)


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
    from assay.history.sources import results_for
    from assay.report.publish import OutputError, Outputs, write_outputs

    if html_path is None and junit_path is None and markdown_path is None:
        raise click.UsageError("give at least one of --html, --junit, --markdown")
    results = results_for(source)
    outputs = Outputs(html=html_path, junit=junit_path, markdown=markdown_path, html_title=title)
    try:
        write_outputs(make_console(), results, outputs)
    except OutputError as exc:
        raise click.FileError(str(exc.path), hint=exc.reason) from None
