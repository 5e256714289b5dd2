"""The handle a judged metric holds: an LLM client bound to that metric, which counts usage.

A :class:`Judge` is built once per metric per run by the runner (see ``assay.llm.selection``) and
handed to the metric. The metric builds an :class:`~assay.llm.base.LlmRequest` per invocation and
calls :meth:`Judge.ask` once per sample; the client behind it limits concurrency, retries, caches
and raises :class:`~assay.llm.base.LlmError` when a call finally fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from assay.llm.base import LlmRequest, LlmResponse, UsageLedger


class LlmCaller(Protocol):
    """What a judge needs of a client: its model string and one ``generate`` per sample."""

    @property
    def model(self) -> str:
        """The model string (``openai:gpt-4o-mini``, ``local:``, ``gemini-2.5-flash``)."""
        ...

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        """One response for ``request``; ``sample`` is part of the cache key, so the
        ``num_samples`` calls of one invocation are cached separately."""
        ...


@dataclass
class Judge:
    """An LLM client bound to one metric. ``source`` says why this model was chosen
    (``--judge-model``, ``ASSAY_JUDGE_MODEL``, ``config``, ``default``, ``embedded``)."""

    client: LlmCaller
    metric: str
    source: str = "config"
    ledger: UsageLedger = field(default_factory=UsageLedger)

    @property
    def model(self) -> str:
        """The judge's model string."""
        return self.client.model

    async def ask(self, request: LlmRequest, *, sample: int, case_id: str) -> LlmResponse:
        """Send one sample of ``request``; its usage is counted against this metric and case."""
        response = await self.client.generate(request, sample=sample)
        self.ledger.add(self.metric, case_id, response.usage)
        return response
