"""Builders shared by the simulation tests: scenarios, invocations, a scripted client."""

from __future__ import annotations

from collections.abc import Sequence

from assay.evalset.case import ConversationScenario, UserPersona
from assay.evalset.content import Content, FunctionCall, FunctionResponse, Part
from assay.evalset.invocation import Invocation, InvocationEvent, InvocationEvents
from assay.llm.backends.scripted import Reply, ReplyFunction, ScriptedBackend
from assay.llm.client import LlmClient, RetryPolicy

PLAN = "You want a one-way flight from SFO to LAX next Tuesday, morning, under $150."
START = "I need to book a flight."
AGENT = "travel_agent"


def scenario(persona: UserPersona | str | None = None, **kwargs: str) -> ConversationScenario:
    """A travel scenario, with an optional persona."""
    kwargs.setdefault("starting_prompt", START)
    kwargs.setdefault("conversation_plan", PLAN)
    return ConversationScenario(user_persona=persona, **kwargs)


def scripted(
    replies: str | Sequence[Reply] | ReplyFunction,
) -> tuple[LlmClient, ScriptedBackend]:
    """A client (no retries, no cache) over a scripted backend, and the backend (its
    ``requests`` are what the simulator sent)."""
    backend = ScriptedBackend(replies, model="scripted:sim")
    return LlmClient(backend, retry=RetryPolicy(max_attempts=1)), backend


def turn(user: str, answer: str, *, steps: Sequence[InvocationEvent] = ()) -> Invocation:
    """One completed invocation: the user's text, the agent's steps and its final answer."""
    return Invocation(
        user_content=Content(role="user", parts=[Part(text=user)]),
        intermediate_data=InvocationEvents(invocation_events=list(steps)),
        final_response=Content(role="model", parts=[Part(text=answer)]),
    )


def tool_steps(author: str = AGENT) -> list[InvocationEvent]:
    """A thought, a tool call, its response, and a sub-agent's text."""
    return [
        InvocationEvent(
            author=author,
            content=Content(
                role="model",
                parts=[
                    Part(text="I should search flights first.", thought=True),
                    Part(function_call=FunctionCall(name="search_flights", args={"to": "LAX"})),
                ],
            ),
        ),
        InvocationEvent(
            author=author,
            content=Content(
                role="user",
                parts=[
                    Part(
                        function_response=FunctionResponse(
                            name="search_flights", response={"flights": 3}
                        )
                    )
                ],
            ),
        ),
        InvocationEvent(
            author="flight_finder",
            content=Content(role="model", parts=[Part(text="Three morning flights match.")]),
        ),
    ]
