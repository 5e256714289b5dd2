"""The run page (``/runs/{run_id}``: an id, its unique beginning, or ``latest``).

Its summary (counts, judges, duration, each metric's counts and score histogram, what the judges
cost, drawn by the static report's own summary template) and a case x metric grid coloured by status, failing cases
first, filtered by the query string (``?status=FAILED&metric=NAME&q=WORDS&page=N``, so the
filters work without script), a page of :data:`~assay.view.queries.PAGE_SIZE` cases at a time.
Everything comes from the run's :class:`~assay.view.queries.RunIndex`; only the listed cases'
notes are read from their records.

``status`` filters on the case's status, or with ``metric`` on that metric's; ``metric`` alone
keeps the cases that metric judged, its failures first; ``q`` keeps the cases whose eval set and
id hold every word.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from assay.history.records import HistoryError, RunInfo
from assay.metrics.base import EvalStatus
from assay.report.cost import cost_of
from assay.report.html_grid import Cell
from assay.report.html_summary import JudgeRow, MetricSummary, Summary, histogram, usage_row
from assay.report.numbers import label, score_text, value_text
from assay.report.page import breakable
from assay.results.model import EvalSetResult
from assay.view.context import View, view_of
from assay.view.pages.runs import duration, rate_text, when
from assay.view.queries import (
    ABSENT,
    NOT_APPLICABLE,
    PAGE_SIZE,
    STATUS_NAMES,
    CaseNotesText,
    Column,
    Filters,
    Queries,
    RunIndex,
    find_run,
    listing,
    page_notes,
    set_headers,
)

HISTOGRAM_MIN = 20
"""Scores a metric needs before its distribution is drawn (as the report has it)."""

_CLASS = {
    int(EvalStatus.PASSED): "passed",
    int(EvalStatus.FAILED): "failed",
    int(EvalStatus.NOT_EVALUATED): "not-evaluated",
    int(EvalStatus.INFORMATIONAL): "informational",
}


def queries_of(view: View, request: Request) -> Queries:
    """The app's run indexes (made on first use)."""
    state = request.app.state
    found = getattr(state, "run_queries", None)
    if not isinstance(found, Queries):
        found = state.run_queries = Queries(view.store)
    return found


@dataclass(frozen=True)
class GridRow:
    """One listed case: where its page is, its names, status and a cell per column."""

    href: str
    case: str
    eval_set_id: str
    eval_id: str
    run: int
    status: str
    cells: list[Cell]
    reason: str | None


def filters_of(request: Request) -> tuple[Filters, list[str]]:
    """The filters the query string asks for, and what in it was not understood."""
    params = request.query_params
    problems = []
    status_text = (params.get("status") or "").strip().upper().replace("-", "_").replace(" ", "_")
    status = STATUS_NAMES.get(status_text) if status_text else None
    if status_text and status is None:
        problems.append(f"status '{params.get('status')}' is none of passed, failed, not evaluated")
    metric = (params.get("metric") or "").strip() or None
    words = tuple((params.get("q") or "").lower().split())
    return Filters(status, metric, words), problems


def page_number(request: Request) -> int:
    try:
        return max(int(request.query_params.get("page", "1")), 1)
    except ValueError:
        return 1


def ordered_columns(index: RunIndex) -> list[int]:
    """Graded metrics first, then informational ones (as the report's grid orders them)."""
    graded = [c.graded for c in index.columns]
    return [i for i, g in enumerate(graded) if g] + [i for i, g in enumerate(graded) if not g]


def cell(column: Column, graded: bool, position: int, reasons: dict[str, str]) -> Cell:
    """One case on one metric (:class:`~assay.report.html_grid.Cell`, as the report's grid)."""
    code = column.verdicts[position]
    name = column.name
    if code == ABSENT:
        return Cell("", "none", f"{name}: not configured for this case")
    if code == NOT_APPLICABLE:
        why = reasons.get(name)
        return Cell("n/a", "n-a", f"{name}: {why}" if why else f"{name}: not applicable")
    score: float | None = column.scores[position]
    if score is not None and math.isnan(score):
        score = None
    if not graded:
        return Cell(value_text(name, score), "informational", f"{name}: mean per turn")
    status = _CLASS.get(code, "not-evaluated")
    threshold = (
        f", threshold {score_text(column.threshold)}" if column.threshold is not None else ""
    )
    title = f"{name}: {status.replace('-', ' ')}{threshold}"
    if reasons.get(name):
        title += f": {reasons[name]}"
    return Cell(score_text(score, column.threshold), status, title)


def grid_rows(
    run_id: str, index: RunIndex, positions: list[int], notes: dict[int, CaseNotesText]
) -> list[GridRow]:
    columns = [index.columns[i] for i in ordered_columns(index)]
    graded = [c.graded for c in columns]
    rows = []
    for position in positions:
        set_id, eval_id, run = index.keys[position]
        note = notes.get(index.rowids[position], CaseNotesText(None, {}))
        case = f"{set_id}/{eval_id}/{run}"
        href = f"/runs/{quote(run_id, safe='')}/cases/" + "/".join(
            quote(str(part), safe="") for part in (set_id, eval_id, run)
        )
        rows.append(
            GridRow(
                href,
                case,
                set_id,
                eval_id,
                run,
                _CLASS.get(index.statuses[position], "not-evaluated"),
                [
                    cell(c, g, position, note.metric_reasons)
                    for c, g in zip(columns, graded, strict=True)
                ],
                note.reason,
            )
        )
    return rows


def metric_summaries(index: RunIndex) -> list[MetricSummary]:
    """Each metric's counts, mean and score histogram (the report's :func:`histogram`),
    graded metrics first; kept with the index until it grows."""
    kept = index.memo.get("metrics")
    if kept is not None:
        return list(kept)
    found = []
    for i in ordered_columns(index):
        column = index.columns[i]
        graded = column.graded
        values = column.judged_scores()
        mean = math.fsum(values) / len(values) if values else None
        found.append(
            MetricSummary(
                name=column.name,
                scored=len(values),
                mean=score_text(mean) if graded else value_text(column.name, mean),
                passed=column.verdicts.count(int(EvalStatus.PASSED)),
                failed=column.verdicts.count(int(EvalStatus.FAILED)),
                not_evaluated=column.verdicts.count(int(EvalStatus.NOT_EVALUATED)),
                histogram=histogram(values) if graded and len(values) >= HISTOGRAM_MIN else None,
                informational=not graded,
            )
        )
    index.memo["metrics"] = found
    return list(found)


def run_summary(view: View, info: RunInfo, index: RunIndex) -> Summary:
    """The run's summary block, as the report's ``summary.html.j2`` draws it."""
    judges: dict[str, JudgeRow] = {}
    usage: dict[str, Any] = {}
    try:
        headers = [
            EvalSetResult.model_validate_json(text)
            for text in set_headers(view.store.path, info.id)
        ]
    except (HistoryError, ValueError):
        headers = []
    for result in headers:
        if result.assay is None:
            continue
        for metric, judge in result.assay.judges.items():
            described = judge.describe()
            judges[metric] = JudgeRow(
                metric, described or f"no judge: {judge.unavailable or 'unavailable'}"
            )
        for metric, used in result.assay.usage.items():
            usage[metric] = usage[metric] + used if metric in usage else used
    passed = index.statuses.count(int(EvalStatus.PASSED))
    failed = index.statuses.count(int(EvalStatus.FAILED))
    total = len(index)
    return Summary(
        title="Summary",
        path=None,
        total=total,
        passed=passed,
        failed=failed,
        not_evaluated=total - passed - failed,
        pass_rate=rate_text(passed, total),
        duration=duration(info),
        metrics=metric_summaries(index),
        judges=[judges[m] for m in sorted(judges)],
        usage=[usage_row(who, used) for who, used in sorted(usage.items())],
        cost=cost_of(headers),
    )


def counted(info: RunInfo, index: RunIndex) -> RunInfo:
    """``info`` with its case counts from the index."""
    passed = index.statuses.count(int(EvalStatus.PASSED))
    failed = index.statuses.count(int(EvalStatus.FAILED))
    return replace(info, passed=passed, failed=failed, not_evaluated=len(index) - passed - failed)


def link(base: str, filters: dict[str, str], page: int | None = None) -> str:
    """The run page's URL with ``filters`` (and ``page``)."""
    params = {k: v for k, v in filters.items() if v}
    if page is not None and page > 1:
        params["page"] = str(page)
    return base + ("?" + urlencode(params) if params else "")


def run_page(request: Request) -> Response:
    view = view_of(request)
    ref = request.path_params["run_id"]
    try:
        info = find_run(view.store.path, ref)
        index = queries_of(view, request).index(info)
        info = counted(info, index)
    except HistoryError as exc:
        return view.page(
            request, "runs_error.html.j2", status=404, title="No such run", problem=str(exc)
        )
    filters, problems = filters_of(request)
    positions = listing(index, filters)
    pages = max(math.ceil(len(positions) / PAGE_SIZE), 1)
    page = min(page_number(request), pages)
    shown = positions[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    try:
        notes = page_notes(view.store.path, [index.rowids[p] for p in shown])
    except HistoryError:
        notes = {}
    columns = [index.columns[i] for i in ordered_columns(index)]
    params = {
        "status": request.query_params.get("status", "") if filters.status is not None else "",
        "metric": filters.metric or "",
        "q": " ".join(filters.words),
    }
    base = f"/runs/{quote(info.id, safe='')}"
    return view.page(
        request,
        "run.html.j2",
        info=info,
        started=when(info.started),
        summary=run_summary(view, info, index),
        headings=[breakable(c.name if c.graded else label(c.name)) for c in columns],
        titles=[c.name for c in columns],
        informational=[not c.graded for c in columns],
        metric_names=sorted(c.name for c in index.columns),
        rows=grid_rows(info.id, index, shown, notes),
        filters=filters,
        params=params,
        problems=problems,
        matched=len(positions),
        total=len(index),
        page=page,
        pages=pages,
        first=(page - 1) * PAGE_SIZE + 1 if shown else 0,
        last=(page - 1) * PAGE_SIZE + len(shown),
        prev_url=link(base, params, page - 1) if page > 1 else None,
        next_url=link(base, params, page + 1) if page < pages else None,
        base=base,
    )


routes: list[BaseRoute] = [Route("/runs/{run_id}", run_page, methods=["GET"], name="run")]
