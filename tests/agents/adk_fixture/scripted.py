"""A model for tests: answers from a script instead of calling anything (no network, no key).

Each request is answered by looking at its last message: after a tool's response, the script's
``"after:<tool name>"`` entry; otherwise the first entry whose key occurs in the last user text.
An entry is a reply text, a tool call ``{"call": name, "args": {...}}``, or a list of those (one
response with several parts). A request the script does not cover raises :class:`LookupError`,
which is how a test makes the model fail. Responses carry token counts, as a real model's do.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

Reply = str | dict[str, Any] | list[str | dict[str, Any]]


def _part(reply: str | dict[str, Any]) -> types.Part:
    if isinstance(reply, str):
        return types.Part(text=reply)
    return types.Part(function_call=types.FunctionCall(name=reply["call"], args=reply["args"]))


def request_key(request: LlmRequest) -> str:
    """What the script is looked up by: ``after:<tool>`` or the last message's text."""
    last = request.contents[-1] if request.contents else types.Content(parts=[])
    responses = [p.function_response for p in last.parts or [] if p.function_response]
    if responses:
        return f"after:{responses[-1].name}"
    return "\n".join(p.text for p in last.parts or [] if p.text)


class ScriptedLlm(BaseLlm):
    """A deterministic stand-in for a model, keyed on the last message of the request."""

    model: str = "scripted"
    script: dict[str, Reply]

    def reply_for(self, request: LlmRequest) -> Reply:
        """The script's entry for ``request`` (exact key, else the first key found in it)."""
        key = request_key(request)
        if key in self.script:
            return self.script[key]
        for candidate, reply in self.script.items():
            if not candidate.startswith("after:") and candidate in key:
                return reply
        raise LookupError(f"the scripted model has no reply for {key!r}")

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One response with the scripted parts."""
        reply = self.reply_for(llm_request)
        replies = reply if isinstance(reply, list) else [reply]
        content = types.Content(role="model", parts=[_part(r) for r in replies])
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10 * len(llm_request.contents),
            candidates_token_count=5 * len(replies),
            total_token_count=10 * len(llm_request.contents) + 5 * len(replies),
        )
        yield LlmResponse(content=content, usage_metadata=usage, model_version="scripted-1")
