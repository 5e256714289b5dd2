"""``assay compare BASE CANDIDATE``: what changed between two runs, and whether it is noise.

Exit codes: 0 compared (also with regressions, unless ``--fail-on-regression``), 1 a metric got
significantly worse and ``--fail-on-regression`` was given, 2 a run or file could not be read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click
from rich.markup import escape

from assay.cli.output import make_console
from assay.compare import (
    compare_runs,
    print_comparison,
    render_comparison_html,
    render_comparison_markdown,
)
from assay.compare.diff import Comparison
from assay.history import results_for

EXIT_REGRESSED = 1


def _check_folder(option: str, path: str | None) -> None:
    if path and not Path(path).parent.is_dir():
        raise click.BadParameter(
            f"folder '{Path(path).parent}' does not exist", param_hint=f"'{option}'"
        )


def _write(path: str, render: Callable[[Comparison], str], comparison: Comparison) -> None:
    try:
        Path(path).write_text(render(comparison), encoding="utf-8")
    except OSError as exc:
        raise click.FileError(path, hint=exc.strerror or str(exc)) from None


@click.command("compare")
@click.argument("base", metavar="BASE")
@click.argument("candidate", metavar="CANDIDATE")
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write the comparison as Markdown (for a pull-request comment).",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write the comparison as a self-contained HTML page.",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when a metric got significantly worse: its confidence interval lies below 0, "
    "or McNemar's test is significant with more pass→fail than fail→pass flips.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap random seed.")
@click.option(
    "--bootstrap",
    "resamples",
    default=10_000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Bootstrap resamples.",
)
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    help="Significance level (the interval is 1 - alpha).",
)
def compare(
    base: str,
    candidate: str,
    markdown_path: str | None,
    html_path: str | None,
    fail_on_regression: bool,
    seed: int,
    resamples: int,
    alpha: float,
) -> None:
    """Compare two runs (run ids or results files): per metric the change in mean score and
    pass rate, the cases that flipped, a bootstrap interval and an exact McNemar test."""
    _check_folder("--markdown", markdown_path)
    _check_folder("--html", html_path)
    comparison = compare_runs(
        results_for(base),
        results_for(candidate),
        base_label=base,
        candidate_label=candidate,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
    )
    console = make_console()
    print_comparison(console, comparison)
    for path, render in (
        (markdown_path, render_comparison_markdown),
        (html_path, render_comparison_html),
    ):
        if path:
            _write(path, render, comparison)
            console.print(f"written to {escape(path)}")
    regressed = comparison.regressions
    if regressed:
        names = ", ".join(row.name for row in regressed)
        console.print(f"[bold red]significantly worse:[/] {escape(names)}")
    if fail_on_regression and regressed:
        sys.exit(EXIT_REGRESSED)
