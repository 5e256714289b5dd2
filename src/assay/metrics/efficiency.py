"""ADK's informational efficiency metrics: how expensive a turn was, not how good.

ADK 2.13 reports these four on every run, unconfigured; they never pass or fail, so every status
(overall and per invocation, also with no invocations at all) is INFORMATIONAL. Each value is
computed per invocation and ``None`` means "not available", never zero.

* ``tool_call_count_v1``: the turn's tool calls (``tool_uses``, or the events' function calls).
* ``inference_call_count_v1``: the events that record a model call, i.e. carry
  ``usage_metadata`` or ``model_version``; n/a for a turn without the events shape.
* ``token_usage_v1``: tokens summed over the turn's model calls, with a breakdown
  (``token_usage_details``). Input is prompt + tool-use-prompt tokens, output is candidates +
  thoughts tokens, total is input + output (the model's own ``total_token_count`` is not used).
  A count no call reported stays ``None``.
* ``invocation_duration_v1``: wall-clock seconds of the turn, with model / tool / framework
  seconds (``duration_details``); framework is what is left of the total, clamped at zero and
  rounded to 3 places, n/a when model or tool time is.

The overall value is the mean per invocation, but the rules differ as in ADK: the two counts and
the duration average only the invocations that have a value (durations rounded to 3 places),
while token counts are divided by *every* invocation (a count one turn did not report is zero
for it) and are not rounded; a count no invocation reported stays ``None``.

When no invocation has a value (an agent whose model calls report no token usage, say: the
plain-Python example), the overall score is ``None`` and the status still INFORMATIONAL, as in
ADK 2.13; assay adds a ``reason`` saying why the value is missing (:data:`NO_VALUE_REASONS`), so
that a report can show the row with it instead of a bare dash.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from assay.config import BaseCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation, InvocationEvents
from assay.metrics.base import EvalStatus, Metric, MetricInfo, MetricResult, PerInvocationResult
from assay.metrics.declaration import MetricDeclaration

TOKEN_USAGE_FIELDS = (
    "total_tokens",
    "input_tokens",
    "prompt_tokens",
    "cached_tokens",
    "tool_use_tokens",
    "output_tokens",
    "candidates_tokens",
    "reasoning_tokens",
)
"""The keys of a ``token_usage_details`` dict (ADK's ``TokenUsageDetails`` fields)."""

DURATION_FIELDS = ("total_seconds", "model_seconds", "tool_seconds", "framework_seconds")
"""The keys of a ``duration_details`` dict (ADK's ``DurationDetails`` fields)."""

_INFORMATIONAL = EvalStatus.INFORMATIONAL

NO_VALUE_REASONS: Mapping[str, str] = {
    "inference_call_count_v1": (
        "the invocations carry no events (intermediate_data is not in the invocation_events "
        "shape), so model calls cannot be counted"
    ),
    "token_usage_v1": (
        "the agent reports no token usage (no model call in its events carries usage_metadata)"
    ),
    "invocation_duration_v1": (
        "the invocations carry no duration (they were not timed when recorded)"
    ),
}
"""Why an informational metric has no overall value although the case has invocations.
(``tool_call_count_v1`` always has one: a turn without tool calls counts zero.)"""


def _no_value_reason(name: str, actual: Sequence[Invocation], score: float | None) -> str | None:
    """The reason for a missing overall value: None when there is a value or no invocation."""
    if score is not None or not actual:
        return None
    return NO_VALUE_REASONS.get(name, "no invocation has a value")


def _reject_criterion(name: str, criterion: BaseCriterion | None) -> None:
    # As ADK: a threshold on an informational metric is an error, not silently ignored.
    if criterion is not None:
        raise ValueError(
            f"`{name}` does not support a threshold: it reports a value and never passes or "
            "fails. Remove it from `criteria`; it is reported automatically on every eval."
        )


class _InformationalMetric:
    """Built without a criterion: as in ADK, configuring a threshold for one is an error."""

    info: ClassVar[MetricInfo]

    def __init__(self, criterion: BaseCriterion | None = None) -> None:
        _reject_criterion(self.info.name, criterion)
        self.criterion = criterion


def _count_result(
    name: str, actual: Sequence[Invocation], values: Sequence[float | None]
) -> MetricResult:
    """Per-invocation counts; the overall score is the mean of the non-None ones."""
    per_invocation = [
        PerInvocationResult(actual=inv, score=value, status=_INFORMATIONAL)
        for inv, value in zip(actual, values, strict=True)
    ]
    present = [v for v in values if v is not None]
    score = sum(present) / len(present) if present else None
    return MetricResult(
        metric_name=name,
        criterion=None,
        score=score,
        status=_INFORMATIONAL,
        per_invocation=per_invocation,
        reason=_no_value_reason(name, actual, score),
    )


def _breakdown_result(
    name: str,
    actual: Sequence[Invocation],
    per_invocation_details: Sequence[dict[str, float | None]],
    overall: dict[str, float | None] | None,
    details_key: str,
    score_key: str,
) -> MetricResult:
    """Per-invocation breakdowns (score = their total) and the averaged overall breakdown."""
    per_invocation = [
        PerInvocationResult(
            actual=inv,
            score=details[score_key],
            status=_INFORMATIONAL,
            details={details_key: details},
        )
        for inv, details in zip(actual, per_invocation_details, strict=True)
    ]
    if overall is None:
        return MetricResult(name, None, status=_INFORMATIONAL)
    return MetricResult(
        metric_name=name,
        criterion=None,
        score=overall[score_key],
        status=_INFORMATIONAL,
        per_invocation=per_invocation,
        reason=_no_value_reason(name, actual, overall[score_key]),
        details={details_key: overall},
    )


# --------------------------------------------------------------------------- counts


def tool_call_count(invocation: Invocation) -> float:
    """The number of tool calls the turn made."""
    return float(len(invocation.tool_calls()))


def inference_call_count(invocation: Invocation) -> float | None:
    """The number of model calls recorded in the turn's events; None without events."""
    data = invocation.intermediate_data
    if not isinstance(data, InvocationEvents):
        return None
    return float(
        sum(
            1
            for event in data.invocation_events
            if event.usage_metadata is not None or event.model_version is not None
        )
    )


class ToolCallCountMetric(_InformationalMetric):
    """``tool_call_count_v1``: tool calls per invocation (informational)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="tool_call_count_v1",
        description="Tool (function) calls per invocation.",
        max_value=math.inf,
        informational=True,
        needs_content=False,
    )

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Count each invocation's tool calls; the overall score is the mean count."""
        return _count_result(self.info.name, actual, [tool_call_count(inv) for inv in actual])


class InferenceCallCountMetric(_InformationalMetric):
    """``inference_call_count_v1``: model calls per invocation (informational)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="inference_call_count_v1",
        description=(
            "Model (inference) calls per invocation: the events carrying usage metadata or a "
            "model version."
        ),
        max_value=math.inf,
        informational=True,
        needs_content=False,
    )

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Count each invocation's model calls; the mean over invocations that have events."""
        return _count_result(self.info.name, actual, [inference_call_count(inv) for inv in actual])


# --------------------------------------------------------------------------- tokens

# genai's usage-metadata field -> its camelCase JSON spelling.
_USAGE_KEYS = {
    "prompt_token_count": "promptTokenCount",
    "tool_use_prompt_token_count": "toolUsePromptTokenCount",
    "candidates_token_count": "candidatesTokenCount",
    "thoughts_token_count": "thoughtsTokenCount",
    "cached_content_token_count": "cachedContentTokenCount",
}


def _as_count(value: Any) -> int | None:
    """A JSON token count as an int (genai's lax int parsing), None when absent or unusable."""
    if value is None:
        return None
    if isinstance(value, int):  # bool included, as pydantic's lax int
        return int(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return None
            return int(number) if number.is_integer() else None
    return None


def _usage_count(usage: Mapping[str, Any], field: str) -> int | None:
    value = usage.get(field)
    if value is None:
        value = usage.get(_USAGE_KEYS[field])
    return _as_count(value)


def _add(total: int | None, count: int | None) -> int | None:
    """Add one call's count, keeping "nothing reported" (None) apart from zero."""
    if count is None:
        return total
    return (total or 0) + count


def _either(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _token_totals(invocation: Invocation) -> dict[str, int | None]:
    totals: dict[str, int | None] = dict.fromkeys(TOKEN_USAGE_FIELDS)
    for usage in invocation.usage_metadata():
        prompt = _usage_count(usage, "prompt_token_count")
        tool_use = _usage_count(usage, "tool_use_prompt_token_count")
        candidates = _usage_count(usage, "candidates_token_count")
        thoughts = _usage_count(usage, "thoughts_token_count")
        call = {
            "input_tokens": _either(prompt, tool_use),
            "prompt_tokens": prompt,
            "cached_tokens": _usage_count(usage, "cached_content_token_count"),
            "tool_use_tokens": tool_use,
            "output_tokens": _either(candidates, thoughts),
            "candidates_tokens": candidates,
            "reasoning_tokens": thoughts,
        }
        for key, count in call.items():
            totals[key] = _add(totals[key], count)
    input_tokens, output_tokens = totals["input_tokens"], totals["output_tokens"]
    if input_tokens is not None or output_tokens is not None:
        totals["total_tokens"] = (input_tokens or 0) + (output_tokens or 0)
    return totals


def _floats(counts: Mapping[str, int | float | None]) -> dict[str, float | None]:
    return {k: None if v is None else float(v) for k, v in counts.items()}


def token_usage_details(invocation: Invocation) -> dict[str, float | None]:
    """The turn's token counts, keyed as ADK's ``TokenUsageDetails``; None where unreported."""
    return _floats(_token_totals(invocation))


def average_token_usage(all_totals: Sequence[Mapping[str, int | None]]) -> dict[str, float | None]:
    """Each count summed and divided by *every* invocation; None where no invocation had it."""
    averaged: dict[str, float | None] = {}
    for key in TOKEN_USAGE_FIELDS:
        present = [v for v in (t[key] for t in all_totals) if v is not None]
        averaged[key] = sum(present) / len(all_totals) if present else None
    return averaged


class TokenUsageMetric(_InformationalMetric):
    """``token_usage_v1``: tokens per invocation, with a per-type breakdown (informational)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="token_usage_v1",
        description=(
            "Tokens per invocation (input + output over its model calls), with a breakdown by type."
        ),
        max_value=math.inf,
        informational=True,
        needs_content=False,
    )

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Sum each invocation's tokens; average every count over all invocations."""
        all_totals = [_token_totals(inv) for inv in actual]
        return _breakdown_result(
            self.info.name,
            actual,
            [_floats(totals) for totals in all_totals],
            average_token_usage(all_totals) if actual else None,
            "token_usage_details",
            "total_tokens",
        )


# --------------------------------------------------------------------------- duration


def _framework_seconds(
    total: float, model_seconds: float | None, tool_seconds: float | None
) -> float | None:
    if model_seconds is None or tool_seconds is None:
        return None
    return round(max(total - model_seconds - tool_seconds, 0.0), 3)


def duration_details(invocation: Invocation) -> dict[str, float | None]:
    """The turn's seconds, keyed as ADK's ``DurationDetails``; all None when it was not timed."""
    total = invocation.duration
    if total is None:
        return dict.fromkeys(DURATION_FIELDS)
    model_seconds, tool_seconds = invocation.model_duration, invocation.tool_duration
    return {
        "total_seconds": total,
        "model_seconds": model_seconds,
        "tool_seconds": tool_seconds,
        "framework_seconds": _framework_seconds(total, model_seconds, tool_seconds),
    }


def average_duration(all_details: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """Each part averaged over the invocations that have it, rounded to 3 places."""
    averaged: dict[str, float | None] = {}
    for key in DURATION_FIELDS:
        present = [v for v in (d[key] for d in all_details) if v is not None]
        averaged[key] = round(sum(present) / len(present), 3) if present else None
    return averaged


class InvocationDurationMetric(_InformationalMetric):
    """``invocation_duration_v1``: seconds per invocation, split model/tool/framework."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="invocation_duration_v1",
        description=(
            "Wall-clock seconds per invocation, split into model, tool and framework time."
        ),
        max_value=math.inf,
        informational=True,
        needs_content=False,
    )

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Each invocation's duration; parts averaged over the timed invocations."""
        all_details = [duration_details(inv) for inv in actual]
        return _breakdown_result(
            self.info.name,
            actual,
            all_details,
            average_duration(all_details) if actual else None,
            "duration_details",
            "total_seconds",
        )


EFFICIENCY_METRICS: Mapping[str, Callable[[BaseCriterion | None], Metric]] = {
    ToolCallCountMetric.info.name: ToolCallCountMetric,
    InferenceCallCountMetric.info.name: InferenceCallCountMetric,
    TokenUsageMetric.info.name: TokenUsageMetric,
    InvocationDurationMetric.info.name: InvocationDurationMetric,
}
"""Metric name -> factory, in the order ADK appends them to every run."""


DECLARATIONS: tuple[MetricDeclaration, ...] = tuple(
    MetricDeclaration(metric)
    for metric in (
        ToolCallCountMetric,
        InferenceCallCountMetric,
        TokenUsageMetric,
        InvocationDurationMetric,
    )
)
"""What the informational efficiency metrics are, in the order ADK appends them to every run."""
