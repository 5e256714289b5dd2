"""LlmBackedUserSimulator: ADK 2.13's turn logic, our instructions, the run's stop signal."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from assay.evalset.case import UserBehavior, UserPersona
from assay.evalset.invocation import Invocation
from assay.llm.base import LlmCallError, LlmRequest, Message, TokenUsage
from assay.simulation import (
    DEFAULT_STOP_SIGNAL,
    LlmBackedUserSimulator,
    NextUserMessage,
    SimulatorStatus,
    UserSimulatorConfig,
    UserSimulatorError,
)

from ._helpers import AGENT, PLAN, START, scenario, scripted, tool_steps, turn

HISTORY = [turn(START, "Sure. Where are you flying to, and when?", steps=tool_steps())]


def _simulator(
    replies: str | Sequence[str | LlmCallError],
    *,
    config: UserSimulatorConfig | None = None,
    persona: UserPersona | str | None = None,
    stop_signal: str = DEFAULT_STOP_SIGNAL,
) -> tuple[LlmBackedUserSimulator, list[LlmRequest]]:
    client, backend = scripted(replies)
    simulator = LlmBackedUserSimulator(scenario(persona), config, client, stop_signal, AGENT)
    return simulator, backend.requests


def _ask(simulator: LlmBackedUserSimulator, *histories: list[Invocation]) -> list[NextUserMessage]:
    async def run() -> list[NextUserMessage]:
        return [await simulator.next_message(history) for history in histories]

    return asyncio.run(run())


def _text(answer: NextUserMessage) -> str:
    assert answer.user_message is not None and answer.user_message.parts
    return answer.user_message.parts[0].text or ""


def _all_text(request: LlmRequest) -> str:
    return "\n".join(m.content for m in request.messages)


# --- the first message ------------------------------------------------------------------------


def test_the_first_message_is_the_starting_prompt_verbatim_without_an_llm_call() -> None:
    client, backend = scripted("unused")
    prompt = "  I need to book a flight.\n"
    simulator = LlmBackedUserSimulator(
        scenario(starting_prompt=prompt), None, client, "</finished>", AGENT
    )

    (answer,) = _ask(simulator, [])

    assert answer.status is SimulatorStatus.SUCCESS
    assert answer.user_message is not None
    assert answer.user_message.role == "user"
    assert _text(answer) == prompt
    assert backend.requests == []
    assert simulator.usage == TokenUsage()


def test_later_messages_come_from_the_llm_as_user_content() -> None:
    simulator, requests = _simulator(["To LAX next Tuesday, in the morning."])

    first, second = _ask(simulator, [], HISTORY)

    assert _text(first) == START
    assert second.status is SimulatorStatus.SUCCESS
    assert second.user_message is not None and second.user_message.role == "user"
    assert _text(second) == "To LAX next Tuesday, in the morning."
    assert len(requests) == 1
    assert simulator.usage == TokenUsage(
        prompt_tokens=simulator.usage.prompt_tokens, completion_tokens=7, calls=1
    )


# --- the default instructions ---------------------------------------------------------------


def test_the_default_request_puts_instructions_first_and_the_plan_and_history_last() -> None:
    simulator, requests = _simulator(["Tuesday."])

    _ask(simulator, [], HISTORY)

    (request,) = requests
    system, user = request.messages
    assert (system.role, user.role) == ("system", "user")
    assert DEFAULT_STOP_SIGNAL in system.content
    assert PLAN not in system.content
    assert user.content.index(PLAN) < user.content.index(f"user: {START}")
    assert "travel_agent: Sure. Where are you flying to, and when?" in user.content
    assert "flight_finder: Three morning flights match." in user.content
    assert "search_flights" not in user.content  # tool calls are not shown by default
    assert "I should search flights first." not in user.content  # nor thoughts


def test_include_function_calls_shows_the_tools_to_the_simulated_user() -> None:
    config = UserSimulatorConfig(include_function_calls=True)
    simulator, requests = _simulator(["Tuesday."], config=config)

    _ask(simulator, [], HISTORY)

    assert 'travel_agent called tool search_flights with {"to": "LAX"}' in _all_text(requests[0])


def test_model_configuration_sets_temperature_and_max_tokens_and_passes_the_rest() -> None:
    config = UserSimulatorConfig(
        model_configuration={"temperature": 0.4, "maxOutputTokens": 256, "top_p": 0.9}
    )
    simulator, requests = _simulator(["Tuesday."], config=config)

    _ask(simulator, [], HISTORY)

    (request,) = requests
    assert (request.temperature, request.max_tokens, request.params) == (0.4, 256, {"top_p": 0.9})


def test_without_model_configuration_the_backend_defaults_apply() -> None:
    simulator, requests = _simulator(["Tuesday."])
    _ask(simulator, [], HISTORY)
    assert (requests[0].temperature, requests[0].max_tokens, requests[0].params) == (None, None, {})


# --- the stop signal ------------------------------------------------------------------------


@pytest.mark.parametrize("reply", ["</finished>", "Thanks, that's all! </FINISHED>", "</Finished>"])
def test_a_reply_containing_the_stop_signal_in_any_case_ends_the_conversation(reply: str) -> None:
    simulator, _ = _simulator([reply])

    _, answer = _ask(simulator, [], HISTORY)

    assert answer.status is SimulatorStatus.STOP_SIGNAL_DETECTED
    assert answer.user_message is None
    assert answer.reason == "the simulated user wrote the stop signal '</finished>'"


def test_a_custom_stop_signal_is_asked_for_and_detected_and_adks_default_is_not() -> None:
    simulator, requests = _simulator(
        ["I'm done here </finished>", "all good, <<END>>"], stop_signal="<<end>>"
    )

    _, not_the_signal, the_signal = _ask(simulator, [], HISTORY, HISTORY)

    assert not_the_signal.status is SimulatorStatus.SUCCESS
    assert _text(not_the_signal) == "I'm done here </finished>"
    assert the_signal.status is SimulatorStatus.STOP_SIGNAL_DETECTED
    assert the_signal.reason == "the simulated user wrote the stop signal '<<end>>'"
    for request in requests:
        assert "<<end>>" in request.messages[0].content
        assert "</finished>" not in _all_text(request)


def test_a_starting_prompt_holding_the_stop_signal_stops_as_in_adk() -> None:
    client, backend = scripted("unused")
    simulator = LlmBackedUserSimulator(
        scenario(starting_prompt="hi </finished>"), None, client, "</finished>", AGENT
    )
    (answer,) = _ask(simulator, [])
    assert answer.status is SimulatorStatus.STOP_SIGNAL_DETECTED
    assert backend.requests == []


def test_an_empty_stop_signal_is_refused() -> None:
    with pytest.raises(UserSimulatorError, match="stop signal is empty"):
        _simulator("x", stop_signal="  ")


# --- the turn limit -------------------------------------------------------------------------


def test_the_turn_limit_counts_the_starting_prompt() -> None:
    config = UserSimulatorConfig(max_allowed_invocations=3)
    simulator, requests = _simulator(["second", "third", "fourth"], config=config)

    answers = _ask(simulator, [], HISTORY, HISTORY, HISTORY, HISTORY)

    assert [a.status for a in answers] == [SimulatorStatus.SUCCESS] * 3 + [
        SimulatorStatus.TURN_LIMIT_REACHED
    ] * 2
    assert [_text(a) for a in answers[:3]] == [START, "second", "third"]
    assert len(requests) == 2  # no call once the limit is reached
    assert answers[3].reason == "the simulated user reached max_allowed_invocations (3 messages)"


def test_a_limit_of_one_allows_only_the_starting_prompt() -> None:
    simulator, requests = _simulator(["x"], config=UserSimulatorConfig(max_allowed_invocations=1))
    first, second = _ask(simulator, [], HISTORY)
    assert (first.status, second.status) == (
        SimulatorStatus.SUCCESS,
        SimulatorStatus.TURN_LIMIT_REACHED,
    )
    assert requests == []


def test_the_default_limit_is_adks_twenty_messages() -> None:
    simulator, requests = _simulator(["more"])
    answers = _ask(simulator, *([HISTORY] * 21))
    assert [a.status for a in answers].count(SimulatorStatus.SUCCESS) == 20
    assert answers[-1].status is SimulatorStatus.TURN_LIMIT_REACHED
    assert len(requests) == 19


def test_minus_one_means_no_limit() -> None:
    config = UserSimulatorConfig(max_allowed_invocations=-1)
    simulator, requests = _simulator(["more"], config=config)

    answers = _ask(simulator, *([HISTORY] * 45))

    assert {a.status for a in answers} == {SimulatorStatus.SUCCESS}
    assert len(requests) == 44


# --- no message -----------------------------------------------------------------------------


@pytest.mark.parametrize("reply", ["", "  \n "])
def test_an_empty_reply_is_no_message_generated_with_a_reason(reply: str) -> None:
    simulator, _ = _simulator([reply])

    _, answer = _ask(simulator, [], HISTORY)

    assert answer.status is SimulatorStatus.NO_MESSAGE_GENERATED
    assert answer.user_message is None
    assert answer.reason == "the simulated user's model (scripted:sim) gave an empty reply"


def test_a_failed_call_is_no_message_generated_with_the_error() -> None:
    simulator, _ = _simulator([LlmCallError("HTTP 503: overloaded", retryable=False)])

    _, answer = _ask(simulator, [], HISTORY)

    assert answer.status is SimulatorStatus.NO_MESSAGE_GENERATED
    assert answer.reason == "the simulated user's model (scripted:sim) failed: HTTP 503: overloaded"


def test_an_empty_starting_prompt_is_no_message_generated() -> None:
    client, _ = scripted("unused")
    simulator = LlmBackedUserSimulator(scenario(starting_prompt=""), None, client, "</x>", AGENT)
    (answer,) = _ask(simulator, [])
    assert answer.status is SimulatorStatus.NO_MESSAGE_GENERATED
    assert answer.reason == "the scenario's starting_prompt is empty"


# --- custom instructions --------------------------------------------------------------------


def test_custom_instructions_fill_every_placeholder_and_go_as_one_user_message() -> None:
    template = (
        "PLAN<{{ conversation_plan }}>\nHISTORY<{{ conversation_history }}>\n"
        "STOP<{{ stop_signal }}>\nUNKNOWN<{{ not_supplied }}>"
    )
    config = UserSimulatorConfig(custom_instructions=template)
    simulator, requests = _simulator(["ok"], config=config, stop_signal="[[bye]]")

    _ask(simulator, [], HISTORY)

    (request,) = requests
    assert request.messages == (
        Message(
            role="user",
            content=(
                f"PLAN<{PLAN}>\n"
                f"HISTORY<user: {START}\n\nflight_finder: Three morning flights match.\n\n"
                "travel_agent: Sure. Where are you flying to, and when?>\n"
                "STOP<[[bye]]>\nUNKNOWN<>"
            ),
        ),
    )


def test_custom_instructions_with_a_persona_see_it_and_its_rendered_behaviours() -> None:
    template = (
        "{{ stop_signal }} {{ conversation_plan }} {{ conversation_history }}\n"
        "WHO<{{ persona.id }}: {{ persona.description }}>\n"
        "{% for b in persona.behaviors %}[{{ b.name }}]\n{{ b.get_behavior_instructions_str() }}\n"
        "{{ b.get_violation_rubrics_str() | render_string_filter }}{% endfor %}\n"
        "ALL<{{ persona }}>"
    )
    persona = UserPersona(
        id="TERSE",
        description="Says little.",
        behaviors=[
            UserBehavior(
                name="Brief",
                description="Short messages.",
                behavior_instructions=["Write {{ stop_signal }} when done."],
                violation_rubrics=["Forgets {{ stop_signal }}."],
            )
        ],
    )
    config = UserSimulatorConfig(custom_instructions=template)
    simulator, requests = _simulator(["ok"], config=config, persona=persona, stop_signal="<bye>")

    _ask(simulator, [], HISTORY)

    text = requests[0].messages[0].content
    assert "WHO<TERSE: Says little.>" in text
    assert "[Brief]\n  - Write <bye> when done.\n  - Forgets <bye>." in text
    assert "ALL<TERSE: Says little.\n\nHow this persona behaves:\n\nBrief: Short messages." in text
    assert "{{" not in text


def test_custom_instructions_must_use_the_persona_when_the_scenario_has_one() -> None:
    config = UserSimulatorConfig(
        custom_instructions="{{ stop_signal }} {{ conversation_plan }} {{ conversation_history }}"
    )
    with pytest.raises(UserSimulatorError, match=r"\{\{ persona \}\}.*has a user_persona"):
        _simulator(["ok"], config=config, persona="EXPERT")


# --- personas -------------------------------------------------------------------------------


def test_a_built_in_persona_named_by_id_shapes_the_instructions_with_the_runs_stop_signal() -> None:
    simulator, requests = _simulator(["ok"], persona="NOVICE", stop_signal="<<done>>")

    _ask(simulator, [], HISTORY)

    assert simulator.persona is not None and simulator.persona.id == "NOVICE"
    system = requests[0].messages[0].content
    assert simulator.persona.description in system
    assert "# Your persona" in system
    for behavior in simulator.persona.behaviors:
        assert f"## {behavior.name}" in system
    assert "end the conversation by writing <<done>>." in system
    assert "{{" not in system and "</finished>" not in system
    # The persona's behaviours replace the general rules for moving on, correcting and finishing.
    assert "# Choosing your next message" not in system


def test_a_persona_object_is_used_as_given() -> None:
    persona = UserPersona(
        id="CAREFUL",
        description="Double-checks every detail.",
        behaviors=[
            UserBehavior(
                name="Confirm",
                description="Asks for confirmation.",
                behavior_instructions=["Ask the agent to confirm before {{ stop_signal }}."],
            )
        ],
    )
    simulator, requests = _simulator(["ok"], persona=persona, stop_signal="#over#")

    _ask(simulator, [], HISTORY)

    system = requests[0].messages[0].content
    assert simulator.persona == persona
    assert "Double-checks every detail." in system
    assert (
        "## Confirm\nAsks for confirmation.\n  - Ask the agent to confirm before #over#." in system
    )
    assert system.rstrip().endswith("When the conversation is over, write #over#.")


def test_an_unknown_persona_id_is_an_error_listing_the_built_in_ones() -> None:
    with pytest.raises(UserSimulatorError) as caught:
        _simulator(["ok"], persona="expert")
    assert str(caught.value) == (
        "unknown user_persona id 'expert': did you mean 'EXPERT'? the built-in personas are "
        "EXPERT, NOVICE, EVALUATOR (or give a persona object with id, description and behaviors)"
    )


def test_a_persona_text_that_is_not_a_valid_template_is_an_error_naming_it() -> None:
    persona = UserPersona(
        id="BROKEN", description="ok", behaviors=[UserBehavior(name="b", description="{{ oops")]
    )
    with pytest.raises(UserSimulatorError, match=r"user_persona\.behaviors\[0\]\.description is"):
        _simulator(["ok"], persona=persona)


def test_custom_instructions_are_rendered_in_jinjas_sandbox() -> None:
    config = UserSimulatorConfig(
        custom_instructions="{{ stop_signal }} {{ conversation_plan }} {{ conversation_history }} "
        "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    )
    simulator, requests = _simulator(["ok"], config=config)

    with pytest.raises(UserSimulatorError, match="cannot be rendered: SecurityError"):
        _ask(simulator, [], HISTORY)
    assert requests == []
