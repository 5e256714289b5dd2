"""The metric registry: built-ins, duplicates, and metrics that cannot run yet."""

from __future__ import annotations

import asyncio

import pytest

from assay.config import BaseCriterion, parse_config
from assay.evalset import Content, EvalCase, Invocation
from assay.metrics import EvalStatus, MetricRegistry, default_registry
from assay.metrics.trajectory import ToolTrajectoryMetric


def _case() -> EvalCase:
    turn = Invocation(user_content=Content.from_text("hi", role="user"))
    return EvalCase(eval_id="c", conversation=[turn])


def test_registering_a_name_twice_is_an_error_unless_overridden() -> None:
    registry = default_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.register("tool_trajectory_avg_score", lambda c: ToolTrajectoryMetric(c))
    registry.register("tool_trajectory_avg_score", lambda c: ToolTrajectoryMetric(c), override=True)


def test_registries_do_not_share_state() -> None:
    first, second = MetricRegistry(), MetricRegistry()
    first.register("x", lambda c: ToolTrajectoryMetric(c))
    assert second.names() == []


def test_default_registry_holds_the_deterministic_efficiency_and_judged_metrics() -> None:
    registry = default_registry()
    assert registry.names() == [
        "tool_trajectory_avg_score",
        "response_match_score",
        "tool_call_count_v1",
        "inference_call_count_v1",
        "token_usage_v1",
        "invocation_duration_v1",
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "hallucinations_v1",
        "safety_v1",
        "per_turn_user_simulator_quality_v1",
    ]
    assert [n for n in registry.names() if registry.is_judged(n)] == registry.names()[6:]


def test_a_judged_metric_without_a_judge_carries_the_providers_reason() -> None:
    class NoJudge:
        def judge_for(self, metric: str, criterion: object) -> str:
            return f"no judge for {metric}: set --judge-model"

    config = parse_config({"criteria": {"safety_v1": 0.5}})
    case = _case()
    metric = default_registry().create("safety_v1", config.criteria["safety_v1"], NoJudge())
    result = asyncio.run(metric.evaluate(case.conversation or [], case.conversation, case))
    assert (result.status, result.reason) == (
        EvalStatus.NOT_EVALUATED,
        "no judge for safety_v1: set --judge-model",
    )


def test_registering_a_name_twice_is_an_error_across_plain_and_judged_metrics() -> None:
    registry = default_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.register("safety_v1", lambda c: ToolTrajectoryMetric(c))
    registry.register("safety_v1", lambda c: ToolTrajectoryMetric(c), override=True)
    assert not registry.is_judged("safety_v1")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("final_response_match_v2", "no LLM judge was configured for this run"),
        ("multi_turn_task_success_v1", "not implemented yet"),
        ("my_metric", "custom metrics (custom_metrics in the config) are not implemented yet"),
    ],
)
def test_a_metric_that_cannot_run_is_not_evaluated_with_its_reason(name: str, reason: str) -> None:
    config = parse_config(
        {
            "criteria": {name: 0.5},
            "custom_metrics": {"my_metric": {"code_config": {"name": "pkg.mod.fn"}}},
        }
    )
    case = _case()
    metric = default_registry().create(name, config.criteria[name])
    result = asyncio.run(metric.evaluate(case.conversation or [], case.conversation, case))
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.reason == reason
    assert result.score is None
    assert len(result.per_invocation) == 1
    assert isinstance(result.criterion, BaseCriterion) and result.criterion.threshold == 0.5


def test_the_built_metric_for_the_simulated_user_looks_up_adks_built_in_personas() -> None:
    from assay.llm.backends.scripted import ScriptedBackend
    from assay.llm.client import LlmClient
    from assay.llm.judge import Judge
    from assay.metrics.simulator_quality import UserSimulatorQualityMetric

    config = parse_config(
        {"criteria": {"per_turn_user_simulator_quality_v1": {"threshold": 0.5}}}, "c.json"
    )
    criterion = config.criteria["per_turn_user_simulator_quality_v1"]

    class Provider:
        def judge_for(self, metric: str, criterion: BaseCriterion | None) -> Judge:
            return Judge(LlmClient(ScriptedBackend("{}")), metric)

    metric = default_registry().create("per_turn_user_simulator_quality_v1", criterion, Provider())
    assert isinstance(metric, UserSimulatorQualityMetric)
    assert metric.personas is not None
    found = metric.personas("EXPERT")
    assert found is not None and found.id == "EXPERT"
    assert metric.personas("NO_SUCH_PERSONA") is None
