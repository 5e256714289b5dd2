"""Scenario cases run end to end: the simulated user talks to the agent until the stop signal or
the turn limit, and the criteria that apply to a scenario score it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from assay.agents.base import CaseContext, Session
from assay.agents.python import FunctionAgent
from assay.config import BaseCriterion, EvalConfig
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.io import LoadedEvalSet
from assay.llm.backends.scripted import ScriptedBackend
from assay.llm.base import LlmRequest
from assay.llm.client import LlmClient, RetryPolicy
from assay.llm.judge import Judge
from assay.llm.selection import configured_judge_model
from assay.metrics.base import EvalStatus
from assay.results.model import EvalSetResult
from assay.runner.agent_run import AgentSettings
from assay.runner.evaluate import EvalSetJob, evaluate
from assay.runner.inference import CaseInference, InferenceSettings

START = "I want to fly to Lisbon."
PLAN = "Ask for a flight to Lisbon on 12 May, then say thanks and stop."


def _text(request: LlmRequest) -> str:
    return "\n".join(m.content for m in request.messages)


def user_and_judge(stop_after: int, stop: str = "</finished>") -> Any:
    """Plays the user (no schema): a question per agent answer, then ``stop`` once the agent
    has answered ``stop_after`` times; answers every judge verdict with a pass."""

    def reply(request: LlmRequest) -> str:
        if request.response_schema is None:
            answered = _text(request).count("answer #")
            if answered >= stop_after:
                return f"Thanks, that is all. {stop}"
            return f"And what about question {answered + 1}?"
        return json.dumps({"criteria": [], "is_valid": True})

    return reply


class Provider:
    """An in-process judge provider over a scripted backend; it records what it was asked."""

    def __init__(self, reply: Any, reason: str | None = None) -> None:
        self.backend = ScriptedBackend(reply, model="scripted:sim")
        self.client = LlmClient(self.backend, retry=RetryPolicy(max_attempts=1))
        self.asked: list[tuple[str, str | None]] = []
        self.reason = reason

    def judge_for(self, metric: str, criterion: BaseCriterion | None) -> Judge | str:
        self.asked.append((metric, configured_judge_model(criterion)))
        if self.reason is not None and metric == "user_simulator":
            return self.reason
        return Judge(self.client, metric)


def answering_agent(message: str, session: Session) -> str:
    return f"answer #{len(session.history) + 1} to: {message}"


def scenario_case(eval_id: str = "trip") -> EvalCase:
    return EvalCase.model_validate(
        {
            "eval_id": eval_id,
            "conversation_scenario": {"starting_prompt": START, "conversation_plan": PLAN},
        }
    )


def static_case() -> EvalCase:
    return EvalCase.model_validate(
        {
            "eval_id": "static",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": "hi"}]},
                    "final_response": {"parts": [{"text": "answer #1 to: hi"}]},
                }
            ],
        }
    )


def run(
    cases: list[EvalCase],
    config: dict[str, Any],
    provider: Provider,
    **inference: Any,
) -> tuple[EvalSetResult, list[CaseInference]]:
    job = EvalSetJob(
        LoadedEvalSet(EvalSet(eval_set_id="s", eval_cases=cases), Path("s.evalset.json"), "json"),
        EvalConfig.model_validate(config),
    )
    seen: list[CaseInference] = []
    agent = AgentSettings(
        make_agent=lambda context: FunctionAgent(answering_agent, name="travel_agent"),
        inference=InferenceSettings(**inference),
    )

    async def go() -> list[EvalSetResult]:
        try:
            return await evaluate(
                [job],
                agent=agent,
                judges=provider,
                on_inference=lambda _job, done: seen.extend(done),
            )
        finally:
            await provider.client.aclose()

    [result] = asyncio.run(go())
    return result, seen


def user_texts(done: CaseInference) -> list[str]:
    return [inv.user_content.parts[0].text or "" for inv in done.invocations]  # type: ignore[index]


QUALITY = {"per_turn_user_simulator_quality_v1": {"threshold": 0.5}}


def test_a_scenario_starts_with_the_starting_prompt_and_stops_on_the_stop_signal() -> None:
    provider = Provider(user_and_judge(stop_after=2))
    result, [done] = run([scenario_case()], {"criteria": QUALITY}, provider)
    assert user_texts(done) == [START, "And what about question 2?"]
    assert done.stop == "stop_signal_detected" and done.error is None
    [case] = result.eval_case_results
    assert case.final_eval_status is EvalStatus.PASSED
    # the simulated user saw the agent's answers; the first message cost no LLM call
    simulator_calls = [r for r in provider.backend.requests if r.response_schema is None]
    assert len(simulator_calls) == 2
    assert "answer #2" in _text(simulator_calls[-1])
    assert (
        result.assay is not None and result.assay.judges["user_simulator"].model == "scripted:sim"
    )
    assert case.assay.simulator_usage is not None and case.assay.simulator_usage.calls == 2
    assert result.assay.usage["user_simulator"].calls == 2  # in the run's token count


def test_a_scenario_stops_at_the_turn_limit_when_the_user_never_says_the_stop_signal() -> None:
    provider = Provider(user_and_judge(stop_after=99))
    config = {"criteria": QUALITY, "user_simulator_config": {"max_allowed_invocations": 3}}
    _, [done] = run([scenario_case()], config, provider)
    assert len(done.invocations) == 3
    assert done.stop == "turn_limit_reached" and done.error is None


def test_the_criterion_s_stop_signal_is_the_one_the_simulated_user_is_told_and_checked_for() -> (
    None
):
    config = {
        "criteria": {
            "per_turn_user_simulator_quality_v1": {"threshold": 0.5, "stop_signal": "[[done]]"}
        },
        "user_simulator_config": {"max_allowed_invocations": 4},
    }
    adk_default = Provider(user_and_judge(stop_after=1))  # says </finished>: not the signal
    _, [ignored] = run([scenario_case()], config, adk_default)
    assert ignored.stop == "turn_limit_reached" and len(ignored.invocations) == 4
    assert all(
        "[[done]]" in _text(r) for r in adk_default.backend.requests if r.response_schema is None
    )
    custom = Provider(user_and_judge(stop_after=1, stop="[[done]]"))
    _, [stopped] = run([scenario_case()], config, custom)
    assert stopped.stop == "stop_signal_detected" and len(stopped.invocations) == 1


def test_the_user_simulator_config_model_is_asked_for_only_when_the_config_sets_it() -> None:
    unset = Provider(user_and_judge(stop_after=1))
    run([scenario_case()], {"criteria": QUALITY}, unset)
    assert ("user_simulator", None) in unset.asked
    chosen = Provider(user_and_judge(stop_after=1))
    config = {"criteria": QUALITY, "user_simulator_config": {"model": "openai:sim-model"}}
    run([scenario_case()], config, chosen)
    assert ("user_simulator", "openai:sim-model") in chosen.asked


def test_without_a_model_for_the_user_the_scenario_case_is_not_evaluated_with_the_reason() -> None:
    provider = Provider(user_and_judge(stop_after=1), reason="no judge model: pass --judge-model")
    result, [done, _] = run([scenario_case(), static_case()], {"criteria": QUALITY}, provider)
    scenario, static = result.eval_case_results
    assert scenario.final_eval_status is EvalStatus.NOT_EVALUATED
    assert scenario.assay.reason is not None
    assert "no model to play the user: no judge model" in scenario.assay.reason
    assert done.invocations == []
    assert static.eval_id == "static"  # the static case still ran (its only metric is n/a)


def test_criteria_that_do_not_apply_to_a_kind_of_case_are_marked_and_do_not_decide_it() -> None:
    config = {"criteria": {"response_match_score": 0.5, **QUALITY}}
    provider = Provider(user_and_judge(stop_after=1))
    result, _ = run([scenario_case(), static_case()], config, provider)
    scenario, static = result.eval_case_results
    assert scenario.assay.not_applicable == ["response_match_score"]
    assert static.assay.not_applicable == ["per_turn_user_simulator_quality_v1"]
    assert scenario.final_eval_status is EvalStatus.PASSED
    assert static.final_eval_status is EvalStatus.PASSED
    rows = {r.metric_name: r for r in scenario.overall_eval_metric_results}
    assert rows["response_match_score"].eval_status is EvalStatus.NOT_EVALUATED
    reason = scenario.assay.metric_reasons["response_match_score"]
    assert reason == "not applicable: needs expected invocations; this case is a scenario"
    # only the scenario's ending was judged (5 samples); the static case's user never was
    verdicts = [r for r in provider.backend.requests if r.response_schema is not None]
    assert [r.schema_name for r in verdicts] == ["user_simulator_verdict"] * 5


def test_each_run_of_a_scenario_is_its_own_conversation_and_result() -> None:
    provider = Provider(user_and_judge(stop_after=2))
    result, done = run([scenario_case()], {"criteria": QUALITY}, provider, num_runs=2)
    assert [d.run for d in done] == [1, 2]
    assert all(len(d.invocations) == 2 for d in done)
    assert [c.assay.run for c in result.eval_case_results] == [1, 2]


def test_a_fresh_agent_is_made_for_each_case_and_run() -> None:
    made: list[tuple[str, int]] = []

    def make(context: CaseContext) -> FunctionAgent:
        made.append((context.case.eval_id, context.run))
        return FunctionAgent(answering_agent)

    job = EvalSetJob(
        LoadedEvalSet(
            EvalSet(eval_set_id="s", eval_cases=[scenario_case("a"), scenario_case("b")]),
            Path("s.evalset.json"),
            "json",
        ),
        EvalConfig.model_validate({"criteria": QUALITY}),
    )
    provider = Provider(user_and_judge(stop_after=1))

    async def go() -> None:
        settings = AgentSettings(make_agent=make, inference=InferenceSettings(num_runs=2))
        try:
            await evaluate([job], agent=settings, judges=provider)
        finally:
            await provider.client.aclose()

    asyncio.run(go())
    assert sorted(made) == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
