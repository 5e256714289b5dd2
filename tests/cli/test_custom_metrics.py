"""``assay eval`` with custom metrics: the config's ``custom_metrics`` functions run beside the
built-in metrics, imported from the eval set's folder, with their verdicts in the table and the
results file, and a broken one leaves only itself NOT_EVALUATED."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli

from assay.metrics import custom

# As an ADK user writes it: google-adk's own types; a scenario case has no expected invocations.
ADK_METRIC = """
    from typing import Optional

    from google.adk.evaluation.conversation_scenarios import ConversationScenario
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


    def mentions_eur(
        eval_metric: EvalMetric,
        actual_invocations: list[Invocation],
        expected_invocations: Optional[list[Invocation]],
        conversation_scenario: Optional[ConversationScenario],
    ) -> EvaluationResult:
        threshold = eval_metric.criterion.threshold
        results = []
        for invocation in actual_invocations:
            text = " ".join(p.text or "" for p in invocation.final_response.parts)
            score = 1.0 if "EUR" in text else 0.0
            results.append(
                PerInvocationResult(
                    actual_invocation=invocation,
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


    def raises(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        raise KeyError("tone")
"""

# Written with assay's own types, for a project without google-adk.
ASSAY_METRIC = """
    from assay.custom import EvalStatus, EvaluationResult, Invocation, PerInvocationResult


    async def turns(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        assert all(isinstance(inv, Invocation) for inv in actual_invocations)
        return EvaluationResult(
            overall_score=len(actual_invocations),
            overall_eval_status=EvalStatus.PASSED,
            per_invocation_results=[
                PerInvocationResult(actual_invocation=inv, score=1, eval_status=EvalStatus.PASSED)
                for inv in actual_invocations
            ],
        )
"""


@pytest.fixture
def project(
    tmp_path: Path, example: Example, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, str]]:
    """The travel example's eval set and traces in ``evals/`` with a module of metrics beside
    them (under a fresh name), run from another folder."""
    evals = tmp_path / "evals"
    evals.mkdir()
    shutil.copy(example.evalset, evals / "travel.evalset.json")
    shutil.copy(example.traces, evals / "traces.json")
    name = f"travel_metrics_{uuid.uuid4().hex[:10]}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    yield evals, name
    sys.modules.pop(name, None)


def configure(evals: Path, name: str, module: str, criteria: dict[str, tuple[float, str]]) -> None:
    (evals / f"{name}.py").write_text(textwrap.dedent(module), encoding="utf-8")
    config = {
        "criteria": {metric: threshold for metric, (threshold, _) in criteria.items()},
        "custom_metrics": {
            metric: {"code_config": {"name": f"{name}.{function}"}}
            for metric, (_, function) in criteria.items()
        },
    }
    (evals / "test_config.json").write_text(json.dumps(config), encoding="utf-8")


def rows(results: Any, metric: str) -> dict[str, tuple[Any, Any, list[tuple[Any, Any]]]]:
    """By eval id: the metric's overall score and status, and each invocation's."""
    found = {}
    for case in results["eval_case_results"]:
        [overall] = [r for r in case["overall_eval_metric_results"] if r["metric_name"] == metric]
        per_invocation = [
            (r.get("score"), r["eval_status"])
            for row in case["eval_metric_result_per_invocation"]
            for r in row["eval_metric_results"]
            if r["metric_name"] == metric
        ]
        found[case["eval_id"]] = (overall.get("score"), overall["eval_status"], per_invocation)
    return found


def test_an_adk_custom_metric_runs_from_the_eval_sets_folder_beside_a_broken_one(
    run_cli: RunCli, project: tuple[Path, str], tmp_path: Path
) -> None:
    evals, name = project
    configure(evals, name, ADK_METRIC, {"eur": (0.5, "mentions_eur"), "tone": (0.5, "raises")})
    out = tmp_path / "results.json"

    run = run_cli(
        "eval", evals / "travel.evalset.json", "--traces", evals / "traces.json", "--output", out
    )

    assert run.code == 1, run.output  # two cases fail the custom metric
    assert "3 passed, 2 failed, 0 not evaluated" in run.out
    assert f"custom metric {name}.raises: raised KeyError: 'tone'" in " ".join(run.out.split())
    assert "Traceback" not in run.output
    eur = rows(json.loads(out.read_text()), "eur")
    passed, failed = 1, 2  # as ADK writes EvalStatus
    assert eur == {
        "forecast_paris": (0.0, failed, [(0.0, failed)]),
        "book_flight_lisbon": (1.0, passed, [(1.0, passed), (1.0, passed)]),
        "convert_currency": (1.0, passed, [(1.0, passed)]),
        "greeting": (0.0, failed, [(0.0, failed)]),
        "book_cheapest_and_convert": (1.0, passed, [(1.0, passed), (1.0, passed)]),
    }
    tone = rows(json.loads(out.read_text()), "tone")
    assert {status for _, status, _ in tone.values()} == {3}  # NOT_EVALUATED, every case
    # each row names its function, as ADK's rows do
    first = json.loads(out.read_text())["eval_case_results"][0]
    named = {
        r["metric_name"]: r.get("custom_function_path")
        for r in first["overall_eval_metric_results"]
    }
    assert named["eur"] == f"{name}.mentions_eur" and named["tone"] == f"{name}.raises"
    assert named["tool_call_count_v1"] is None  # a built-in metric names none


def test_a_custom_metric_written_with_assays_types_runs_without_google_adk(
    run_cli: RunCli,
    project: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(custom, "adk_types", lambda: None)  # as if google-adk were not installed
    evals, name = project
    configure(evals, name, ASSAY_METRIC, {"turns": (0.5, "turns")})
    out = tmp_path / "results.json"

    run = run_cli(
        "eval", evals / "travel.evalset.json", "--traces", evals / "traces.json", "--output", out
    )

    assert run.code == 0, run.output
    assert "5 passed, 0 failed, 0 not evaluated" in run.out
    turns = rows(json.loads(out.read_text()), "turns")
    assert turns["book_flight_lisbon"] == (2.0, 1, [(1.0, 1), (1.0, 1)])
    assert turns["greeting"] == (1.0, 1, [(1.0, 1)])
