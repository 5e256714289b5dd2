"""The LLM-backed simulator against a real OpenAI-compatible server: what goes over the wire."""

from __future__ import annotations

import asyncio

from _judge_server import JudgeServer, Reply

from assay.evalset.case import EvalCase
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.client import LlmClient, RetryPolicy
from assay.simulation import (
    NextUserMessage,
    SimulatorStatus,
    UserSimulatorConfig,
    simulator_for,
)

from ._helpers import AGENT, PLAN, START, scenario, turn

STOP = "[[conversation over]]"
AGENT_REPLY = "Sure. Where are you flying to, and when?"


def test_the_request_carries_plan_history_stop_signal_and_settings_and_the_reply_is_used() -> None:
    case = EvalCase(eval_id="travel", conversation_scenario=scenario())
    config = UserSimulatorConfig(
        model="openai:user-sim", model_configuration={"temperature": 0.7, "seed": 11}
    )

    with JudgeServer() as server:
        server.queue(
            Reply.error(503),  # retried by the client
            "LAX, next Tuesday morning please.",
            f"Great, thanks! {STOP.upper()}",
        )

        async def converse() -> list[NextUserMessage]:
            backend = OpenAICompatBackend(
                "openai:user-sim", base_url=server.base_url, api_key="sk-test-not-a-real-key"
            )
            retry = RetryPolicy(max_attempts=3, initial_delay_s=0.0, max_delay_s=0.0)
            async with LlmClient(backend, retry=retry, timeout_s=10.0) as client:
                simulator = simulator_for(case, config, client, STOP, AGENT)
                history = [turn(START, AGENT_REPLY)]
                answers = [await simulator.next_message([])]
                answers.append(await simulator.next_message(history))
                history.append(turn("LAX, next Tuesday morning please.", "Booked: UA 12."))
                answers.append(await simulator.next_message(history))
                return answers

        first, second, third = asyncio.run(converse())
        completions = server.completions

    assert first.status is SimulatorStatus.SUCCESS
    assert second.status is SimulatorStatus.SUCCESS
    assert second.user_message is not None and second.user_message.parts
    assert second.user_message.parts[0].text == "LAX, next Tuesday morning please."
    assert third.status is SimulatorStatus.STOP_SIGNAL_DETECTED

    assert len(completions) == 3  # the failed attempt, then one call per generated message
    body = completions[1].body
    assert body["model"] == "user-sim"
    assert (body["temperature"], body["seed"]) == (0.7, 11)
    system, user = completions[1].messages
    assert system["role"] == "system" and user["role"] == "user"
    assert STOP in system["content"]
    assert PLAN in user["content"]
    assert f"user: {START}\n\n{AGENT}: {AGENT_REPLY}" in user["content"]

    last_user = completions[2].messages[1]["content"]
    assert f"{AGENT}: Booked: UA 12." in last_user
    assert "user: LAX, next Tuesday morning please." in last_user
