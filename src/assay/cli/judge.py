"""``assay judge agree LABELS``: how far a judge agrees with people's labels on a recorded run."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay._async import run_sync
from assay.agreement.agree import AgreeReport, agree
from assay.agreement.labels import LABEL_SETS, load_labels
from assay.agreement.stats import NO_LABEL, Agreement
from assay.cli.output import make_console
from assay.runner.evaluate import JudgeSettings

WORST = 10
"""Disagreements listed under the table."""


@click.group("judge")
def judge_command() -> None:
    """Measure a judge against people's labels (assay judge agree LABELS)."""


@judge_command.command("agree")
@click.argument("labels_path", metavar="LABELS", type=click.Path(dir_okay=False))
@click.option("--judge-model", default=None, help="The judge to measure (default: as assay eval).")
@click.option(
    "--num-samples",
    type=click.IntRange(min=1),
    default=None,
    help="Judge samples per unit (default: each criterion's num_samples).",
)
@click.option("--no-cache", is_flag=True, help="Ask the judge even when the cache has answered.")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Also write every figure and every unit here.",
)
def agree_command(
    labels_path: str,
    judge_model: str | None,
    num_samples: int | None,
    no_cache: bool,
    json_path: str | None,
) -> None:
    """Score the labelled units of LABELS' recorded run with the judge, and print per criterion
    the agreement with people, Cohen's kappa with its 95% interval, both positive rates, the
    confusion table and the disagreements."""  # fmt: skip
    console = make_console()
    run = load_labels(labels_path)
    for warning in run.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    settings = JudgeSettings(model=judge_model or None, cache=not no_cache)
    report = run_sync(agree(run, settings, num_samples=num_samples))
    print_agreement(console, report)
    if json_path:
        Path(json_path).write_text(json.dumps(report.as_json(), indent=2) + "\n", encoding="utf-8")
        console.print(f"figures written to {escape(json_path)}")


def _figure(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _kappa(found: Agreement) -> str:
    interval = found.kappa_interval
    span = f" [{interval[0]:+.2f}, {interval[1]:+.2f}]" if interval else ""
    return f"{_figure(found.kappa)}{span}"


def print_agreement(console: Console, report: AgreeReport) -> None:
    """The figures per criterion, each criterion's confusion table, then the disagreements."""
    table = Table(title="judge agreement with people", title_justify="left")
    for column in ("Criterion", "Labels", "Judged", "Agree", "Kappa [95%]", "Positive"):
        table.add_column(column, justify="left" if column == "Criterion" else "right")
    rows = [*report.by_criterion.items(), ("overall", report.overall)]
    for name, found in rows:
        positive = f"{_figure(found.person_positive_rate)} / {_figure(found.judge_positive_rate)}"
        few = " [yellow](few)[/]" if found.few else ""
        table.add_row(
            escape(name),
            str(found.pairs),
            str(found.judged),
            f"{_figure(found.rate)}{few}",
            _kappa(found),
            positive,
        )
    console.print(table)
    console.print(
        "[dim]Agree: over every label (a unit the judge gave no label for disagrees). Positive: "
        "the share of the first label (valid, yes, supported, safe), people / judge. (few): "
        "fewer than 10 judged labels, too few for the interval to mean much.[/]"
    )
    for name, judge in report.judges.items():
        console.print(f"judge of {escape(name)}: {escape(judge)}")
    for name, found in report.by_criterion.items():
        console.print(_confusion(name, found))
    wrong = [c for c in report.compared if not c.agrees]
    if wrong:
        console.print(f"{len(wrong)} label(s) the judge did not give (first {WORST}):")
    for unit in wrong[:WORST]:
        label = unit.label
        where = f"{label.case} turn {label.invocation}"
        if label.rubric:
            where += f" rubric {label.rubric}"
        if label.sentence is not None:
            where += f" sentence {label.sentence}"
        said = unit.judge or "no label"
        note = f": {unit.note}" if unit.note else ""
        console.print(
            f"  {escape(label.criterion)} · {escape(where)} · people {escape(label.label)}, "
            f"judge {escape(said)}{escape(note)}"
        )
    usage = report.usage
    console.print(f"judge calls: {usage.calls}; tokens: {usage.total_tokens:,}")


def _confusion(name: str, found: Agreement) -> Table:
    labels = list(LABEL_SETS[name])
    seen = {said for row in found.confusion.values() for said in row}
    columns = [*labels, *([NO_LABEL] if NO_LABEL in seen else [])]
    table = Table(title=f"{escape(name)}: people (rows) by judge (columns)", title_justify="left")
    table.add_column("")
    for column in columns:
        table.add_column(column, justify="right")
    for person in labels:
        row = found.confusion.get(person, {})
        if row:
            table.add_row(person, *(str(row.get(column, 0)) for column in columns))
    return table
