"""simulator_for: a static conversation is replayed, a scenario gets the LLM-backed simulator."""

from __future__ import annotations

import asyncio

import pytest

from assay.config.simulator import AudioUserSimulatorConfig
from assay.evalset.case import EvalCase
from assay.evalset.content import Content, Part
from assay.simulation import (
    LlmBackedUserSimulator,
    SimulatorStatus,
    StaticUserSimulator,
    UserSimulatorConfig,
    UserSimulatorError,
    simulator_for,
)

from ._helpers import AGENT, START, scenario, scripted, turn


def test_a_static_conversation_is_replayed_without_an_llm() -> None:
    case = EvalCase(eval_id="static", conversation=[turn("hello", "hi")])

    simulator = simulator_for(case, None, None, "</finished>", AGENT)

    assert isinstance(simulator, StaticUserSimulator)
    answer = asyncio.run(simulator.next_message([]))
    assert answer.user_message == Content(role="user", parts=[Part(text="hello")])


def test_a_scenario_gets_the_llm_backed_simulator_with_the_config_and_stop_signal() -> None:
    case = EvalCase(eval_id="scenario", conversation_scenario=scenario())
    client, backend = scripted(["<<stop>>"])
    config = UserSimulatorConfig(max_allowed_invocations=5)

    simulator = simulator_for(case, config, client, "<<stop>>", AGENT, sample=2)

    assert isinstance(simulator, LlmBackedUserSimulator)
    assert simulator.stop_signal == "<<stop>>"

    async def two() -> list[SimulatorStatus]:
        first = await simulator.next_message([])
        second = await simulator.next_message([turn(START, "Where to?")])
        return [first.status, second.status]

    assert asyncio.run(two()) == [SimulatorStatus.SUCCESS, SimulatorStatus.STOP_SIGNAL_DETECTED]
    assert len(backend.requests) == 1


def test_a_scenario_without_an_llm_is_an_error_naming_the_case() -> None:
    case = EvalCase(eval_id="needs-llm", conversation_scenario=scenario())
    with pytest.raises(UserSimulatorError, match="case 'needs-llm' has a conversation_scenario"):
        simulator_for(case, None, None, "</finished>", AGENT)


def test_a_set_up_error_names_the_case() -> None:
    case = EvalCase(eval_id="bad-persona", conversation_scenario=scenario("NOBODY"))
    with pytest.raises(UserSimulatorError, match=r"^case 'bad-persona': unknown user_persona id"):
        simulator_for(case, None, scripted("x")[0], "</finished>", AGENT)


def test_adks_audio_simulator_loads_but_cannot_play_a_scenario() -> None:
    case = EvalCase(eval_id="spoken", conversation_scenario=scenario())
    config = AudioUserSimulatorConfig()
    with pytest.raises(UserSimulatorError, match=r"^case 'spoken': ADK's audio user simulator"):
        simulator_for(case, config, scripted("x")[0], "</finished>", AGENT)
    static = EvalCase(eval_id="static", conversation=[turn("hello", "hi")])
    assert isinstance(
        simulator_for(static, config, None, "</finished>", AGENT), StaticUserSimulator
    )
