"""What an LLM judge is shown of an invocation, read the way ADK 2.13's judges read it.

* :func:`final_text`: the final response's text; with ``include_intermediate_responses_in_final``
  the text of every intermediate event (or static ``intermediate_responses`` entry) comes first,
  one per line, then the final response.
* :func:`tool_steps_json`: each tool call with its response (paired by call id; the last
  response with that id wins, and calls without an id share the last id-less response, as in
  ADK), or :data:`NO_STEPS`.
* :func:`tool_declarations_json`: the tools declared to each agent, or :data:`NO_TOOLS`.
* :func:`developer_instructions`: the instructions of the agent that wrote the first event, or of
  the first agent in ``app_details`` when there are no events.
* :func:`grounding_metadata_json`: grounding metadata recorded on events, or None.

The JSON is compact (one tool step per line), since the embedded judge reads a few dozen tokens
a second.
"""

from __future__ import annotations

import json
from typing import Any

from assay.evalset.content import FunctionCall, FunctionResponse, Part, content_text
from assay.evalset.invocation import AppDetails, IntermediateData, Invocation, InvocationEvents

NO_TOOLS = "Agent has no tools."
NO_STEPS = "No intermediate steps were taken."


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _parts_text(parts: list[Part]) -> str:
    return "\n".join(part.text for part in parts if part.text)


def user_text(invocation: Invocation) -> str:
    """The user's message."""
    return content_text(invocation.user_content)


def final_text(invocation: Invocation, *, include_intermediate: bool = False) -> str:
    """The final response's text, after the intermediate responses' text when asked."""
    if not include_intermediate:
        return content_text(invocation.final_response)
    texts: list[str] = []
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        texts = [content_text(event.content) for event in data.invocation_events]
    elif isinstance(data, IntermediateData):
        texts = [_parts_text(parts) for _, parts in data.intermediate_responses]
    texts.append(content_text(invocation.final_response))
    return "\n".join(text for text in texts if text)


def tool_steps(invocation: Invocation) -> list[tuple[FunctionCall, FunctionResponse | None]]:
    """Each tool call with its response (matched by id), in call order."""
    responses = {response.id: response for response in invocation.tool_responses()}
    return [(call, responses.get(call.id)) for call in invocation.tool_calls()]


def tool_steps_json(invocation: Invocation) -> str:
    """The tool calls and their responses as JSON, one step per line, or :data:`NO_STEPS`."""
    steps = tool_steps(invocation)
    if not steps:
        return NO_STEPS
    lines = [
        _json(
            {
                "step": index,
                "tool_call": call.model_dump(mode="json", exclude_none=True),
                "tool_response": (
                    response.model_dump(mode="json", exclude_none=True)
                    if response is not None
                    else "None"
                ),
            }
        )
        for index, (call, response) in enumerate(steps)
    ]
    return '{"tool_calls_and_response": [\n' + ",\n".join(lines) + "\n]}"


def tool_declarations_json(app_details: AppDetails | None) -> str:
    """The tools declared to each agent as JSON, or :data:`NO_TOOLS` when no agent has any."""
    if app_details is None or not any(
        agent.tool_declarations for agent in app_details.agent_details.values()
    ):
        return NO_TOOLS
    declarations = {
        name: agent.tool_declarations for name, agent in app_details.agent_details.items()
    }
    return _json({"tool_declarations": declarations})


def developer_instructions(invocation: Invocation) -> str:
    """The instructions of the agent that answered: the first event's author, or the first
    agent of ``app_details`` when the turn has no events. Empty when unknown (ADK raises when
    the first event's author is not in ``app_details``)."""
    app_details = invocation.app_details
    if app_details is None:
        return ""
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents) and data.invocation_events:
        agent_name: str | None = data.invocation_events[0].author
    else:
        agent_name = next(iter(app_details.agent_details), None)
    agent = app_details.agent_details.get(agent_name) if agent_name is not None else None
    return agent.instructions if agent is not None else ""


def grounding_metadata_json(invocation: Invocation) -> str | None:
    """The grounding metadata recorded on the turn's events as JSON, or None when there is none
    (static intermediate data never has any)."""
    data = invocation.intermediate_data
    if not isinstance(data, InvocationEvents):
        return None
    entries = [
        {"step": index, "author": event.author, "grounding_metadata": event.grounding_metadata}
        for index, event in enumerate(data.invocation_events)
        if event.grounding_metadata is not None
    ]
    return _json({"grounding_metadata": entries}) if entries else None
