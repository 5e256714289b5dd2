"""Scoring one case: every configured metric over the case's actual invocations.

Metrics run independently: one that raises or cannot score is NOT_EVALUATED with its reason and
the others still run. The case's status follows ADK: any FAILED metric fails the case, else any
PASSED metric passes it, else it is NOT_EVALUATED.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from assay.config import BaseCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus, Metric, MetricResult, PerInvocationResult, not_evaluated
from assay.metrics.registry import CaseKind
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
)


@dataclass(frozen=True)
class ConfiguredMetric:
    """A metric built for a run, with the name and criterion it was configured under."""

    name: str
    criterion: BaseCriterion | None
    metric: Metric
    applies_to: CaseKind | None = None

    def not_applicable(self, case: EvalCase) -> str | None:
        """Why the metric does not apply to ``case``, or None when it does."""
        if self.applies_to == "conversation" and case.conversation is None:
            return "not applicable: needs expected invocations; this case is a scenario"
        if self.applies_to == "scenario" and case.conversation_scenario is None:
            return "not applicable: judges a simulated user; this case is a static conversation"
        return None


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
    criterion = configured.criterion
    extra = dict(details or {})
    return EvalMetricResult(
        metric_name=configured.name,
        threshold=criterion.threshold if criterion is not None else None,
        criterion=criterion.model_dump(mode="json") if criterion is not None else None,
        score=score,
        eval_status=status,
        details=EvalMetricResultDetails.model_validate({"rubric_scores": rubric_scores, **extra}),
    )


def _invocation_row(
    configured: ConfiguredMetric, result: MetricResult, entry: PerInvocationResult | None
) -> EvalMetricResult:
    if entry is None or result.status is EvalStatus.NOT_EVALUATED:
        return _metric_row(configured, None, EvalStatus.NOT_EVALUATED)
    return _metric_row(configured, entry.score, entry.status, entry.rubric_scores, entry.details)


async def score_case(
    eval_set_id: str,
    case: EvalCase,
    actual: Sequence[Invocation] | None,
    metrics: Sequence[ConfiguredMetric],
    missing_reason: str | None = None,
    run: int = 1,
    simulator_usage: TokenUsage | None = None,
) -> EvalCaseResult:
    """Score one case. ``actual`` None means there is nothing to score, for ``missing_reason``.

    A static conversation whose invocation count differs from ``actual``'s cannot pass or fail
    (ADK aborts the whole run): the metrics still run (those needing expected invocations say
    why they cannot score), and the case is NOT_EVALUATED with the counts as its reason.
    A metric that does not apply to this kind of case is not run: NOT_EVALUATED, listed in
    ``assay.not_applicable``.
    """
    started = time.perf_counter()
    user_id = case.session_input.user_id if case.session_input else "test_user_id"
    notes = CaseNotes(run=run, simulator_usage=simulator_usage)
    if actual is None:
        reason = missing_reason or "no actual invocations"
        notes.reason = reason
        overall = []
        for configured in metrics:
            overall.append(_metric_row(configured, None, EvalStatus.NOT_EVALUATED))
            notes.metric_reasons[configured.name] = reason
        return EvalCaseResult(
            eval_set_file=eval_set_id,
            eval_set_id=eval_set_id,
            eval_id=case.eval_id,
            final_eval_status=EvalStatus.NOT_EVALUATED,
            overall_eval_metric_results=overall,
            user_id=user_id,
            assay=notes,
        )
    expected = case.conversation
    if expected is not None and len(expected) != len(actual):
        notes.reason = f"expected {len(expected)} invocations, got {len(actual)}"
    rows = [
        EvalMetricResultPerInvocation(
            actual_invocation=inv,
            expected_invocation=expected[i] if expected and len(expected) == len(actual) else None,
        )
        for i, inv in enumerate(actual)
    ]
    overall = []
    for configured in metrics:
        skip = configured.not_applicable(case)
        if skip is not None:
            notes.not_applicable.append(configured.name)
            result = not_evaluated(configured.name, configured.criterion, actual, skip, expected)
        else:
            result = await _run_metric(configured, actual, expected, case)
        overall.append(
            _metric_row(
                configured, result.score, result.status, result.rubric_scores, result.details
            )
        )
        if result.reason and result.status is EvalStatus.NOT_EVALUATED:
            notes.metric_reasons[configured.name] = result.reason
        if result.notes is not None:
            notes.metrics[configured.name] = result.notes
        for i, row in enumerate(rows):
            entry = result.per_invocation[i] if i < len(result.per_invocation) else None
            row.eval_metric_results.append(_invocation_row(configured, result, entry))
    notes.duration_s = round(time.perf_counter() - started, 6)
    return EvalCaseResult(
        eval_set_file=eval_set_id,
        eval_set_id=eval_set_id,
        eval_id=case.eval_id,
        final_eval_status=(
            EvalStatus.NOT_EVALUATED
            if notes.reason
            else case_status([row.eval_status for row in overall])
        ),
        overall_eval_metric_results=overall,
        eval_metric_result_per_invocation=rows,
        user_id=user_id,
        assay=notes,
    )
