"""The types of a custom metric (the public module is :mod:`assay.custom`, which re-exports
them; see its documentation)."""

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
