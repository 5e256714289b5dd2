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

from assay.config import MatchType, ToolTrajectoryCriterion
from assay.evalset.case import EvalCase
from assay.evalset.content import FunctionCall
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


def _same_call(actual: FunctionCall, expected: FunctionCall, ignore_args: bool) -> bool:
    return actual.name == expected.name and (ignore_args or actual.args == expected.args)


def exact_match(
    actual: Sequence[FunctionCall], expected: Sequence[FunctionCall], ignore_args: bool = False
) -> bool:
    """The same calls in the same order, and no others."""
    return len(actual) == len(expected) and all(
        _same_call(a, e, ignore_args) for a, e in zip(actual, expected, strict=True)
    )


def in_order_match(
    actual: Sequence[FunctionCall], expected: Sequence[FunctionCall], ignore_args: bool = False
) -> bool:
    """Every expected call, in order, with any others between (a greedy subsequence scan)."""
    position = 0
    for call in actual:
        if position == len(expected):
            break
        if _same_call(call, expected[position], ignore_args):
            position += 1
    return position == len(expected)


def any_order_match(
    actual: Sequence[FunctionCall], expected: Sequence[FunctionCall], ignore_args: bool = False
) -> bool:
    """Every expected call somewhere, each actual call used for at most one expected call."""
    remaining = list(actual)
    for wanted in expected:
        index = next(
            (i for i, call in enumerate(remaining) if _same_call(call, wanted, ignore_args)), None
        )
        if index is None:
            return False
        del remaining[index]
    return True


_MATCHERS = {
    MatchType.EXACT: exact_match,
    MatchType.IN_ORDER: in_order_match,
    MatchType.ANY_ORDER: any_order_match,
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
    )

    def __init__(self, criterion: ToolTrajectoryCriterion) -> None:
        self.criterion = criterion
        self._match = _MATCHERS[criterion.match_type]

    def score_invocation(self, actual: Invocation, expected: Invocation) -> float:
        """1.0 when this invocation's tool calls match, else 0.0."""
        matched = self._match(
            actual.tool_calls(), expected.tool_calls(), self.criterion.ignore_args
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
        per_invocation = []
        for act, exp in zip(actual, expected, strict=True):
            score = self.score_invocation(act, exp)
            per_invocation.append(
                PerInvocationResult(act, exp, score, status_for(score, threshold))
            )
        return mean_result(self.info.name, self.criterion, per_invocation)
