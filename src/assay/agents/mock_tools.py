"""``--mock-tools``: tool calls answered from the responses recorded in the eval case, not by
running the tools. The runner gives each session such a tool runner when the run mocks tools; an
agent played by a model (:mod:`assay.agents.model`) always has one, having no tools of its own."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from assay.agents.base import ToolRunner
from assay.evalset.case import EvalCase


def _tool_key(name: str, args: Any) -> str:
    return json.dumps([name, args], sort_keys=True, default=str)


def recorded_tools(case: EvalCase) -> dict[str, Any]:
    """The tool responses recorded in the case's conversation, by tool name and arguments."""
    found: dict[str, Any] = {}
    for invocation in case.conversation or []:
        responses = invocation.tool_responses()
        by_id = {r.id: r for r in responses if r.id}
        for index, call in enumerate(invocation.tool_calls()):
            response = by_id.get(call.id) if call.id else None
            if response is None and index < len(responses):
                response = responses[index]
            if call.name and response is not None:
                found.setdefault(_tool_key(call.name, call.args or {}), response.response)
    return found


def mock_tool_runner(case: EvalCase) -> ToolRunner:
    """Answer tool calls from the case's recorded responses (same name, same arguments)."""
    recorded = recorded_tools(case)

    async def run(name: str, args: dict[str, Any], function: Callable[..., Any] | None) -> Any:
        key = _tool_key(name, args)
        if key in recorded:
            return recorded[key]
        return {"error": f"no recorded response for tool {name!r} with arguments {args}"}

    return run
