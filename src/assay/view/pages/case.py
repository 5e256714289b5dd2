"""The view's case page: one recorded case whole, as a person checks a verdict.

``/runs/{run}/cases/{eval_set_id}/{eval_id}/{run_number}`` (``run``: an id, its unique
beginning or ``latest``, as the CLI takes them) shows the conversation (the user's or the
simulated user's turns, the agent's steps, each tool call with its arguments and result), the
expected and actual tool calls side by side, a word-level diff of the expected and actual final
answer, every metric with the why-line the console and report give, and for each judged metric
every judge sample (the judge's own answer and probability, the decision the metric counted,
the rationale, the vote margin) beside the judge's measured agreement with people and the card
behind it. The rows come from the static report's own helpers
(:func:`assay.report.html_cases.case_view`, :func:`assay.report.why.why`,
:func:`assay.report.judge_agreement.judged_metrics`), so the two say the same thing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from assay.agreement.cards import attach_agreement
from assay.config import EvalConfig
from assay.evalset.invocation import Invocation
from assay.history.records import HistoryError, RunInfo
from assay.metrics.notes import InvocationNotes, JudgeSample
from assay.report.html_cases import case_view
from assay.report.judge_agreement import JudgedMetric, judged_metrics
from assay.report.numbers import score_text
from assay.report.rows import Case, JudgedInvocation, MetricRow, Sample, Turn
from assay.report.why import why
from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult, EvalSetResult, JudgeInfo
from assay.view.context import View, view_of
from assay.view.diffing import Piece, word_diff
from assay.view.labelling import Unit, units_for_case

SIMULATOR_METRIC = "per_turn_user_simulator_quality_v1"
"""The metric that judges a simulated user: where it applies, the user's turns were simulated."""


def case_url(run_id: str, key: CaseKey) -> str:
    """The case page's address (each part quoted)."""
    parts = (run_id, key.eval_set_id, key.eval_id)
    run, set_id, eval_id = (quote(part, safe="") for part in parts)
    return f"/runs/{run}/cases/{set_id}/{eval_id}/{key.run}"


@dataclass(frozen=True)
class ToolStep:
    """A tool call of the agent's, with the tool's answer where the turn recorded one."""

    name: str
    args: str
    result: str | None


@dataclass(frozen=True)
class TurnView:
    """One invocation as the page shows it: the report's turn, who spoke for the user, the
    tool calls with their results and the diff of expected and actual answer."""

    turn: Turn
    user_who: str
    tools: list[ToolStep]
    diff: list[Piece] | None


@dataclass(frozen=True)
class SampleView:
    """One judge sample: the report's row, and the decision the metric counted."""

    row: Sample
    decided: str
    counted: str
    overridden: bool
    rationale: str


@dataclass(frozen=True)
class JudgedTurn:
    """A judged metric's record of one invocation, with the units a person may label."""

    number: int
    record: JudgedInvocation
    margin: str
    samples: list[SampleView]
    units: list[Unit]


@dataclass(frozen=True)
class JudgedView:
    """A judged metric of the case: its judge, the judge's agreement with people, each turn."""

    metric: str
    judge: str
    agreement: str
    warning: str | None
    card_id: int | None
    turns: list[JudgedTurn]


@dataclass(frozen=True)
class MetricLine:
    """A metric's overall row and why it did not pass."""

    row: MetricRow
    why: str


@dataclass(frozen=True)
class CasePage:
    """Everything the case page shows."""

    run: RunInfo
    key: CaseKey
    case: Case
    metrics: list[MetricLine]
    turns: list[TurnView]
    judged: list[JudgedView]
    previous: str | None = None
    next: str | None = None
    position: int = 0
    total: int = 0
    labels: dict[str, list[Unit]] = field(default_factory=dict)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def tool_steps(invocation: Invocation) -> list[ToolStep]:
    """The turn's tool calls, each with the response of the same id (else the first unclaimed
    response of the same tool name, in order)."""
    responses = invocation.tool_responses()
    claimed: set[int] = set()
    steps = []
    for call in invocation.tool_calls():
        found = next(
            (
                i
                for i, r in enumerate(responses)
                if i not in claimed
                and (r.id == call.id if call.id and r.id else r.name == call.name)
            ),
            None,
        )
        result = None
        if found is not None:
            claimed.add(found)
            result = _json(responses[found].response)
        args = "" if call.args is None else _json(call.args)
        steps.append(ToolStep(call.name or "?", args, result))
    return steps


def _simulated(result: EvalCaseResult) -> bool:
    """Whether the user's turns were played by the simulated user."""
    if result.assay.simulator_usage is not None:
        return True
    return any(
        row.metric_name == SIMULATOR_METRIC and row.metric_name not in result.assay.not_applicable
        for row in result.overall_eval_metric_results
    )


def _turn_views(result: EvalCaseResult, case: Case) -> list[TurnView]:
    who = "simulated user" if _simulated(result) else "user"
    views = []
    for turn, row in zip(case.turns, result.eval_metric_result_per_invocation, strict=True):
        diff = word_diff(turn.expected, turn.agent) if turn.expected is not None else None
        views.append(TurnView(turn, who, tool_steps(row.actual_invocation), diff))
    return views


def margin(votes: object) -> str:
    """The vote margin of a judged verdict: ``unanimous, 3 valid``, ``1 valid (one sample)``,
    ``3 valid to 2 invalid (margin 1)`` or ``tied, 2 yes to 2 no``; "" without votes."""
    if not isinstance(votes, dict):
        return ""
    counts = sorted(
        ((str(k), int(v)) for k, v in votes.items() if k != "none" and isinstance(v, int) and v),
        key=lambda item: -item[1],
    )
    if not counts:
        return ""
    said = " to ".join(f"{n} {name}" for name, n in counts)
    if len(counts) == 1:
        return f"unanimous, {said}" if counts[0][1] > 1 else f"{said} (one sample)"
    lead = counts[0][1] - counts[1][1]
    return f"tied, {said}" if lead == 0 else f"{said} (margin {lead})"


def rationale(text: str | None) -> str:
    """The reasoning a judge wrote in its JSON answer (its first ``rationale``, ``reasoning``
    or ``explanation``, or several joined), else ""."""
    try:
        answer = json.loads(text or "")
    except ValueError:
        return ""
    found: list[str] = []

    def visit(value: object) -> None:
        if isinstance(value, dict):
            for key in ("rationale", "reasoning", "explanation"):
                said = value.get(key)
                if isinstance(said, str) and said.strip():
                    found.append(said.strip())
            for inner in value.values():
                visit(inner)
        elif isinstance(value, list):
            for inner in value:
                visit(inner)

    visit(answer)
    return "; ".join(dict.fromkeys(found))


def _sample_view(row: Sample, sample: JudgeSample) -> SampleView:
    decided = sample.counted_verdict or ""
    return SampleView(
        row=row,
        decided=decided,
        counted=score_text(sample.counted_score),
        overridden=sample.aligned is not None,
        rationale=rationale(sample.text),
    )


def _judged_turn(
    number: int, record: JudgedInvocation, notes: InvocationNotes, units: Sequence[Unit]
) -> JudgedTurn:
    details = notes.details or {}
    return JudgedTurn(
        number=number,
        record=record,
        margin=margin(details.get("votes")),
        samples=[
            _sample_view(row, sample)
            for row, sample in zip(record.samples, notes.samples, strict=True)
        ],
        units=[unit for unit in units if unit.invocation == number],
    )


def _judged_views(
    view: View,
    result: EvalCaseResult,
    case: Case,
    set_result: EvalSetResult | None,
    labels: dict[str, list[Unit]],
) -> list[JudgedView]:
    figures: dict[str, JudgedMetric] = {}
    infos: dict[str, JudgeInfo] = {}
    if set_result is not None:
        figures = {judged.metric: judged for judged in judged_metrics(set_result)}
        infos = set_result.assay.judges if set_result.assay is not None else {}
    views = []
    for judged in case.judged:
        notes = result.assay.metrics[judged.metric]
        figure = figures.get(judged.metric)
        info = infos.get(judged.metric)
        units = labels.get(judged.metric, [])
        views.append(
            JudgedView(
                metric=judged.metric,
                judge=figure.judge if figure is not None else judged.judge,
                agreement=figure.text if figure is not None else "",
                warning=figure.warning if figure is not None else None,
                card_id=card_id(view, judged.metric, info) if info is not None else None,
                turns=[
                    _judged_turn(number, record, entry, units)
                    for number, (record, entry) in enumerate(
                        zip(judged.invocations, notes.per_invocation, strict=True), 1
                    )
                ],
            )
        )
    return views


def card_id(view: View, metric: str, info: JudgeInfo) -> int | None:
    """The history's id of the judge card behind ``info``'s agreement figure (the one
    ``/cards/{id}`` shows); None for a bundled card, or none."""
    found = info.agreement
    model = info.judge_model or info.model
    if found is None or found.bundled or model is None:
        return None
    rows = view.store.query(
        "SELECT id, created FROM judge_cards WHERE judge_model = ? AND criterion = ? "
        "AND prompt_version = ? ORDER BY created DESC, id DESC",
        (model, metric, found.prompt_version),
    )
    for number, created in rows:
        if time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(created))) == found.card_date:
            return int(number)
    return None


def _set_result(view: View, run: RunInfo, set_id: str) -> EvalSetResult | None:
    """The header of the run's result for ``set_id`` (its judges and their agreement figures),
    without its cases; None for a run that did not finish (no header was stored)."""
    rows = view.store.query(  # one row by key, where store.results would list every case
        "SELECT header FROM run_sets WHERE run_id = ? AND eval_set_id = ? ORDER BY position",
        (run.id, set_id),
    )
    if not rows:
        return None
    found = EvalSetResult.model_validate_json(rows[0][0])
    _agreement_now(view, run, found)
    return found


def _agreement_now(view: View, run: RunInfo, result: EvalSetResult) -> None:
    """The judges' agreement with people as the history's cards say it now (a card made from
    this view's labels after the run shows at once), where the run's criteria are recorded;
    else the figures recorded with the run stay."""
    sets = run.config.get("sets") if isinstance(run.config, dict) else None
    criteria = next(
        (
            entry.get("criteria")
            for entry in sets or []
            if isinstance(entry, dict) and entry.get("eval_set_id") == result.eval_set_id
        ),
        None,
    )
    if not isinstance(criteria, dict):
        return
    try:
        config = EvalConfig.model_validate({"criteria": criteria})
        attach_agreement([result], [config], view.settings.history)
    except (ValidationError, HistoryError, ValueError):
        return


def _neighbours(view: View, run: RunInfo, key: CaseKey) -> tuple[int, int, str | None, str | None]:
    """The case's place in the run's order (the order its cases were recorded, from 1), the
    count, and the previous and next cases' addresses: a few indexed queries, so a page of a
    50,000-case run reads no more of it than its neighbours."""
    read = view.store.query  # a few keyed rows: the typed methods would read the whole run
    found = read(
        "SELECT rowid FROM case_results WHERE run_id = ? AND eval_set_id = ? AND eval_id = ? "
        "AND run_number = ?",
        (run.id, *key),
    )
    if not found:
        return 0, 0, None, None
    rowid = int(found[0][0])
    (before_count, total), *_ = read(
        "SELECT SUM(rowid < ?), COUNT(*) FROM case_results WHERE run_id = ?", (rowid, run.id)
    )
    side = "SELECT eval_set_id, eval_id, run_number FROM case_results WHERE run_id = ? AND "
    before = read(side + "rowid < ? ORDER BY rowid DESC LIMIT 1", (run.id, rowid))
    after = read(side + "rowid > ? ORDER BY rowid LIMIT 1", (run.id, rowid))
    return (
        int(before_count or 0) + 1,
        int(total),
        case_url(run.id, CaseKey(*before[0])) if before else None,
        case_url(run.id, CaseKey(*after[0])) if after else None,
    )


def build_page(view: View, run: RunInfo, key: CaseKey, result: EvalCaseResult) -> CasePage:
    """The page's values for ``result``, the case ``key`` of ``run``."""
    case = case_view("case", result)
    lines = [
        MetricLine(row, why(result, metric))
        for row, metric in zip(case.metrics, result.overall_eval_metric_results, strict=True)
    ]
    labels = {} if view.settings.read_only else units_for_case(view, run.id, key, result)
    set_result = _set_result(view, run, key.eval_set_id)
    position, total, before, after = _neighbours(view, run, key)
    return CasePage(
        run=run,
        key=key,
        case=case,
        metrics=lines,
        turns=_turn_views(result, case),
        judged=_judged_views(view, result, case, set_result, labels),
        previous=before,
        next=after,
        position=position,
        total=total,
        labels=labels,
    )


def missing(view: View, request: Request, title: str, detail: str, status: int = 404) -> Response:
    """The page that says what was not found (never a traceback)."""
    return view.page(request, "case_missing.html.j2", status=status, title=title, detail=detail)


def case_page(request: Request) -> Response:
    """``GET /runs/{run_ref}/cases/{eval_set_id}/{eval_id}/{run_number}``."""
    view = view_of(request)
    params = request.path_params
    key = CaseKey(params["eval_set_id"], params["eval_id"], int(params["run_number"]))
    try:
        run = view.store.get(params["run_ref"])
    except HistoryError as exc:
        return missing(view, request, "No such run", str(exc))
    try:
        result = view.store.done_cases(run.id).get(key)
    except HistoryError as exc:
        return missing(view, request, "This case cannot be read", str(exc), status=500)
    if result is None:
        detail = f"run {run.id} has no case {key.label}"
        return missing(view, request, "No such case", detail)
    return view.page(request, "case_page.html.j2", page=build_page(view, run, key, result))


routes: list[BaseRoute] = [
    Route(
        "/runs/{run_ref}/cases/{eval_set_id}/{eval_id}/{run_number:int}",
        case_page,
        methods=["GET"],
    ),
]
