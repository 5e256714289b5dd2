"""The runs page (``/``): the runs of each eval set, newest first, with a pass-rate trend.

A run appears under each eval set it recorded cases of, with that set's pass rate (a run that
has recorded none yet, under the sets its config names); each set's trend is an SVG line of its
runs' pass rates, oldest to newest, drawn here so the page runs no script for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import PurePath

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from assay.history.records import HistoryError, RunInfo
from assay.view.context import view_of
from assay.view.queries import all_runs

TREND_RUNS = 30
"""Runs a trend line covers (the newest)."""

LISTED_RUNS = 20
"""Runs listed per eval set unless ``?set=ID`` asks for all of one set's."""

_TREND_W, _TREND_H, _PAD = 160.0, 36.0, 3.0


@dataclass(frozen=True)
class RunLine:
    """One run as one eval set's table lists it."""

    id: str
    status: str
    started: str
    duration: str
    passed: int
    cases: int
    pass_rate: str
    judges: list[str]


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str


@dataclass(frozen=True)
class Trend:
    """A pass-rate line over a set's runs, oldest to newest."""

    points: list[Point]
    width: float = _TREND_W
    height: float = _TREND_H

    @property
    def path(self) -> str:
        return " ".join(f"{p.x},{p.y}" for p in self.points)


@dataclass(frozen=True)
class SetRuns:
    """One eval set: its runs (newest first) and its trend."""

    eval_set_id: str
    runs: list[RunLine]
    more: int
    trend: Trend | None


def when(seconds: float) -> str:
    """A time as the pages write it: local, to the minute."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def duration(info: RunInfo, now: float | None = None) -> str:
    """How long the run took (so far, while it runs)."""
    end = info.finished if info.finished is not None else (now or time.time())
    seconds = max(end - info.started, 0.0)
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:.0f} min"


def rate_text(passed: int, cases: int) -> str:
    return f"{100 * passed / cases:.1f}%" if cases else "-"


def trend(lines: list[RunLine]) -> Trend | None:
    """The line through the pass rates of ``lines`` (newest first) that have cases; None for
    fewer than two."""
    rated = [line for line in reversed(lines[:TREND_RUNS]) if line.cases]
    if len(rated) < 2:
        return None
    step = (_TREND_W - 2 * _PAD) / (len(rated) - 1)
    points = [
        Point(
            round(_PAD + i * step, 1),
            round(_PAD + (_TREND_H - 2 * _PAD) * (1 - line.passed / line.cases), 1),
            f"{line.id}: {line.pass_rate}",
        )
        for i, line in enumerate(rated)
    ]
    return Trend(points)


def _config_sets(info: RunInfo) -> list[str]:
    """The eval sets a run's config names (for a run with no case recorded yet)."""
    found = [
        str(entry["eval_set_id"])
        for entry in info.config.get("sets", [])
        if isinstance(entry, dict) and entry.get("eval_set_id")
    ]
    return found or [PurePath(path).name for path in info.eval_sets] or ["(no eval set)"]


def grouped(runs: list[RunInfo], counts: dict[str, dict[str, tuple[int, int]]]) -> list[SetRuns]:
    """Each eval set's runs, newest first; the sets by their newest run."""
    by_set: dict[str, list[RunLine]] = {}
    for info in runs:
        per_set = counts.get(info.id) or dict.fromkeys(_config_sets(info), (0, 0))
        for set_id, (passed, cases) in per_set.items():
            by_set.setdefault(set_id, []).append(
                RunLine(
                    info.id,
                    info.status,
                    when(info.started),
                    duration(info),
                    passed,
                    cases,
                    rate_text(passed, cases),
                    info.judges,
                )
            )
    return [SetRuns(set_id, lines, 0, trend(lines)) for set_id, lines in by_set.items()]


def runs_page(request: Request) -> Response:
    view = view_of(request)
    only = request.query_params.get("set")
    try:
        runs, counts = all_runs(view.store.path) if view.store.path.exists() else ([], {})
    except HistoryError as exc:
        return view.page(request, "runs_error.html.j2", status=500, problem=str(exc))
    sets = grouped(runs, counts)
    if only is not None:
        sets = [s for s in sets if s.eval_set_id == only]
    else:
        sets = [
            SetRuns(s.eval_set_id, s.runs[:LISTED_RUNS], max(len(s.runs) - LISTED_RUNS, 0), s.trend)
            for s in sets
        ]
    return view.page(
        request, "runs.html.j2", sets=sets, only=only, history=str(view.store.path), total=len(runs)
    )


routes: list[BaseRoute] = [Route("/", runs_page, methods=["GET"], name="runs")]
