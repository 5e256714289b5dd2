"""Scoring one case: every configured metric over the case's actual invocations.

Metrics run independently: one that raises or cannot score is NOT_EVALUATED with its reason and
the others still run. The case's status follows ADK: any FAILED metric fails the case, else any
PASSED metric passes it, else it is NOT_EVALUATED; with one departure (docs/design.md, "A case
no judge could score never passes"): a case whose judged metrics all have no verdict is
NOT_EVALUATED, not PASSED on its deterministic metrics alone.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import operator
import time
from collections.abc import Coroutine, Generator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from assay.config import BaseCriterion, ToolTrajectoryCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus, Metric, MetricResult, not_evaluated
from assay.metrics.efficiency import DURATION_FIELDS, TOKEN_USAGE_FIELDS
from assay.metrics.registry import CaseKind
from assay.results.captured import CapturedRows, Captures, RowValues
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    trusted_breakdowns,
    trusted_row,
)

_T = TypeVar("_T")


@dataclass(frozen=True)
class ConfiguredMetric:
    """A metric built for a run, with the name and criterion it was configured under."""

    name: str
    criterion: BaseCriterion | None
    metric: Metric
    applies_to: CaseKind | None = None
    judge_model: str | None = None
    """The judge that scores it (:func:`~assay.llm.selection.judged_model`), written into the
    criterion of each of its rows as ``judge_model_options.judge_model``; None (no judge) keeps
    the criterion as configured."""
    custom_function_path: str | None = None
    """A custom metric's function (``code_config.name``), which its rows name as ADK's do."""

    @cached_property
    def head(self) -> tuple[str, float | None, dict[str, Any] | None, str | None]:
        """What each of its result rows says of it: name, threshold, criterion (as JSON, naming
        the judge that scores it), and a custom metric's function."""
        criterion = self.criterion
        if criterion is None:
            return (self.name, None, None, self.custom_function_path)
        dumped = criterion.model_dump(mode="json")
        options = dumped.get("judge_model_options")
        if self.judge_model is not None and isinstance(options, dict):
            dumped["judge_model_options"] = {**options, "judge_model": self.judge_model}
        return (self.name, criterion.threshold, dumped, self.custom_function_path)

    @cached_property
    def judged(self) -> bool:
        """Whether the metric asks an LLM judge: one was chosen for it, or it is a built-in
        judged metric that stands in its place because no judge could be had (not one the
        registry does not implement); a custom metric's function is not."""
        if self.custom_function_path is not None:
            return False
        if self.judge_model is not None:
            return True
        from assay.metrics.registry import NOT_IMPLEMENTED, UnavailableMetric

        metric = self.metric
        return (
            isinstance(metric, UnavailableMetric)
            and metric.reason != NOT_IMPLEMENTED
            and self.name in _judged_names()
        )

    def not_applicable(self, case: EvalCase) -> str | None:
        """Why the metric does not apply to ``case``, or None when it does."""
        if case.conversation is None and case.conversation_scenario is None:  # from a session
            if self.applies_to is not None or self.metric.info.needs_expected:
                return (
                    "needs an eval set: expected invocations (this case is a session read "
                    "from spans, scored without one)"
                )
            return None
        if self.applies_to == "conversation" and case.conversation is None:
            return "not applicable: needs expected invocations; this case is a scenario"
        if self.applies_to == "scenario" and case.conversation_scenario is None:
            return "not applicable: judges a simulated user; this case is a static conversation"
        return None


@functools.cache
def _judged_names() -> frozenset[str]:
    """The built-in metrics that ask a judge."""
    from assay.metrics.registry import default_registry

    registry = default_registry()
    return frozenset(name for name in registry.names() if registry.is_judged(name))


def no_judged_verdict(
    metrics: Sequence[ConfiguredMetric],
    overall: Sequence[EvalMetricResult],
    not_applicable: Sequence[str],
) -> str | None:
    """Why a case that ADK's rule would pass cannot: every judged metric that applies to it
    has no verdict (its judge could not be used, or gave none), so it would pass on the other
    metrics alone; None when a judged metric gave a verdict, or none applies."""
    judged = [
        configured.name
        for configured, row in zip(metrics, overall, strict=True)
        if configured.judged
        and configured.name not in not_applicable
        and row.eval_status is not EvalStatus.INFORMATIONAL
    ]
    if not judged:
        return None
    statuses = {row.metric_name: row.eval_status for row in overall}
    if any(statuses[name] is not EvalStatus.NOT_EVALUATED for name in judged):
        return None
    names = ", ".join(judged)
    return (
        f"not evaluated: no judged metric has a verdict ({names}), and the case does not pass "
        "on its other metrics alone"
    )


def case_status(statuses: Sequence[EvalStatus]) -> EvalStatus:
    """ADK's rule: FAILED if any failed, else PASSED if any passed, else NOT_EVALUATED."""
    if EvalStatus.FAILED in statuses:
        return EvalStatus.FAILED
    if EvalStatus.PASSED in statuses:
        return EvalStatus.PASSED
    return EvalStatus.NOT_EVALUATED


async def _run_metric(
    configured: ConfiguredMetric,
    actual: Sequence[Invocation],
    expected: Sequence[Invocation] | None,
    case: EvalCase,
) -> MetricResult:
    try:
        result = await configured.metric.evaluate(actual, expected, case)
    except Exception as exc:  # a metric's bug must not lose the other metrics' results
        reason = f"metric raised {type(exc).__name__}: {exc}"
        return not_evaluated(configured.name, configured.criterion, actual, reason, expected)
    if result.status is not EvalStatus.NOT_EVALUATED and len(result.per_invocation) != len(actual):
        reason = (
            f"metric returned {len(result.per_invocation)} per-invocation results "
            f"for {len(actual)} invocations"
        )
        return not_evaluated(configured.name, configured.criterion, actual, reason, expected)
    return result


def _metric_row(
    configured: ConfiguredMetric,
    score: float | None,
    status: EvalStatus,
    rubric_scores: object = None,
    details: dict[str, object] | None = None,
) -> EvalMetricResult:
    name, threshold, criterion, function = configured.head
    shown = _details(rubric_scores, details)
    return trusted_row(name, threshold, criterion, function, score, status, shown)


def _metric_rows(
    configured: ConfiguredMetric, values: Sequence[RowValues]
) -> list[EvalMetricResult]:
    """The rows of one metric's ``values`` (:func:`_row_values`): what :func:`_metric_row`
    makes of each, with the metric's head read once."""
    name, threshold, criterion, function = configured.head
    # Built without validation: every value is assay's own and of the field's type already, and
    # the criterion's JSON is shared by all of the metric's rows instead of copied into each (a
    # run of 5,000 cases makes some 120,000 rows).
    return [
        trusted_row(
            name,
            threshold,
            criterion,
            function,
            score,
            status,
            _NO_DETAILS
            if rubric_scores is None and not details
            else _details(rubric_scores, details),
        )
        for score, status, rubric_scores, details in values
    ]


def _details(rubric_scores: object, details: dict[str, object] | None) -> EvalMetricResultDetails:
    """A row's details: the shared empty ones, the efficiency metrics' breakdowns as they are
    (:func:`_breakdowns_only`), else validated."""
    if rubric_scores is None and not details:
        return _NO_DETAILS
    if rubric_scores is None and details is not None and _breakdowns_only(details):
        return trusted_breakdowns(details)  # type: ignore[arg-type]  # checked just now
    return EvalMetricResultDetails.model_validate(
        {"rubric_scores": rubric_scores, **(details or {})}
    )


_BREAKDOWNS: dict[str, frozenset[str]] = {
    "token_usage_details": frozenset(TOKEN_USAGE_FIELDS),
    "duration_details": frozenset(DURATION_FIELDS),
}


def _breakdowns_only(details: dict[str, object]) -> bool:
    """Whether ``details`` are nothing but token usage and duration breakdowns, each a dict with
    exactly ADK's keys (as the efficiency metrics make them): details validation would copy
    unchanged. Anything else (a custom metric's partial breakdown, say) is validated."""
    for key, value in details.items():
        fields = _BREAKDOWNS.get(key)
        if fields is None or type(value) is not dict or value.keys() != fields:
            return False
    return True


_NO_DETAILS = EvalMetricResultDetails()
"""The details of every row that has none: one object shared by all of them (rows are never
changed once made)."""

_ROW_VALUES = operator.attrgetter("score", "status", "rubric_scores", "details")
"""What a row is made of, read from a metric result or one of its per-invocation results."""


def _row_values(result: MetricResult, invocations: int) -> list[RowValues]:
    """What the case's row of ``result``, then each invocation's, is made of; an invocation the
    metric gave no verdict on is NOT_EVALUATED."""
    values: list[RowValues] = [_ROW_VALUES(result)]
    if result.status is not EvalStatus.NOT_EVALUATED:
        values += map(_ROW_VALUES, result.per_invocation[:invocations])
    if len(values) <= invocations:
        values += [_NOT_EVALUATED] * (invocations + 1 - len(values))
    return values


_NOT_EVALUATED: RowValues = (None, EvalStatus.NOT_EVALUATED, None, None)


async def score_case(
    eval_set_id: str,
    case: EvalCase,
    actual: Sequence[Invocation] | None,
    metrics: Sequence[ConfiguredMetric],
    missing_reason: str | None = None,
    run: int = 1,
    simulator_usage: TokenUsage | None = None,
    captures: Captures | None = None,
    content_missing: str | None = None,
) -> EvalCaseResult:
    """Score one case. ``actual`` None means there is nothing to score, for ``missing_reason``.
    ``content_missing`` (the invocations were read from spans without message content) is the
    reason the metrics that need content are NOT_EVALUATED; the others are scored.

    A static conversation whose invocation count differs from ``actual``'s cannot pass or fail
    (ADK aborts the whole run): the metrics still run (those needing expected invocations say
    why they cannot score), and the case is NOT_EVALUATED with the counts as its reason.
    A metric that does not apply to this kind of case is not run: NOT_EVALUATED, listed in
    ``assay.not_applicable``. With ``captures``, the rows are also captured there as they are
    made (:class:`CapturedRows`), for the run history.
    """
    started = time.perf_counter()
    notes = CaseNotes(run=run, simulator_usage=simulator_usage)
    captured = CapturedRows() if captures is not None else None
    fields: dict[str, Any] = {
        "eval_set_file": eval_set_id,
        "eval_set_id": eval_set_id,
        "eval_id": case.eval_id,
        "user_id": case.session_input.user_id if case.session_input else "test_user_id",
        "assay": notes,
    }
    if actual is None:
        reason = missing_reason or "no actual invocations"
        result = EvalCaseResult(
            final_eval_status=EvalStatus.NOT_EVALUATED,
            overall_eval_metric_results=_missing_rows(metrics, notes, reason, captured),
            **fields,
        )
    else:
        expected = case.conversation
        if expected is not None and len(expected) != len(actual):
            notes.reason = f"expected {len(expected)} invocations, got {len(actual)}"
        rows = [
            EvalMetricResultPerInvocation(
                actual_invocation=inv,
                expected_invocation=(
                    expected[i] if expected and len(expected) == len(actual) else None
                ),
            )
            for i, inv in enumerate(actual)
        ]
        overall = await _scored_rows(case, actual, metrics, notes, rows, captured, content_missing)
        notes.duration_s = round(time.perf_counter() - started, 6)
        status = case_status([row.eval_status for row in overall])
        if status is EvalStatus.PASSED and not notes.reason:
            notes.reason = no_judged_verdict(metrics, overall, notes.not_applicable)
        result = EvalCaseResult(
            final_eval_status=EvalStatus.NOT_EVALUATED if notes.reason else status,
            overall_eval_metric_results=overall,
            eval_metric_result_per_invocation=rows,
            **fields,
        )
    if captures is not None and captured is not None:
        captures[id(result)] = captured
    return result


def begun(coroutine: Coroutine[Any, Any, _T]) -> asyncio.Future[_T]:
    """``coroutine`` run until it first waits, in a copy of the current context as a task's
    first step would be: a future already done with its outcome if it never waits (a metric
    without a judge, a case whose metrics have none: no task nor loop turn), else a task that
    carries it on from there in that same context (so a context variable it set is still its
    own, and can be reset)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    try:
        waits_on = context.run(coroutine.send, None)
    except StopIteration as done:
        finished: asyncio.Future[_T] = loop.create_future()
        finished.set_result(done.value)
        return finished
    except asyncio.CancelledError:
        finished = loop.create_future()
        finished.cancel()
        return finished
    except Exception as exc:  # raised where it is awaited, as a task's would be
        finished = loop.create_future()
        finished.set_exception(exc)
        return finished
    return loop.create_task(_Resumed(coroutine, waits_on), context=context)


class _Resumed(Coroutine[Any, Any, _T]):
    """A coroutine already run to its first wait, for a task to carry on from there: the task's
    first step is handed what the coroutine waits on; after that everything the task sends or
    throws goes to the coroutine itself. A task cancelled before its first step throws into
    the coroutine where it waits, as it would have had the task run it from the start (and the
    future it waits on is cancelled, as a task's is)."""

    def __init__(self, coroutine: Coroutine[Any, Any, _T], waits_on: Any) -> None:
        self._coroutine = coroutine
        self._waits_on: Any = waits_on
        self._first = True

    def send(self, value: Any) -> Any:
        if self._first:
            self._first = False
            return self._waits_on
        return self._coroutine.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if self._first:
            self._first = False
            if isinstance(self._waits_on, asyncio.Future):
                self._waits_on.cancel()
        if val is None and tb is None:
            return self._coroutine.throw(typ)
        return self._coroutine.throw(typ, val, tb)  # pragma: no cover - the old form

    def close(self) -> None:
        self._coroutine.close()

    def __await__(self) -> Generator[Any, Any, _T]:
        step = functools.partial(self.send, None)
        while True:
            try:
                waits_on = step()
            except StopIteration as done:
                result: _T = done.value
                return result
            try:
                sent = yield waits_on
            except GeneratorExit:
                self.close()
                raise
            except BaseException as exc:  # handed to the coroutine, as await does
                step = functools.partial(self.throw, exc)
            else:
                step = functools.partial(self.send, sent)


def _missing_rows(
    metrics: Sequence[ConfiguredMetric],
    notes: CaseNotes,
    reason: str,
    captured: CapturedRows | None,
) -> list[EvalMetricResult]:
    """Each metric NOT_EVALUATED for ``reason`` (there is nothing to score)."""
    notes.reason = reason
    overall: list[EvalMetricResult] = []
    for configured in metrics:
        overall.append(_metric_row(configured, None, EvalStatus.NOT_EVALUATED))
        notes.metric_reasons[configured.name] = reason
        if captured is not None:
            captured.add(configured, overall[-1:])
    return overall


def _withheld(configured: ConfiguredMetric, content_missing: str | None) -> str | None:
    """Why ``configured`` is not scored on invocations read from spans without message content
    (``content_missing``, the note naming the setting that adds it), or None when it is. A
    trajectory that compares arguments is withheld too: the spans name the tools called but not
    their arguments, and a FAILED for calls that were made would mislead."""
    if not content_missing:
        return None
    if configured.metric.info.needs_content:
        return content_missing
    criterion = configured.criterion
    if isinstance(criterion, ToolTrajectoryCriterion) and not criterion.ignore_args:
        return (
            f"{content_missing} (the spans name the tools called, not their arguments: set "
            "ignore_args in this criterion to compare the tool names alone)"
        )
    return None


async def _scored_rows(
    case: EvalCase,
    actual: Sequence[Invocation],
    metrics: Sequence[ConfiguredMetric],
    notes: CaseNotes,
    rows: list[EvalMetricResultPerInvocation],
    captured: CapturedRows | None,
    content_missing: str | None = None,
) -> list[EvalMetricResult]:
    """The case's overall rows, each metric's per-invocation rows added to ``rows``.

    The metrics run together, so that a judge serving several can take their calls in the
    order it answers fastest (the embedded one: calls that share a prompt's start back to
    back); the rows are made in the configured order as each result arrives. A metric that
    never waits (every metric without a judge) is scored inline when started, without a task
    (:func:`begun`)."""
    expected = case.conversation
    overall: list[EvalMetricResult] = []
    skips = [configured.not_applicable(case) for configured in metrics]
    withheld = [_withheld(configured, content_missing) for configured in metrics]
    started: list[asyncio.Future[MetricResult]] = []
    try:
        for configured, skip, held in zip(metrics, skips, withheld, strict=True):
            if skip is None and held is None:
                started.append(begun(_run_metric(configured, actual, expected, case)))
        pending = iter(started)
        for configured, skip, held in zip(metrics, skips, withheld, strict=True):
            if skip is not None:
                notes.not_applicable.append(configured.name)
                result = not_evaluated(
                    configured.name, configured.criterion, actual, skip, expected
                )
            elif held is not None:
                result = not_evaluated(
                    configured.name, configured.criterion, actual, held, expected
                )
            else:
                result = await next(pending)
            if result.reason and result.status is EvalStatus.NOT_EVALUATED:
                notes.metric_reasons[configured.name] = result.reason
            if result.notes is not None:
                notes.metrics[configured.name] = result.notes
            values = _row_values(result, len(rows))
            made = _metric_rows(configured, values)
            overall.append(made[0])
            for row, metric_row in zip(rows, made[1:], strict=True):
                row.eval_metric_results.append(metric_row)
            if captured is not None:
                captured.made(configured, values, made)
    finally:
        for task in started:
            task.cancel()  # only those still running: a cancelled case stops its metrics
    return overall
