"""``evaluate_agent``: run an agent over eval sets from a test, raise a readable failure."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assay.agents.base import CaseContext
from assay.agents.python import FunctionAgent
from assay.errors import EvalSetError
from assay.evalset.case import EvalSet
from assay.metrics.base import EvalStatus
from assay.testing import EvaluationFailed, aevaluate_agent, evaluate_agent

from ._helpers import (
    CONFIG,
    agent_source,
    broken_on_flights,
    eval_set_data,
    good_agent,
    write_eval_set,
    wrong_about_flights,
)


def test_an_agent_that_answers_every_case_passes_with_two_runs_per_case(tmp_path: Path) -> None:
    path = write_eval_set(tmp_path)
    [result] = evaluate_agent(good_agent, path)
    runs = [(c.eval_id, c.assay.run, c.final_eval_status) for c in result.eval_case_results]
    assert sorted(runs) == [
        ("flight", 1, EvalStatus.PASSED),
        ("flight", 2, EvalStatus.PASSED),
        ("weather", 1, EvalStatus.PASSED),
        ("weather", 2, EvalStatus.PASSED),
    ]
    assert result.assay is not None
    assert result.assay.config_source == str(tmp_path / "test_config.json")


def test_a_failing_case_raises_with_its_metrics_and_expected_against_actual(
    tmp_path: Path,
) -> None:
    path = write_eval_set(tmp_path)
    with pytest.raises(EvaluationFailed) as failed:
        evaluate_agent(wrong_about_flights, path)
    message = str(failed.value)
    assert isinstance(failed.value, AssertionError)
    assert message.startswith("2 of 4 case run(s) did not pass: 2 failed, 0 not evaluated")
    assert f"travel ({path})" in message
    assert "flight, run 1 of 2: FAILED" in message
    assert "flight, run 2 of 2: FAILED, same as run 1" in message  # not repeated
    assert "weather" not in message
    assert "FAILED        tool_trajectory_avg_score  0 (threshold 1)" in message
    assert "response_match_score" in message and "(threshold 0.8)" in message
    assert "turn 1 of 1 (tool_trajectory_avg_score, response_match_score failed):" in message
    assert "user:           Find me a flight from Berlin to Lisbon on 12 May." in message
    assert failed.value.__context__ is None  # no chained "RuntimeError: no running event loop"
    assert "expected:       Flight TP551 leaves Berlin at 07:10 and costs 129 EUR." in message
    assert "actual:         Sorry, there are no trains today." in message
    assert 'expected tools: search_flights({"destination": "LIS", "origin": "BER"})' in message
    assert "actual tools:   (none)" in message
    assert len(failed.value.results[0].eval_case_results) == 4


def test_an_agent_that_raises_fails_the_case_as_not_evaluated_with_the_reason(
    tmp_path: Path,
) -> None:
    path = write_eval_set(tmp_path)
    with pytest.raises(EvaluationFailed) as failed:
        evaluate_agent(broken_on_flights, path, num_runs=1, agent_attempts=1)
    message = str(failed.value)
    assert message.startswith("1 of 2 case run(s) did not pass: 0 failed, 1 not evaluated")
    assert "flight: NOT_EVALUATED" in message
    assert "turn 1: the agent raised ValueError: the booking backend is down" in message


def test_a_metric_not_evaluated_in_a_passing_case_fails_the_evaluation(tmp_path: Path) -> None:
    config = {
        "criteria": {"response_match_score": 0.8, "my_metric": 0.5},
        "custom_metrics": {"my_metric": {"code_config": {"name": "nowhere.metric"}}},
    }
    path = write_eval_set(tmp_path, config=config, ids=("weather",))
    with pytest.raises(EvaluationFailed) as failed:
        evaluate_agent(good_agent, path, num_runs=1)
    message = str(failed.value)
    assert "1 passed with metrics not evaluated" in message
    assert "weather: PASSED, but 1 metric(s) not evaluated" in message
    assert "NOT_EVALUATED my_metric" in message


def test_check_false_returns_the_results_without_raising(tmp_path: Path) -> None:
    path = write_eval_set(tmp_path)
    [result] = evaluate_agent(wrong_about_flights, path, num_runs=1, check=False)
    assert result.assay is not None
    assert (result.assay.summary.passed, result.assay.summary.failed) == (1, 1)


def test_a_folder_means_every_eval_set_below_it_each_with_its_own_config(tmp_path: Path) -> None:
    write_eval_set(tmp_path / "a", "weather.evalset.json", ids=("weather",))
    lenient = {"criteria": {"response_match_score": 0.1}}
    write_eval_set(
        tmp_path / "b" / "deeper", "flight.evalset.json", config=lenient, ids=("flight",)
    )
    (tmp_path / "notes.json").write_text("{}")  # not an eval set: ignored
    results = evaluate_agent(good_agent, tmp_path, num_runs=1)
    assert [r.eval_set_id for r in results] == ["weather", "flight"]
    assert [list(r.assay.criteria) for r in results if r.assay] == [
        ["tool_trajectory_avg_score", "response_match_score"],
        ["response_match_score"],
    ]


def test_an_empty_folder_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match=r"no \*\.evalset\.json or \*\.test\.json file"):
        evaluate_agent(good_agent, tmp_path)


def test_an_explicit_config_replaces_the_one_beside_the_file(tmp_path: Path) -> None:
    path = write_eval_set(tmp_path, config={"criteria": {"response_match_score": 1.0}})
    lenient = {"criteria": {"response_match_score": 0.0}}
    [result] = evaluate_agent(wrong_about_flights, path, config=lenient, num_runs=1)
    assert result.assay is not None and result.assay.config_source == "given"


def test_an_eval_set_object_an_agent_spec_and_a_case_filter(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text(agent_source())
    eval_set = EvalSet.model_validate(eval_set_data())
    [result] = evaluate_agent(
        f"{tmp_path / 'agents.py'}:good", eval_set, config=CONFIG, eval_ids=["flight"], num_runs=1
    )
    assert [c.eval_id for c in result.eval_case_results] == ["flight"]


def test_an_unknown_case_id_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    path = write_eval_set(tmp_path)
    with pytest.raises(ValueError, match="no eval case with id 'hotel'; the cases are: weather"):
        evaluate_agent(good_agent, path, eval_ids=["hotel"])


def test_an_agent_factory_gets_every_case_of_the_set_even_when_filtered(tmp_path: Path) -> None:
    path = write_eval_set(tmp_path)
    seen: list[tuple[str, list[str], int]] = []

    def make(context: CaseContext) -> FunctionAgent:
        seen.append((context.case.eval_id, [c.eval_id for c in context.cases], context.run))
        return FunctionAgent(good_agent)

    evaluate_agent(make, path, eval_ids=["weather"])
    assert sorted(seen) == [
        ("weather", ["weather", "flight"], 1),
        ("weather", ["weather", "flight"], 2),
    ]


def test_the_sync_form_refuses_a_running_loop_and_the_async_form_works_there(
    tmp_path: Path,
) -> None:
    path = write_eval_set(tmp_path)

    async def inside_a_loop() -> Any:
        with pytest.raises(RuntimeError, match="use `await aevaluate_agent"):
            evaluate_agent(good_agent, path)
        return await aevaluate_agent(good_agent, path, num_runs=1)

    [result] = asyncio.run(inside_a_loop())
    assert len(result.eval_case_results) == 2


def test_bad_settings_are_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="num_runs must be at least 1, got 0"):
        evaluate_agent(good_agent, tmp_path / "missing.evalset.json", num_runs=0)


def test_a_missing_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.evalset.json"
    with pytest.raises(EvalSetError) as failed:
        evaluate_agent(good_agent, missing)
    assert str(missing) in str(failed.value)


def test_results_serialise_as_adk_json(tmp_path: Path) -> None:
    path = write_eval_set(tmp_path)
    [result] = evaluate_agent(good_agent, path, num_runs=1)
    dumped = json.loads(result.model_dump_json(exclude_none=True))
    assert {c["eval_id"] for c in dumped["eval_case_results"]} == {"weather", "flight"}
