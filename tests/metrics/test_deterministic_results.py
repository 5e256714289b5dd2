"""What the two deterministic metrics hand on besides their score: the metric's name, its
criterion, and each invocation paired with its expected one, for a scored case and for one
that cannot be scored. The results file and reports are built from these fields."""

from __future__ import annotations

import pytest
from _support import run_metric

from assay.config import BaseCriterion, ToolTrajectoryCriterion
from assay.evalset import EvalCase, Invocation
from assay.metrics import EvalStatus, ResponseMatchMetric, ToolTrajectoryMetric


def _invocation(index: int, text: str) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": f"i{index}",
            "user_content": {"role": "user", "parts": [{"text": "hi"}]},
            "final_response": {"role": "model", "parts": [{"text": text}]},
            "intermediate_data": {"tool_uses": [{"name": "look", "args": {"n": index}}]},
        }
    )


def _case(expected: list[Invocation]) -> EvalCase:
    return EvalCase.model_validate({"eval_id": "c", "conversation": expected})


Metric = ToolTrajectoryMetric | ResponseMatchMetric


def _metrics() -> list[tuple[str, Metric, BaseCriterion]]:
    trajectory = ToolTrajectoryCriterion(threshold=1.0)
    response = BaseCriterion(threshold=0.5)
    return [
        ("tool_trajectory_avg_score", ToolTrajectoryMetric(trajectory), trajectory),
        ("response_match_score", ResponseMatchMetric(response), response),
    ]


@pytest.mark.parametrize(("name", "metric", "criterion"), _metrics())
def test_a_scored_result_names_its_metric_and_pairs_each_invocation(
    name: str, metric: Metric, criterion: BaseCriterion
) -> None:
    expected = [_invocation(1, "sunny in Paris"), _invocation(2, "rain in Oslo")]
    actual = [_invocation(1, "sunny in Paris"), _invocation(2, "rain in Oslo")]

    result = run_metric(metric.evaluate(actual, expected, _case(expected)))

    assert result.metric_name == name
    assert result.criterion is criterion
    assert result.status is EvalStatus.PASSED
    assert [r.actual for r in result.per_invocation] == actual
    assert [r.expected for r in result.per_invocation] == expected
    assert [r.status for r in result.per_invocation] == [EvalStatus.PASSED] * 2


@pytest.mark.parametrize(("name", "metric", "criterion"), _metrics())
def test_a_result_that_cannot_be_scored_still_names_its_metric_criterion_and_turns(
    name: str, metric: Metric, criterion: BaseCriterion
) -> None:
    expected = [_invocation(1, "sunny in Paris")]
    actual = [_invocation(1, "sunny in Paris"), _invocation(2, "and more")]

    result = run_metric(metric.evaluate(actual, expected, _case(expected)))

    assert result.metric_name == name
    assert result.criterion is criterion
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.reason  # says why: the counts differ
    assert [r.actual for r in result.per_invocation] == actual
