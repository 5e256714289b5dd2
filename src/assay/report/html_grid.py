"""The top of the HTML report (:mod:`assay.report.html`): a line naming the cases that did not
pass, and a case x metric grid, a row per case (those that failed first, then those not
evaluated, then those that passed) and a column per metric, each cell coloured by the case's
status on the metric and holding its score; informational metrics last, as values with their
units. The first screen of the page names the failed cases, whatever their order in the eval
set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from assay.metrics.base import EvalStatus
from assay.report.numbers import label, score_text, value_text
from assay.report.page import breakable
from assay.results.model import EvalCaseResult

GRID_ROWS = 50
"""Cases the grid shows: every case that did not pass comes before any that passed, so a larger
run shows those first and says how many more passed (all are listed under it)."""

ORDER = {EvalStatus.FAILED: 0, EvalStatus.NOT_EVALUATED: 1, EvalStatus.PASSED: 2}
"""The order cases are listed in: failed, not evaluated, passed."""

NAMED = 10
"""Cases named per status in the line over the grid before ``and N more``."""


def by_status(cases: Sequence[EvalCaseResult]) -> list[int]:
    """The indexes of ``cases`` in listing order (:data:`ORDER`), each status in run order."""
    return sorted(range(len(cases)), key=lambda i: ORDER.get(cases[i].final_eval_status, 3))


@dataclass(frozen=True)
class Cell:
    """One case on one metric: its text and its status class (``failed``, ``n-a``)."""

    text: str
    status: str
    title: str


@dataclass(frozen=True)
class Row:
    """One case: its anchor in the case list, id, eval set, status and a cell per column."""

    key: str
    eval_id: str
    eval_set_id: str
    run: int
    status: str
    cells: list[Cell]


@dataclass(frozen=True)
class Named:
    """The cases of one status named over the grid, with how many more there are."""

    status: str
    word: str
    cases: list[tuple[str, str]]
    more: int


@dataclass(frozen=True)
class Grid:
    """The grid: headings (a metric's name breakable after underscores), rows, the cases that
    did not pass by name, and how many passing cases it leaves out."""

    headings: list[Markup]
    titles: list[str]
    informational: list[bool]
    rows: list[Row]
    named: list[Named]
    left_out: int
    sets: bool


def _status(status: EvalStatus) -> str:
    return status.name.lower().replace("_", "-")


def _cell(case: EvalCaseResult, metric: str, informational: bool) -> Cell:
    row = next((r for r in case.overall_eval_metric_results if r.metric_name == metric), None)
    if row is None:
        return Cell("", "none", f"{metric}: not configured for this case")
    if metric in case.assay.not_applicable:
        return Cell("n/a", "n-a", f"{metric}: not applicable to this case")
    if informational:
        return Cell(value_text(metric, row.score), "informational", f"{metric}: mean per turn")
    status = _status(row.eval_status)
    text = score_text(row.score, row.threshold)
    words = status.replace("-", " ")
    threshold = f", threshold {score_text(row.threshold)}" if row.threshold is not None else ""
    return Cell(text, status, f"{metric}: {words}{threshold}")


def grid(keyed: Sequence[tuple[str, EvalCaseResult]]) -> Grid:
    """The grid of ``keyed`` cases (each with its anchor in the case list), already in listing
    order (:func:`by_status`)."""
    graded: dict[str, None] = {}
    info: dict[str, None] = {}
    for _, case in keyed:
        for row in case.overall_eval_metric_results:
            kind = info if row.eval_status is EvalStatus.INFORMATIONAL else graded
            kind.setdefault(row.metric_name)
    metrics = [*graded, *(name for name in info if name not in graded)]
    flags = [name not in graded for name in metrics]
    rows = [
        Row(
            key,
            case.eval_id,
            case.eval_set_id,
            case.assay.run,
            _status(case.final_eval_status),
            [_cell(case, name, flag) for name, flag in zip(metrics, flags, strict=True)],
        )
        for key, case in keyed[:GRID_ROWS]
    ]
    headings = [
        breakable(label(name) if flag else name) for name, flag in zip(metrics, flags, strict=True)
    ]
    named = []
    for status, word in (
        (EvalStatus.FAILED, "failed"),
        (EvalStatus.NOT_EVALUATED, "not evaluated"),
    ):
        found = [(key, case.eval_id) for key, case in keyed if case.final_eval_status is status]
        if found:
            named.append(Named(_status(status), word, found[:NAMED], max(len(found) - NAMED, 0)))
    return Grid(
        headings=headings,
        titles=[
            f"{name} (informational: mean per turn)" if flag else name
            for name, flag in zip(metrics, flags, strict=True)
        ],
        informational=flags,
        rows=rows,
        named=named,
        left_out=max(len(keyed) - GRID_ROWS, 0),
        sets=len({case.eval_set_id for _, case in keyed}) > 1,
    )
