"""What every metric is and returns.

A metric scores one eval case: it gets the actual invocations (what the agent did), the expected
ones when the case has a static conversation, and the case itself, and returns a
:class:`MetricResult` with an overall score and status and one :class:`PerInvocationResult` per
actual invocation. A metric that cannot score says why in ``reason`` and returns NOT_EVALUATED;
it never raises for bad data.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from assay.config import BaseCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import RubricScore
from assay.metrics.notes import MetricNotes


class EvalStatus(enum.IntEnum):
    """ADK's status values: 1 passed, 2 failed, 3 not evaluated, 4 informational."""

    PASSED = 1
    FAILED = 2
    NOT_EVALUATED = 3
    INFORMATIONAL = 4


def status_for(score: float | None, threshold: float) -> EvalStatus:
    """PASSED when ``score >= threshold``, FAILED below it, NOT_EVALUATED without a score."""
    if score is None:
        return EvalStatus.NOT_EVALUATED
    return EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


MetricSource = Literal["adk", "vertex", "custom"]

SOURCES: dict[MetricSource, str] = {
    "adk": "ADK 2.13 semantics",
    "vertex": "Vertex AI definition",
    "custom": "custom metric",
}
"""Whose definition a metric follows: ``adk``, google-adk 2.13's own computation (reproduced);
``vertex``, a metric ADK hands to Vertex AI's evaluation service, scored by any assay judge
after the service's published definition (Vertex itself is opt-in); ``custom``, a user's
function from the config's ``custom_metrics``."""


@dataclass(frozen=True)
class MetricInfo:
    """A metric's name, what it measures (one line) and the range of its values, and what it
    needs: the expected invocations of a static conversation (``needs_expected``), rubrics
    (``takes_rubrics``), an LLM judge (``needs_judge``) or the messages' content
    (``needs_content``: False for a metric that reads only tool names, counts, tokens and
    durations, which spans without message content still give). An ``informational`` metric takes no
    threshold and never passes or fails. ``source`` says whose definition it follows (see
    :data:`SOURCES`). ``assay metrics`` lists these facts."""

    name: str
    description: str
    min_value: float = 0.0
    max_value: float = 1.0
    needs_expected: bool = False
    informational: bool = False
    takes_rubrics: bool = False
    needs_judge: bool = False
    source: MetricSource = "adk"
    needs_content: bool = True


@dataclass
class PerInvocationResult:
    """A metric's verdict on one invocation."""

    actual: Invocation
    expected: Invocation | None = None
    score: float | None = None
    status: EvalStatus = EvalStatus.NOT_EVALUATED
    rubric_scores: list[RubricScore] | None = None
    details: dict[str, Any] | None = None


@dataclass
class MetricResult:
    """A metric's verdict on a whole case."""

    metric_name: str
    criterion: BaseCriterion | None
    score: float | None = None
    status: EvalStatus = EvalStatus.NOT_EVALUATED
    per_invocation: list[PerInvocationResult] = field(default_factory=list)
    reason: str | None = None
    rubric_scores: list[RubricScore] | None = None
    details: dict[str, Any] | None = None
    notes: MetricNotes | None = None

    @property
    def threshold(self) -> float | None:
        """The criterion's threshold, if the metric has one."""
        return self.criterion.threshold if self.criterion is not None else None


class Metric(Protocol):
    """One criterion. Implementations are small classes built from their criterion."""

    info: ClassVar[MetricInfo]

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Score one case."""
        ...


def not_evaluated(
    name: str,
    criterion: BaseCriterion | None,
    actual: Sequence[Invocation],
    reason: str,
    expected: Sequence[Invocation] | None = None,
) -> MetricResult:
    """A NOT_EVALUATED result with its reason and an empty entry per actual invocation."""
    paired = paired_expected(actual, expected)
    per_invocation = [
        PerInvocationResult(actual=inv, expected=paired[i] if paired else None)
        for i, inv in enumerate(actual)
    ]
    return MetricResult(
        metric_name=name,
        criterion=criterion,
        per_invocation=per_invocation,
        reason=reason,
    )


def paired_expected(
    actual: Sequence[Invocation], expected: Sequence[Invocation] | None
) -> list[Invocation] | None:
    """``expected`` as a list when it pairs one to one with ``actual``, else None."""
    return list(expected) if expected is not None and len(expected) == len(actual) else None


def paired_or_reason(
    actual: Sequence[Invocation], expected: Sequence[Invocation] | None
) -> str | None:
    """Why actual and expected invocations cannot be paired one to one, or None if they can."""
    if expected is None:
        return (
            "needs expected invocations: the case has a conversation_scenario, not a conversation"
        )
    if len(actual) != len(expected):
        return f"expected {len(expected)} invocations, got {len(actual)}"
    if not actual:
        return "the case has no invocations"
    return None


def mean_result(
    name: str,
    criterion: BaseCriterion,
    per_invocation: list[PerInvocationResult],
) -> MetricResult:
    """The overall result as the mean of the per-invocation scores, judged against the threshold."""
    scores = [r.score for r in per_invocation if r.score is not None]
    if not scores:
        return MetricResult(
            name, criterion, per_invocation=per_invocation, reason="no invocation scored"
        )
    total = 0.0
    for score in scores:
        total += score
    overall = total / len(scores)
    return MetricResult(
        metric_name=name,
        criterion=criterion,
        score=overall,
        status=status_for(overall, criterion.threshold),
        per_invocation=per_invocation,
    )
