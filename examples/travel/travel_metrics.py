"""A custom metric for the travel example, written as ``adk eval`` runs custom metrics.

``every_metric.json`` names it under ``custom_metrics`` (``travel_metrics.confirmation_shared``);
assay imports this file from the eval set's folder, as ``adk eval`` would find it, and calls the
function once per eval case with ADK's four arguments. With google-adk installed the arguments
are ADK's own types; without it, assay's equivalents from :mod:`assay.custom`, which have the
same fields, so this file runs under either.
"""

from __future__ import annotations

from typing import Any

from assay.custom import EvalStatus, EvaluationResult, PerInvocationResult


def _confirmations(invocation: Any) -> list[str]:
    """The booking confirmation codes the turn's tools returned."""
    events = getattr(invocation.intermediate_data, "invocation_events", None) or []
    codes = []
    for event in events:
        for part in (event.content.parts or []) if event.content else []:
            response = part.function_response.response if part.function_response else None
            if isinstance(response, dict) and isinstance(response.get("confirmation"), str):
                codes.append(response["confirmation"])
    return codes


def _text(invocation: Any) -> str:
    parts = invocation.final_response.parts if invocation.final_response else None
    return " ".join(part.text or "" for part in parts or [])


def confirmation_shared(
    eval_metric: Any,
    actual_invocations: list[Any],
    expected_invocations: list[Any] | None,
    conversation_scenario: Any,
) -> EvaluationResult:
    """1.0 for a turn whose answer gives the user every confirmation code its bookings
    returned (a turn without a booking scores 1.0 too), else 0.0; the case scores the mean."""
    threshold = eval_metric.criterion.threshold
    results = []
    for actual in actual_invocations:
        codes = _confirmations(actual)
        score = 1.0 if all(code in _text(actual) for code in codes) else 0.0
        status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
        results.append(
            PerInvocationResult(actual_invocation=actual, score=score, eval_status=status)
        )
    if not results:
        return EvaluationResult()
    overall = sum(r.score or 0.0 for r in results) / len(results)
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
        per_invocation_results=results,
    )
