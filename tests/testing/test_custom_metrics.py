"""Custom metrics from Python (``evaluate_agent``) and from the pytest plugin: the function
beside the eval set is imported from there and decides its cases as it does under ``adk eval``."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.metrics.base import EvalStatus
from assay.testing import EvaluationFailed, evaluate_agent

from ._helpers import CONFIG, agent_source, good_agent, write_eval_set

pytest_plugins = ["pytester"]

# Fails a turn whose answer names no number: the weather case passes, the flight one does not.
METRIC = """
    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


    def no_trains(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        threshold = eval_metric.criterion.threshold
        results = []
        for invocation in actual_invocations:
            text = " ".join(p.text or "" for p in invocation.final_response.parts)
            score = 0.0 if "train" in text else 1.0
            status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
            results.append(
                PerInvocationResult(actual_invocation=invocation, score=score, eval_status=status)
            )
        overall = min(r.score for r in results)
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
            per_invocation_results=results,
        )
"""


@pytest.fixture
def module_name() -> Iterator[str]:
    name = f"agent_metrics_{uuid.uuid4().hex[:10]}"
    yield name
    sys.modules.pop(name, None)


def write_project(folder: Path, module_name: str) -> Path:
    config = {
        "criteria": {**CONFIG["criteria"], "no_trains": 0.5},
        "custom_metrics": {"no_trains": {"code_config": {"name": f"{module_name}.no_trains"}}},
    }
    path = write_eval_set(folder, config=config)
    (folder / f"{module_name}.py").write_text(textwrap.dedent(METRIC), encoding="utf-8")
    return path


def test_evaluate_agent_runs_the_custom_metric_beside_the_eval_set(
    tmp_path: Path, module_name: str
) -> None:
    path = write_project(tmp_path / "evals", module_name)

    [result] = evaluate_agent(good_agent, path, num_runs=1)

    for case in result.eval_case_results:
        [row] = [r for r in case.overall_eval_metric_results if r.metric_name == "no_trains"]
        assert (row.score, row.eval_status) == (1.0, EvalStatus.PASSED)


def test_evaluate_agent_fails_on_the_custom_metrics_verdict(
    tmp_path: Path, module_name: str
) -> None:
    path = write_project(tmp_path / "evals", module_name)

    def trains(message: str, session: object) -> dict[str, object]:
        answer = good_agent(message, session)
        return {**answer, "final_response": f"{answer['final_response']} No trains today."}

    with pytest.raises(EvaluationFailed) as failed:
        evaluate_agent(trains, path, num_runs=1)

    lines = [" ".join(line.split()) for line in str(failed.value).splitlines()]
    assert "FAILED no_trains 0 (threshold 0.5)" in lines


def test_the_plugin_runs_the_custom_metric_beside_the_eval_set(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, module_name: str
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    write_project(pytester.path / "evals", module_name)
    (pytester.path / "agents.py").write_text(agent_source())
    agent = f"{pytester.path / 'agents.py'}:bad"  # answers flights with "no trains"

    result = pytester.runpytest_inprocess(
        "-p", "assay.testing.plugin", "--assay-agent", agent, "--assay-num-runs", "1"
    )

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*no_trains*0 (threshold 0.5)"])
