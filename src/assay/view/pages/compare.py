"""The view's compare page: two runs side by side, as ``assay compare`` compares them.

``/compare?a=RUN&b=RUN`` (``a`` the base, ``b`` the candidate; ids, unique beginnings or
``latest``) shows the cases whose verdict flipped (pass→fail, fail→pass), each linked to its
page in both runs, and every metric's change with its confidence interval drawn as a dot and a
bar around 0. Without both runs it offers a form to pick them, set to the two latest runs of the
same eval sets. The figures are :func:`assay.compare.diff.compare_runs`'s and the cells and
words :mod:`assay.compare.render`'s, so the page, the terminal and the static comparison agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from assay.compare.diff import Comparison, MetricChange, compare_runs
from assay.compare.render import (
    COLUMNS,
    coverage,
    legend,
    regression_line,
    regression_summary,
    row_cells,
    verdict_kind,
)
from assay.errors import InputError
from assay.history.records import HistoryError, RunInfo
from assay.report.numbers import value_text
from assay.results.keys import CaseKey
from assay.view.context import View, view_of
from assay.view.pages.case import case_url

RUNS_LISTED = 200
"""The newest runs the form offers."""
WIDTH = 240.0
"""The width of a row's interval picture, in SVG units (it scales with its cell)."""


@dataclass(frozen=True)
class Picture:
    """A metric's change and its interval placed on a scale around 0 (x in SVG units)."""

    zero: float
    dot: float
    low: float
    high: float
    scale: str
    """The scale's end, as text (``±0.50``): the picture spans minus to plus this."""
    kind: str


@dataclass(frozen=True)
class MetricRow:
    """One row of the comparison table: its kind (for colour), cells, and picture."""

    kind: str
    cells: list[str]
    picture: Picture | None


@dataclass(frozen=True)
class Flip:
    """A case whose verdict flipped, with its page in each run."""

    label: str
    base_url: str
    candidate_url: str
    detail: str = ""


@dataclass(frozen=True)
class ComparePage:
    """Everything the compare page shows of two runs."""

    base: RunInfo
    candidate: RunInfo
    summary: str | None
    rows: list[MetricRow]
    to_fail: list[Flip]
    to_pass: list[Flip]
    other_lists: list[tuple[str, list[Flip]]]
    coverage: list[str]
    legend: str


def _span(row: MetricChange) -> float:
    """How far from 0 the row's interval reaches."""
    ci = row.interval
    if ci is None:
        return 0.0
    return max(abs(ci.low), abs(ci.high), abs(ci.estimate))


def picture(row: MetricChange, reach: float) -> Picture | None:
    """The row's change and interval on a scale from ``-reach`` to ``+reach``; None without
    an interval."""
    ci = row.interval
    if ci is None:
        return None
    reach = reach or 1.0
    half = WIDTH / 2

    def x(value: float) -> float:
        return round(half + max(-1.0, min(1.0, value / reach)) * (half - 6), 2)

    shown = value_text(row.name, reach) if row.informational else f"{reach:.2f}"
    return Picture(
        x(0.0),
        x(ci.estimate),
        x(ci.low),
        x(ci.high),
        f"±{shown}",
        verdict_kind(row).replace(" ", "-"),
    )


def metric_rows(comparison: Comparison) -> list[MetricRow]:
    """The table's rows, each with its picture: scores share one scale (a change of 0.1 looks
    the same on every score row), an informational metric (tokens, seconds) has its own."""
    scores = [_span(row) for row in comparison.rows if not row.informational]
    shared = max([0.05, *scores])
    return [
        MetricRow(
            kind=verdict_kind(row).replace(" ", "-"),
            cells=row_cells(row, comparison.alpha),
            picture=picture(row, _span(row) if row.informational else shared),
        )
        for row in comparison.rows
    ]


def _flip(key: CaseKey, base: RunInfo, candidate: RunInfo, detail: str = "") -> Flip:
    return Flip(key.label, case_url(base.id, key), case_url(candidate.id, key), detail)


def _flips(keys: Sequence[CaseKey], base: RunInfo, candidate: RunInfo) -> list[Flip]:
    return [_flip(key, base, candidate) for key in keys]


def build_page(comparison: Comparison, base: RunInfo, candidate: RunInfo) -> ComparePage:
    """The page's values for ``comparison`` of ``base`` and ``candidate``."""
    verdict = comparison.verdict
    details = {
        r.key: regression_line(r).removeprefix(f"{r.key.label}: ")
        for r in comparison.case_regressions
    }
    to_fail = [_flip(key, base, candidate, details.get(key, "")) for key in verdict.to_fail]
    lost = [
        _flip(r.key, base, candidate, details[r.key])
        for r in comparison.case_regressions
        if r.key not in verdict.to_fail
    ]
    others: list[tuple[str, list[Flip]]] = []
    if lost:
        others.append(("passed → not evaluated", lost))
    for row in comparison.metrics:
        if row.to_fail:
            others.append((f"{row.name}: pass→fail", _flips(row.to_fail, base, candidate)))
        if row.to_pass:
            others.append((f"{row.name}: fail→pass", _flips(row.to_pass, base, candidate)))
    return ComparePage(
        base=base,
        candidate=candidate,
        summary=regression_summary(comparison),
        rows=metric_rows(comparison),
        to_fail=to_fail,
        to_pass=_flips(verdict.to_pass, base, candidate),
        other_lists=others,
        coverage=coverage(comparison),
        legend=legend(comparison),
    )


def default_pair(runs: Sequence[RunInfo]) -> tuple[RunInfo, RunInfo] | None:
    """The two latest runs (``runs`` newest first) of the same eval sets, the older first;
    None when no two runs share their eval sets."""
    for at, newest in enumerate(runs):
        for older in runs[at + 1 :]:
            if older.eval_sets == newest.eval_sets:
                return older, newest
    return None


def _file_name(path: str) -> str:
    return PurePath(path.replace("\\", "/")).name or path


def run_choices(runs: Sequence[RunInfo]) -> list[tuple[str, str]]:
    """Each run's id and how the form names it: ``id · eval set files · 3/5 passed``."""
    return [
        (
            run.id,
            f"{run.id} · {', '.join(_file_name(path) for path in run.eval_sets)} · "
            f"{run.passed}/{run.passed + run.failed + run.not_evaluated} passed",
        )
        for run in runs
    ]


def _form(view: View, request: Request, problem: str = "", status: int = 200) -> Response:
    runs = view.store.runs(limit=RUNS_LISTED)
    pair = default_pair(runs)
    picked = (
        request.query_params.get("a") or (pair[0].id if pair else ""),
        request.query_params.get("b") or (pair[1].id if pair else ""),
    )
    return view.page(
        request,
        "compare_page.html.j2",
        status=status,
        runs=run_choices(runs),
        picked=picked,
        problem=problem,
        page=None,
    )


def compare_page(request: Request) -> Response:
    """``GET /compare?a=RUN&b=RUN``: the comparison, or the form to pick two runs."""
    view = view_of(request)
    a, b = request.query_params.get("a"), request.query_params.get("b")
    if not a or not b:
        return _form(view, request)
    try:
        base, candidate = view.store.get(a), view.store.get(b)
    except HistoryError as exc:
        return _form(view, request, str(exc), status=404)
    try:
        comparison = compare_runs(
            view.store.results(base.id),
            view.store.results(candidate.id),
            base_label=base.id,
            candidate_label=candidate.id,
        )
    except (InputError, HistoryError) as exc:
        return _form(view, request, str(exc), status=422)
    return view.page(
        request,
        "compare_page.html.j2",
        runs=run_choices(view.store.runs(limit=RUNS_LISTED)),
        picked=(base.id, candidate.id),
        problem="",
        page=build_page(comparison, base, candidate),
        columns=COLUMNS,
    )


routes: list[BaseRoute] = [Route("/compare", compare_page, methods=["GET"])]
