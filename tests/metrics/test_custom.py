"""Custom metrics: a function named in the config's ``custom_metrics``, called as ``adk eval``
calls it, with ADK's types when google-adk is installed (it is, here) or assay's.

Every function under test is a real module written into ``tmp_path`` and imported by path, as a
user's would be; each gets a name of its own, so that no test sees another's module.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import assay.custom
from assay.config import BaseCriterion, CustomMetricConfig, EvalConfig, parse_config
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus, Metric, MetricResult
from assay.metrics.custom import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ENV,
    CustomMetric,
    custom_metric,
)
from assay.metrics.registry import UnavailableMetric, default_registry
from assay.runner.evaluate import configured_metrics
from assay.runner.scoring import score_case

P, F, N, INFO = (
    EvalStatus.PASSED,
    EvalStatus.FAILED,
    EvalStatus.NOT_EVALUATED,
    EvalStatus.INFORMATIONAL,
)


def turn(question: str, answer: str, rubrics: Sequence[str] = ()) -> dict[str, Any]:
    data: dict[str, Any] = {
        "invocation_id": f"inv-{question}",
        "user_content": {"role": "user", "parts": [{"text": question}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"q": question}}]},
    }
    if rubrics:
        data["rubrics"] = [rubric(r) for r in rubrics]
    return data


def rubric(rubric_id: str) -> dict[str, Any]:
    return {"rubric_id": rubric_id, "rubric_content": {"text_property": f"{rubric_id} holds"}}


def static_case(*turns: dict[str, Any], rubrics: Sequence[str] = ()) -> EvalCase:
    data: dict[str, Any] = {"eval_id": "c1", "conversation": list(turns)}
    if rubrics:
        data["rubrics"] = [rubric(r) for r in rubrics]
    return EvalCase.model_validate(data)


def scenario_case() -> EvalCase:
    return EvalCase.model_validate(
        {
            "eval_id": "s1",
            "conversation_scenario": {
                "starting_prompt": "Hi",
                "conversation_plan": "Ask for the weather, then stop.",
            },
        }
    )


CASE = static_case(turn("a", "Paris"), turn("b", "Rome"))


def actual(*answers: str) -> list[Invocation]:
    """Actual invocations for ``CASE``'s questions, with these final answers."""
    return [Invocation.model_validate(turn(q, a)) for q, a in zip("ab", answers, strict=True)]


@dataclass
class Modules:
    """Writes user modules into ``folder`` under fresh names; forgets them afterwards."""

    folder: Path
    names: list[str] = field(default_factory=list)

    def write(self, source: str, folder: Path | None = None) -> str:
        name = f"user_metric_{uuid.uuid4().hex[:10]}"
        where = folder or self.folder
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        self.names.append(name)
        return name

    def module(self, name: str) -> ModuleType:
        return sys.modules[name]


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[Modules]:
    written = Modules(tmp_path / "evals")
    written.folder.mkdir()
    yield written
    for name in written.names:
        sys.modules.pop(name, None)


def declared(path: str) -> CustomMetricConfig:
    return CustomMetricConfig.model_validate({"code_config": {"name": path}})


def build(
    modules: Modules,
    path: str,
    threshold: float = 0.5,
    **options: Any,
) -> Metric:
    return custom_metric(
        "my_metric",
        BaseCriterion(threshold=threshold),
        declared(path),
        eval_set_folder=modules.folder,
        **options,
    )


def score(
    metric: Metric, invocations: Sequence[Invocation] | None = None, case: EvalCase = CASE
) -> MetricResult:
    actual_invocations = list(invocations if invocations is not None else case.conversation or [])
    return asyncio.run(metric.evaluate(actual_invocations, case.conversation, case))


# --------------------------------------------------------------------------- as an ADK user writes it

ADK_SYNC = """
    from typing import Optional

    from google.adk.evaluation.conversation_scenarios import ConversationScenario
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

    SEEN = []


    def exact_answer(
        eval_metric: EvalMetric,
        actual_invocations: list[Invocation],
        expected_invocations: Optional[list[Invocation]],
        conversation_scenario: Optional[ConversationScenario],
    ) -> EvaluationResult:
        SEEN.append((eval_metric, actual_invocations, expected_invocations, conversation_scenario))
        threshold = eval_metric.criterion.threshold
        results = []
        for actual, expected in zip(actual_invocations, expected_invocations):
            score = 1.0 if actual.final_response == expected.final_response else 0.0
            results.append(
                PerInvocationResult(
                    actual_invocation=actual,
                    expected_invocation=expected,
                    score=score,
                    eval_status=EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED,
                )
            )
        overall = sum(r.score for r in results) / len(results)
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
            per_invocation_results=results,
        )
"""


def test_an_adk_users_sync_function_runs_unchanged_and_gets_adks_own_types(
    modules: Modules,
) -> None:
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import BaseCriterion as AdkCriterion
    from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric

    name = modules.write(ADK_SYNC)
    metric = build(modules, f"{name}.exact_answer", threshold=0.75)
    assert isinstance(metric, CustomMetric)

    result = score(metric, actual("Paris", "Madrid"))

    assert (result.score, result.status) == (0.5, F)  # below 0.75, by the function's own rule
    assert [(r.score, r.status) for r in result.per_invocation] == [(1.0, P), (0.0, F)]
    assert result.per_invocation[1].actual.final_response is not None
    assert result.per_invocation[1].expected is CASE.conversation[1]  # type: ignore[index]
    assert result.reason is None
    [(eval_metric, actual_invocations, expected, scenario)] = modules.module(name).SEEN
    assert type(eval_metric) is AdkEvalMetric
    assert eval_metric.metric_name == "my_metric"
    assert eval_metric.threshold is None  # as ADK: the threshold is the criterion's
    assert type(eval_metric.criterion) is AdkCriterion
    assert eval_metric.criterion.threshold == 0.75
    assert eval_metric.custom_function_path == f"{name}.exact_answer"
    assert all(type(inv) is AdkInvocation for inv in [*actual_invocations, *expected])
    assert actual_invocations[1].final_response.parts[0].text == "Madrid"
    assert actual_invocations[0].intermediate_data.tool_uses[0].args == {"q": "a"}
    assert scenario is None


ADK_ASYNC = """
    import asyncio

    from google.adk.evaluation.eval_metrics import EvalStatus, TokenUsageDetails
    from google.adk.evaluation.eval_rubrics import RubricScore
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


    async def judged(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        await asyncio.sleep(0)
        results = [
            PerInvocationResult(
                actual_invocation=inv,
                score=0.25,
                eval_status=EvalStatus.FAILED,
                rubric_scores=[RubricScore(rubric_id="concise", rationale="too long", score=0.0)],
                token_usage_details=TokenUsageDetails(total_tokens=12),
            )
            for inv in actual_invocations
        ]
        return EvaluationResult(
            overall_score=0.25,
            overall_eval_status=EvalStatus.FAILED,
            per_invocation_results=results,
            overall_rubric_scores=[RubricScore(rubric_id="concise", score=0.0)],
        )
"""


def test_an_adk_users_async_function_is_awaited_and_its_rubric_scores_are_kept(
    modules: Modules,
) -> None:
    name = modules.write(ADK_ASYNC)

    result = score(build(modules, f"{name}.judged"))

    assert (result.score, result.status) == (0.25, F)
    assert result.rubric_scores is not None
    assert [(r.rubric_id, r.score) for r in result.rubric_scores] == [("concise", 0.0)]
    first = result.per_invocation[0]
    assert (first.score, first.status) == (0.25, F)
    assert first.rubric_scores is not None
    assert first.rubric_scores[0].rationale == "too long"
    assert first.details == {"token_usage_details": {"total_tokens": 12.0}}


ASSAY_TYPED = """
    from assay.custom import (
        EvalMetric, EvalStatus, EvaluationResult, Invocation, PerInvocationResult,
    )

    SEEN = []


    def mentions_paris(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        SEEN.append((eval_metric, actual_invocations))
        results = []
        for inv in actual_invocations:
            text = " ".join(p.text or "" for p in inv.final_response.parts)
            score = 1.0 if "Paris" in text else 0.0
            status = EvalStatus.PASSED if score >= eval_metric.criterion.threshold else EvalStatus.FAILED
            results.append(PerInvocationResult(actual_invocation=inv, score=score, eval_status=status))
        return EvaluationResult(
            overall_score=max(r.score for r in results),
            overall_eval_status=EvalStatus.PASSED,
            per_invocation_results=results,
        )
"""


def test_a_function_written_with_assays_types_gets_assays_types_without_google_adk(
    modules: Modules,
) -> None:
    name = modules.write(ASSAY_TYPED)

    result = score(build(modules, f"{name}.mentions_paris", use_adk_types=False))

    assert (result.score, result.status) == (1.0, P)
    assert [(r.score, r.status) for r in result.per_invocation] == [(1.0, P), (0.0, F)]
    [(eval_metric, invocations)] = modules.module(name).SEEN
    assert type(eval_metric) is assay.custom.EvalMetric
    assert eval_metric.threshold is None
    assert eval_metric.criterion == BaseCriterion(threshold=0.5)
    assert all(type(inv) is Invocation for inv in invocations)
    assert invocations[0] == CASE.conversation[0]  # type: ignore[index]
    assert invocations[0] is not CASE.conversation[0]  # type: ignore[index]  # a copy


def test_a_function_written_with_assays_types_also_runs_on_adks_types(modules: Modules) -> None:
    # assay's EvaluationResult takes ADK's invocations (it reads them as their JSON).
    name = modules.write(ASSAY_TYPED)

    result = score(build(modules, f"{name}.mentions_paris"))

    assert (result.score, result.status) == (1.0, P)
    assert [r.status for r in result.per_invocation] == [P, F]
    [(eval_metric, _)] = modules.module(name).SEEN
    assert type(eval_metric).__module__ == "google.adk.evaluation.eval_metrics"


def test_the_types_read_adks_objects_by_their_fields() -> None:
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import EvalStatus as AdkStatus

    assert CASE.conversation is not None
    theirs = AdkInvocation.model_validate(CASE.conversation[0].model_dump(mode="json"))
    result = assay.custom.PerInvocationResult(
        actual_invocation=theirs, eval_status=AdkStatus.FAILED, score=0
    )
    assert result.actual_invocation == CASE.conversation[0]
    assert result.eval_status is EvalStatus.FAILED
    assert assay.custom.EvaluationResult().overall_eval_status is EvalStatus.NOT_EVALUATED


# --------------------------------------------------------------------------- the verdict is the function's

VERDICTS = """
    from assay.custom import EvalStatus, EvaluationResult, PerInvocationResult


    def each(actual, status, score):
        return [PerInvocationResult(actual_invocation=a, score=score, eval_status=status) for a in actual]


    def failed_above_threshold(m, actual, expected, scenario):
        return EvaluationResult(
            overall_score=0.9, overall_eval_status=EvalStatus.FAILED,
            per_invocation_results=each(actual, EvalStatus.FAILED, 0.9),
        )


    def passed_below_threshold(m, actual, expected, scenario):
        return EvaluationResult(
            overall_score=0.1, overall_eval_status=EvalStatus.PASSED,
            per_invocation_results=each(actual, EvalStatus.PASSED, 0.1),
        )


    async def not_evaluated(m, actual, expected, scenario):
        return EvaluationResult(overall_score=0.7, overall_eval_status=EvalStatus.NOT_EVALUATED)


    def informational(m, actual, expected, scenario):
        return EvaluationResult(overall_score=3, overall_eval_status=EvalStatus.INFORMATIONAL)


    def plain_int_status(m, actual, expected, scenario):
        return EvaluationResult(
            overall_score=1, overall_eval_status=1,
            per_invocation_results=each(actual, 1, 1),
        )
"""


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        ("failed_above_threshold", (0.9, F)),
        ("passed_below_threshold", (0.1, P)),
        ("plain_int_status", (1.0, P)),
    ],
)
def test_the_status_is_the_functions_own_the_threshold_is_not_applied_again(
    modules: Modules, function: str, expected: tuple[float, EvalStatus]
) -> None:
    name = modules.write(VERDICTS)

    result = score(build(modules, f"{name}.{function}", threshold=0.5))

    assert (result.score, result.status) == expected
    assert [r.status for r in result.per_invocation] == [expected[1]] * 2


def test_not_evaluated_returned_by_the_function_stays_not_evaluated_with_its_score(
    modules: Modules,
) -> None:
    name = modules.write(VERDICTS)

    result = score(build(modules, f"{name}.not_evaluated"))

    assert (result.score, result.status) == (0.7, N)
    assert result.reason == f"custom metric {name}.not_evaluated: returned NOT_EVALUATED"
    assert [r.status for r in result.per_invocation] == [N, N]


def test_an_informational_result_needs_no_per_invocation_results_and_decides_nothing(
    modules: Modules,
) -> None:
    name = modules.write(VERDICTS)
    metric = build(modules, f"{name}.informational")

    result = score(metric)
    assert (result.score, result.status) == (3.0, INFO)
    assert [(r.score, r.status) for r in result.per_invocation] == [(None, N), (None, N)]

    config = parse_config(
        {
            "criteria": {"my_metric": 0.5, "response_match_score": 0.5},
            "custom_metrics": {"my_metric": {"code_config": {"name": f"{name}.informational"}}},
        }
    )
    metrics = configured_metrics(config, default_registry(), eval_set_folder=modules.folder)
    scored = asyncio.run(score_case("set", CASE, CASE.conversation, metrics))
    assert scored.final_eval_status is P  # ROUGE passed; the informational one decides nothing
    [row] = [r for r in scored.overall_eval_metric_results if r.metric_name == "my_metric"]
    assert (row.score, row.eval_status) == (3.0, INFO)


# --------------------------------------------------------------------------- what goes wrong

BROKEN = """
    import asyncio
    import time

    from assay.custom import EvalStatus, EvaluationResult, PerInvocationResult

    not_a_function = 42


    def raises(m, actual, expected, scenario):
        raise ValueError("the tone model is down")


    def sleeps(m, actual, expected, scenario):
        time.sleep(5)


    async def sleeps_async(m, actual, expected, scenario):
        await asyncio.sleep(60)


    def returns_dict(m, actual, expected, scenario):
        return {"overall_score": 1.0, "overall_eval_status": EvalStatus.PASSED}


    def returns_none(m, actual, expected, scenario):
        return None


    def one_result_for_two(m, actual, expected, scenario):
        return EvaluationResult(
            overall_score=1.0, overall_eval_status=EvalStatus.PASSED,
            per_invocation_results=[PerInvocationResult(actual_invocation=actual[0])],
        )


    class Loose:
        overall_score = "high"
        overall_eval_status = EvalStatus.PASSED
        per_invocation_results = []


    def returns_text_score(m, actual, expected, scenario):
        return Loose()


    class NamedStatus(Loose):
        overall_score = 1.0
        overall_eval_status = "PASSED"


    def returns_status_name(m, actual, expected, scenario):
        return NamedStatus()
"""


@pytest.mark.parametrize(
    ("function", "problem"),
    [
        ("raises", "raised ValueError: the tone model is down"),
        (
            "returns_dict",
            "returned a dict, not an EvaluationResult (an object with overall_score, "
            "overall_eval_status and per_invocation_results)",
        ),
        ("returns_none", "returned None, not an EvaluationResult"),
        (
            "one_result_for_two",
            "returned 1 per-invocation results for 2 invocations with overall_eval_status "
            "PASSED (it needs one per invocation)",
        ),
        ("returns_text_score", "overall_score is a str, not a number"),
        ("returns_status_name", "overall_eval_status is 'PASSED', not an EvalStatus"),
    ],
)
def test_a_function_that_raises_or_returns_the_wrong_thing_is_not_evaluated_naming_it(
    modules: Modules, function: str, problem: str
) -> None:
    name = modules.write(BROKEN)

    result = score(build(modules, f"{name}.{function}"))

    assert result.status is N
    assert result.score is None
    assert result.reason is not None
    assert result.reason.startswith(f"custom metric {name}.{function}: {problem}")
    assert len(result.per_invocation) == 2


@pytest.mark.parametrize("function", ["sleeps", "sleeps_async"])
def test_a_function_that_hangs_is_stopped_at_the_timeout(modules: Modules, function: str) -> None:
    name = modules.write(BROKEN)
    metric = build(modules, f"{name}.{function}", timeout_s=0.2)

    started = time.perf_counter()
    result = score(metric)  # asyncio.run returns: a hung thread is left behind, not waited for
    elapsed = time.perf_counter() - started

    assert elapsed < 3
    assert result.status is N
    assert result.reason == (
        f"custom metric {name}.{function}: did not return within 0.2 s "
        f"(the timeout of one call; {TIMEOUT_ENV} sets it)"
    )


def test_the_timeout_comes_from_the_environment(modules: Modules) -> None:
    name = modules.write(VERDICTS)
    path = f"{name}.informational"

    default = build(modules, path, env={})
    from_env = build(modules, path, env={TIMEOUT_ENV: "2.5"})
    bad = build(modules, path, env={TIMEOUT_ENV: "soon"})

    assert isinstance(default, CustomMetric) and default.timeout_s == DEFAULT_TIMEOUT_S == 300
    assert isinstance(from_env, CustomMetric) and from_env.timeout_s == 2.5
    assert isinstance(bad, UnavailableMetric)
    assert score(bad).reason == (
        f"custom metric {path}: {TIMEOUT_ENV}='soon' is not a positive number of seconds"
    )


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("no_dots_here", "code_config.name must be 'module.function'"),
        ("assay_no_such_module_xyz.metric", "cannot import module 'assay_no_such_module_xyz': "),
        ("{module}.missing", "module '{module}' has no attribute 'missing'"),
        ("{module}.not_a_function", "'{module}.not_a_function' is a int, not a function"),
    ],
)
def test_a_function_that_cannot_be_had_is_found_when_the_metric_is_built(
    modules: Modules, path: str, problem: str
) -> None:
    name = modules.write(BROKEN)
    path, problem = path.format(module=name), problem.format(module=name)

    metric = build(modules, path)

    assert isinstance(metric, UnavailableMetric)
    result = score(metric)
    assert result.status is N
    assert result.reason is not None
    assert result.reason.startswith(f"custom metric {path}: {problem}")


def test_a_module_that_is_not_found_says_where_it_was_looked_for(modules: Modules) -> None:
    metric = build(modules, "assay_no_such_module_xyz.metric")

    assert isinstance(metric, UnavailableMetric)
    assert metric.reason == (
        "custom metric assay_no_such_module_xyz.metric: cannot import module "
        "'assay_no_such_module_xyz': No module named 'assay_no_such_module_xyz' "
        f"(looked in {modules.folder}, {Path.cwd()} and on sys.path)"
    )


def test_a_module_that_fails_to_import_is_imported_once_not_once_per_case(
    modules: Modules, tmp_path: Path
) -> None:
    imports = tmp_path / "imports.txt"
    name = modules.write(
        f"""
        with open({str(imports)!r}, "a") as log:
            log.write("imported\\n")
        raise RuntimeError("missing API key")
        """
    )

    metric = build(modules, f"{name}.metric")
    reasons = {score(metric).reason for _ in range(3)}

    assert reasons == {
        f"custom metric {name}.metric: cannot import module '{name}': RuntimeError: missing API key"
    }
    assert imports.read_text().splitlines() == ["imported"]


def test_a_raising_custom_metric_leaves_the_other_metrics_of_the_case_scored(
    modules: Modules,
) -> None:
    name = modules.write(BROKEN)
    config = parse_config(
        {
            "criteria": {"tone": 0.5, "response_match_score": 0.5},
            "custom_metrics": {"tone": {"code_config": {"name": f"{name}.raises"}}},
        }
    )
    metrics = configured_metrics(config, default_registry(), eval_set_folder=modules.folder)

    scored = asyncio.run(score_case("set", CASE, CASE.conversation, metrics))

    statuses = {r.metric_name: r.eval_status for r in scored.overall_eval_metric_results}
    assert statuses["tone"] is N
    assert statuses["response_match_score"] is P
    assert scored.final_eval_status is P
    assert scored.assay.metric_reasons["tone"] == (
        f"custom metric {name}.raises: raised ValueError: the tone model is down"
    )


# --------------------------------------------------------------------------- where it is imported from


def config_with(path: str, name: str = "my_metric") -> EvalConfig:
    # model_validate keeps the config's warnings (a built-in name declared as a custom metric
    # is one) without emitting them.
    return EvalConfig.model_validate(
        {"criteria": {name: 0.5}, "custom_metrics": {name: {"code_config": {"name": path}}}}
    )


def test_the_module_is_found_in_the_eval_sets_folder_and_sys_path_is_left_as_it_was(
    modules: Modules,
) -> None:
    name = modules.write(VERDICTS)
    before = list(sys.path)

    config = config_with(f"{name}.passed_below_threshold")
    found = configured_metrics(config, default_registry(), eval_set_folder=modules.folder)[0]
    assert sys.path == before
    assert isinstance(found.metric, CustomMetric)
    assert score(found.metric).status is P

    sys.modules.pop(name)
    missing = configured_metrics(config, default_registry())[0]
    assert isinstance(missing.metric, UnavailableMetric)  # not in the working directory


def test_the_module_is_found_in_the_working_directory(
    modules: Modules, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    name = modules.write(VERDICTS, folder=project)
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(project))])

    found = configured_metrics(config_with(f"{name}.passed_below_threshold"), default_registry())[0]

    assert isinstance(found.metric, CustomMetric)
    assert str(project) not in sys.path


def test_a_package_module_is_imported_by_its_dotted_path(modules: Modules) -> None:
    package = f"pkg_{uuid.uuid4().hex[:10]}"
    (modules.folder / package).mkdir()
    (modules.folder / package / "__init__.py").write_text("")
    (modules.folder / package / "metrics.py").write_text(textwrap.dedent(VERDICTS))
    modules.names += [package, f"{package}.metrics"]

    result = score(build(modules, f"{package}.metrics.failed_above_threshold"))

    assert result.status is F


def test_a_custom_metric_with_a_built_in_name_runs_the_function_as_in_adk(
    modules: Modules,
) -> None:
    name = modules.write(VERDICTS)
    config = config_with(f"{name}.failed_above_threshold", name="response_match_score")

    configured = configured_metrics(config, default_registry(), eval_set_folder=modules.folder)[0]

    assert isinstance(configured.metric, CustomMetric)
    assert configured.applies_to is None
    assert score(configured.metric).status is F  # ROUGE would pass the identical answers


def test_a_name_registered_in_the_registry_keeps_its_registered_metric(modules: Modules) -> None:
    registry = default_registry()
    registry.register("my_metric", lambda criterion: UnavailableMetric("my_metric", None, "mine"))

    config = config_with("not_imported.at_all")
    configured = configured_metrics(config, registry, eval_set_folder=modules.folder)[0]

    assert isinstance(configured.metric, UnavailableMetric)
    assert configured.metric.reason == "mine"


# --------------------------------------------------------------------------- what the function gets

RECORDS = """
    SEEN = []


    def record(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        SEEN.append((eval_metric, actual_invocations, expected_invocations, conversation_scenario))
        raise RuntimeError("recorded")
"""


@pytest.mark.parametrize("adk", [True, False])
def test_the_actual_invocations_carry_the_cases_and_the_expected_invocations_rubrics(
    modules: Modules, adk: bool
) -> None:
    name = modules.write(RECORDS)
    case = static_case(turn("a", "Paris", rubrics=["cites"]), turn("b", "Rome"), rubrics=["brief"])

    score(build(modules, f"{name}.record", use_adk_types=adk), actual("Paris", "Rome"), case)

    [(_, actual_invocations, expected, _)] = modules.module(name).SEEN
    ids = [[r.rubric_id for r in inv.rubrics or []] for inv in actual_invocations]
    assert ids == [["brief", "cites"], ["brief"]]
    assert [[r.rubric_id for r in inv.rubrics or []] for inv in expected] == [["cites"], []]
    assert case.conversation is not None
    assert case.conversation[1].rubrics is None  # the case itself is not changed


def test_a_rubric_id_given_twice_is_not_evaluated(modules: Modules) -> None:
    name = modules.write(RECORDS)
    case = static_case(turn("a", "Paris", rubrics=["brief"]), rubrics=["brief"])

    result = score(build(modules, f"{name}.record"), case=case)

    assert result.status is N
    assert result.reason == (
        f"custom metric {name}.record: rubric id 'brief' is given twice for one invocation"
    )
    assert modules.module(name).SEEN == []


@pytest.mark.parametrize("adk", [True, False])
def test_a_scenario_case_passes_its_scenario_and_no_expected_invocations(
    modules: Modules, adk: bool
) -> None:
    name = modules.write(RECORDS)
    case = scenario_case()
    assert CASE.conversation is not None

    score(build(modules, f"{name}.record", use_adk_types=adk), CASE.conversation[:1], case=case)

    [(_, actual_invocations, expected, scenario)] = modules.module(name).SEEN
    assert len(actual_invocations) == 1
    assert expected is None
    assert scenario.starting_prompt == "Hi"
    assert scenario.conversation_plan == "Ask for the weather, then stop."
    module = "google.adk.evaluation" if adk else "assay.evalset"
    assert type(scenario).__module__.startswith(module)


def test_the_criterions_other_keys_reach_the_function(modules: Modules) -> None:
    name = modules.write(RECORDS)
    config = EvalConfig.model_validate(
        {
            "criteria": {"my_metric": {"threshold": 0.4, "tone": "formal"}},
            "custom_metrics": {"my_metric": {"code_config": {"name": f"{name}.record"}}},
        }
    )
    for use_adk_types in (True, False):
        criterion = config.criteria["my_metric"]
        metric = custom_metric(
            "my_metric",
            criterion,
            declared(f"{name}.record"),
            use_adk_types=use_adk_types,
            eval_set_folder=modules.folder,
        )
        score(metric)

    [(theirs, *_), (ours, *_)] = modules.module(name).SEEN
    assert (theirs.criterion.threshold, theirs.criterion.tone) == (0.4, "formal")
    assert ours.criterion.threshold == 0.4
    assert ours.criterion.ignored_keys == {"tone": "formal"}
