"""Results written by ``assay eval --output`` are ADK 2.13.0 EvalSetResult JSON, plus ``assay``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli
from google.adk.evaluation.eval_result import EvalSetResult as AdkEvalSetResult

from assay.metrics.base import EvalStatus
from assay.results.model import (
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalSetResult,
    trusted_row,
)


def write_results(run_cli: RunCli, out: Path, *args: str | Path) -> Any:
    run = run_cli("eval", *args, "--output", out)
    assert run.code in (0, 1), run.output
    return json.loads(out.read_text(encoding="utf-8"))


def assert_same_verdicts(adk: AdkEvalSetResult, ours: EvalSetResult) -> None:
    """Every status and score ADK reads from the file equals what assay wrote."""
    assert adk.eval_set_id == ours.eval_set_id
    assert adk.eval_set_result_id == ours.eval_set_result_id
    assert [c.eval_id for c in adk.eval_case_results] == [c.eval_id for c in ours.eval_case_results]
    for adk_case, case in zip(adk.eval_case_results, ours.eval_case_results, strict=True):
        assert adk_case.final_eval_status.value == case.final_eval_status.value
        assert [
            (m.metric_name, m.score, m.threshold, m.eval_status.value)
            for m in adk_case.overall_eval_metric_results
        ] == [
            (m.metric_name, m.score, m.threshold, m.eval_status.value)
            for m in case.overall_eval_metric_results
        ]
        assert len(adk_case.eval_metric_result_per_invocation) == len(
            case.eval_metric_result_per_invocation
        )
        for adk_row, row in zip(
            adk_case.eval_metric_result_per_invocation,
            case.eval_metric_result_per_invocation,
            strict=True,
        ):
            assert adk_row.actual_invocation.invocation_id == row.actual_invocation.invocation_id
            assert [
                (m.metric_name, m.score, m.eval_status.value) for m in adk_row.eval_metric_results
            ] == [(m.metric_name, m.score, m.eval_status.value) for m in row.eval_metric_results]


@pytest.mark.parametrize("traces", ["traces.json", "traces_regressed.json"])
def test_output_for_one_eval_set_is_an_object_adk_loads_with_the_same_verdicts(
    run_cli: RunCli, example: Example, tmp_path: Path, traces: str
) -> None:
    out = tmp_path / "results.json"
    data = write_results(run_cli, out, example.evalset, "--traces", example.dir / traces)

    assert isinstance(data, dict)
    adk = AdkEvalSetResult.model_validate_json(out.read_text(encoding="utf-8"))
    assert_same_verdicts(adk, EvalSetResult.model_validate(data))


def test_adk_reads_the_example_results_as_five_passed_cases_with_their_scores(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    write_results(run_cli, out, example.evalset, "--traces", example.traces)

    adk = AdkEvalSetResult.model_validate_json(out.read_text(encoding="utf-8"))

    assert adk.eval_set_id == "travel_assistant"
    assert adk.eval_set_result_id.startswith("travel_assistant_travel_assistant_")
    assert adk.eval_set_result_name == adk.eval_set_result_id
    statuses = {c.eval_id: c.final_eval_status.name for c in adk.eval_case_results}
    assert statuses == {
        "forecast_paris": "PASSED",
        "book_flight_lisbon": "PASSED",
        "convert_currency": "PASSED",
        "greeting": "PASSED",
        "book_cheapest_and_convert": "PASSED",
    }
    book = next(c for c in adk.eval_case_results if c.eval_id == "book_flight_lisbon")
    scores = {m.metric_name: m.score for m in book.overall_eval_metric_results}
    assert scores["tool_trajectory_avg_score"] == 1.0
    assert scores["response_match_score"] == pytest.approx(0.9392, abs=1e-4)
    assert len(book.eval_metric_result_per_invocation) == 2
    assert book.user_id == "u-17"
    trajectory = book.overall_eval_metric_results[0]
    assert trajectory.criterion is not None
    assert trajectory.criterion.model_dump()["match_type"] == 1  # IN_ORDER, from test_config.json


def test_output_for_several_eval_sets_is_a_list_whose_items_adk_each_loads(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    second = json.loads(example.evalset.read_text(encoding="utf-8"))
    second["eval_set_id"] = "travel_subset"
    second["eval_cases"] = second["eval_cases"][:2]
    second_path = tmp_path / "subset.evalset.json"
    second_path.write_text(json.dumps(second), encoding="utf-8")
    out = tmp_path / "results.json"

    data = write_results(run_cli, out, example.evalset, second_path, "--traces", example.traces)

    assert isinstance(data, list)
    assert [item["eval_set_id"] for item in data] == ["travel_assistant", "travel_subset"]
    for item in data:
        adk = AdkEvalSetResult.model_validate_json(json.dumps(item))
        assert_same_verdicts(adk, EvalSetResult.model_validate(item))
    assert len(data[1]["eval_case_results"]) == 2


def test_the_assay_sections_carry_the_reasons_a_case_was_not_evaluated(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    data = write_results(run_cli, out, example.evalset, "--traces", example.regressed)

    greeting = next(c for c in data["eval_case_results"] if c["eval_id"] == "greeting")
    reason = f"no trace for this case in {example.regressed}"
    assert greeting["final_eval_status"] == EvalStatus.NOT_EVALUATED
    assert greeting["assay"]["reason"] == reason
    reasons = greeting["assay"]["metric_reasons"]
    assert reasons["tool_trajectory_avg_score"] == reason
    assert reasons["response_match_score"] == reason
    assert set(reasons.values()) == {reason}
    notes = data["assay"]
    assert notes["summary"] == {"passed": 1, "failed": 2, "not_evaluated": 2}
    assert notes["config_source"] == str(example.config)
    assert notes["eval_set_path"] == str(example.evalset)
    assert set(notes["criteria"]) == {
        "tool_trajectory_avg_score",
        "response_match_score",
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "hallucinations_v1",
        "safety_v1",
        "per_turn_user_simulator_quality_v1",
    }
    # ADK's models ignore the extra sections, and never see them at the metric level.
    adk = AdkEvalSetResult.model_validate(data)
    assert "assay" not in adk.model_dump()
    assert all(
        "assay" not in m
        for c in data["eval_case_results"]
        for m in c["overall_eval_metric_results"]
    )


def test_eval_statuses_are_written_as_adks_integers(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    data = write_results(run_cli, out, example.evalset, "--traces", example.regressed)

    cases = {c["eval_id"]: c for c in data["eval_case_results"]}
    assert {eval_id: c["final_eval_status"] for eval_id, c in cases.items()} == {
        "forecast_paris": 1,
        "book_flight_lisbon": 2,
        "convert_currency": 2,
        "greeting": 3,
        "book_cheapest_and_convert": 3,
    }
    statuses = [
        m["eval_status"]
        for c in data["eval_case_results"]
        for m in c["overall_eval_metric_results"]
        + [r for row in c["eval_metric_result_per_invocation"] for r in row["eval_metric_results"]]
    ]
    assert statuses
    assert all(type(s) is int for s in statuses)
    assert {1, 2, 3} <= set(statuses) <= {1, 2, 3, 4}
    assert '"final_eval_status": "' not in out.read_text(encoding="utf-8")


def test_eval_status_matches_adks_enum_values() -> None:
    from google.adk.evaluation.eval_metrics import EvalStatus as AdkEvalStatus

    assert {s.name: s.value for s in EvalStatus} == {s.name: s.value for s in AdkEvalStatus}


def test_a_result_adk_writes_loads_in_assays_model(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    write_results(run_cli, out, example.evalset, "--traces", example.regressed)
    adk = AdkEvalSetResult.model_validate_json(out.read_text(encoding="utf-8"))

    # What ADK's LocalEvalSetResultsManager writes: model_dump_json, every None included.
    ours = EvalSetResult.model_validate_json(adk.model_dump_json(indent=2))

    assert ours.assay is None
    assert_same_verdicts(adk, ours)


def test_results_written_before_judges_were_described_load_and_are_described() -> None:
    from assay.results.model import JudgeInfo

    older = {
        "eval_set_result_id": "r",
        "eval_set_id": "s",
        "assay": {
            "version": "0.1.0",
            "judges": {
                "final_response_match_v2": {"model": "local:", "source": "embedded"},
                "safety_v1": {"model": "openai:gpt-4o-mini", "source": "--judge-model"},
                "hallucinations_v1": {"unavailable": "no judge model: pass --judge-model"},
            },
        },
    }
    result = EvalSetResult.model_validate_json(json.dumps(older))

    assert result.assay is not None
    judges = result.assay.judges
    assert judges["final_response_match_v2"].backend is None
    assert judges["final_response_match_v2"].describe() == (
        "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M "
        "(no --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials)"
    )
    assert judges["safety_v1"].describe() == "openai:gpt-4o-mini (from --judge-model)"
    assert judges["hallucinations_v1"].describe() is None
    written = JudgeInfo(model="local:", source="embedded", description="as the run said")
    assert written.describe() == "as the run said"
    assert JudgeInfo(model="ollama:llama3").describe() == "ollama:llama3"  # source unknown


def test_adk_reads_the_judge_each_criterion_names(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    write_results(run_cli, out, example.evalset, "--traces", example.traces)
    adk = AdkEvalSetResult.model_validate_json(out.read_text(encoding="utf-8"))

    judged = [
        m
        for case in adk.eval_case_results
        for m in case.overall_eval_metric_results
        if m.metric_name == "final_response_match_v2"
    ]
    assert judged
    for row in judged:
        assert row.criterion is not None
        options = row.criterion.model_dump()["judge_model_options"]
        assert options["judge_model"] == "openai:stub-judge"  # the judge_env fixture's judge


def test_a_trusted_row_is_the_validated_row_and_serialises_and_copies_alike() -> None:
    details = EvalMetricResultDetails(token_usage_details={"total": 3})
    values: dict[str, Any] = {
        "metric_name": "response_match_score",
        "threshold": 0.8,
        "criterion": {"threshold": 0.8},
        "custom_function_path": None,
        "score": 0.5,
        "eval_status": EvalStatus.FAILED,
        "details": details,
    }
    validated = EvalMetricResult.model_validate(values)

    trusted = trusted_row(*values.values())

    assert trusted == validated
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.model_dump_json(exclude_none=True) == validated.model_dump_json(
        exclude_none=True
    )
    copied = trusted.model_copy(update={"score": 1.0})
    assert (copied.score, trusted.score) == (1.0, 0.5)
