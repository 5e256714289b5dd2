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

import enum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from assay.config import BaseCriterion
from assay.evalset._base import AssayModel
from assay.evalset.case import ConversationScenario
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import RubricScore
from assay.metrics.base import EvalStatus

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


def as_status(value: Any) -> Any:
    """``value`` as assay's :class:`EvalStatus` when it is one of ADK's (matched by name), else
    as it is (for pydantic to validate)."""
    if isinstance(value, enum.Enum) and not isinstance(value, EvalStatus):
        return EvalStatus.__members__.get(value.name, value)
    return value


def as_data(value: Any) -> Any:
    """A pydantic object of another package (one of ADK's) as its JSON data, so that these
    types accept ADK's invocations, rubric scores and criteria; anything else as it is."""
    if isinstance(value, BaseModel) and not isinstance(value, AssayModel):
        return value.model_dump(mode="json")
    return value


def as_details(value: Any) -> Any:
    """ADK's token usage or duration details as their JSON data, without the unset fields."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value


Status = Annotated[EvalStatus, BeforeValidator(as_status)]
Details = Annotated[dict[str, Any], BeforeValidator(as_details)]


class EvalMetric(AssayModel):
    """The metric being scored, as the function gets it: its name from the config, the
    criterion (``criterion.threshold`` is the threshold from ``criteria``), the function's path
    from ``code_config.name``, and ``threshold`` None (ADK clears it before calling)."""

    metric_name: str
    threshold: float | None = None
    criterion: Annotated[BaseCriterion, BeforeValidator(as_data)] | None = None
    custom_function_path: str | None = None


class PerInvocationResult(AssayModel):
    """The function's verdict on one invocation (one per actual invocation, in their order)."""

    actual_invocation: Annotated[Invocation, BeforeValidator(as_data)]
    expected_invocation: Annotated[Invocation, BeforeValidator(as_data)] | None = None
    score: float | None = None
    eval_status: Status = EvalStatus.NOT_EVALUATED
    rubric_scores: list[Annotated[RubricScore, BeforeValidator(as_data)]] | None = None
    token_usage_details: Details | None = None
    duration_details: Details | None = None


class EvaluationResult(AssayModel):
    """What the function returns for one eval case: the overall score and status, and one
    :class:`PerInvocationResult` per actual invocation (required unless the status is
    NOT_EVALUATED or INFORMATIONAL, as in ADK)."""

    overall_score: float | None = None
    overall_eval_status: Status = EvalStatus.NOT_EVALUATED
    per_invocation_results: list[PerInvocationResult] = Field(default_factory=list)
    overall_rubric_scores: list[Annotated[RubricScore, BeforeValidator(as_data)]] | None = None
    overall_token_usage_details: Details | None = None
    overall_duration_details: Details | None = None
