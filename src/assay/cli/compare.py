"""``assay compare BASE CANDIDATE``: what changed between two runs, and whether it is noise.

Exit codes: 0 compared (also with regressions, unless ``--fail-on-regression``); 1 with
``--fail-on-regression`` when the gate fails: by default (``--gate cases``) a case that passed in
BASE failed or was not evaluated in CANDIDATE, or a metric got significantly worse; with ``--gate
significance`` only the latter; 2 a run or file could not be read, or a bad option.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assay.cli.output import make_console

if TYPE_CHECKING:  # imported where used: `assay compare --help` imports none of them
    from rich.console import Console

    from assay.compare.diff import Comparison

EXIT_REGRESSED = 1

GATE_CASES = "cases"
GATE_SIGNIFICANCE = "significance"


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
    help="Exit 1 when the regression gate (--gate) fails; without it, regressions are only "
    "reported and compare exits 0.",
)
@click.option(
    "--gate",
    type=click.Choice([GATE_CASES, GATE_SIGNIFICANCE]),
    default=None,
    help="What --fail-on-regression fails on. 'cases' (the default): any case that passed in "
    "BASE and failed or was not evaluated in CANDIDATE, and anything 'significance' fails on. "
    "'significance': only a metric or the case verdict that got significantly worse at --alpha "
    "(its bootstrap interval, from enough scored cases to mean anything, lies below 0, or "
    "McNemar's test is significant with more pass→fail than fail→pass flips); single cases "
    "that regressed are listed but do not fail it.",
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
    help="Significance level (the interval is 1 - alpha). A row with fewer scored cases and "
    "flips than any test needs to reach it says 'too few cases to test'.",
)
def compare(
    base: str,
    candidate: str,
    markdown_path: str | None,
    html_path: str | None,
    fail_on_regression: bool,
    gate: str | None,
    seed: int,
    resamples: int,
    alpha: float,
) -> None:
    """Compare two runs (run ids or results files): per metric the change in mean score and
    pass rate, the cases that regressed or flipped, a bootstrap interval and an exact McNemar
    test (or "too few cases to test" when no test could be significant with so few)."""
    from rich.markup import escape

    from assay.compare import (
        compare_runs,
        print_comparison,
        render_comparison_html,
        render_comparison_markdown,
    )
    from assay.history import results_for

    if gate is not None and not fail_on_regression:
        raise click.BadParameter("needs --fail-on-regression", param_hint="'--gate'")
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
    _report(console, comparison)
    if fail_on_regression and not _gate(console, comparison, gate or GATE_CASES):
        sys.exit(EXIT_REGRESSED)


def _report(console: Console, comparison: Comparison) -> None:
    """The closing lines: the rows significantly worse, the number of regressed cases."""
    from rich.markup import escape

    if comparison.regressions or comparison.case_regressions:
        console.print()
    if comparison.regressions:
        names = ", ".join(row.name for row in comparison.regressions)
        console.print(f"[bold red]significantly worse:[/] {escape(names)}")
    if comparison.case_regressions:
        count = len(comparison.case_regressions)
        console.print(
            f"[bold red]regressed:[/] {count} case(s) passed in {escape(comparison.base)} and "
            f"failed or were not evaluated in {escape(comparison.candidate)}"
        )


def _gate(console: Console, comparison: Comparison, gate: str) -> bool:
    """Whether the regression gate passes, with one line saying which way and why."""
    cases = len(comparison.case_regressions)
    rows = len(comparison.regressions)
    failing = []
    if gate == GATE_CASES and cases:
        failing.append(f"{cases} case(s) regressed")
    if rows:
        failing.append(f"{rows} row(s) significantly worse")
    if failing:
        console.print(f"[bold red]regression gate ({gate}): failed[/]: {'; '.join(failing)}")
        return False
    ignored = f" ({cases} case(s) regressed: not gated with --gate {gate})" if cases else ""
    console.print(f"regression gate ({gate}): passed{ignored}")
    return True
