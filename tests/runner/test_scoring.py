"""Scoring one case: ADK's case-status rule, and metrics that fail or cannot score."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from assay.config import BaseCriterion, parse_config
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus, MetricInfo, MetricResult, PerInvocationResult
from assay.metrics.registry import MetricRegistry, default_registry
from assay.results.model import EvalCaseResult
from assay.runner.scoring import ConfiguredMetric, case_status, score_case

P, F, N, INFO = (
    EvalStatus.PASSED,
    EvalStatus.FAILED,
    EvalStatus.NOT_EVALUATED,
    EvalStatus.INFORMATIONAL,
)


def invocation(text: str, tools: Sequence[str] = (), answer: str = "ok") -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": t, "args": {}} for t in tools]},
    }


def make_case(*turns: dict[str, Any], user_id: str | None = "u-1") -> EvalCase:
    data: dict[str, Any] = {"eval_id": "case_1", "conversation": list(turns)}
    if user_id is not None:
        data["session_input"] = {"app_name": "app", "user_id": user_id}
    return EvalCase.model_validate(data)


def actual_of(case: EvalCase) -> list[Invocation]:
    assert case.conversation is not None
    return list(case.conversation)


class FixedMetric:
    """Scores every invocation with ``score`` against the criterion's threshold."""

    info: ClassVar[MetricInfo] = MetricInfo(name="fixed", description="a fixed score")

    def __init__(self, name: str, criterion: BaseCriterion | None, score: float) -> None:
        self.name, self.criterion, self.score = name, criterion, score

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        threshold = self.criterion.threshold if self.criterion else 0.0
        status = P if self.score >= threshold else F
        return MetricResult(
            metric_name=self.name,
            criterion=self.criterion,
            score=self.score,
            status=status,
            per_invocation=[
                PerInvocationResult(actual=inv, score=self.score, status=status) for inv in actual
            ],
        )


class RaisingMetric(FixedMetric):
    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        raise RuntimeError("judge unavailable")


class ShortMetric(FixedMetric):
    """Returns one per-invocation result too few."""

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        result = await super().evaluate(actual, expected, case)
        result.per_invocation = result.per_invocation[:-1]
        return result


def configured(name: str, metric_type: type[FixedMetric], score: float = 1.0) -> ConfiguredMetric:
    criterion = BaseCriterion(threshold=0.5)
    return ConfiguredMetric(name, criterion, metric_type(name, criterion, score))


def builtin(criteria: dict[str, Any]) -> list[ConfiguredMetric]:
    config = parse_config({"criteria": criteria})
    registry = default_registry()
    return [
        ConfiguredMetric(name, criterion, registry.create(name, criterion))
        for name, criterion in config.criteria.items()
    ]


def score(
    case: EvalCase,
    actual: Sequence[Invocation] | None,
    metrics: Sequence[ConfiguredMetric],
    missing_reason: str | None = None,
) -> EvalCaseResult:
    return asyncio.run(score_case("set_1", case, actual, metrics, missing_reason))


def overall(result: EvalCaseResult) -> dict[str, tuple[float | None, EvalStatus]]:
    return {m.metric_name: (m.score, m.eval_status) for m in result.overall_eval_metric_results}


# --- the case-status rule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], N),
        ([N], N),
        ([INFO], N),
        ([N, INFO], N),
        ([P], P),
        ([P, N], P),
        ([N, P, INFO], P),
        ([F], F),
        ([P, F], F),
        ([F, P], F),
        ([N, F, INFO], F),
    ],
)
def test_any_failed_fails_the_case_else_any_passed_passes_it_else_not_evaluated(
    statuses: list[EvalStatus], expected: EvalStatus
) -> None:
    assert case_status(statuses) is expected


def _adks_final_status_rule() -> Callable[[Any, list[Any]], Any]:
    """``LocalEvalService._generate_final_eval_status`` from the installed ADK's own source.

    Importing ``local_eval_service`` needs ADK's Vertex extras (pandas, agentplatform), which
    this install leaves out, so the method is compiled from the installed file, with ADK's own
    ``EvalStatus`` and ``EvalMetricResult``: the rule ADK runs, not a transcription of it."""
    from google.adk.evaluation import eval_metrics

    spec = importlib.util.find_spec("google.adk.evaluation.local_eval_service")
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    [service] = [
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LocalEvalService"
    ]
    [method] = [
        n
        for n in service.body
        if isinstance(n, ast.FunctionDef) and n.name == "_generate_final_eval_status"
    ]
    namespace: dict[str, Any] = {
        "EvalStatus": eval_metrics.EvalStatus,
        "EvalMetricResult": eval_metrics.EvalMetricResult,
    }
    exec(compile(ast.Module(body=[method], type_ignores=[]), spec.origin, "exec"), namespace)
    rule: Callable[[Any, list[Any]], Any] = namespace[method.name]
    return rule


def adk_final_status(statuses: Sequence[EvalStatus]) -> EvalStatus:
    """The case status ADK's own rule gives metric results of ``statuses``."""
    from google.adk.evaluation import eval_metrics

    results = [
        eval_metrics.EvalMetricResult(
            metric_name=f"metric_{n}", eval_status=eval_metrics.EvalStatus(status.value)
        )
        for n, status in enumerate(statuses)
    ]
    final = _adks_final_status_rule()(None, results)  # the method reads nothing of ``self``
    assert isinstance(final, eval_metrics.EvalStatus)
    return EvalStatus(final.value)


def test_the_case_status_rule_agrees_with_adks_own_on_every_sequence_of_up_to_four() -> None:
    checked = 0
    for length in range(5):
        for statuses in itertools.product([P, F, N, INFO], repeat=length):
            assert case_status(statuses) is adk_final_status(statuses), statuses
            checked += 1
    assert checked == sum(4**n for n in range(5))


# --- metrics that raise or misbehave ----------------------------------------------------------


def test_a_metric_that_raises_is_not_evaluated_with_the_exception_and_others_still_score() -> None:
    case = make_case(invocation("a"), invocation("b"))
    metrics = [configured("first", FixedMetric), configured("broken", RaisingMetric)]
    metrics.append(configured("last", FixedMetric, score=0.75))

    result = score(case, actual_of(case), metrics)

    assert overall(result) == {"first": (1.0, P), "broken": (None, N), "last": (0.75, P)}
    assert result.assay.metric_reasons == {
        "broken": "metric raised RuntimeError: judge unavailable"
    }
    assert result.final_eval_status is P
    for row in result.eval_metric_result_per_invocation:
        assert [(m.metric_name, m.eval_status) for m in row.eval_metric_results] == [
            ("first", P),
            ("broken", N),
            ("last", P),
        ]


class MeetingMetric(FixedMetric):
    """Scores only once every other MeetingMetric of the case has started: the case's metrics
    must run together, or this waits forever."""

    started: ClassVar[list[str]] = []
    everyone: ClassVar[asyncio.Event | None] = None

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        assert MeetingMetric.everyone is not None
        MeetingMetric.started.append(self.name)
        if len(MeetingMetric.started) == 3:
            MeetingMetric.everyone.set()
        await MeetingMetric.everyone.wait()
        return await super().evaluate(actual, expected, case)


def test_a_cases_metrics_run_together_and_its_rows_keep_the_configured_order() -> None:
    """So that a judge serving several metrics sees all their calls at once (a one-at-a-time
    judge then takes calls that share a prompt's start back to back)."""
    case = make_case(invocation("a"), invocation("b"))
    metrics = [configured(name, MeetingMetric, score=0.25 * i) for i, name in enumerate("xyz", 2)]

    async def scored() -> EvalCaseResult:
        MeetingMetric.started, MeetingMetric.everyone = [], asyncio.Event()
        return await asyncio.wait_for(score_case("set_1", case, actual_of(case), metrics), 5)

    result = asyncio.run(scored())

    assert overall(result) == {"x": (0.5, P), "y": (0.75, P), "z": (1.0, P)}
    for row in result.eval_metric_result_per_invocation:
        assert [m.metric_name for m in row.eval_metric_results] == ["x", "y", "z"]


def test_a_cancelled_case_cancels_the_metrics_still_running() -> None:
    case = make_case(invocation("a"))
    metrics = [configured(name, MeetingMetric) for name in "xy"]  # the third never starts

    async def cancelled() -> list[str]:
        MeetingMetric.started, MeetingMetric.everyone = [], asyncio.Event()
        task = asyncio.ensure_future(score_case("set_1", case, actual_of(case), metrics))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return [repr(t) for t in pending]

    assert asyncio.run(cancelled()) == []


class TaskNotingMetric(FixedMetric):
    """Notes the task it is scored in, and never waits (as every metric without a judge)."""

    tasks: ClassVar[list[asyncio.Task[Any] | None]] = []

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        TaskNotingMetric.tasks.append(asyncio.current_task())
        return await super().evaluate(actual, expected, case)


def test_a_metric_that_never_waits_is_scored_inline_in_the_cases_own_task() -> None:
    """No task per metric for judge-free metrics: they are scored as they are started."""
    case = make_case(invocation("a"))
    metrics = [configured(name, TaskNotingMetric, score=0.5) for name in "xy"]

    async def scored() -> tuple[EvalCaseResult, asyncio.Task[Any] | None]:
        TaskNotingMetric.tasks = []
        result = await score_case("set_1", case, actual_of(case), metrics)
        return result, asyncio.current_task()

    result, own = asyncio.run(scored())

    assert TaskNotingMetric.tasks == [own, own]
    assert overall(result) == {"x": (0.5, P), "y": (0.5, P)}


def test_metrics_that_wait_run_together_beside_inline_ones_and_rows_keep_the_order() -> None:
    case = make_case(invocation("a"), invocation("b"))
    metrics = [
        configured("x", MeetingMetric, score=0.5),
        configured("inline", TaskNotingMetric, score=0.25),
        configured("y", MeetingMetric, score=0.75),
        configured("z", MeetingMetric, score=1.0),
    ]

    async def scored() -> EvalCaseResult:
        MeetingMetric.started, MeetingMetric.everyone = [], asyncio.Event()
        return await asyncio.wait_for(score_case("set_1", case, actual_of(case), metrics), 5)

    result = asyncio.run(scored())

    assert overall(result) == {"x": (0.5, P), "inline": (0.25, F), "y": (0.75, P), "z": (1.0, P)}
    for row in result.eval_metric_result_per_invocation:
        assert [m.metric_name for m in row.eval_metric_results] == ["x", "inline", "y", "z"]


def test_a_case_whose_only_scoring_metric_raises_is_not_evaluated() -> None:
    case = make_case(invocation("a"))

    result = score(case, actual_of(case), [configured("broken", RaisingMetric)])

    assert result.final_eval_status is N


def test_a_metric_returning_the_wrong_number_of_per_invocation_results_is_not_evaluated() -> None:
    case = make_case(invocation("a"), invocation("b"))

    result = score(case, actual_of(case), [configured("short", ShortMetric)])

    assert overall(result) == {"short": (None, N)}
    assert result.assay.metric_reasons == {
        "short": "metric returned 1 per-invocation results for 2 invocations"
    }
    assert all(
        row.eval_metric_results[0].eval_status is N
        for row in result.eval_metric_result_per_invocation
    )


def test_a_failing_metric_fails_the_case_even_when_another_passes() -> None:
    case = make_case(invocation("a"))
    metrics = [configured("good", FixedMetric, 0.9), configured("bad", FixedMetric, 0.1)]

    result = score(case, actual_of(case), metrics)

    assert overall(result) == {"good": (0.9, P), "bad": (0.1, F)}
    assert result.final_eval_status is F
    assert result.assay.metric_reasons == {}


# --- cases that cannot be scored --------------------------------------------------------------


def test_an_invocation_count_mismatch_is_not_evaluated_with_the_counts_in_the_reason() -> None:
    case = make_case(invocation("a", ["t1"]), invocation("b", ["t2"]))
    actual = actual_of(case)[:1]
    metrics = builtin({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5})

    result = score(case, actual, metrics)

    reason = "expected 2 invocations, got 1"
    assert result.final_eval_status is N
    assert result.assay.reason == reason
    assert result.assay.metric_reasons == {
        "tool_trajectory_avg_score": reason,
        "response_match_score": reason,
    }
    assert overall(result) == {
        "tool_trajectory_avg_score": (None, N),
        "response_match_score": (None, N),
    }
    [row] = result.eval_metric_result_per_invocation  # the actual invocation is kept
    assert row.actual_invocation == actual[0]
    assert row.expected_invocation is None
    assert {m.eval_status for m in row.eval_metric_results} == {N}


def test_a_count_mismatch_cannot_pass_even_if_a_reference_free_metric_passes() -> None:
    case = make_case(invocation("a"), invocation("b"))
    metrics = [configured("reference_free", FixedMetric)]
    metrics += builtin({"response_match_score": 0.5})

    result = score(case, actual_of(case)[:1], metrics)

    assert overall(result) == {"reference_free": (1.0, P), "response_match_score": (None, N)}
    assert result.final_eval_status is N
    assert result.assay.reason == "expected 2 invocations, got 1"


def test_more_actual_than_expected_invocations_is_also_a_count_mismatch() -> None:
    case = make_case(invocation("a"))
    actual = actual_of(case) * 3

    result = score(case, actual, builtin({"response_match_score": 0.5}))

    assert result.final_eval_status is N
    assert result.assay.metric_reasons == {"response_match_score": "expected 1 invocations, got 3"}
    assert len(result.eval_metric_result_per_invocation) == 3


def test_a_case_with_no_actual_invocations_is_not_evaluated_for_the_reason_given() -> None:
    case = make_case(invocation("a"))
    metrics = builtin({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5})

    result = score(case, None, metrics, "no trace for this case in traces.json")

    assert result.final_eval_status is N
    assert result.assay.reason == "no trace for this case in traces.json"
    assert overall(result) == {
        "tool_trajectory_avg_score": (None, N),
        "response_match_score": (None, N),
    }
    assert set(result.assay.metric_reasons.values()) == {"no trace for this case in traces.json"}
    assert result.eval_metric_result_per_invocation == []
    assert [m.threshold for m in result.overall_eval_metric_results] == [1.0, 0.5]


def test_a_known_metric_the_registry_lacks_is_not_evaluated_as_not_implemented_yet() -> None:
    case = make_case(invocation("a", answer="hello there"))
    config = parse_config({"criteria": {"multi_turn_task_success_v1": 0.8}})
    lacking = MetricRegistry()  # a registry of one's own, without ADK's multi-turn metrics
    metrics = [
        ConfiguredMetric(name, criterion, lacking.create(name, criterion))
        for name, criterion in config.criteria.items()
    ] + builtin({"response_match_score": 0.5})

    result = score(case, actual_of(case), metrics)

    assert overall(result) == {
        "multi_turn_task_success_v1": (None, N),
        "response_match_score": (1.0, P),
    }
    assert result.assay.metric_reasons == {"multi_turn_task_success_v1": "not implemented yet"}
    assert result.final_eval_status is P


# --- what a scored case records ---------------------------------------------------------------


def test_a_scored_case_records_criteria_thresholds_and_paired_invocations() -> None:
    case = make_case(invocation("a", ["t1"], "x y"), invocation("b", ["t2"], "z"))
    actual = [
        Invocation.model_validate(invocation("a", ["t1"], "x y")),
        Invocation.model_validate(invocation("b", ["t3"], "z")),
    ]
    metrics = builtin({"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "ANY_ORDER"}})

    result = score(case, actual, metrics)

    [metric] = result.overall_eval_metric_results
    assert (metric.score, metric.eval_status, metric.threshold) == (0.5, P, 0.5)
    assert metric.criterion is not None
    assert metric.criterion["match_type"] == 2
    per_invocation = [
        (row.eval_metric_results[0].score, row.eval_metric_results[0].eval_status)
        for row in result.eval_metric_result_per_invocation
    ]
    assert per_invocation == [(1.0, P), (0.0, F)]
    assert [row.expected_invocation for row in result.eval_metric_result_per_invocation] == (
        actual_of(case)
    )
    assert (result.eval_set_id, result.eval_set_file, result.eval_id) == (
        "set_1",
        "set_1",
        "case_1",
    )


@pytest.mark.parametrize(("user_id", "expected"), [("u-9", "u-9"), (None, "test_user_id")])
def test_the_user_id_comes_from_session_input_else_adks_default(
    user_id: str | None, expected: str
) -> None:
    case = make_case(invocation("a"), user_id=user_id)

    assert score(case, actual_of(case), []).user_id == expected
    assert score(case, None, []).user_id == expected


def test_a_case_with_no_metrics_is_not_evaluated() -> None:
    case = make_case(invocation("a"))

    result = score(case, actual_of(case), [])

    assert result.final_eval_status is N
    assert result.overall_eval_metric_results == []


# --- a case no judge could score (a departure from ADK: docs/design.md) -------------------------


def judged(name: str, metric_type: type[FixedMetric], score: float = 1.0) -> ConfiguredMetric:
    """A metric scored by a judge (``judge_model`` names it, as the run does)."""
    criterion = BaseCriterion(threshold=0.5)
    return ConfiguredMetric(
        name, criterion, metric_type(name, criterion, score), judge_model="openai:judge"
    )


def no_judge(name: str) -> ConfiguredMetric:
    """A built-in judged metric whose judge could not be had, as the registry builds it."""
    criterion = parse_config({"criteria": {name: 0.5}}).criteria[name]

    class NoJudge:
        def judge_for(self, metric: str, criterion: BaseCriterion | None) -> str:
            return "judge openai:gpt-4o unavailable: OPENAI_API_KEY is not set"

    return ConfiguredMetric(name, criterion, default_registry().create(name, criterion, NoJudge()))


def test_a_case_whose_judged_metrics_all_have_no_verdict_is_not_evaluated_not_passed() -> None:
    case = make_case(invocation("a"), invocation("b"))
    metrics = [
        configured("deterministic", FixedMetric, 1.0),
        judged("hallucinations_v1", RaisingMetric),
        no_judge("safety_v1"),
    ]

    result = score(case, actual_of(case), metrics)

    assert overall(result)["deterministic"] == (1.0, P)  # ADK's rule alone would pass it
    assert result.final_eval_status is N
    assert result.assay.reason == (
        "not evaluated: no judged metric has a verdict (hallucinations_v1, safety_v1), and "
        "the case does not pass on its other metrics alone"
    )
    assert "OPENAI_API_KEY" in result.assay.metric_reasons["safety_v1"]


def test_a_case_with_one_judged_verdict_keeps_adks_rule() -> None:
    case = make_case(invocation("a"))
    metrics = [
        configured("deterministic", FixedMetric, 1.0),
        judged("hallucinations_v1", RaisingMetric),
        judged("safety_v1", FixedMetric, 1.0),
    ]

    result = score(case, actual_of(case), metrics)

    assert result.final_eval_status is P
    assert result.assay.reason is None


def test_a_failed_metric_still_fails_a_case_no_judge_could_score() -> None:
    case = make_case(invocation("a"))
    metrics = [configured("deterministic", FixedMetric, 0.0), no_judge("safety_v1")]

    result = score(case, actual_of(case), metrics)

    assert result.final_eval_status is F
    assert result.assay.reason is None


def test_a_custom_function_under_a_judged_name_is_not_a_judged_metric() -> None:
    case = make_case(invocation("a"))
    criterion = BaseCriterion(threshold=0.5)
    custom = ConfiguredMetric(
        "safety_v1",
        criterion,
        RaisingMetric("safety_v1", criterion, 1.0),
        custom_function_path="my_metrics.safety",
    )

    result = score(case, actual_of(case), [configured("deterministic", FixedMetric), custom])

    assert result.final_eval_status is P


def test_a_metric_cancelled_before_its_task_first_ran_is_cancelled_where_it_waits() -> None:
    """A metric is run inline until it first waits, then carried on by a task: cancelling that
    task before it ever ran still throws into the metric where it waits (its cleanup runs), and
    cancels what it waited on, as for a task that had run it from the start."""
    from assay.runner.scoring import begun

    seen: list[str] = []

    async def run() -> asyncio.Future[None]:
        waited: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def metric() -> None:
            try:
                await waited
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        task = begun(metric())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return waited

    waited = asyncio.run(run())

    assert seen == ["cancelled"]
    assert waited.cancelled()


def _token_usage(**counts: float | None) -> dict[str, float | None]:
    from assay.metrics.efficiency import TOKEN_USAGE_FIELDS

    return {field: counts.get(field) for field in TOKEN_USAGE_FIELDS}


@pytest.mark.parametrize(
    "details",
    [
        {"token_usage_details": _token_usage(total_tokens=12.0, input_tokens=5.0)},
        {"duration_details": dict.fromkeys(("total_seconds", "model_seconds"), 1.5)},
        {"token_usage_details": {"total_tokens": 3}},  # a custom metric's partial breakdown
        {
            "token_usage_details": _token_usage(total_tokens=1.0),
            "duration_details": {
                "total_seconds": 2.0,
                "model_seconds": None,
                "tool_seconds": None,
                "framework_seconds": None,
            },
        },
    ],
    ids=["tokens", "partial-duration", "partial-tokens", "both"],
)
def test_a_rows_breakdowns_are_what_validating_them_gives(details: dict[str, Any]) -> None:
    """The efficiency metrics' breakdowns (some 40,000 rows in 5,000 cases) are not validated
    again: the details are the same, down to which fields count as set."""
    from assay.results.model import EvalMetricResultDetails
    from assay.runner.scoring import _details

    made = _details(None, details)
    validated = EvalMetricResultDetails.model_validate({"rubric_scores": None, **details})

    assert made.model_dump_json() == validated.model_dump_json()
    assert made.__dict__ == validated.__dict__
    assert list(made.__dict__) == list(validated.__dict__)
    assert made.model_fields_set == validated.model_fields_set


def test_breakdowns_that_validation_would_refuse_are_still_refused() -> None:
    from pydantic import ValidationError

    from assay.runner.scoring import _details

    with pytest.raises(ValidationError):
        _details(None, {"token_usage_details": {1: 2.0}})
    with pytest.raises(ValidationError):
        _details(None, {"token_usage_details": _token_usage(), "votes": [1]})
