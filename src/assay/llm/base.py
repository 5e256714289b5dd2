"""What an LLM call is: a request, a response with its token usage, the backend protocol, errors.

Every LLM call assay makes (judges, the user simulator) is an :class:`LlmRequest` sent through an
:class:`~assay.llm.client.LlmClient` to an :class:`LlmBackend`. A backend does one thing: send one
request and return one :class:`LlmResponse`, or raise an :class:`LlmError` that says whether a
retry could help. Limits, retries, the cache and token accounting live in the client, once.

::

    LlmError                      a call failed; ``retryable`` says whether to try again
     ├── LlmUnavailableError      the backend cannot be used at all (extra missing, no key, bad
     │                            model string); never retried; the message says how to fix it
     └── LlmCallError             one call failed (HTTP status, timeout, connection, bad body)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from assay.errors import AssayError

Role = Literal["system", "user", "assistant"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Message(_Frozen):
    """One chat message."""

    role: Role
    content: str


_GENERATION_KEYS = {
    "temperature": "temperature",
    "max_output_tokens": "max_tokens",
    "maxOutputTokens": "max_tokens",
}
"""The entries of a model configuration (a criterion's ``judge_model_config``, a simulator's
``model_configuration``: ADK's GenerateContentConfig) that become a request's own settings."""


def generation_settings(configuration: Mapping[str, Any] | None) -> dict[str, Any]:
    """The :class:`LlmRequest` keyword arguments for a model configuration: ``temperature`` and
    ``max_tokens`` (either spelling) when they are numbers, and ``params``: every other entry,
    passed to the backend as it is."""
    settings: dict[str, Any] = {}
    params: dict[str, Any] = {}
    for key, value in (configuration or {}).items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if key in _GENERATION_KEYS and number:
            field = _GENERATION_KEYS[key]
            settings[field] = int(value) if field == "max_tokens" else float(value)
        else:
            params[key] = value
    return {**settings, "params": params}


class LlmRequest(_Frozen):
    """One chat completion request, independent of the backend.

    ``response_schema`` (a JSON schema) and ``grammar`` (llama.cpp GBNF) ask for structured
    output; each backend uses what it supports and ignores the rest, so a parser must still accept
    free text. ``params`` are extra generation settings passed through to the backend (from a
    criterion's ``judge_model_config``: ``top_p``, ``seed``, ...).
    """

    messages: tuple[Message, ...]
    temperature: float | None = None
    max_tokens: int | None = None
    response_schema: dict[str, Any] | None = None
    schema_name: str = "verdict"
    grammar: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def user(cls, text: str, *, system: str | None = None, **kwargs: Any) -> LlmRequest:
        """A request with one user message (after an optional system message)."""
        messages = [Message(role="system", content=system)] if system else []
        messages.append(Message(role="user", content=text))
        return cls(messages=tuple(messages), **kwargs)


class TokenUsage(_Frozen):
    """Tokens and calls. ``calls`` reached the backend; ``cache_hits`` were answered from the
    cache (their tokens are not counted again); ``retries`` are extra attempts after failures.
    ``batched`` is the part of it a provider's batch API answered (priced at the batch rate:
    :func:`assay.llm.prices.cost_usd`); None when no part was."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    batched: TokenUsage | None = None

    @model_serializer(mode="wrap")
    def _unbatched_as_before(self, dump: SerializerFunctionWrapHandler) -> Any:
        """Usage no batch answered is written as it was before ``batched`` existed."""
        data = dump(self)
        if self.batched is None and isinstance(data, dict):
            data.pop("batched", None)
        return data

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
            cache_hits=self.cache_hits + other.cache_hits,
            retries=self.retries + other.retries,
            batched=_sum(self.batched, other.batched),
        )


def _sum(one: TokenUsage | None, other: TokenUsage | None) -> TokenUsage | None:
    """Two optional usages added (None when both are)."""
    if one is None or other is None:
        return one if other is None else other
    return one + other


class Choice(_Frozen):
    """One closed choice in a structured answer (a JSON string from an ``enum``, or a boolean),
    with the model's probability of each option there, where the backend gives them.

    ``path`` is where the value sits in the answer (``verdict``, ``verdicts[1].verdict``);
    ``start`` is the character offset of its JSON literal in the text (``"valid"``, ``true``);
    ``chosen`` is the option written; ``probabilities`` maps every option (as a JSON value:
    ``"valid"``, ``"true"``) to its probability, summing to 1 over the options.
    """

    path: str
    start: int
    chosen: str
    probabilities: dict[str, float]

    def probability(self, option: str) -> float:
        """The probability of ``option`` (0 for an option not offered)."""
        return self.probabilities.get(option, 0.0)


class LlmResponse(_Frozen):
    """What a backend returned: the text, the tokens it cost, and the raw body (for debugging).

    ``usage`` is the usage of this one response (one call, or one cache hit, plus any retries the
    client needed to get it). ``raw`` never holds request headers, so it never holds a key.
    ``choices`` are the closed choices of a structured answer with the model's probability of
    each option, in the order of the text, where the backend gives log-probabilities (the
    embedded runtime; an OpenAI-compatible server that returns ``logprobs``); else empty.
    """

    text: str
    model: str
    usage: TokenUsage = Field(default_factory=TokenUsage)
    raw: dict[str, Any] | None = None
    cached: bool = False
    choices: tuple[Choice, ...] = ()


class LlmError(AssayError):
    """An LLM call failed. ``retryable`` says whether trying again could help; ``retry_after``
    is the server's requested wait in seconds (HTTP ``Retry-After``), if it sent one."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        retryable: bool | None = None,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


class LlmUnavailableError(LlmError):
    """The backend cannot be used here; the message says how to fix that. Never retried."""

    retryable = False


class LlmCallError(LlmError):
    """One call failed: an HTTP error status, a timeout, a dropped connection, a malformed body."""


class LlmBackend(Protocol):
    """Sends one request to one model. Implementations raise :class:`LlmError`, never anything
    else, and never put an API key in a message."""

    @property
    def name(self) -> str:
        """The backend kind: ``openai``, ``ollama``, ``litellm``, ``gemini``, ``local``,
        ``scripted``."""
        ...

    @property
    def model(self) -> str:
        """The model string as the user wrote it (``openai:gpt-4o-mini``)."""
        ...

    def cache_identity(self) -> Mapping[str, Any]:
        """What besides the model names the responses this backend gives (a base URL, the
        sha256 of a local model file); part of the cache key. Never a secret."""
        ...

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """Send one request; return the response or raise :class:`LlmError`."""
        ...

    async def aclose(self) -> None:
        """Release connections, threads or loaded models."""
        ...


@dataclass
class UsageLedger:
    """Token usage summed per (metric, case) and per metric, for the console and the output."""

    by_key: dict[tuple[str, str], TokenUsage] = field(default_factory=dict)

    def add(self, metric: str, case_id: str, usage: TokenUsage) -> None:
        """Count ``usage`` against a metric and a case."""
        key = (metric, case_id)
        self.by_key[key] = self.by_key.get(key, TokenUsage()) + usage

    def for_case(self, case_id: str) -> dict[str, TokenUsage]:
        """Usage per metric for one case."""
        return {m: u for (m, c), u in self.by_key.items() if c == case_id}

    def by_metric(self) -> dict[str, TokenUsage]:
        """Usage per metric over every case."""
        out: dict[str, TokenUsage] = {}
        for (metric, _), usage in self.by_key.items():
            out[metric] = out.get(metric, TokenUsage()) + usage
        return out

    def total(self) -> TokenUsage:
        """Usage over everything."""
        out = TokenUsage()
        for usage in self.by_key.values():
            out = out + usage
        return out
