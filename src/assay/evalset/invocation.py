"""One user turn and what the agent did in it, in ADK's ``Invocation`` JSON shape."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Discriminator, Field, Tag

from assay.evalset._base import AssayModel
from assay.evalset.content import (
    Content,
    FunctionCall,
    FunctionResponse,
    GenaiObject,
    JsonObject,
    Part,
)
from assay.evalset.rubric import Rubric


class IntermediateData(AssayModel):
    """The static shape of a turn's steps (what legacy files and hand-written cases use)."""

    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[Part]]] = Field(default_factory=list)


def _dropped(_value: Any) -> None:
    return None


UiOnly = Annotated[Any, AfterValidator(_dropped), Field(exclude=True, repr=False)]
"""A key the ADK web editor writes onto events for its own display, which ADK drops on load:
accepted in either spelling, always None, never written. A field rather than a model validator
that removes the keys: such a validator runs Python for every event, and made reading events
from JSON 28% slower."""


class InvocationEvent(AssayModel):
    """One event of a turn as recorded at inference: who wrote it and its content."""

    author: str
    content: Content | None = None
    grounding_metadata: GenaiObject | None = None
    usage_metadata: GenaiObject | None = None
    model_version: str | None = None
    invocation_index: UiOnly = None
    tool_use_index: UiOnly = None


class InvocationEvents(AssayModel):
    """The event shape of a turn's steps (what inference records)."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


def _intermediate_kind(value: Any) -> str:
    if isinstance(value, InvocationEvents):
        return "events"
    if isinstance(value, dict) and ("invocation_events" in value or "invocationEvents" in value):
        return "events"
    return "data"


IntermediateDataType = Annotated[
    Annotated[IntermediateData, Tag("data")] | Annotated[InvocationEvents, Tag("events")],
    Discriminator(_intermediate_kind),
]


class AgentDetails(AssayModel):
    """One agent of the app: its instructions and the tools declared to it."""

    name: str
    instructions: str = ""
    tool_declarations: list[Any] = Field(default_factory=list)


class AppDetails(AssayModel):
    """The agents of the app under test, keyed by agent name (filled in at inference)."""

    agent_details: dict[str, AgentDetails] = Field(default_factory=dict)


class Invocation(AssayModel):
    """One user turn: the user's message, the agent's steps and its final response."""

    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateDataType | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None

    def tool_calls(self) -> list[FunctionCall]:
        """Every tool call of the turn, in order (``tool_uses``, or the events' function calls)."""
        data = self.intermediate_data
        if data is None:
            return []
        if isinstance(data, IntermediateData):
            return list(data.tool_uses)
        return [
            part.function_call
            for event in data.invocation_events
            if event.content is not None and event.content.parts
            for part in event.content.parts
            if part.function_call is not None
        ]

    def tool_responses(self) -> list[FunctionResponse]:
        """Every tool response of the turn, in order."""
        data = self.intermediate_data
        if data is None:
            return []
        if isinstance(data, IntermediateData):
            return list(data.tool_responses)
        return [
            part.function_response
            for event in data.invocation_events
            if event.content is not None and event.content.parts
            for part in event.content.parts
            if part.function_response is not None
        ]

    def usage_metadata(self) -> list[JsonObject]:
        """The token-usage records of the turn's model calls (events shape only)."""
        data = self.intermediate_data
        if not isinstance(data, InvocationEvents):
            return []
        return [e.usage_metadata for e in data.invocation_events if e.usage_metadata is not None]
