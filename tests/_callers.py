"""A scripted judge client for metric unit tests: it answers each request from a function of
the request (or raises the error the function returns) and records every request."""

from __future__ import annotations

from collections.abc import Callable

from assay.llm.base import LlmError, LlmRequest, LlmResponse, TokenUsage

Reply = Callable[[LlmRequest], "str | LlmError"]
ANSWER_USAGE = TokenUsage(prompt_tokens=7, completion_tokens=3, calls=1)


class FakeCaller:
    """A judge client answering from ``reply``; each answer costs ``usage``."""

    model = "scripted:test"

    def __init__(
        self,
        reply: Reply,
        usage: TokenUsage = ANSWER_USAGE,
    ) -> None:
        self.reply = reply
        self.usage = usage
        self.requests: list[LlmRequest] = []

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        self.requests.append(request)
        answer = self.reply(request)
        if isinstance(answer, LlmError):
            raise answer
        return LlmResponse(text=answer, model=self.model, usage=self.usage)
