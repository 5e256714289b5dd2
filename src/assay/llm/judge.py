"""The handle a judged metric holds: an LLM client bound to that metric, which counts usage.

A :class:`Judge` is built once per metric per run by the runner (see ``assay.llm.selection``) and
handed to the metric. The metric builds an :class:`~assay.llm.base.LlmRequest` per invocation and
calls :meth:`Judge.ask` once per sample; the client behind it limits concurrency, retries, caches
and raises :class:`~assay.llm.base.LlmError` when a call finally fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from assay.llm.base import LlmRequest, LlmResponse, Message, UsageLedger
from assay.llm.budget import CostMeter
from assay.llm.profile import CriterionProfile


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


@runtime_checkable
class CacheReader(Protocol):
    """A client that can answer from its response cache without calling
    (:meth:`~assay.llm.client.LlmClient.cached`)."""

    async def cached(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse | None:
        """The cached response to ``request``, or None."""
        ...


@dataclass
class Judge:
    """An LLM client bound to one metric. ``source`` says why this model was chosen
    (``--judge-model``, ``ASSAY_JUDGE_MODEL``, ``config``, ``default``, ``embedded``).

    With a ``profile`` (this metric's rule from a judge profile, :mod:`assay.llm.profile`), the
    request's instructions are followed by the profile's exemplars (never one from the case
    judged); :meth:`ask` returns the judge's own answer, which the metric decides by the
    profile's threshold (:func:`assay.metrics.judging.ask_samples`), keeping both."""

    client: LlmCaller
    metric: str
    source: str = "config"
    ledger: UsageLedger = field(default_factory=UsageLedger)
    profile: CriterionProfile | None = None
    profile_source: str = ""
    """Where ``profile`` came from (a file, or the bundled alignment), for reports."""
    transcript: dict[tuple[str, str], str] | None = None
    """When given, the user message of each case's first request is kept here, by (metric,
    case id): what ``assay judge align`` shows the judge as exemplars."""
    early_stop: bool = False
    """Stop asking an invocation's samples once the majority vote is decided
    (``--early-stop-votes``; :func:`assay.metrics.judging.ask_samples`)."""
    meter: CostMeter | None = None
    """The run's cost meter (shared by every judge of the run): prices each answer, and, with
    ``--max-cost``, refuses to start a call once the cap is reached
    (:class:`~assay.llm.budget.CostCapReached`); an answer the cache holds is still served."""

    def profile_note(self) -> str | None:
        """How the profile decides this judge's verdicts, in words; None without one."""
        if self.profile is None:
            return None
        return self.profile.explain(self.profile_source)

    @property
    def vote_share(self) -> float | None:
        """The share of positive votes a verdict needs, when a votes profile sets one."""
        if self.profile is None or self.profile.decision != "votes":
            return None
        return self.profile.threshold

    @property
    def model(self) -> str:
        """The judge's model string."""
        return self.client.model

    async def ask(self, request: LlmRequest, *, sample: int, case_id: str) -> LlmResponse:
        """Send one sample of ``request``; its usage is counted against this metric and case
        (and priced by the run's :attr:`meter`). The answer is the judge's own (a profile
        decides it later, beside it). Raises :class:`~assay.llm.budget.CostCapReached` without
        calling when the run's ``--max-cost`` is reached and the response cache has no answer
        to it (one it has costs nothing, so it is served)."""
        if self.transcript is not None:
            users = [m.content for m in request.messages if m.role == "user"]
            if users:
                self.transcript.setdefault((self.metric, case_id), users[-1])
        profile = self.profile
        if profile is not None and profile.exemplars:
            request = _with_exemplars(request, profile, case_id)
        response = await self._answer(request, sample)
        self.ledger.add(self.metric, case_id, response.usage)
        if self.meter is not None:
            usage = response.usage
            self.meter.charge(self.metric, self.model, usage, batched=usage.batched)
        return response

    async def _answer(self, request: LlmRequest, sample: int) -> LlmResponse:
        """The client's answer; under a cap that refuses new calls, the cache's or the
        refusal."""
        refused = self.meter.refusal(self.model) if self.meter is not None else None
        if refused is None:
            return await self.client.generate(request, sample=sample)
        client = self.client
        hit = (
            await client.cached(request, sample=sample) if isinstance(client, CacheReader) else None
        )
        if hit is not None:
            return hit
        assert self.meter is not None
        self.meter.refused += 1
        raise refused


def _with_exemplars(request: LlmRequest, profile: CriterionProfile, case_id: str) -> LlmRequest:
    messages = list(request.messages)
    if messages and messages[0].role == "system":
        system = profile.system(messages[0].content, exclude_case=case_id)
        messages[0] = messages[0].model_copy(update={"content": system})
    else:
        messages.insert(0, Message(role="system", content=profile.system("", exclude_case=case_id)))
    return request.model_copy(update={"messages": tuple(messages)})
