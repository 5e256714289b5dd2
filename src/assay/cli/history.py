"""``assay runs``, ``assay show`` and ``assay import``: reading the run history.

How a run records itself, and resumes one, is :mod:`assay.runner.recording`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assay.cli.options import max_cases_option
from assay.cli.output import make_console

if TYPE_CHECKING:  # imported where used: a command's --help imports none of them
    from rich.console import Console
    from rich.table import Table

    from assay.history.records import RunInfo

_HISTORY_FILE_HELP = "The run history (default: $ASSAY_HISTORY, else .assay/history.sqlite)."


def _when(stamp: float | None) -> str:
    return "" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


_RUN_COLUMNS = ("run", "started", "status", "eval sets", "cases", "pass rate", "judge", "tokens")
_RIGHT = {"cases", "pass rate", "tokens"}
_LAYOUTS = (
    _RUN_COLUMNS,
    ("run", "status", "eval sets", "cases", "pass rate", "judge", "tokens"),  # the id says when
    ("run", "status", "eval sets / judge", "cases", "pass rate", "tokens"),
    ("run", "status", "eval sets / judge", "cases", "pass rate"),
    ("run", "status", "cases", "pass rate"),
    ("run", "pass rate"),
)
"""The runs table's columns, widest first: the first that fits the width is used."""


def _run_cells(run: RunInfo) -> dict[str, str]:
    """A run's cells as plain text, by column."""
    sets = ", ".join(Path(s).name for s in run.eval_sets)
    judges = "\n".join(run.judges)  # each in words, commas and all: one a line
    return {
        "run": run.id,
        "started": _when(run.started),
        "status": run.status if run.source == "assay" else f"{run.status} ({run.source})",
        "eval sets": sets,
        "cases": f"{run.cases:,}",
        "pass rate": "" if run.pass_rate is None else f"{run.pass_rate:.0%}",
        "judge": judges,
        "eval sets / judge": "\n".join(part for part in (sets, judges) if part),
        "tokens": f"{run.tokens:,}" if run.tokens else "",
    }


def _runs_table(runs: Sequence[RunInfo], width: int = 200) -> Table:
    """The runs, one a row, with the most columns that fit ``width`` without cutting a run id
    or breaking a word: past that, the start time (the id holds it) goes, then the judge moves
    under the eval sets, then the tokens go, and so on."""
    from rich.markup import escape

    from assay.report.fit import Column, fit, fitted_table

    cells = [_run_cells(run) for run in runs]
    for names in _LAYOUTS:
        columns = [
            Column(
                name,
                [row[name] for row in cells],
                wrap=name != "run",
                justify="right" if name in _RIGHT else "left",
            )
            for name in names
        ]
        widths = fit(columns, width)
        if widths is not None:
            break
    else:  # nothing fits: the narrowest, as rich lays it out
        widths = [column.widest() for column in columns]
    table = fitted_table(columns, widths, title="runs")
    for row in cells:
        table.add_row(*(escape(row[name]) for name in names))
    return table


@click.command("runs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
def runs_command(limit: int, history_file: str | None) -> None:
    """List recorded runs, newest first."""
    from rich.markup import escape

    from assay.history.records import default_history_path
    from assay.history.store import HistoryStore

    console = make_console()
    path = Path(history_file) if history_file else default_history_path()
    if not path.is_file():
        console.print(f"no runs recorded in {escape(str(path))}")
        return
    with HistoryStore(path) as store:
        runs = store.runs(limit)
    if not runs:
        console.print(f"no runs recorded in {escape(str(path))}")
        return
    console.print(_runs_table(runs, console.width))


@click.command("show")
@click.argument("run", metavar="RUN")
@click.option("--print-detailed-results", "detailed", is_flag=True, help="Per-invocation tables.")
@max_cases_option
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
def show_command(run: str, detailed: bool, max_cases: int, history_file: str | None) -> None:
    """Print a run (an id, the beginning of one, or ``latest``; or a results file) as
    ``assay eval`` printed it."""
    from assay.history.records import default_history_path
    from assay.history.sources import results_for
    from assay.report.console import print_results
    from assay.results.collected import run_summary

    console = make_console()
    path = Path(history_file) if history_file else default_history_path()
    results = results_for(run, path)
    if not Path(run).is_file():
        _print_run_header(console, path, run)
    summary = run_summary(results)
    print_results(console, results, summary, detailed=detailed, max_cases=max_cases)


def _print_run_header(console: Console, path: Path, ref: str) -> None:
    from rich.markup import escape

    from assay.history.store import HistoryStore

    with HistoryStore(path) as store:
        info = store.get(ref)
    commit = f", commit {info.git_commit[:10]}" if info.git_commit else ""
    console.print(
        f"[bold]run {escape(info.id)}[/] ({info.status}{escape(commit)}), started "
        f"{_when(info.started)}, assay {escape(info.assay_version)}, config "
        f"{info.config_hash[:12]}"
    )


@click.command("import")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
def import_command(paths: tuple[str, ...], history_file: str | None) -> None:
    """Import ADK results (.evalset_result.json files, or folders such as .adk/eval_history)
    into the run history, one run per file."""
    from rich.markup import escape

    from assay.history.adk_import import import_files
    from assay.history.records import default_history_path
    from assay.history.store import HistoryStore

    console = make_console()
    path = Path(history_file) if history_file else default_history_path()
    with HistoryStore(path) as store:
        for done in import_files(store, paths):
            what = "already imported as" if done.already else "imported as"
            console.print(
                f"{escape(str(done.path))}: {what} run {done.run_id} ({done.cases} case(s))"
            )


__all__ = [
    "import_command",
    "runs_command",
    "show_command",
]
