"""``tool_trajectory_avg_score``: did the agent call the expected tools, with the expected args?

Per invocation the score is 1.0 when the actual tool calls match the expected ones under the
criterion's match type, else 0.0; the case's score is the mean over invocations.

* EXACT: same calls in the same order, nothing extra.
* IN_ORDER: the expected calls appear in order, other calls may come between.
* ANY_ORDER: every expected call appears (each actual call used once), other calls allowed.

Two calls match when their names are equal and, unless ``ignore_args``, their ``args`` are equal
by Python ``==`` (key order ignored, ``1 == 1.0``, ``None != {}``), as in ADK. With no expected
calls IN_ORDER and ANY_ORDER match whatever the agent called; EXACT needs no actual calls either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from assay.config import DEFAULT_CRITERIA, MatchType, ToolTrajectoryCriterion
from assay.evalset.case import EvalCase
from assay.evalset.content import FunctionCall, JsonObject
from assay.evalset.invocation import Invocation
from assay.metrics.base import (
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    mean_result,
    not_evaluated,
    paired_or_reason,
    status_for,
)
from assay.metrics.declaration import MetricDeclaration

# A call as the matchers compare it: ``(name, args)``, or the name alone when args are ignored.
# Comparing tuples and lists compares their items with ``==`` (actual on the left), exactly as
# ADK's ``actual.name == expected.name and actual.args == expected.args`` does, but in C.
_Key = tuple[str | None, JsonObject | None] | str | None


def _keys(calls: Sequence[FunctionCall], ignore_args: bool) -> list[_Key]:
    if ignore_args:
        return [call.name for call in calls]
    return [(call.name, call.args) for call in calls]


def _exact(actual: list[_Key], expected: list[_Key]) -> bool:
    return actual == expected


def _in_order(actual: list[_Key], expected: list[_Key]) -> bool:
    if not expected:
        return True
    position, last = 0, len(expected)
    wanted = expected[0]
    for key in actual:
        if key == wanted:
            position += 1
            if position == last:
                return True
            wanted = expected[position]
    return False


def _any_order(actual: list[_Key], expected: list[_Key]) -> bool:
    remaining = list(actual)
    for key in expected:
        try:
            remaining.remove(key)  # the first equal one, as ADK pops it
        except ValueError:
            return False
    return True


def exact_match(
    actual: Sequence[FunctionCall], expected: Sequence[FunctionCall], ignore_args: bool = False
) -> bool:
    """The same calls in the same order, and no others."""
    return _exact(_keys(actual, ignore_args), _keys(expected, ignore_args))


def in_order_match(
    actual: Sequence[FunctionCall], expected: Sequence[FunctionCall], ignore_args: bool = False
) -> bool:
    """Every expected call, in order, with any others between (a greedy subsequence scan)."""
    return _in_order(_keys(actual, ignore_args), _keys(expected, ignore_args))


def any_order_match(
    actual: Sequence[FunctionCall], expected: Sequence[FunctionCall], ignore_args: bool = False
) -> bool:
    """Every expected call somewhere, each actual call used for at most one expected call."""
    return _any_order(_keys(actual, ignore_args), _keys(expected, ignore_args))


_MATCHERS = {
    MatchType.EXACT: _exact,
    MatchType.IN_ORDER: _in_order,
    MatchType.ANY_ORDER: _any_order,
}


class ToolTrajectoryMetric:
    """Scores tool-call trajectories (1.0 or 0.0 per invocation, averaged)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="tool_trajectory_avg_score",
        description=(
            "Fraction of invocations whose tool calls match the expected ones "
            "(EXACT, IN_ORDER or ANY_ORDER; args compared unless ignore_args)."
        ),
        needs_expected=True,
        needs_content=False,
    )

    def __init__(self, criterion: ToolTrajectoryCriterion) -> None:
        self.criterion = criterion
        self._match = _MATCHERS[criterion.match_type]

    def score_invocation(self, actual: Invocation, expected: Invocation) -> float:
        """1.0 when this invocation's tool calls match, else 0.0."""
        ignore_args = self.criterion.ignore_args
        matched = self._match(
            _keys(actual.tool_calls(), ignore_args), _keys(expected.tool_calls(), ignore_args)
        )
        return 1.0 if matched else 0.0

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Score every invocation against its expected counterpart and average."""
        reason = paired_or_reason(actual, expected)
        if reason is not None or expected is None:
            return not_evaluated(self.info.name, self.criterion, actual, reason or "", expected)
        threshold = self.criterion.threshold
        score_invocation = self.score_invocation
        per_invocation = []
        for act, exp in zip(actual, expected, strict=True):
            score = score_invocation(act, exp)
            per_invocation.append(
                PerInvocationResult(act, exp, score, status_for(score, threshold))
            )
        return mean_result(self.info.name, self.criterion, per_invocation)


DECLARATION = MetricDeclaration(
    ToolTrajectoryMetric,
    criterion=ToolTrajectoryCriterion,
    applies_to="conversation",
    default_threshold=DEFAULT_CRITERIA.get(ToolTrajectoryMetric.info.name),
    report="trajectory",
)
"""What ``tool_trajectory_avg_score`` is (:class:`~assay.metrics.declaration.MetricDeclaration`)."""
