"""A whole conversation as a conversation-level judge reads it.

* :func:`transcript`: every turn in order, each line numbered by its turn: the user's message,
  then the turn's steps (the agent's intermediate text, each tool call with its arguments as
  JSON, each tool's result), then the agent's final reply. Recorded events keep their order and
  their author; a static turn (``tool_uses``/``tool_responses``) lists its calls, then its
  responses, then its intermediate responses.
* :func:`agents_instructions`, :func:`agents_tools`: every agent's instructions and declared
  tools (name and description) over all turns, each once.

ADK 2.13's multi-turn rubric judge reads events only, so it shows no tool call of a static turn;
assay shows them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from assay.evalset.content import Content, Part, content_text
from assay.evalset.invocation import IntermediateData, Invocation, InvocationEvents

USER = "user"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))


def _part_lines(prefix: str, who: str, part: Part) -> list[str]:
    lines = []
    if part.text and not part.thought:
        lines.append(f"{prefix} {who}: {part.text}")
    if part.function_call is not None:
        call = part.function_call
        lines.append(f"{prefix} {who} calls tool {call.name}({_json(call.args or {})})")
    if part.function_response is not None:
        response = part.function_response
        lines.append(f"{prefix} tool {response.name} returned {_json(response.response or {})}")
    return lines


def _content_lines(prefix: str, who: str, content: Content | None) -> list[str]:
    if content is None:
        return []
    return [line for part in content.parts or [] for line in _part_lines(prefix, who, part)]


def _agent(name: str | None) -> str:
    return f"agent ({name})" if name and name != USER else "agent"


def _steps(prefix: str, invocation: Invocation) -> list[str]:
    data = invocation.intermediate_data
    lines: list[str] = []
    if isinstance(data, InvocationEvents):
        for event in data.invocation_events:
            who = "user" if event.author.lower() == USER else _agent(event.author)
            lines += _content_lines(prefix, who, event.content)
    elif isinstance(data, IntermediateData):
        for call in data.tool_uses:
            lines += _part_lines(prefix, "agent", Part(function_call=call))
        for response in data.tool_responses:
            lines += _part_lines(prefix, "agent", Part(function_response=response))
        for author, parts in data.intermediate_responses:
            lines += [line for part in parts for line in _part_lines(prefix, _agent(author), part)]
    return lines


def _final_author(invocation: Invocation) -> str | None:
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        authors = [e.author for e in data.invocation_events if e.author.lower() != USER]
        return authors[-1] if authors else None
    return None


def transcript(invocations: Sequence[Invocation]) -> str:
    """The conversation, one line per message, tool call or tool result, numbered by turn."""
    lines: list[str] = []
    for number, invocation in enumerate(invocations, start=1):
        prefix = f"[turn {number}]"
        user = content_text(invocation.user_content)
        lines.append(f"{prefix} user: {user}")
        lines += _steps(prefix, invocation)
        final = content_text(invocation.final_response)
        if final:
            lines.append(f"{prefix} {_agent(_final_author(invocation))}: {final}")
        elif invocation.final_response is None:
            lines.append(f"{prefix} (the agent gave no final reply)")
    return "\n".join(lines)


def agents_instructions(invocations: Sequence[Invocation]) -> str:
    """Each agent's instructions, once, over all turns."""
    seen: dict[str, str] = {}
    for invocation in invocations:
        agents = invocation.app_details.agent_details if invocation.app_details else {}
        for name, agent in agents.items():
            if name not in seen and agent.instructions:
                seen[name] = agent.instructions
    return "\n\n".join(f"Agent {name}:\n{text}" for name, text in seen.items())


def _declared(declaration: Any) -> list[tuple[str, str]]:
    """(name, description) of each function a tool declaration holds (a ``function_declarations``
    list, or one function)."""
    if not isinstance(declaration, dict):
        return []
    functions = declaration.get("function_declarations", declaration.get("functionDeclarations"))
    if not isinstance(functions, list):
        functions = [declaration]
    return [
        (str(f.get("name")), str(f.get("description") or "").strip())
        for f in functions
        if isinstance(f, dict) and f.get("name")
    ]


def agents_tools(invocations: Sequence[Invocation]) -> str:
    """Each agent's declared tools, one line each (``- name: description``), each once."""
    by_agent: dict[str, dict[str, None]] = {}
    for invocation in invocations:
        agents = invocation.app_details.agent_details if invocation.app_details else {}
        for name, agent in agents.items():
            lines = by_agent.setdefault(name, {})
            for declaration in agent.tool_declarations:
                for tool, description in _declared(declaration):
                    lines[f"- {tool}: {description}" if description else f"- {tool}"] = None
    return "\n".join(
        "\n".join([f"Agent {name}:", *lines]) for name, lines in by_agent.items() if lines
    )
