"""evaluate(): every case of every eval set scored against its trace, in eval-set order."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _judge_server import JudgeServer
from _judges import approve
from _support import Example

from assay._version import __version__
from assay.agents.base import Session
from assay.agents.python import FunctionAgent
from assay.config import BaseCriterion, EvalConfig, load_config, parse_config
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.invocation import Invocation
from assay.evalset.io import LoadedEvalSet, load_eval_set
from assay.metrics.base import EvalStatus, MetricInfo, MetricResult, PerInvocationResult
from assay.metrics.registry import MetricRegistry, default_registry
from assay.report.junit import junit_text
from assay.report.progress import RunUpdate, case_usage
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.results.traces import Traces, load_traces
from assay.runner.agent_run import AgentSettings
from assay.runner.evaluate import EvalSetJob, JudgeSettings, evaluate, evaluate_sync, summarize
from assay.runner.inference import InferenceSettings
from assay.testing.evaluate import only_cases

SCENARIO = "book_cheapest_and_convert"  # a conversation_scenario: a simulated user's conversation
CASES = ["forecast_paris", "book_flight_lisbon", "convert_currency", "greeting", SCENARIO]


def configured_statuses(result: EvalSetResult, names: Sequence[str]) -> dict[str, Any]:
    """Per case: final status and (score, status) of the named metrics."""
    out = {}
    for case in result.eval_case_results:
        metrics = {m.metric_name: m for m in case.overall_eval_metric_results}
        out[case.eval_id] = (
            case.final_eval_status,
            {n: (metrics[n].score, metrics[n].eval_status) for n in names},
        )
    return out


@pytest.fixture
def loaded(example: Example) -> LoadedEvalSet:
    return load_eval_set(example.evalset)


@pytest.fixture
def job(loaded: LoadedEvalSet, example: Example) -> EvalSetJob:
    return EvalSetJob(loaded, load_config(example.config), str(example.config))


@pytest.fixture
def traces(example: Example) -> Traces:
    return load_traces([example.traces])


# --- scoring the example ----------------------------------------------------------------------


def test_every_case_of_the_example_passes_with_its_config(job: EvalSetJob, traces: Traces) -> None:
    [result] = evaluate_sync([job], traces)

    assert [c.eval_id for c in result.eval_case_results] == CASES
    assert {c.final_eval_status for c in result.eval_case_results} == {EvalStatus.PASSED}
    book = configured_statuses(result, ["response_match_score"])["book_flight_lisbon"]
    assert book[1]["response_match_score"][0] == pytest.approx(0.9392, abs=1e-4)
    assert result.assay is not None
    assert result.assay.summary.model_dump() == {"passed": 5, "failed": 0, "not_evaluated": 0}


def test_a_case_missing_from_the_traces_is_not_evaluated_and_the_others_are_scored(
    job: EvalSetJob, example: Example
) -> None:
    [result] = evaluate_sync([job], load_traces([example.regressed]))

    statuses = configured_statuses(result, ["tool_trajectory_avg_score", "response_match_score"])
    assert {eval_id: s[0] for eval_id, s in statuses.items()} == {
        "forecast_paris": EvalStatus.PASSED,
        "book_flight_lisbon": EvalStatus.FAILED,
        "convert_currency": EvalStatus.FAILED,
        "greeting": EvalStatus.NOT_EVALUATED,
        SCENARIO: EvalStatus.NOT_EVALUATED,
    }
    greeting = result.eval_case_results[3]
    assert greeting.assay.reason == f"no trace for this case in {example.regressed}"
    assert statuses["greeting"][1] == {
        "tool_trajectory_avg_score": (None, EvalStatus.NOT_EVALUATED),
        "response_match_score": (None, EvalStatus.NOT_EVALUATED),
    }
    assert statuses["book_flight_lisbon"][1]["tool_trajectory_avg_score"] == (
        0.5,
        EvalStatus.FAILED,
    )
    assert result.assay is not None
    assert result.assay.summary.model_dump() == {"passed": 1, "failed": 2, "not_evaluated": 2}


def test_a_case_whose_trace_has_the_wrong_number_of_invocations_is_not_evaluated(
    job: EvalSetJob, example: Example
) -> None:
    data = json.loads(example.traces.read_text(encoding="utf-8"))
    traces = load_traces([example.traces])
    traces.by_case[(None, "book_flight_lisbon")] = [
        Invocation.model_validate(data["book_flight_lisbon"][0])
    ]

    [result] = evaluate_sync([job], traces)

    book = result.eval_case_results[1]
    assert book.final_eval_status is EvalStatus.NOT_EVALUATED
    assert book.assay.reason == "expected 2 invocations, got 1"
    assert [c.final_eval_status for c in result.eval_case_results] == [
        EvalStatus.PASSED,
        EvalStatus.NOT_EVALUATED,
        EvalStatus.PASSED,
        EvalStatus.PASSED,
        EvalStatus.PASSED,
    ]


def test_a_known_metric_the_registry_lacks_is_not_evaluated_as_not_implemented_yet(
    loaded: LoadedEvalSet, traces: Traces
) -> None:
    config = parse_config({"criteria": {"multi_turn_task_success_v1": 0.8}})

    [result] = evaluate_sync([EvalSetJob(loaded, config)], traces, registry=MetricRegistry())

    for case in result.eval_case_results:
        [judge] = [
            m
            for m in case.overall_eval_metric_results
            if m.metric_name == "multi_turn_task_success_v1"
        ]
        assert (judge.score, judge.eval_status, judge.threshold) == (
            None,
            EvalStatus.NOT_EVALUATED,
            0.8,
        )
        assert case.assay.metric_reasons["multi_turn_task_success_v1"] == "not implemented yet"
        assert case.final_eval_status is EvalStatus.NOT_EVALUATED


def test_without_a_config_a_job_uses_adks_default_criteria(
    loaded: LoadedEvalSet, traces: Traces
) -> None:
    [result] = evaluate_sync([EvalSetJob(loaded)], traces)

    assert result.assay is not None
    assert result.assay.config_source == "defaults"
    # written as ADK writes them: a bare threshold stays a number
    assert result.assay.criteria == {
        "tool_trajectory_avg_score": 1.0,
        "response_match_score": 0.8,
    }


def test_the_set_result_records_ids_provenance_and_criteria(
    job: EvalSetJob, traces: Traces, example: Example
) -> None:
    [result] = evaluate_sync([job], traces)

    assert result.eval_set_id == "travel_assistant"
    assert (
        result.eval_set_result_id
        == f"travel_assistant_travel_assistant_{result.creation_timestamp}"
    )
    assert result.eval_set_result_name == result.eval_set_result_id
    assert result.assay is not None
    assert result.assay.version == __version__
    assert result.assay.eval_set_path == str(example.evalset)
    assert result.assay.config_source == str(example.config)
    assert result.assay.criteria["tool_trajectory_avg_score"]["match_type"] == 1


def test_one_result_per_eval_set_in_the_order_given(
    loaded: LoadedEvalSet, traces: Traces, example: Example
) -> None:
    first = EvalSetJob(loaded, load_config(example.config))
    other_set = loaded.eval_set.model_copy(update={"eval_set_id": "other"})
    second = EvalSetJob(LoadedEvalSet(other_set, path=loaded.path, format="evalset"))

    results = evaluate_sync([first, second], traces)

    assert [r.eval_set_id for r in results] == ["travel_assistant", "other"]
    assert [len(r.eval_case_results) for r in results] == [5, 5]


# --- concurrency and order --------------------------------------------------------------------


class Probe:
    """Records how many cases are scored at once and in which order they finish."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.finished: list[str] = []


def slow_registry(probe: Probe, delays: dict[str, float]) -> MetricRegistry:
    class SlowMetric:
        info: ClassVar[MetricInfo] = MetricInfo(name="slow", description="sleeps, then passes")

        def __init__(self, criterion: BaseCriterion | None) -> None:
            self.criterion = criterion

        async def evaluate(
            self,
            actual: Sequence[Invocation],
            expected: Sequence[Invocation] | None,
            case: EvalCase,
        ) -> MetricResult:
            probe.running += 1
            probe.most = max(probe.most, probe.running)
            await asyncio.sleep(delays[case.eval_id])
            probe.running -= 1
            probe.finished.append(case.eval_id)
            return MetricResult(
                "slow",
                self.criterion,
                score=1.0,
                status=EvalStatus.PASSED,
                per_invocation=[
                    PerInvocationResult(actual=a, score=1.0, status=EvalStatus.PASSED)
                    for a in actual
                ],
            )

    registry = default_registry()
    registry.register("slow", SlowMetric)
    return registry


def slow_config() -> EvalConfig:
    return parse_config(
        {"criteria": {"slow": 0.5}, "custom_metrics": {"slow": {"code_config": {"name": "m.f"}}}}
    )


def test_results_keep_eval_set_order_when_cases_finish_out_of_order(
    loaded: LoadedEvalSet, traces: Traces
) -> None:
    probe = Probe()
    delays = {"forecast_paris": 0.16, "book_flight_lisbon": 0.12, "convert_currency": 0.08}
    delays.update(greeting=0.04, **{SCENARIO: 0.0})
    seen: list[str] = []

    [result] = evaluate_sync(
        [EvalSetJob(loaded, slow_config())],
        traces,
        registry=slow_registry(probe, delays),
        concurrency=5,
        on_case=lambda job, case: seen.append(case.eval_id),
    )

    assert probe.finished == list(reversed(CASES))  # they really ran at once
    assert seen == probe.finished  # on_case reports each case as it finishes
    assert [c.eval_id for c in result.eval_case_results] == CASES
    assert probe.most == 5


@pytest.mark.parametrize("concurrency", [1, 2])
def test_no_more_cases_are_scored_at_once_than_the_concurrency(
    loaded: LoadedEvalSet, traces: Traces, concurrency: int
) -> None:
    probe = Probe()

    [result] = evaluate_sync(
        [EvalSetJob(loaded, slow_config())],
        traces,
        registry=slow_registry(probe, dict.fromkeys(CASES, 0.01)),
        concurrency=concurrency,
    )

    assert probe.most == concurrency
    assert [c.eval_id for c in result.eval_case_results] == CASES


def test_a_concurrency_below_one_is_rejected(job: EvalSetJob, traces: Traces) -> None:
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        evaluate_sync([job], traces, concurrency=0)


# --- cases finish in turn ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def slow_judge() -> Iterator[JudgeServer]:
    """A real judge on 127.0.0.1 that approves of everything, 0.1 s a call."""
    with JudgeServer(reply=approve, latency_s=0.1) as server:
        yield server


def one_slot(server: JudgeServer) -> JudgeSettings:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-not-a-real-key-0000"}
    return JudgeSettings(
        model="openai:stub-judge", concurrency=1, cache=False, env=env, profile=None
    )


@pytest.fixture(scope="module")
def one_slot_run(
    slow_judge: JudgeServer,
) -> tuple[EvalSetResult, list[tuple[float, RunUpdate]], float]:
    """The example (five cases, three judged criteria) against one judge slot: the result, each
    case's report with the seconds since the run began, and the run's seconds."""
    example = Example()
    written = json.loads(example.config.read_text())["criteria"]
    judged = [
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
    ]
    assert all(default_registry().is_judged(name) for name in judged)
    config = parse_config({"criteria": {name: written[name] for name in judged}})
    job = EvalSetJob(load_eval_set(example.evalset), config)
    traces = load_traces([example.traces])
    assert len(job.loaded.eval_set.eval_cases) == 5
    warm = only_cases(job, lambda index, _case: index == 0)  # imports once per process (ROUGE)
    evaluate_sync([warm], traces, judges=one_slot(slow_judge), progress=False)

    reported: list[tuple[float, RunUpdate]] = []
    started = time.monotonic()
    [result] = evaluate_sync(
        [job],
        traces,
        judges=one_slot(slow_judge),
        progress=lambda update: reported.append((time.monotonic() - started, update)),
    )
    return result, reported, time.monotonic() - started


def test_with_one_judge_slot_the_first_case_is_reported_within_the_first_40_percent(
    one_slot_run: tuple[EvalSetResult, list[tuple[float, RunUpdate]], float],
    slow_judge: JudgeServer,
) -> None:
    _result, reported, run_s = one_slot_run
    assert [update.case.eval_id for _, update in reported if update.case] == CASES  # in turn
    first_s, first = reported[0]
    assert first_s < 0.4 * run_s, (first_s, run_s)  # 3 of 19 calls; interleaved: 7 of 19
    assert first.case is not None
    assert first.calls_done == case_usage(first.case).calls  # no other case's call came between
    assert first.calls_done < first.calls_total
    assert slow_judge.max_in_flight == 1
    [*_, (_, last)] = reported
    assert (last.cases_done, last.calls_basis, last.calls_done) == (5, "final", last.calls_total)


def test_a_case_s_time_is_its_own_working_time_not_its_time_in_the_queue(
    one_slot_run: tuple[EvalSetResult, list[tuple[float, RunUpdate]], float],
) -> None:
    result, reported, run_s = one_slot_run
    cases = list(result.eval_case_results)
    # One slot: the cases' calls ran one after another, so their own times add up to about the
    # run's; counting the time each case's calls waited behind the others' adds up to some
    # three times as much (every case is scored from the start).
    assert sum(case.assay.duration_s for case in cases) < 2 * run_s
    last_reported_s = reported[-1][0]
    assert cases[-1].assay.duration_s < 0.7 * last_reported_s
    junit = "".join(junit_text([result]))
    for case in cases:
        assert f'name="{case.eval_id}" classname="travel_assistant" time="' in junit
        assert f'time="{case.assay.duration_s:.3f}"' in junit


def test_with_an_agent_a_case_is_scored_as_soon_as_its_conversation_ends(
    loaded: LoadedEvalSet,
) -> None:
    events: list[str] = []

    async def agent(message: str, session: Session) -> str:
        slow = session.user_id == "slow"
        await asyncio.sleep(0.6 if slow else 0.01)
        events.append("slow agent answered" if slow else "agent answered")
        return message

    cases = [case for case in loaded.eval_set.eval_cases[:2] if case.conversation]
    slow_case = EvalCase.model_validate(
        {
            **cases[1].model_dump(mode="json", exclude_none=True),
            "eval_id": "slow",
            "session_input": {"app_name": "travel_assistant", "user_id": "slow", "state": {}},
        }
    )
    eval_set = EvalSet(eval_set_id="s", eval_cases=[cases[0], slow_case])
    job = EvalSetJob(
        LoadedEvalSet(eval_set, Path("s.evalset.json"), "json"),
        parse_config({"criteria": {"response_match_score": 0.0}}),
    )
    settings = AgentSettings(
        make_agent=lambda _context: FunctionAgent(agent),
        inference=InferenceSettings(concurrency=2),
    )

    [result] = evaluate_sync(
        [job],
        agent=settings,
        progress=lambda update: events.append(f"reported {update.case and update.case.eval_id}"),
    )

    first = cases[0].eval_id
    assert events.index(f"reported {first}") < events.index("slow agent answered")
    assert events[-1] == "reported slow"
    slow_turns = len(slow_case.conversation or [])
    assert result.eval_case_results[1].assay.duration_s >= 0.6 * slow_turns  # its agent's turns


def test_by_default_progress_lines_go_to_stderr_and_false_turns_them_off(
    job: EvalSetJob, traces: Traces, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluate_sync([job], traces)
    lines = [line for line in capsys.readouterr().err.splitlines() if " PASSED · " in line]
    assert [line.split(" travel_assistant / ")[0] for line in lines] == [
        f"[{n}/5]" for n in range(1, 6)
    ]
    assert sorted(line.split(" / ")[1].split(" ")[0] for line in lines) == sorted(CASES)
    assert all(" LLM call" in line and " · calls " in line for line in lines)

    evaluate_sync([job], traces, progress=False)
    assert capsys.readouterr().err == ""


# --- sync facade and summary ------------------------------------------------------------------


def comparable(results: Sequence[EvalSetResult]) -> list[dict[str, Any]]:
    """Results without what differs between two runs: ids and times."""
    out = []
    for result in results:
        data = result.model_dump(mode="json")
        for key in ("eval_set_result_id", "eval_set_result_name", "creation_timestamp"):
            data.pop(key)
        data["assay"].pop("duration_s")
        for case in data["eval_case_results"]:
            case["assay"].pop("duration_s")
        out.append(data)
    return out


def test_evaluate_sync_gives_what_asyncio_run_of_evaluate_gives(
    job: EvalSetJob, example: Example
) -> None:
    traces = load_traces([example.regressed])
    fresh = JudgeSettings(cache=False)  # a cached second run would differ in its usage counts

    synced = evaluate_sync([job], traces, concurrency=3, judges=fresh)
    awaited = asyncio.run(evaluate([job], traces, concurrency=3, judges=fresh))

    assert comparable(synced) == comparable(awaited)
    assert comparable(synced)[0]["eval_case_results"][3]["final_eval_status"] == 3


def test_summarize_counts_passed_failed_and_everything_else_as_not_evaluated() -> None:
    def case(status: EvalStatus) -> EvalCaseResult:
        return EvalCaseResult(final_eval_status=status)

    statuses = [EvalStatus.PASSED] * 3 + [EvalStatus.FAILED] * 2 + [EvalStatus.NOT_EVALUATED]
    summary = summarize([case(s) for s in statuses])

    assert (summary.passed, summary.failed, summary.not_evaluated, summary.total) == (3, 2, 1, 6)


def test_evaluating_no_jobs_gives_no_results(traces: Traces) -> None:
    assert evaluate_sync([], traces) == []
