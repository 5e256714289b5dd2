"""The one place LLM calls are limited, retried, cached and counted.

An :class:`LlmClient` wraps one :class:`~assay.llm.base.LlmBackend`. For each logical call it:

1. answers from the :class:`~assay.llm.cache.ResponseCache` when the same request (same backend,
   model, server, request and sample index) was answered before;
2. otherwise sends attempts to the backend, at most ``concurrency`` at a time across every
   client calling the same endpoint (:class:`~assay.llm.endpoint.Endpoint`; a slot is held only
   while an attempt is in flight, never while waiting to retry), each attempt cut off after
   ``timeout_s``; a freed slot goes to the waiting call that shares the longest prompt start
   with the call that freed it (:mod:`~assay.llm.slots`: prompt caches then read the shared
   part once); ``concurrency`` is a ceiling the endpoint's calls adapt under
   (:mod:`~assay.llm.adaptive`: fewer in flight after 429s or rising latency, more while the
   server keeps up);
3. retries what the backend marks retryable, waiting an exponentially growing, fully jittered
   delay (at least what the server asked for in ``Retry-After``), within ``max_attempts`` and the
   ``deadline_s`` of the whole call;
4. stops calling a backend that cannot be used: after ``trip_after`` logical calls in a row
   fail to connect, or after one call the backend could not serve at all (it rejected the
   credentials, HTTP 401/403; the backend became unavailable), every later call fails at once
   with :class:`~assay.llm.base.LlmUnavailableError` ending in :data:`STOPPED`, so a server that
   is down costs one bounded wait and a rejected key one request, not one per invocation.

Every error it raises has passed through :func:`~assay.llm.redact.redact`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from assay.llm.adaptive import AdaptivePolicy, Outcome, SharedSlot
from assay.llm.base import (
    LlmBackend,
    LlmCallError,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmUnavailableError,
    TokenUsage,
)
from assay.llm.cache import ResponseCache
from assay.llm.endpoint import Endpoint, endpoint_key
from assay.llm.redact import redact

if TYPE_CHECKING:
    from assay.llm.shared import ResponseStore, SharedLimit

logger = logging.getLogger(__name__)

STOPPED = "no more calls were sent to it"
"""How every error of a client whose circuit breaker tripped ends: the judge could not be used
for the rest of the run (see :func:`stopped_judge`)."""

Sleep = Callable[[float], Awaitable[None]]
_T = TypeVar("_T")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one logical call tries: ``max_attempts`` in all (the first included), waits of
    ``initial_delay_s * multiplier**n`` capped at ``max_delay_s`` with full jitter, and a
    ``deadline_s`` on the whole call, attempts and waits included."""

    max_attempts: int = 4
    initial_delay_s: float = 1.0
    max_delay_s: float = 30.0
    multiplier: float = 2.0
    deadline_s: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.initial_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry delays cannot be negative")
        if self.multiplier < 1:
            raise ValueError("multiplier must be at least 1")
        if self.deadline_s <= 0:
            raise ValueError("deadline_s must be positive")

    def backoff(self, retry: int, rng: random.Random) -> float:
        """The wait before retry number ``retry`` (1 = the first retry): uniform between 0 and
        the capped exponential delay."""
        exponent = min(retry - 1, 64)
        ceiling = min(self.max_delay_s, self.initial_delay_s * self.multiplier**exponent)
        return rng.uniform(0.0, ceiling)


@dataclass
class ClientStats:
    """What a client has done so far. ``calls`` are responses the backend gave, ``cache_hits``
    responses the cache gave, ``retries`` extra attempts, ``failures`` logical calls that finally
    failed; tokens are those of the backend's responses."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def snapshot(self) -> TokenUsage:
        """The counts so far as a :class:`TokenUsage` (failures are not part of it)."""
        return TokenUsage(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            calls=self.calls,
            cache_hits=self.cache_hits,
            retries=self.retries,
        )


class LlmClient:
    """Limits, retries, caches and counts the calls to one backend (see the module docstring).

    ``sleep`` and ``rng`` are injectable so tests can run the retry schedule without waiting.
    ``trip_after=0`` turns the circuit breaker off. The cache is the caller's: :meth:`aclose`
    closes the backend, not the cache; any :class:`~assay.llm.shared.ResponseStore` serves (one
    shared by a cluster's workers, say). ``limit``, when given, also bounds the attempts in
    flight across every client sharing it (:class:`~assay.llm.shared.SharedLimit`, keyed
    ``judge:`` and the endpoint's key, at its ``concurrency``; the outcome of each attempt goes
    back with its slot, so a cluster's limit adapts too, unless this client's limit is fixed).

    ``endpoint`` is the :class:`~assay.llm.endpoint.Endpoint` whose slots and adapted limit the
    client shares with every other client calling the same server (a run's
    :class:`~assay.llm.endpoint.Endpoints` hands them out); without one the client makes its
    own from ``concurrency`` and ``adaptive``, else those two are the endpoint's.
    ``adaptive`` (on by default) treats ``concurrency`` as a ceiling and adapts the calls in
    flight to what the server serves (:mod:`~assay.llm.adaptive`: fewer after 429s or a rise in
    latency, more again while it keeps up); give an :class:`~assay.llm.adaptive.AdaptivePolicy`
    to change its constants, or False for a fixed limit. :attr:`adaptive` is its state.
    """

    def __init__(
        self,
        backend: LlmBackend,
        *,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        retry: RetryPolicy = RetryPolicy(),  # frozen, so sharing the default is safe
        cache: ResponseCache | ResponseStore | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        trip_after: int = 5,
        limit: SharedLimit | None = None,
        adaptive: bool | AdaptivePolicy = True,
        endpoint: Endpoint | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self._backend = backend
        if endpoint is None:
            endpoint = Endpoint(endpoint_key(backend), concurrency, adaptive)
        self.endpoint = endpoint
        """The endpoint whose slots and limit this client shares."""
        self._slots = endpoint.slots
        self._timeout_s = timeout_s
        self._retry = retry
        self._cache = cache
        self._limit = limit
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._trip_after = trip_after
        self._unreachable_in_a_row = 0
        self._tripped: str | None = None  # why every call now fails at once
        self.stats = ClientStats()
        self.adaptive = endpoint.adaptive
        """The endpoint's adapted limit (None: fixed at its concurrency)."""

    @property
    def model(self) -> str:
        """The backend's model string."""
        return self._backend.model

    @property
    def backend(self) -> LlmBackend:
        """The backend this client calls."""
        return self._backend

    def cache_key(self, request: LlmRequest, sample: int = 0) -> str:
        """The sha256 naming this request's ``sample``-th response from this backend."""
        identity = {
            "backend": self._backend.name,
            "model": self._backend.model,
            "server": dict(self._backend.cache_identity()),
            "request": request.model_dump(mode="json"),
            "sample": sample,
        }
        canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        """The response to ``request`` (``sample`` tells repeated samples apart in the cache).

        Raises :class:`LlmCallError` when every allowed attempt failed, or at once for an error
        that retrying cannot fix; :class:`LlmUnavailableError` when the backend cannot be used or
        the circuit breaker has tripped.
        """
        hit = await self.cached(request, sample=sample)
        if hit is not None:
            return hit
        key = self.cache_key(request, sample) if self._cache is not None else None
        try:
            response = await self._call(request)
        except LlmError as error:
            self.stats.failures += 1
            self._count_failure(error)
            raise
        self._unreachable_in_a_row = 0
        self.stats.calls += 1
        self.stats.prompt_tokens += response.usage.prompt_tokens
        self.stats.completion_tokens += response.usage.completion_tokens
        if key is not None and self._cache is not None:
            await _settled(
                self._cache.put(key, response, backend=self._backend.name, model=self.model)
            )
        return response

    async def cached(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse | None:
        """The cache's response to ``request`` (marked cached, counted as a hit), without
        calling the backend; None when the cache has none (or there is no cache)."""
        if self._cache is None:
            return None
        hit = await _settled(self._cache.get(self.cache_key(request, sample)))
        if hit is None:
            return None
        self.stats.cache_hits += 1
        return hit.model_copy(update={"cached": True, "usage": TokenUsage(cache_hits=1)})

    async def aclose(self) -> None:
        """Close the backend (its connections, threads or loaded model)."""
        await self._backend.aclose()

    async def __aenter__(self) -> LlmClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _call(self, request: LlmRequest) -> LlmResponse:
        """Attempts until one succeeds, retrying within the policy; raises the final error."""
        policy = self._retry
        used = 0.0  # seconds of the deadline spent: attempts in flight and waits between them
        attempts = 0
        while True:
            self._raise_if_tripped()
            attempts += 1
            outcome, elapsed = await self._attempt(
                request, min(self._timeout_s, policy.deadline_s - used)
            )
            used += elapsed
            if isinstance(outcome, LlmResponse):
                usage = outcome.usage.model_copy(update={"calls": 1, "retries": attempts - 1})
                return outcome.model_copy(update={"usage": usage, "cached": False})
            error = _redacted(outcome)
            if (
                not error.retryable
                or isinstance(error, LlmUnavailableError)
                or (is_auth_failure(error))
            ):
                raise _final(error, attempts) from None
            if attempts >= policy.max_attempts:
                raise _final(error, attempts) from None
            delay = max(policy.backoff(attempts, self._rng), error.retry_after or 0.0)
            if used + delay >= policy.deadline_s:
                why = f" (a retry would pass the {_seconds(policy.deadline_s)} s deadline)"
                raise _final(error, attempts, why) from None
            self.stats.retries += 1
            logger.debug(
                "retrying %s in %.2f s (attempt %d of %d failed): %s",
                self.model,
                delay,
                attempts,
                policy.max_attempts,
                error,
            )
            await self._sleep(delay)
            used += delay

    async def _attempt(
        self, request: LlmRequest, limit: float
    ) -> tuple[LlmResponse | LlmError, float]:
        """One attempt in a concurrency slot, cut off after ``limit`` seconds; returns the
        response or the error, and the seconds it took (time waiting for the slot, or for the
        end of a pause the server asked for, excluded)."""
        async with self._slots.hold(request), self._shared_slot() as shared:
            await self._paused()
            started = time.monotonic()
            if self._tripped is not None:  # tripped while this call waited for its slot
                return LlmUnavailableError(self._tripped), 0.0
            ticket = self.adaptive.sent() if self.adaptive is not None else None
            try:
                outcome = await self._send(request, limit)
            except BaseException:  # cancelled: it no longer counts as in flight
                if self.adaptive is not None and ticket is not None:
                    self.adaptive.forget(ticket)
                raise
            elapsed = time.monotonic() - started
            ended = _ended(outcome, elapsed)
            if isinstance(shared, SharedSlot) and self.adaptive is not None:
                shared.outcome = ended  # a fixed limit reports none: the cluster's stays put
            if self.adaptive is not None and ticket is not None:
                # before the slot is handed on, so a lower limit holds back the next call
                self.adaptive.finished(ticket, ended, time.monotonic())
                self._slots.resize(self.adaptive.limit)
            return outcome, elapsed

    async def _send(self, request: LlmRequest, limit: float) -> LlmResponse | LlmError:
        """The backend's answer to ``request``, or its error (a timeout after ``limit`` s)."""
        try:
            async with asyncio.timeout(limit):
                return await self._backend.generate(request)
        except TimeoutError:
            return LlmCallError(
                f"timed out after {_seconds(limit)} s waiting for {self.model}", retryable=True
            )
        except LlmError as error:
            return error

    async def _paused(self) -> None:
        """Wait out a pause the adaptive limit set (a ``Retry-After`` for the whole endpoint)."""
        while self.adaptive is not None:
            wait = self.adaptive.paused_until - time.monotonic()
            if wait <= 0:
                return
            await asyncio.sleep(wait)

    def _shared_slot(self) -> AbstractAsyncContextManager[object]:
        """A slot of the shared limit (:class:`~assay.llm.shared.SharedLimit`), if any."""
        if self._limit is None:
            return contextlib.nullcontext()
        return self._limit.hold(f"judge:{self.endpoint.key}", self.endpoint.concurrency)

    def _raise_if_tripped(self) -> None:
        if self._tripped is not None:
            raise LlmUnavailableError(self._tripped)

    def _count_failure(self, error: LlmError) -> None:
        """Count a final failure toward the circuit breaker: trip it at once when the backend
        cannot be used at all (unavailable, or it rejected the credentials: no later call can
        do better), or when ``trip_after`` calls in a row could not reach it. Any other outcome
        shows it is reachable."""
        if self._tripped is not None or self._trip_after <= 0:
            return
        if isinstance(error, LlmUnavailableError) or is_auth_failure(error):
            self._trip(f"judge {self.model} cannot be used: {error}")
            return
        if not _is_unreachable(error):
            self._unreachable_in_a_row = 0
            return
        self._unreachable_in_a_row += 1
        if self._unreachable_in_a_row >= self._trip_after:
            self._trip(
                f"judge {self.model} stopped answering: {error} "
                f"({self._unreachable_in_a_row} calls in a row could not reach it)"
            )

    def _trip(self, why: str) -> None:
        self._tripped = redact(f"{why}; {STOPPED}")
        logger.warning("%s", self._tripped)


async def _settled(value: _T | Awaitable[_T]) -> _T:
    """``value``, awaited first when a store's method gave an awaitable (a remote store)."""
    if inspect.isawaitable(value):
        return await value
    return value


def _ended(outcome: LlmResponse | LlmError, elapsed: float) -> Outcome:
    """What an adaptive limit learns from one attempt."""
    if isinstance(outcome, LlmResponse):
        return Outcome(ok=True, latency_s=elapsed)
    return Outcome(ok=False, status=outcome.status, retry_after=outcome.retry_after)


def _is_unreachable(error: LlmError) -> bool:
    """The backend could not be reached: a call that failed without an HTTP status (connection
    refused, timed out, dropped)."""
    return isinstance(error, LlmCallError) and error.status is None


AUTH_STATUSES = frozenset({401, 403})
"""HTTP statuses that say the credentials were refused: never retried, and the client sends
nothing more after one."""


def is_auth_failure(error: LlmError) -> bool:
    """Whether ``error`` says the server refused the credentials (HTTP 401 or 403)."""
    return error.status in AUTH_STATUSES


_STOPPED_REASON = re.compile(
    r"judge (?P<model>\S+) (?P<state>stopped answering|cannot be used): (?P<why>.*?); "
    + re.escape(STOPPED)
)


class StoppedJudge(NamedTuple):
    """A judge whose client stopped calling it: its model, ``stopped answering`` or ``cannot be
    used``, and why."""

    model: str
    state: str
    why: str


def replace_stopped(reason: str, words: Callable[[StoppedJudge], str]) -> str:
    """``reason`` with each stopped judge's error in it replaced by ``words`` of that judge (a
    report that says the error once elsewhere names the judge only)."""
    return _STOPPED_REASON.sub(
        lambda found: words(StoppedJudge(found["model"], found["state"], found["why"])), reason
    )


def stopped_judge(reason: str) -> StoppedJudge | None:
    """The judge that was stopped, when ``reason`` (a metric's NOT_EVALUATED reason) carries the
    error of a client whose circuit breaker tripped; else None."""
    found = _STOPPED_REASON.search(reason)
    return StoppedJudge(found["model"], found["state"], found["why"]) if found else None


def _redacted(error: LlmError) -> LlmError:
    """``error`` with its message redacted (the same object when there was nothing to hide)."""
    text = str(error)
    clean = redact(text)
    if clean == text:
        return error
    kind = LlmUnavailableError if isinstance(error, LlmUnavailableError) else LlmCallError
    return kind(
        clean, retryable=error.retryable, retry_after=error.retry_after, status=error.status
    )


def _final(error: LlmError, attempts: int, why: str = "") -> LlmError:
    """The error a logical call ends with: ``error`` itself after one attempt that could not be
    retried, else a :class:`LlmCallError` that says how many attempts were made."""
    if isinstance(error, LlmUnavailableError) or (
        attempts == 1 and not error.retryable and not why
    ):
        return error
    noun = "attempt" if attempts == 1 else "attempts"
    return LlmCallError(
        f"gave up after {attempts} {noun}{why}: {error}",
        retryable=error.retryable,
        retry_after=error.retry_after,
        status=error.status,
    )


def _seconds(value: float) -> str:
    """Seconds for a message: ``30``, ``0.2``, ``1.25``."""
    return f"{round(value, 2):g}"
