"""The view's labelling pages: the queue (``/label``), the labels API and the export.

* ``GET /label`` (``?run=ID``: one run only): people's agreement with each other first, then
  the next judged unit to label, the most informative first
  (:func:`~assay.view.labelling.informativeness`), with what the judge saw and said, and keys
  (y / n / s, digits) to label it (``static/label.js``).
* ``POST /api/labels``: set this view's labeller's label on one unit (JSON, CSRF header);
  403 in ``--read-only``.
* ``GET /runs/{run_id}/labels.yaml``: the labels file, downloaded; ``POST
  /runs/{run_id}/labels/export``: the labels file with its eval set and traces written to a
  folder beside the history, its path in the answer.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from assay.evalset.content import content_text
from assay.history.labels import StoredLabel
from assay.history.records import HistoryError
from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult
from assay.view.context import View, view_of
from assay.view.labelling import (
    ExportError,
    Unit,
    export_labels,
    informativeness,
    judged_units,
    people_agreement,
    with_label,
)

SCAN_RUNS = 10
"""Runs the queue looks through when no ``?run=`` is given (the newest)."""
SCAN_CASES = 400
"""Recorded cases the queue reads per request at most (a 50,000-case run is not read whole to
pick one unit: the next request goes on where the labels leave it)."""


class LabelPost(BaseModel):
    """What the label form posts: the unit, the label and a one-line reason."""

    model_config = ConfigDict(extra="forbid")

    run: str
    eval_set_id: str
    eval_id: str
    run_number: int = 1
    criterion: str
    invocation: int
    rubric: str | None = None
    sentence: int | None = None
    label: str
    reason: str = Field(default="", max_length=500)


@dataclass(frozen=True)
class Turn:
    """What the judge saw of a unit's turn: the user's message, the answer, the tool calls."""

    user: str
    answer: str
    calls: list[str]


@dataclass(frozen=True)
class Pick:
    """The queue's next unit, its case and turn, and how many were open to pick from."""

    unit: Unit
    turn: Turn
    open: int


def _turn(result: EvalCaseResult, unit: Unit) -> Turn:
    rows = result.eval_metric_result_per_invocation
    actual = rows[unit.invocation - 1].actual_invocation
    calls = [
        f"{call.name or '?'}({', '.join(f'{k}={v!r}' for k, v in (call.args or {}).items())})"
        for call in actual.tool_calls()
    ]
    return Turn(content_text(actual.user_content), content_text(actual.final_response), calls)


def _runs(view: View, run: str | None) -> list[str]:
    if run:
        return [view.store.get(run).id]
    return [info.id for info in view.store.runs(limit=SCAN_RUNS)]


def next_unit(view: View, run: str | None, skip: Iterable[str] = ()) -> Pick | None:
    """The most informative unit this view's labeller has not labelled (nor skipped), among
    the first :data:`SCAN_CASES` cases with such units."""
    skipped = set(skip)
    counts = view.store.labels.counts()
    best: tuple[float, Unit, EvalCaseResult] | None = None
    seen = opened = 0
    for run_id in _runs(view, run):
        done = {s.unit for s in view.store.labels.of_run(run_id, view.settings.labeller)}
        cases = view.store.done_cases(run_id)
        for key in cases:
            if seen >= SCAN_CASES:
                break
            result = cases[key]
            units = [
                u
                for u in judged_units(run_id, CaseKey(*key), result)
                if u.where not in done and u.key not in skipped
            ]
            seen += 1 if units else 0
            opened += len(units)
            for unit in units:
                score = informativeness(unit, counts.get(unit.criterion, 0))
                if best is None or score > best[0]:
                    best = (score, unit, result)
    if best is None:
        return None
    _, unit, result = best
    return Pick(with_label(unit, None, not view.settings.read_only), _turn(result, unit), opened)


def label_page(request: Request) -> Response:
    """``/label``: people's agreement, then the next unit to label."""
    view = view_of(request)
    run = request.query_params.get("run") or None
    skip = request.query_params.getlist("skip")
    try:
        pick = None if view.settings.read_only else next_unit(view, run, skip)
        runs = _runs(view, run)
    except HistoryError as exc:
        return view.page(request, "labels.html.j2", status=404, error=str(exc), run=run)
    everything = view.store.labels.everything()
    if run:
        everything = [s for s in everything if s.run_id in runs]
    return view.page(
        request,
        "labels.html.j2",
        pick=pick,
        run=run,
        skip=skip,
        people=people_agreement(everything),
        counts=_counts(everything),
        labeller=view.settings.labeller,
        runs=runs,
    )


def _counts(labels: list[StoredLabel]) -> list[tuple[str, str, int]]:
    """Labels per run and labeller, for the export links."""
    counted: dict[tuple[str, str], int] = {}
    for stored in labels:
        counted[(stored.run_id, stored.labeller)] = (
            counted.get((stored.run_id, stored.labeller), 0) + 1
        )
    return [(run_id, who, n) for (run_id, who), n in sorted(counted.items())]


async def api_labels(request: Request) -> Response:
    """``POST /api/labels``: keep this view's labeller's label on one judged unit of a
    recorded case. The JSON body is read here, the history written on a worker thread."""
    view = view_of(request)
    if view.settings.read_only:
        return JSONResponse({"error": "this view is read-only"}, status_code=403)
    try:
        posted = LabelPost.model_validate_json(await request.body())
    except ValidationError as exc:
        return JSONResponse({"error": f"not a label: {exc.error_count()} problem(s)"}, 400)
    return await run_in_threadpool(_keep, view, posted)


def _keep(view: View, posted: LabelPost) -> Response:
    """Check the posted unit is a judged unit of a recorded case and the label one of its
    choices, then keep it (committed before the answer)."""
    key = CaseKey(posted.eval_set_id, posted.eval_id, posted.run_number)
    try:
        run_id = view.store.get(posted.run).id
        result = view.store.done_cases(run_id).get(key)
    except HistoryError as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    if result is None:
        return JSONResponse({"error": f"no recorded case {key.label} in run {run_id}"}, 404)
    where = (
        run_id,
        *key,
        posted.criterion,
        posted.invocation,
        posted.rubric or "",
        posted.sentence or 0,
    )
    unit = next((u for u in judged_units(run_id, key, result) if u.where == where), None)
    if unit is None:
        return JSONResponse({"error": "no such judged unit in the case"}, status_code=404)
    if posted.label not in unit.choices:
        allowed = " or ".join(unit.choices)
        return JSONResponse({"error": f"expected {allowed}; got '{posted.label}'"}, 400)
    reason = " ".join(posted.reason.split())
    stored = view.store.labels.put(
        StoredLabel(
            run_id,
            key,
            unit.criterion,
            unit.invocation,
            posted.label,
            view.settings.labeller,
            unit.rubric,
            unit.sentence,
            reason,
        )
    )
    return JSONResponse(_stored(stored))


def _stored(stored: StoredLabel) -> dict[str, Any]:
    return {
        "label": stored.label,
        "reason": stored.reason,
        "labeller": stored.labeller,
        "created": stored.created,
    }


def download(request: Request) -> Response:
    """``GET /runs/{run_id}/labels.yaml``: the labels file (``?set=``, ``?labeller=``)."""
    view = view_of(request)
    with tempfile.TemporaryDirectory(prefix="assay-labels-") as folder:
        try:
            path = export_labels(
                view,
                request.path_params["run_id"],
                Path(folder),
                eval_set_id=request.query_params.get("set") or None,
                labeller=request.query_params.get("labeller"),
            )
        except (ExportError, HistoryError) as exc:
            return PlainTextResponse(str(exc), status_code=404)
        text = path.read_text(encoding="utf-8")
    return Response(
        text,
        media_type="application/yaml",
        headers={"Content-Disposition": 'attachment; filename="labels.yaml"'},
    )


def export_folder(request: Request) -> Response:
    """``POST /runs/{run_id}/labels/export``: the labels file and what it names written to
    ``labels/RUN_ID/`` beside the history; the labels file's path."""
    view = view_of(request)
    if view.settings.read_only:
        return JSONResponse({"error": "this view is read-only"}, status_code=403)
    run_id = request.path_params["run_id"]
    try:
        found = view.store.get(run_id).id
        folder = view.settings.history.resolve().parent / "labels" / found
        path = export_labels(view, found, folder)
    except (ExportError, HistoryError) as exc:
        return JSONResponse({"error": str(exc)}, status_code=404)
    return JSONResponse({"path": str(path)})


routes: list[BaseRoute] = [
    Route("/label", label_page, methods=["GET"]),
    Route("/api/labels", api_labels, methods=["POST"]),
    Route("/runs/{run_id}/labels.yaml", download, methods=["GET"]),
    Route("/runs/{run_id}/labels/export", export_folder, methods=["POST"]),
]
