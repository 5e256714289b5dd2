"""``assay.testing.AgentEvaluator``: google-adk 2.13's ``AgentEvaluator`` calls, run by assay.

The agent module exposes ``root_agent`` as a plain Python function (in its ``agent`` submodule,
ADK's layout), so these tests do not depend on the ADK agent adapter.
"""

from __future__ import annotations

import asyncio
import csv
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.agents.python import AgentLoadError
from assay.evalset.case import EvalSet
from assay.evalset.content import Content, Part
from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultPerInvocation,
    EvalSetResult,
)
from assay.testing import AgentEvaluator, EvaluationFailed
from assay.testing.adk_compat import adk_failure_report

from ._helpers import CASES, eval_set_data, write_eval_set

AGENT = '''
BY_MESSAGE = {by_message!r}

def root_agent(message, session):
    """Answers as expected, but only when the session says which units to use."""
    if session.state.get("units") != "metric" or {broken}:
        return {{"final_response": "Which units do you use?", "tool_calls": []}}
    answer, tools = BY_MESSAGE[message]
    return {{"final_response": answer, "tool_calls": tools}}
'''

MakeModule = Callable[..., str]


@pytest.fixture
def agent_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeModule]:
    """Write an agent package (``__init__`` importing ``agent``, which has ``root_agent``) and
    return its module name; the modules are forgotten afterwards."""
    names: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(broken: bool = False) -> str:
        name = f"agent_pkg_{uuid.uuid4().hex[:8]}"
        package = tmp_path / name
        package.mkdir()
        (package / "__init__.py").write_text("from . import agent\n")
        by_message = {message: (answer, tools) for message, answer, tools in CASES.values()}
        (package / "agent.py").write_text(AGENT.format(by_message=by_message, broken=broken))
        names.append(name)
        return name

    yield make
    for name in names:
        sys.modules.pop(f"{name}.agent", None)
        sys.modules.pop(name, None)


def _legacy_files(folder: Path, config: Any = None) -> tuple[Path, Path]:
    """ADK's legacy per-turn file for the weather case, and an ``initial.session.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    message, answer, tools = CASES["weather"]
    turns = [
        {
            "query": message,
            "expected_tool_use": [{"tool_name": t["name"], "tool_input": t["args"]} for t in tools],
            "reference": answer,
        }
    ]
    test_file = folder / "weather.test.json"
    test_file.write_text(json.dumps(turns))
    session = folder / "initial.session.json"
    session.write_text(
        json.dumps({"app_name": "travel", "user_id": "u", "state": {"units": "metric"}})
    )
    config = config or {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
    (folder / "test_config.json").write_text(json.dumps(config))
    return test_file, session


def _evaluate(*args: Any, **kwargs: Any) -> None:
    kwargs.setdefault("print_detailed_results", False)
    asyncio.run(AgentEvaluator.evaluate(*args, **kwargs))


def test_a_good_agent_module_passes_a_legacy_file_with_its_initial_session(
    agent_module: MakeModule, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test_file, session = _legacy_files(tmp_path / "data")
    asyncio.run(
        AgentEvaluator.evaluate(agent_module(), str(test_file), initial_session_file=str(session))
    )
    printed = capsys.readouterr().out
    assert "weather" in printed and "2 passed, 0 failed, 0 not evaluated" in printed


def test_without_initial_session_file_the_session_beside_the_file_is_not_read_as_in_adk(
    agent_module: MakeModule, tmp_path: Path
) -> None:
    test_file, _ = _legacy_files(tmp_path / "data")
    with pytest.raises(AssertionError, match="Which units do you use"):
        _evaluate(agent_module(), str(test_file))


def test_a_bad_agent_raises_an_assertion_error_showing_the_case_and_its_metrics(
    agent_module: MakeModule, tmp_path: Path
) -> None:
    test_file, session = _legacy_files(tmp_path / "data")
    name = agent_module(broken=True)
    with pytest.raises(AssertionError) as failed:
        _evaluate(name, str(test_file), initial_session_file=str(session))
    message = str(failed.value)
    assert message.startswith(f"1 of 1 eval case(s) failed for {name}")
    assert "weather, 2 runs: FAILED" in message
    assert "FAILED        tool_trajectory_avg_score  0 (threshold 1)" in message
    assert "expected:       Tomorrow in Paris expect light rain and 14 degrees." in message
    assert "actual:         Which units do you use?" in message
    assert 'expected tools: get_forecast({"city": "Paris"})' in message
    assert "0 (threshold 1): mean of 2 turn scores over every run" in message
    assert message.count("turn 1 of 1") == 1  # both runs did the same: shown once
    assert "turn 1 of 1, runs 1, 2 (tool_trajectory_avg_score, response_match_score" in message


def test_a_folder_means_its_test_json_files_at_any_depth_each_with_its_config(
    agent_module: MakeModule, tmp_path: Path
) -> None:
    _, session = _legacy_files(tmp_path / "a" / "b")
    strict = {"criteria": {"response_match_score": 1.0}}
    write_eval_set(tmp_path / "a", config=strict)  # .evalset.json: not picked up by ADK's walk
    _evaluate(agent_module(), str(tmp_path / "a"), initial_session_file=str(session))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"No `\*\.test\.json` eval files found"):
        _evaluate(agent_module(), str(tmp_path / "empty"))


def test_an_eval_set_file_refuses_an_initial_session_file(
    agent_module: MakeModule, tmp_path: Path
) -> None:
    path = write_eval_set(tmp_path)
    _, session = _legacy_files(tmp_path / "other")
    with pytest.raises(AssertionError, match="initial_session_file is only for the legacy"):
        _evaluate(agent_module(), str(path), initial_session_file=str(session))


def test_an_unknown_sub_agent_and_bad_arguments_are_refused_as_in_adk(
    agent_module: MakeModule, tmp_path: Path
) -> None:
    test_file, session = _legacy_files(tmp_path)
    name = agent_module()
    with pytest.raises(ValueError, match=r"Sub-Agent 'helper' not found\."):
        _evaluate(name, str(test_file), agent_name="helper", initial_session_file=str(session))
    with pytest.raises(ValueError, match=r"`num_runs` must be at least 1, got 0\."):
        _evaluate(name, str(test_file), num_runs=0)
    with pytest.raises(ValueError, match="app_name is required"):
        _evaluate(name, str(test_file), eval_set_results_manager=object())
    with pytest.raises(NotImplementedError, match="artifact_service"):
        _evaluate(name, str(test_file), artifact_service=object())


@pytest.mark.parametrize("form", ["file.py:attr", "module:attr", "folder"])
def test_agent_module_takes_the_specs_the_cli_takes_beyond_adks_module(
    agent_module: MakeModule, tmp_path: Path, form: str
) -> None:
    test_file, session = _legacy_files(tmp_path / "data")
    name = agent_module()
    spec = {
        "file.py:attr": f"{tmp_path / name / 'agent.py'}:root_agent",
        "module:attr": f"{name}.agent:root_agent",
        "folder": str(tmp_path / name),
    }[form]
    _evaluate(spec, str(test_file), initial_session_file=str(session))


@pytest.mark.parametrize(
    ("spec", "opening"),
    [
        ("{folder}/agent.py:root_agnt", "agent_module '{folder}/agent.py:root_agnt': {folder}/"
         "agent.py has no attribute 'root_agnt'; the one agent it defines is root_agent"),
        ("http://127.0.0.1:99999/turn", "agent_module 'http://127.0.0.1:99999/turn': the port "
         "must be 1 to 65535"),
        ("openai:", "agent_module 'openai:' names no model"),
        ("{folder}/missing.py:agent", "agent_module: no such file {folder}/missing.py"),
    ],
)  # fmt: skip
def test_a_spec_that_cannot_be_used_opens_with_its_cause_and_names_agent_module(
    agent_module: MakeModule, tmp_path: Path, spec: str, opening: str
) -> None:
    test_file, session = _legacy_files(tmp_path / "data")
    folder = tmp_path / agent_module()
    with pytest.raises(AgentLoadError) as failed:
        _evaluate(spec.format(folder=folder), str(test_file), initial_session_file=str(session))
    assert str(failed.value).startswith(opening.format(folder=folder))
    assert "--agent" not in str(failed.value)
    shown = failed.value  # a traceback shows no other error chained to it
    assert shown.__cause__ is None and (shown.__context__ is None or shown.__suppress_context__)


def test_output_file_gets_one_csv_row_per_metric_and_turn_with_adks_columns(
    agent_module: MakeModule, tmp_path: Path
) -> None:
    test_file, session = _legacy_files(tmp_path / "data")
    out = tmp_path / "out" / "results.csv"
    kwargs = {"initial_session_file": str(session), "output_file": str(out), "num_runs": 1}
    _evaluate(agent_module(), str(test_file), **kwargs)
    _evaluate(agent_module(), str(test_file), **kwargs)  # appended, header once
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    trajectory = [r for r in rows if r["metric_name"] == "tool_trajectory_avg_score"]
    assert len(trajectory) == 2
    assert trajectory[0]["eval_id"] == "weather"
    assert trajectory[0]["eval_status"] == "PASSED"
    assert trajectory[0]["actual_tool_calls"] == 'get_forecast({"city": "Paris"})'


def test_evaluate_eval_set_takes_adk_objects_or_criteria(agent_module: MakeModule) -> None:
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    data = eval_set_data(ids=("weather",))
    data["eval_cases"][0]["session_input"]["state"] = {"units": "metric"}
    name = agent_module()
    adk_set = AdkEvalSet.model_validate(data)
    adk_config = AdkEvalConfig.model_validate({"criteria": {"response_match_score": 0.8}})
    run = AgentEvaluator.evaluate_eval_set
    asyncio.run(run(name, adk_set, eval_config=adk_config, print_detailed_results=False))
    ours = EvalSet.model_validate(data)
    asyncio.run(
        run(name, ours, criteria={"response_match_score": 0.8}, print_detailed_results=False)
    )
    with pytest.raises(ValueError, match=r"`eval_config` is required\."):
        asyncio.run(run(name, ours))


def test_an_adk_results_manager_receives_adks_case_results(
    agent_module: MakeModule, tmp_path: Path
) -> None:
    from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult

    saved: list[tuple[str, str, list[Any]]] = []

    class Manager:
        def save_eval_set_result(self, app_name: str, eval_set_id: str, cases: list[Any]) -> None:
            saved.append((app_name, eval_set_id, cases))

    test_file, session = _legacy_files(tmp_path)
    _evaluate(
        agent_module(),
        str(test_file),
        initial_session_file=str(session),
        app_name="travel",
        eval_set_results_manager=Manager(),
    )
    [(app, set_id, cases)] = saved
    assert (app, set_id, len(cases)) == ("travel", "weather", 2)
    assert all(isinstance(c, AdkEvalCaseResult) for c in cases)


def _turn(score: float, threshold: float) -> EvalMetricResultPerInvocation:
    status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
    text = Content(role="user", parts=[Part(text="hi")])
    return EvalMetricResultPerInvocation(
        actual_invocation=Invocation(user_content=text),
        eval_metric_results=[
            EvalMetricResult(
                metric_name="response_match_score",
                threshold=threshold,
                score=score,
                eval_status=status,
            )
        ],
    )


def _run(run: int, score: float, threshold: float = 0.8) -> EvalCaseResult:
    status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
    return EvalCaseResult(
        eval_id="case",
        final_eval_status=status,
        overall_eval_metric_results=[
            EvalMetricResult(
                metric_name="response_match_score",
                threshold=threshold,
                score=score,
                eval_status=status,
            )
        ],
        eval_metric_result_per_invocation=[_turn(score, threshold)],
        assay=CaseNotes(run=run),
    )


def test_the_verdict_is_adks_the_mean_of_every_turn_over_every_run() -> None:
    passes = EvalSetResult(eval_set_result_id="r", eval_set_id="s")
    passes.eval_case_results = [_run(1, 0.7), _run(2, 0.95)]  # mean 0.825 >= 0.8
    assert adk_failure_report([passes], "m") is None
    fails = EvalSetResult(eval_set_result_id="r", eval_set_id="s")
    fails.eval_case_results = [_run(1, 0.6), _run(2, 0.95)]  # mean 0.775 < 0.8
    message = adk_failure_report([fails], "m")
    assert message is not None
    assert "FAILED        response_match_score  0.775 (threshold 0.8)" in message


def test_the_drop_in_raises_evaluation_failed_which_is_an_assertion_error() -> None:
    assert issubclass(EvaluationFailed, AssertionError)


ADK_FIXTURE = Path(__file__).resolve().parent.parent / "agents" / "adk_fixture"


@pytest.fixture
def adk_fixture_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``tests/agents/adk_fixture`` importable as ``adk_fixture``, forgotten afterwards."""
    pytest.importorskip("google.adk")
    monkeypatch.syspath_prepend(str(ADK_FIXTURE.parent))
    yield "adk_fixture"
    for name in [n for n in sys.modules if n == "adk_fixture" or n.startswith("adk_fixture.")]:
        del sys.modules[name]


def test_a_real_adk_agent_module_runs_through_the_adk_adapter(
    tmp_path: Path, adk_fixture_module: str
) -> None:
    turns = [
        {
            "query": "What is the weather in Paris?",
            "expected_tool_use": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
            "reference": "It is sunny in Paris.",
        }
    ]
    test_file = tmp_path / "weather.test.json"
    test_file.write_text(json.dumps(turns))
    session = tmp_path / "session.json"
    session.write_text(json.dumps({"app_name": "adk_fixture", "user_id": "alice",
                                   "state": {"user_name": "Alice", "units": "C"}}))  # fmt: skip
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    _evaluate(adk_fixture_module, str(test_file), initial_session_file=str(session))
    turns[0]["reference"] = "Rain and strong wind all day long."
    test_file.write_text(json.dumps(turns))
    with pytest.raises(AssertionError) as failed:
        _evaluate(adk_fixture_module, str(test_file), initial_session_file=str(session), num_runs=1)
    assert "actual:         It is sunny in Paris." in str(failed.value)
