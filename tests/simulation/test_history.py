"""The history the simulated user reads: ADK's rendering (text parts by author, no thoughts, no
tools), and tools only when asked for."""

from __future__ import annotations

from google.adk.evaluation.simulation.llm_backed_user_simulator import (
    LlmBackedUserSimulator as AdkSimulator,
)
from google.adk.events.event import Event
from google.genai import types

from assay.evalset.content import Content, FunctionCall, FunctionResponse, Part
from assay.evalset.invocation import IntermediateData, Invocation, InvocationEvent
from assay.simulation.history import NO_HISTORY, render_history

from ._helpers import AGENT, tool_steps, turn

HISTORY = [
    turn("I need to book a flight.", "Where to?", steps=tool_steps()),
    turn("To LAX, Tuesday morning.", "Booked flight UA 12.\nAnything else?"),
]


def _adk_events(history: list[Invocation]) -> list[Event]:
    """The session events ADK's simulator would be given for the same conversation."""
    events = []
    for invocation in history:
        events.append(Event(author="user", content=_genai(invocation.user_content)))
        data = invocation.intermediate_data
        assert data is not None and not isinstance(data, IntermediateData)
        events += [
            Event(author=e.author, content=_genai(e.content)) for e in data.invocation_events
        ]
        events.append(Event(author=AGENT, content=_genai(invocation.final_response)))
    return events


def _genai(content: Content | None) -> types.Content | None:
    if content is None:
        return None
    return types.Content.model_validate(content.model_dump(exclude_none=True))


def test_the_history_is_rendered_exactly_as_adk_renders_the_same_events() -> None:
    ours = render_history(HISTORY, AGENT)

    assert ours == AdkSimulator._summarize_conversation(_adk_events(HISTORY))
    assert ours == (
        "user: I need to book a flight.\n\n"
        "flight_finder: Three morning flights match.\n\n"
        "travel_agent: Where to?\n\n"
        "user: To LAX, Tuesday morning.\n\n"
        "travel_agent: Booked flight UA 12.\nAnything else?"
    )


def test_thoughts_and_tools_are_left_out_by_default() -> None:
    text = render_history(HISTORY, AGENT)
    assert "search flights first" not in text
    assert "search_flights" not in text


def test_tool_calls_and_responses_are_shown_when_asked_for() -> None:
    text = render_history(HISTORY[:1], AGENT, include_function_calls=True)
    assert text == (
        "user: I need to book a flight.\n\n"
        'travel_agent called tool search_flights with {"to": "LAX"}\n\n'
        'tool search_flights answered {"flights": 3}\n\n'
        "flight_finder: Three morning flights match.\n\n"
        "travel_agent: Where to?"
    )


def test_a_final_event_kept_among_the_events_is_not_repeated() -> None:
    # ADK recordings may keep the final response's content on the last event as well.
    final = Content(role="model", parts=[Part(text="Done.")])
    invocation = Invocation(
        user_content=Content(role="user", parts=[Part(text="Go")]),
        intermediate_data={"invocation_events": [{"author": "helper", "content": final}]},
        final_response=final,
    )
    assert render_history([invocation], AGENT) == "user: Go\n\ntravel_agent: Done."


def test_the_static_intermediate_shape_is_rendered_with_its_authors() -> None:
    invocation = Invocation(
        user_content=Content(role="user", parts=[Part(text="Go")]),
        intermediate_data=IntermediateData(
            tool_uses=[FunctionCall(id="c1", name="lookup", args={"q": 1})],
            tool_responses=[FunctionResponse(id="c1", name="lookup", response={"a": 2})],
            intermediate_responses=[("helper", [Part(text="Looked it up.")])],
        ),
        final_response=Content(role="model", parts=[Part(text="Here.")]),
    )
    assert render_history([invocation], AGENT) == (
        "user: Go\n\nhelper: Looked it up.\n\ntravel_agent: Here."
    )
    assert render_history([invocation], AGENT, include_function_calls=True) == (
        'user: Go\n\ntravel_agent called tool lookup with {"q": 1}\n\n'
        'tool lookup answered {"a": 2}\n\nhelper: Looked it up.\n\ntravel_agent: Here.'
    )


def test_an_empty_history_says_so_instead_of_being_blank() -> None:
    assert render_history([], AGENT) == NO_HISTORY


def test_an_invocation_without_a_final_response_shows_its_steps_only() -> None:
    invocation = Invocation(
        user_content=Content(role="user", parts=[Part(text="Go")]),
        intermediate_data={"invocation_events": [InvocationEvent(author="a", content=None)]},
    )
    assert render_history([invocation], AGENT) == "user: Go"
