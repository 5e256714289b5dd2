"""The types of a custom metric, for functions written without google-adk.

A custom metric is a Python function that the config names under ``custom_metrics`` (its
``code_config.name``, ``package.module.function``) and lists in ``criteria``. assay calls it as
``adk eval`` does, once per eval case, with four arguments, and it returns an
:class:`EvaluationResult`::

    from assay.custom import (
        ConversationScenario, EvalMetric, EvalStatus, EvaluationResult, Invocation,
        PerInvocationResult,
    )

    def says_please(
        eval_metric: EvalMetric,
        actual_invocations: list[Invocation],
        expected_invocations: list[Invocation] | None,
        conversation_scenario: ConversationScenario | None,
    ) -> EvaluationResult:
        threshold = eval_metric.criterion.threshold
        results = []
        for actual in actual_invocations:
            parts = actual.final_response.parts if actual.final_response else None
            text = " ".join(part.text or "" for part in parts or [])
            score = 1.0 if "please" in text.lower() else 0.0
            status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
            results.append(
                PerInvocationResult(actual_invocation=actual, score=score, eval_status=status)
            )
        overall = sum(1.0 for r in results if r.eval_status is EvalStatus.PASSED) / len(results)
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
            per_invocation_results=results,
        )

The function may be ``async``. These types have the names and fields of google-adk 2.13's
(``google.adk.evaluation``: ``eval_metrics.EvalMetric``, ``eval_metrics.EvalStatus``,
``evaluator.EvaluationResult``, ``evaluator.PerInvocationResult``, ``eval_case.Invocation``,
``conversation_scenarios.ConversationScenario``, ``eval_rubrics.RubricScore``), so one function
runs with either:

* when google-adk is installed, the function gets ADK's own types (a function written for
  ``adk eval`` runs unchanged); otherwise it gets these;
* it may return ADK's :class:`EvaluationResult` or this one (anything with these field names).

As in ADK, ``eval_metric.threshold`` is None: the threshold is ``eval_metric.criterion.threshold``,
and the function decides the status itself; assay takes ``overall_eval_status`` as it is returned
and does not apply the threshold again. Other keys of the metric's criterion in the config
(``{"threshold": 0.5, "tone": "formal"}``) reach the function too: ADK's criterion has them as
attributes (``eval_metric.criterion.tone``), assay's in ``eval_metric.criterion.ignored_keys``.
"""

from __future__ import annotations

from assay.metrics.custom_types import (
    BaseCriterion,
    ConversationScenario,
    EvalMetric,
    EvalStatus,
    EvaluationResult,
    Invocation,
    PerInvocationResult,
    RubricScore,
)

__all__ = [
    "BaseCriterion",
    "ConversationScenario",
    "EvalMetric",
    "EvalStatus",
    "EvaluationResult",
    "Invocation",
    "PerInvocationResult",
    "RubricScore",
]
