"""The conversation so far, as the simulated user reads it.

As ADK 2.13's ``LlmBackedUserSimulator`` renders its events: one line per text part,
``<author>: <text>``, lines separated by a blank line; thoughts are left out, and so are tool
calls and tool responses unless ``include_function_calls`` is set. Authors are ``user`` for the
user's message, each event's own author for the agent's steps, and ``agent_name`` for the final
response (ADK reads it from the final event's author; our invocations keep the final response
apart from the events).

With ``include_function_calls``, a call is written as ``<author> called tool <name> with
<arguments as JSON>`` and a response as ``tool <name> answered <response as JSON>`` (our wording).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from assay.evalset.content import Content, FunctionCall, FunctionResponse, Part
from assay.evalset.invocation import IntermediateData, Invocation, InvocationEvents

USER_AUTHOR = "user"
NO_HISTORY = "(the conversation has not started)"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _call_line(author: str, call: FunctionCall) -> str:
    return f"{author} called tool {call.name} with {_json(call.args or {})}"


def _response_line(response: FunctionResponse) -> str:
    return f"tool {response.name} answered {_json(response.response or {})}"


def _part_lines(author: str, parts: Sequence[Part], tools: bool) -> Iterator[str]:
    for part in parts:
        if part.text and not part.thought:
            yield f"{author}: {part.text}"
        elif tools and part.function_call is not None:
            yield _call_line(author, part.function_call)
        elif tools and part.function_response is not None:
            yield _response_line(part.function_response)


def _content_lines(author: str, content: Content | None, tools: bool) -> Iterator[str]:
    if content is not None and content.parts:
        yield from _part_lines(author, content.parts, tools)


def _step_lines(invocation: Invocation, agent_name: str, tools: bool) -> Iterator[str]:
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        events = data.invocation_events
        for index, event in enumerate(events):
            # An ADK recording may keep the final event's content among the events as well.
            is_last = index == len(events) - 1
            if is_last and event.content is not None and event.content == invocation.final_response:
                continue
            yield from _content_lines(event.author, event.content, tools)
    elif isinstance(data, IntermediateData):
        # The static shape does not say how calls and texts interleave: calls (each followed
        # by its response) first, then the sub-agents' texts.
        if tools:
            responses = list(data.tool_responses)
            by_id = {r.id: r for r in responses if r.id}
            for index, call in enumerate(data.tool_uses):
                yield _call_line(agent_name, call)
                response = by_id.get(call.id) if call.id else None
                if response is None and not by_id and index < len(responses):
                    response = responses[index]
                if response is not None:
                    yield _response_line(response)
        for author, parts in data.intermediate_responses:
            yield from _part_lines(author, parts, tools)


def history_lines(
    history: Sequence[Invocation], agent_name: str, *, include_function_calls: bool = False
) -> list[str]:
    """One line per message part of the conversation, in order."""
    lines: list[str] = []
    for invocation in history:
        lines += _content_lines(USER_AUTHOR, invocation.user_content, include_function_calls)
        lines += _step_lines(invocation, agent_name, include_function_calls)
        lines += _content_lines(agent_name, invocation.final_response, include_function_calls)
    return lines


def render_history(
    history: Sequence[Invocation], agent_name: str, *, include_function_calls: bool = False
) -> str:
    """The conversation as the simulated user reads it (blank lines between lines)."""
    lines = history_lines(history, agent_name, include_function_calls=include_function_calls)
    return "\n\n".join(lines) if lines else NO_HISTORY
