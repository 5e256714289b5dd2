"""``assay judge agree``'s output: the console tables and a self-contained HTML page.

Both give per criterion the agreement with people, Cohen's kappa with its 95% interval and both
positive rates, each criterion's confusion table, and the disagreements worst first
(:func:`worst_first`): units the judge gave no label for, then those it was surest of (when its
confidence is known), then the rest in the labels file's order. The console lists the first
:data:`WORST`; the page lists every one, with the person's reason and the judge's rationale or
why it gave no label. The page is jinja2 with autoescaping, on the shell every page shares
(:mod:`assay.report.page`): no text from labels, agents or judges becomes markup.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay._internal.files import write_atomically
from assay._version import __version__
from assay.agreement.agree import AgreeReport, Compared
from assay.agreement.cards import JudgeCard
from assay.agreement.labels import ANSWER_LABELS, LABEL_SETS
from assay.agreement.stats import NO_LABEL, Agreement
from assay.report.fit import Column, fit, fitted_table
from assay.report.judge_agreement import rate
from assay.report.page import environment

WORST = 10
"""Disagreements the console lists under the tables."""

_TEMPLATES = Path(__file__).resolve().parent / "templates"


def confidence(unit: Compared) -> float | None:
    """The judge's probability of the label it gave, when known."""
    found = getattr(unit, "confidence", None)  # Compared.confidence, where it exists
    return float(found) if isinstance(found, int | float) else None


def worst_first(compared: Sequence[Compared]) -> list[Compared]:
    """The disagreements, worst first: no judge label, then by the judge's confidence (highest
    first; unknown after known), otherwise in their order."""

    def rank(unit: Compared) -> tuple[int, float]:
        if unit.judge is None:
            return (0, 0.0)
        sure = confidence(unit)
        return (2, 0.0) if sure is None else (1, -sure)

    return sorted((unit for unit in compared if not unit.agrees), key=rank)


def where(unit: Compared) -> str:
    """``book_flight_lisbon turn 2 rubric answers_the_question``."""
    label = unit.label
    found = f"{label.case} turn {label.invocation}"
    if label.rubric:
        found += f" rubric {label.rubric}"
    if label.sentence is not None:
        found += f" sentence {label.sentence}"
    return found


def _figure(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _kappa(found: Agreement) -> str:
    interval = found.kappa_interval
    span = f" [{interval[0]:+.2f}, {interval[1]:+.2f}]" if interval else ""
    return f"{_figure(found.kappa)}{span}"


def _positive(found: Agreement) -> str:
    return f"{_figure(found.person_positive_rate)} / {_figure(found.judge_positive_rate)}"


def _said(unit: Compared) -> str:
    said = unit.judge or "no label"
    sure = confidence(unit)
    return said if sure is None or unit.judge is None else f"{said} (p {sure:.2f})"


# -- console ----------------------------------------------------------------------------------


def print_agreement(console: Console, report: AgreeReport) -> None:
    """The figures per criterion, each criterion's confusion table, then the disagreements."""
    rows = [*report.by_criterion.items(), ("overall", report.overall)]
    console.print(figures_table(rows, console.width))
    console.print(
        "[dim]Agree: over every label (a unit the judge gave no label for disagrees). Positive: "
        "the share of the first label (valid, yes, supported, safe), people / judge. (few): "
        "fewer than 10 judged labels, too few for the interval to mean much.[/]"
    )
    for name, judge in report.judges.items():
        console.print(f"judge of {escape(name)}: {escape(judge)}")
    for name, found in report.by_criterion.items():
        console.print(f"{escape(name)}: people (rows) by judge (columns)")
        console.print(_confusion(name, found))
    wrong = worst_first(report.compared)
    if wrong:
        console.print(f"{len(wrong)} label(s) the judge did not give, worst first (first {WORST}):")
    for unit in wrong[:WORST]:
        note = f": {unit.note}" if unit.note else ""
        console.print(
            f"  {escape(unit.label.criterion)} · {escape(where(unit))} · people "
            f"{escape(unit.label.label)}, judge {escape(_said(unit))}{escape(note)}"
        )
    usage = report.usage
    console.print(f"judge calls: {usage.calls}; tokens: {usage.total_tokens:,}")


_FIGURE_COLUMNS = ("Criterion", "Labels", "Judged", "Agree", "Kappa [95%]", "Positive")


def figures_table(rows: Sequence[tuple[str, Agreement]], width: int) -> Table:
    """The figures per criterion for ``width`` columns, no criterion's name broken: a column
    per figure where they fit, else the figures stacked beside the name."""
    cells = [
        [
            name,
            str(found.pairs),
            str(found.judged),
            f"{_figure(found.rate)}{' (few)' if found.few else ''}",
            _kappa(found),
            _positive(found),
        ]
        for name, found in rows
    ]
    columns = [
        Column(
            header,
            [row[i] for row in cells],
            wrap=i == 4,
            justify="left" if i == 0 else "right",
        )
        for i, header in enumerate(_FIGURE_COLUMNS)
    ]
    widths = fit(columns, width)
    if widths is None:  # stacked: agree, kappa and positive rate, one a line
        stacked = [
            [
                row[0],
                f"agree {row[3]}: {row[2]} of {row[1]} labels judged\n"
                f"kappa {row[4]}\npositive {row[5]}",
            ]
            for row in cells
        ]
        columns = [
            Column("Criterion", [row[0] for row in stacked], wrap=False),
            Column("Figures", [row[1] for row in stacked]),
        ]
        cells = stacked
        widths = fit(columns, width) or [column.widest() for column in columns]
    table = fitted_table(columns, widths, title="judge agreement with people")
    for row in cells:
        table.add_row(*(escape(cell).replace("(few)", "[yellow](few)[/]") for cell in row))
    return table


def people_rows(name: str, found: Agreement) -> list[str]:
    """People's labels in the criterion's order (the positive first), then any other given: per
    answer or per sentence, as the labels were given."""
    by_answer = ANSWER_LABELS.get(name, ())
    if any(label in by_answer for label in found.confusion):
        return [*dict.fromkeys([*by_answer, *found.confusion])]
    return [*dict.fromkeys([*LABEL_SETS.get(name, ()), *found.confusion])]


def judge_columns(name: str, found: Agreement) -> list[str]:
    """The judge's labels: the criterion's, any other it gave, and ``none`` where it gave none."""
    seen = {said for row in found.confusion.values() for said in row}
    labels = dict.fromkeys([*people_rows(name, found), *sorted(seen - {NO_LABEL})])
    return [*labels, *([NO_LABEL] if NO_LABEL in seen else [])]


def _confusion(name: str, found: Agreement) -> Table:
    columns = judge_columns(name, found)
    table = Table()  # titled by the line above it, which wraps at the console's width
    table.add_column("", no_wrap=True)
    for column in columns:
        table.add_column(escape(column), justify="right")
    for person in people_rows(name, found):
        row = found.confusion.get(person, {})
        if row:
            table.add_row(escape(person), *(str(row.get(column, 0)) for column in columns))
    return table


def cards_table(cards: Sequence[JudgeCard]) -> Table:
    """``assay judge cards``: one row per card, newest first."""
    table = Table(title="judge cards", title_justify="left")
    longest = max([len("Criterion"), *(len(card.criterion) for card in cards)])
    for column in ("Measured", "Judge model", "Criterion", "Prompt", "Labels", "Agree", "Kappa"):
        justify = "right" if column in {"Labels", "Agree", "Kappa"} else "left"
        table.add_column(
            column,
            justify=justify,  # type: ignore[arg-type]
            min_width=longest if column == "Criterion" else None,
            overflow="fold",
        )
    for card in cards:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(card.created))
        table.add_row(
            when,
            escape(card.judge_model),
            escape(card.criterion),
            card.prompt_version,
            str(card.labels),
            rate(card.agreement_info()),  # from too few labels, a count: never a bare percentage
            _figure(card.kappa),
        )
    return table


# -- HTML -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """One criterion's figures as the pages show them (``assay judge agree --html``, the
    view's card pages)."""

    name: str
    judge: str
    labels: int
    judged: int
    agree: str
    few: bool
    kappa: str
    positive: str


@dataclass(frozen=True)
class Confusion:
    """People's labels (rows) against the judge's (columns), counted."""

    name: str
    columns: list[str]
    rows: list[tuple[str, list[int]]]


@dataclass(frozen=True)
class Disagreement:
    """One unit where the judge and a person differ, as the pages list it."""

    criterion: str
    where: str
    person: str
    reason: str
    judge: str
    confidence: str
    note: str


def figures_of(name: str, judge: str, found: Agreement) -> Figures:
    """``found``'s figures for criterion ``name`` judged by ``judge``, in words."""
    return Figures(
        name,
        judge,
        found.pairs,
        found.judged,
        _figure(found.rate),
        found.few,
        _kappa(found),
        _positive(found),
    )


def confusion_of(name: str, found: Agreement) -> Confusion:
    """Criterion ``name``'s confusion table: people's labels (rows) by the judge's (columns)."""
    columns = judge_columns(name, found)
    rows = [
        (person, [found.confusion[person].get(column, 0) for column in columns])
        for person in people_rows(name, found)
        if found.confusion.get(person)
    ]
    return Confusion(name, columns, rows)


def disagreements_of(report: AgreeReport, criteria: set[str] | None = None) -> list[Disagreement]:
    """Where the judge and a person differ, worst first (of ``criteria`` only, when given)."""
    return [
        Disagreement(
            unit.label.criterion,
            where(unit),
            unit.label.label,
            unit.label.reason or "",
            unit.judge or "no label",
            "" if (sure := confidence(unit)) is None else f"{sure:.2f}",
            unit.note,
        )
        for unit in worst_first(report.compared)
        if criteria is None or unit.label.criterion in criteria
    ]


def render_agreement_html(report: AgreeReport, *, labels: str | None = None) -> str:
    """The report as one self-contained HTML page (``assay judge agree --html``)."""
    figures = [
        figures_of(name, report.judges.get(name, ""), found)
        for name, found in report.by_criterion.items()
    ]
    confusions = [confusion_of(name, found) for name, found in report.by_criterion.items()]
    wrong = disagreements_of(report)
    return (
        environment(_TEMPLATES)
        .get_template("agree.html.j2")
        .render(
            version=__version__,
            generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            labels=labels,
            figures=figures,
            overall=figures_of("overall", "", report.overall),
            confusions=confusions,
            disagreements=wrong,
            total=len(report.compared),
            calls=report.usage.calls,
            tokens=f"{report.usage.total_tokens:,}",
        )
    )


def write_agreement_html(path: Path, report: AgreeReport, *, labels: str | None = None) -> None:
    """Write :func:`render_agreement_html`'s page to ``path`` (through a file beside it)."""
    write_atomically(path, render_agreement_html(report, labels=labels))
