"""``assay eval`` with LLM judges served over real HTTP on 127.0.0.1, faults included.

Each case of the example meets a different fault: the judge answers 500 for every call about
Paris, hangs past the timeout for the greeting, answers 429 with Retry-After once and then
approves for the currency case, and answers text with no verdict for the flight booking. The run
must finish, keep every case, record each failure as NOT_EVALUATED with its reason, and make
exactly the configured number of attempts.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer, Reply
from _judges import approve, reject
from _support import Example, RunCli

from assay.metrics.base import EvalStatus
from assay.results.traces import load_traces
from assay.runner.evaluate import evaluate_sync
from assay.runner.jobs import jobs_for

JUDGED = (
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
    "safety_v1",
)
SIMULATOR_QUALITY = "per_turn_user_simulator_quality_v1"  # judges the scenario case only


def _user_text(body: dict[str, Any]) -> str:
    return " ".join(str(m.get("content", "")) for m in body.get("messages", []))


class FaultyJudge:
    """Replies by case: Paris -> 500, greeting -> hang, Swiss francs -> 429 once then approve,
    Lisbon booking -> no verdict in the text; everything else approved."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.throttled: set[str] = set()

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        text = _user_text(body)
        if "Paris" in text:
            return Reply.error(500, "the judge fell over")
        if "Who are you" in text:
            return Reply.hang(5.0)
        if "Swiss francs" in text:
            key = json.dumps(body, sort_keys=True)
            with self.lock:
                first = key not in self.throttled
                self.throttled.add(key)
            if first:
                return Reply.error(429, "slow down", headers={"Retry-After": "1"})
        if "Lisbon" in text:
            return "I think the agent did fine, but I would rather not say."
        return approve(body)


def _results(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _metric(case: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in case["overall_eval_metric_results"] if m["metric_name"] == name)


@pytest.fixture
def faulty_judge(monkeypatch: pytest.MonkeyPatch) -> Any:
    with JudgeServer(reply=FaultyJudge()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_judge_faults_become_not_evaluated_with_reasons_and_the_run_keeps_everything(
    run_cli: RunCli, example: Example, tmp_path: Path, faulty_judge: JudgeServer
) -> None:
    out = tmp_path / "results.json"
    run = run_cli(
        "eval",
        example.evalset,
        "--traces",
        example.traces,
        "--judge-timeout",
        "0.5",
        "--judge-attempts",
        "2",
        "--output",
        out,
    )

    assert run.code == 1, run.output
    data = _results(out)
    cases = {c["eval_id"]: c for c in data["eval_case_results"]}
    assert list(cases) == [
        "forecast_paris",
        "book_flight_lisbon",
        "convert_currency",
        "greeting",
        "book_cheapest_and_convert",
    ]
    # The deterministic metrics are untouched by the judge's faults.
    for case in list(cases.values())[:4]:  # the static conversations
        assert _metric(case, "tool_trajectory_avg_score")["eval_status"] == EvalStatus.PASSED

    paris = cases["forecast_paris"]["assay"]["metric_reasons"]
    for name in JUDGED:
        assert _metric(cases["forecast_paris"], name)["eval_status"] == EvalStatus.NOT_EVALUATED
    assert "gave up after 2 attempts" in paris["final_response_match_v2"]
    assert "HTTP 500" in paris["final_response_match_v2"]

    greeting = cases["greeting"]["assay"]["metric_reasons"]
    assert "timed out" in greeting["safety_v1"]

    # 429 with Retry-After, then a verdict: every judged metric scored and passed.
    currency = cases["convert_currency"]
    for name in JUDGED:
        assert _metric(currency, name)["eval_status"] == EvalStatus.PASSED, name
    usage = currency["assay"]["metrics"]["safety_v1"]["usage"]
    assert usage["retries"] == 1

    # No verdict in the text: the sample keeps the raw text and a reason, never a score.
    lisbon = cases["book_flight_lisbon"]["assay"]
    v2 = lisbon["metrics"]["final_response_match_v2"]["per_invocation"][0]["samples"][0]
    assert v2["text"] == "I think the agent did fine, but I would rather not say."
    assert "score" not in v2 and v2["reason"]
    assert _metric(cases["book_flight_lisbon"], "final_response_match_v2")["eval_status"] == (
        EvalStatus.NOT_EVALUATED
    )
    assert lisbon["metric_reasons"]["final_response_match_v2"]

    # Every call about Paris was tried exactly twice (the configured attempts), no more.
    paris_calls = [r for r in faulty_judge.completions if "Paris" in _user_text(r.body)]
    distinct = {json.dumps(r.body, sort_keys=True) for r in paris_calls}
    assert len(paris_calls) == 2 * len(distinct)
    # The key never leaves the process in any output.
    assert "sk-test-not-a-real-key" not in run.output
    assert "sk-test-not-a-real-key" not in out.read_text(encoding="utf-8")


def test_a_rerun_of_an_unchanged_evaluation_makes_no_judge_call(
    run_cli: RunCli, example: Example, judge_env: JudgeServer
) -> None:
    first = run_cli("eval", example.evalset, "--traces", example.traces)
    before = judge_env.count()
    second = run_cli("eval", example.evalset, "--traces", example.traces)

    assert first.code == second.code == 0
    assert judge_env.count() == before
    assert "judge calls: 0 (42 answered from the cache" in second.out


def test_no_cache_calls_the_judge_again(
    run_cli: RunCli, example: Example, judge_env: JudgeServer
) -> None:
    run_cli("eval", example.evalset, "--traces", example.traces)
    before = judge_env.count()
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--no-cache")

    assert run.code == 0
    assert judge_env.count() - before == 42


def test_a_judge_that_rejects_everything_fails_the_judged_metrics(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    with JudgeServer(reply=reject) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = run_cli("eval", example.evalset, "--traces", example.traces, "--output", out)

    assert run.code == 1
    judged = 0
    for case in _results(out)["eval_case_results"]:
        for name in (*JUDGED, SIMULATOR_QUALITY):
            if name in case["assay"].get("not_applicable", []):
                continue
            judged += 1
            assert _metric(case, name)["eval_status"] == EvalStatus.FAILED, name
            # The simulated user's first turn is checked without a judge (it is the scenario's
            # starting prompt): it passes, the judged second turn fails.
            assert _metric(case, name)["score"] == (0.5 if name == SIMULATOR_QUALITY else 0.0)
    assert judged == 4 * 5 + 5  # every judged criterion where it applies


def test_the_console_and_output_say_which_judge_scored_what(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--output", out)

    assert (
        "judge openai:stub-judge (from ASSAY_JUDGE_MODEL): final_response_match_v2, "
        "rubric_based_final_response_quality_v1, rubric_based_tool_use_quality_v1, "
        "hallucinations_v1, safety_v1" in run.out
    )
    judges = _results(out)["assay"]["judges"]
    assert set(judges) == {*JUDGED, SIMULATOR_QUALITY}
    version = judges["safety_v1"].pop("prompt_version")
    assert len(version) == 12 and int(version, 16) >= 0  # the judge's prompt, named
    assert judges["safety_v1"] == {
        "model": "openai:stub-judge",
        "source": "ASSAY_JUDGE_MODEL",
        "backend": "openai",
        "judge_model": "openai:stub-judge",
        "description": "openai:stub-judge (from ASSAY_JUDGE_MODEL)",
    }
    usage = _results(out)["assay"]["usage"]
    assert usage["final_response_match_v2"]["calls"] == 5
    assert usage["hallucinations_v1"]["calls"] == 14  # a segmenter and a validator call each


def test_a_judge_without_its_key_is_exit_2_before_the_run_saying_what_to_set(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    monkeypatch.setenv("ASSAY_JUDGE_MODEL", "openai:gpt-4o-mini")
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--output", out)

    assert run.code == 2
    assert "OPENAI_API_KEY is not set" in " ".join(run.err.split())
    assert not out.exists()


def _evaluated_without_a_key(example: Example, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The example scored through the Python API (which checks no judge before the run) with a
    judge whose key is missing."""
    monkeypatch.setenv("ASSAY_JUDGE_MODEL", "openai:gpt-4o-mini")
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    jobs = jobs_for([str(example.evalset)], None)
    result = evaluate_sync(jobs, load_traces([str(example.traces)]))[0]
    data: dict[str, Any] = result.model_dump(mode="json", exclude_none=True)
    return data


def test_without_any_judge_the_judged_metrics_say_how_to_get_one(
    example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = _evaluated_without_a_key(example, monkeypatch)["eval_case_results"][0]

    assert _metric(case, "response_match_score")["eval_status"] == EvalStatus.PASSED
    reason = case["assay"]["metric_reasons"]["final_response_match_v2"]
    assert "OPENAI_API_KEY" in reason
    # no judged metric has a verdict: the case does not pass on the others alone
    assert case["final_eval_status"] == EvalStatus.NOT_EVALUATED


def _judged_criteria(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every judged metric's criterion in the ADK fields, overall and per invocation."""
    found = []
    for case in data["eval_case_results"]:
        rows = list(case["overall_eval_metric_results"])
        for invocation in case["eval_metric_result_per_invocation"]:
            rows += invocation["eval_metric_results"]
        for row in rows:
            if row["metric_name"] in (*JUDGED, SIMULATOR_QUALITY):
                found.append((row["metric_name"], row["criterion"]))
    return found


def test_every_judged_criterion_names_the_judge_that_scored_it_not_the_configs_default(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    config = example.config.read_bytes()
    run = run_cli(
        "eval",
        example.evalset,
        "--traces",
        example.traces,
        "--judge-model",
        "openai:stub-judge",
        "--output",
        out,
    )

    assert run.code == 0, run.output
    assert "judge openai:stub-judge (from --judge-model): final_response_match_v2" in run.out
    data = _results(out)
    criteria = _judged_criteria(data)
    with_options = [(name, c) for name, c in criteria if "judge_model_options" in c]
    # every row of every metric with judge options: each case's, each invocation's
    assert len(with_options) > 5 * 5
    assert {name for name, _ in with_options} == {*JUDGED, SIMULATOR_QUALITY} - {"safety_v1"}
    for name, criterion in with_options:
        assert criterion["judge_model_options"]["judge_model"] == "openai:stub-judge", name
        assert criterion["judge_model_options"]["num_samples"] == 1, name  # the rest as set
    # safety_v1's criterion is a bare threshold (as in ADK): it has no judge options to fill
    assert all("judge_model_options" not in c for n, c in criteria if n == "safety_v1")
    # assay's own record of the config keeps what the config said (ADK's default)
    configured = data["assay"]["criteria"]["final_response_match_v2"]
    assert configured["judge_model_options"]["judge_model"] == "gemini-2.5-flash"
    assert data["assay"]["judges"]["hallucinations_v1"]["source"] == "--judge-model"
    assert example.config.read_bytes() == config


def test_a_metric_without_a_judge_keeps_the_configured_judge_model_and_says_why(
    example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _evaluated_without_a_key(example, monkeypatch)
    for name, criterion in _judged_criteria(data):
        if "judge_model_options" in criterion:
            assert criterion["judge_model_options"]["judge_model"] == "gemini-2.5-flash", name
    case = data["eval_case_results"][0]
    assert _metric(case, "final_response_match_v2")["eval_status"] == EvalStatus.NOT_EVALUATED
    assert "OPENAI_API_KEY" in case["assay"]["metric_reasons"]["final_response_match_v2"]
    info = data["assay"]["judges"]["final_response_match_v2"]
    assert info.get("model") is None and "OPENAI_API_KEY" in info["unavailable"]


def test_the_simulated_users_model_is_named_as_the_judges_are(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    agent = f"{example.dir / 'agent.py'}:travel_agent"
    run = run_cli("eval", example.evalset, "--agent", agent, "--output", out)

    assert run.code in (0, 1), run.output
    user = _results(out)["assay"]["judges"]["user_simulator"]
    assert user["description"] == "openai:stub-judge (from ASSAY_JUDGE_MODEL)"
    assert (user["model"], user["backend"]) == ("openai:stub-judge", "openai")
    line = next(t for t in run.out.splitlines() if t.startswith("judge openai:stub-judge"))
    assert line.startswith("judge openai:stub-judge (from ASSAY_JUDGE_MODEL): ")
    assert "user_simulator" in line
