"""The metric registry: built-ins, duplicates, metrics that cannot run yet, and what each metric
is (its info, the catalog ``assay metrics`` lists)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from assay.config import (
    CRITERION_TYPES,
    INFORMATIONAL_METRICS,
    BaseCriterion,
    RubricsBasedCriterion,
    default_config,
    parse_config,
)
from assay.evalset import Content, EvalCase, Invocation
from assay.metrics import EvalStatus, MetricRegistry, UnavailableMetric, default_registry
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
        "rubric_based_multi_turn_trajectory_quality_v1",
        "hallucinations_v1",
        "safety_v1",
        "response_evaluation_score",
        "multi_turn_task_success_v1",
        "multi_turn_trajectory_quality_v1",
        "multi_turn_tool_use_quality_v1",
        "per_turn_user_simulator_quality_v1",
    ]
    assert registry.unimplemented() == []  # every metric google-adk 2.13 knows is scored
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
        (
            "my_metric",
            "no metric is registered under this name; a custom metric runs from its "
            "custom_metrics entry in the config",
        ),
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


# --- what each metric is (``assay metrics``) ---------------------------------------------------


def test_every_registered_metric_has_its_own_info_consistent_with_the_registry_and_config() -> None:
    registry = default_registry()
    for name in registry.names():
        info = registry.info(name)
        assert info is not None, name
        assert info.name == name
        assert info.description, name
        assert info.needs_judge == registry.is_judged(name), name
        assert info.needs_expected == (registry.applies_to(name) == "conversation"), name
        assert info.informational == (name in INFORMATIONAL_METRICS), name
        criterion_type = CRITERION_TYPES.get(name)
        rubrics = criterion_type is not None and issubclass(criterion_type, RubricsBasedCriterion)
        assert info.takes_rubrics == rubrics, name


def test_a_registry_lacking_a_known_metric_lists_it_as_unimplemented() -> None:
    registry = MetricRegistry()  # a registry of one's own
    registry.register("response_match_score", lambda c: ToolTrajectoryMetric(c))

    missing = registry.unimplemented()

    assert missing == [name for name in CRITERION_TYPES if name != "response_match_score"]
    for name in missing:
        assert registry.info(name) is None
        assert isinstance(registry.create(name, BaseCriterion(threshold=0.5)), UnavailableMetric)
    entry = next(e for e in registry.catalog() if e.info.name == "multi_turn_task_success_v1")
    assert not entry.implemented


def test_the_catalog_lists_registered_then_unimplemented_with_the_default_criteria() -> None:
    registry = default_registry()
    entries = registry.catalog()

    assert [e.info.name for e in entries] == registry.names() + registry.unimplemented()
    assert [e.implemented for e in entries] == [True] * len(registry.names()) + [False] * len(
        registry.unimplemented()
    )
    defaults = {name: c.threshold for name, c in default_config().criteria.items()}
    assert {
        e.info.name: e.default_threshold for e in entries if e.default_threshold is not None
    } == defaults
    assert defaults == {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}  # ADK's


def test_a_metric_registered_later_moves_out_of_the_unimplemented_list() -> None:
    registry = MetricRegistry()
    registry.register("multi_turn_task_success_v1", lambda c: ToolTrajectoryMetric(c))
    registry.register_judged("team_metric", lambda c, j: ToolTrajectoryMetric(c))

    assert "multi_turn_task_success_v1" not in registry.unimplemented()
    by_name = {e.info.name: e for e in registry.catalog()}
    entry = by_name["multi_turn_task_success_v1"]
    assert entry.implemented and entry.info.description == ""  # registered without its info
    assert by_name["team_metric"].info.needs_judge  # from how it was registered


def test_overriding_a_metric_without_info_forgets_the_old_info() -> None:
    registry = default_registry()
    registry.register("response_match_score", lambda c: ToolTrajectoryMetric(c), override=True)

    assert registry.info("response_match_score") is None


def test_building_the_registry_imports_no_judged_metric_until_its_info_is_asked_for() -> None:
    script = (
        "import sys\n"
        "from assay.metrics.registry import default_registry\n"
        "registry = default_registry()\n"
        "before = 'assay.metrics.rubrics' in sys.modules\n"
        "info = registry.info('rubric_based_tool_use_quality_v1')\n"
        "print(before, 'assay.metrics.rubrics' in sys.modules, info.name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["False", "True", "rubric_based_tool_use_quality_v1"]


def test_every_declared_metric_is_validated_as_the_criterion_it_declares_with_adks_default() -> (
    None
):
    from assay.config import DEFAULT_CRITERIA
    from assay.metrics.registry import declarations

    for declared in declarations():
        assert CRITERION_TYPES.get(declared.name, BaseCriterion) is declared.criterion, declared
        assert declared.default_threshold == DEFAULT_CRITERIA.get(declared.name), declared
