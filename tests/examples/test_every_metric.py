"""Every metric google-adk 2.13 knows, plus a custom one, on the travel example's multi-turn cases
with tool calls: ``examples/travel/every_metric.json`` names all thirteen and
``travel_metrics.confirmation_shared``. From the CLI, from Python and from the pytest plugin, each
one scores (none is "not implemented"); the judges are the stub judge of ``tests/_judges.py``
over real HTTP on 127.0.0.1 (the autouse ``judge_env`` fixture)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _judges import reject
from _support import EXAMPLE_DIR, Example, RunCli

from assay.config import CRITERION_TYPES, read_config
from assay.metrics.base import EvalStatus
from assay.results.model import EvalSetResult
from assay.testing import evaluate_agent

CONFIG = EXAMPLE_DIR / "every_metric.json"
AGENT = f"{EXAMPLE_DIR / 'agent.py'}:travel_agent"
CUSTOM = "confirmation_shared"
STATIC_MULTI_TURN = "book_flight_lisbon"  # two turns: search, then fare, seats and booking
SCENARIO = "book_cheapest_and_convert"  # a simulated user over two turns, five tool calls
NEEDS_A_CONVERSATION = {
    "tool_trajectory_avg_score",
    "response_match_score",
    "final_response_match_v2",
    "response_evaluation_score",
}
JUDGES_THE_USER = {"per_turn_user_simulator_quality_v1"}
JUDGED_ONCE_PER_CONVERSATION = {
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
}


@pytest.fixture(autouse=True)
def _forget_the_custom_module() -> Iterator[None]:
    """``travel_metrics`` is imported from the example's folder; each test imports it afresh."""
    yield
    sys.modules.pop("travel_metrics", None)


def test_the_config_names_every_metric_adk_knows_and_a_custom_one() -> None:
    config = read_config(CONFIG)
    assert set(config.criteria) == set(CRITERION_TYPES) | {CUSTOM}
    assert not config.warnings
    assert config.custom_metrics is not None and list(config.custom_metrics) == [CUSTOM]


def _rows(case: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["metric_name"]: m for m in case["overall_eval_metric_results"]}


def _scored_where_they_apply(cases: dict[str, dict[str, Any]]) -> None:
    """Every metric scores the multi-turn cases it applies to; none is left unimplemented."""
    for eval_id in (STATIC_MULTI_TURN, SCENARIO):
        case = cases[eval_id]
        rows = _rows(case)
        assert set(CRITERION_TYPES) | {CUSTOM} <= set(rows), eval_id
        skipped = NEEDS_A_CONVERSATION if eval_id == SCENARIO else JUDGES_THE_USER
        reasons = case["assay"].get("metric_reasons", {})
        for name in set(CRITERION_TYPES) | {CUSTOM}:
            assert "not implemented" not in reasons.get(name, ""), (eval_id, name)
            if name in skipped:
                assert rows[name]["eval_status"] == EvalStatus.NOT_EVALUATED, (eval_id, name)
                continue
            assert rows[name].get("score") is not None, (eval_id, name, reasons.get(name))
            assert rows[name]["eval_status"] == EvalStatus.PASSED, (eval_id, name)
        per_turn = case["eval_metric_result_per_invocation"]
        assert len(per_turn) == 2, eval_id
        for name in JUDGED_ONCE_PER_CONVERSATION:  # the last turn carries the conversation's score
            first, last = (
                next(r for r in turn["eval_metric_results"] if r["metric_name"] == name)
                for turn in per_turn
            )
            assert first["eval_status"] == EvalStatus.NOT_EVALUATED, (eval_id, name)
            assert last.get("score") is not None, (eval_id, name)


def test_the_cli_scores_every_metric_on_the_multi_turn_cases(
    run_cli: RunCli, example: Example, tmp_path: Path, judge_env: JudgeServer
) -> None:
    out, html = tmp_path / "results.json", tmp_path / "report.html"
    run = run_cli(
        "eval",
        example.evalset,
        "--traces",
        example.traces,
        "--config",
        CONFIG,
        "--output",
        out,
        "--html",
        html,
    )

    assert "Traceback" not in run.output and "not implemented" not in run.output
    data = json.loads(out.read_text(encoding="utf-8"))
    cases = {case["eval_id"]: case for case in data["eval_case_results"]}
    _scored_where_they_apply(cases)
    custom = _rows(cases[STATIC_MULTI_TURN])[CUSTOM]
    assert custom["custom_function_path"] == "travel_metrics.confirmation_shared"
    assert custom["score"] == 1.0  # the booking's confirmation code reaches the user
    coherence = _rows(cases[STATIC_MULTI_TURN])["response_evaluation_score"]
    assert coherence["score"] == 5.0 and coherence["threshold"] == 3.0  # rated 1 to 5
    # the report shows each new metric's detail: the conversation rubrics' verdicts, the rating
    page = html.read_text(encoding="utf-8")
    assert "confirms_the_booking" in page and "instructions_followed" in page
    assert "5 (completely coherent)" in page
    # every judge request of the four conversation-level metrics shows the whole conversation
    conversation = [
        r.body["messages"][-1]["content"]
        for r in judge_env.completions
        if "<conversation>" in r.body["messages"][-1]["content"]
    ]
    assert len(conversation) == 4 * len(cases)  # once per metric and case, not per turn
    multi_turn = [prompt for prompt in conversation if "[turn 2]" in prompt]
    assert len(multi_turn) == 4 * 2  # the two multi-turn cases
    assert all("calls tool" in prompt and "returned" in prompt for prompt in multi_turn)


def test_python_scores_every_metric_on_the_multi_turn_cases(
    tmp_path: Path, example: Example, judge_env: JudgeServer
) -> None:
    from importlib.util import module_from_spec, spec_from_file_location

    spec = spec_from_file_location("travel_example_agent", EXAMPLE_DIR / "agent.py")
    assert spec is not None and spec.loader is not None
    travel = module_from_spec(spec)
    spec.loader.exec_module(travel)

    [result] = evaluate_agent(
        travel.travel_agent, example.evalset, config=CONFIG, num_runs=1, check=False
    )

    assert isinstance(result, EvalSetResult)
    data = result.model_dump(mode="json", exclude_none=True)
    cases = {case["eval_id"]: case for case in data["eval_case_results"]}
    _scored_where_they_apply(cases)


def test_the_pytest_plugin_scores_every_metric_on_the_multi_turn_cases(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge that rejects everything fails every case, so each case's failure lists every
    metric with its score."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    evals = pytester.path / "evals"
    evals.mkdir()
    shutil.copy(EXAMPLE_DIR / "travel.evalset.json", evals / "travel.evalset.json")
    shutil.copy(EXAMPLE_DIR / "travel_metrics.py", evals / "travel_metrics.py")
    shutil.copy(CONFIG, evals / "test_config.json")

    with JudgeServer(reply=reject) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        outcome = pytester.runpytest_inprocess(
            "-p", "assay.testing.plugin", "--assay-agent", AGENT, "--assay-num-runs", "1"
        )

    outcome.assert_outcomes(failed=5)
    text = outcome.stdout.str()
    assert "not implemented" not in text
    for eval_id in (STATIC_MULTI_TURN, SCENARIO):
        block = text[text.index(f"  {eval_id}: FAILED") :]
        block = block[: block.index("turn 1 of 2")]
        skipped = NEEDS_A_CONVERSATION if eval_id == SCENARIO else JUDGES_THE_USER
        for name in set(CRITERION_TYPES) - skipped:
            line = next(line for line in block.splitlines() if f" {name} " in line)
            score = line.split(name, 1)[1].split("(threshold")[0].strip()
            assert score and score != "-", (eval_id, name, line)  # a score, not "not evaluated"
        custom = next(line for line in block.splitlines() if f" {CUSTOM} " in line)
        assert "passed" in custom and "1 (threshold 1)" in custom


pytest_plugins = ["pytester"]
