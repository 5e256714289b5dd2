"""Judge calls through a provider's batch API (``--judge-batch``): the same answers, at the
provider's batch price, in exchange for waiting.

A :class:`BatchingClient` is an :class:`~assay.llm.client.LlmClient` whose :meth:`generate`
does not send the request at once. A call answered by the response cache returns as usual; any
other is queued, and the queue goes to the provider as one batch (a :class:`BatchApi`: JSONL in,
JSONL out) when no call has joined it for :attr:`BatchSettings.idle_s`, or when it holds
:attr:`BatchSettings.max_lines`. The client then polls the batch every
:attr:`BatchSettings.poll_s` until the provider says it is over, keeps every answer in the cache
(so a rerun reads them), and wakes each waiting call with its answer.

Each batch is recorded (:class:`BatchRecords`, the run history in a real run) as soon as the
provider has accepted it, with the cache keys of its lines, and marked collected once its answers
are in the cache. A client that finds a batch of its provider and model still open (a run that
was killed while it waited) polls that batch instead of sending those lines again, so nothing is
paid for twice.

A line the provider failed, or did not answer before the batch expired or was cancelled, is
retried as an ordinary call, with the attempts the retry policy has left after the batch's one;
when none are left, or they fail too, the call raises :class:`~assay.llm.base.LlmCallError`
saying why (the metric is then NOT_EVALUATED with that reason). A batch that cannot be submitted
at all (the server has no batch API) sends its lines, and every later call, as ordinary calls.

Calls that cannot wait, the simulated user's above all (each turn needs the last one's answer),
are not sent through this client: they go through an ordinary :class:`LlmClient`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from assay.llm.base import (
    LlmBackend,
    LlmCallError,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmUnavailableError,
    TokenUsage,
)
from assay.llm.client import LlmClient, RetryPolicy
from assay.llm.redact import redact

if TYPE_CHECKING:
    from assay.llm.cache import ResponseCache
    from assay.llm.endpoint import Endpoint
    from assay.llm.shared import ResponseStore, SharedLimit

logger = logging.getLogger(__name__)

OPEN = "submitted"
"""The status of a recorded batch whose answers are not yet all in the cache."""
COLLECTED = "collected"
"""The status of a recorded batch whose answers were read (or that will never give any)."""
_T = TypeVar("_T")
_DEFAULT_RETRY = RetryPolicy()
POLL_ERRORS = 5
"""Polls in a row that may fail (the provider unreachable) before a batch is given up on and its
lines go as ordinary calls."""


@dataclass(frozen=True)
class BatchLine:
    """One request in a batch, named by its cache key (the line's ``custom_id``)."""

    key: str
    request: LlmRequest


@dataclass(frozen=True)
class BatchState:
    """What the provider says of a batch: its ``status`` in the provider's words, whether it is
    over (``done``), the files that hold its answers (``files``, read by
    :meth:`BatchApi.results`), and why it failed as a whole (``error``), if it did."""

    status: str
    done: bool
    files: tuple[str, ...] = ()
    error: str | None = None


LineResult = Mapping[str, Any] | str
"""A line's answer: the completion's JSON body, or why there is none."""
_Answer = tuple[LineResult, str | None]
"""A line's answer and the batch that gave it."""
BATCH_ID = "assay_batch_id"
"""The key of a batched response's :attr:`~assay.llm.base.LlmResponse.raw` body that names the
batch it came from (see :func:`batch_of`)."""


def batch_of(response: LlmResponse) -> str | None:
    """The id of the provider batch that answered ``response``, when one did (then its usage is
    all :attr:`~assay.llm.base.TokenUsage.batched`, priced at the batch rate); None for an
    ordinary call or a cache hit."""
    if response.cached or not isinstance(response.raw, dict):
        return None
    found = response.raw.get(BATCH_ID)
    return found if isinstance(found, str) else None


class BatchApi(Protocol):
    """A provider's batch endpoints."""

    @property
    def provider(self) -> str:
        """Names the provider's server (``openai https://api.openai.com/v1``); batches are
        recorded and found again under it. Never a secret."""
        ...

    async def submit(self, lines: Sequence[BatchLine]) -> str:
        """Send ``lines`` as one batch; its id. Raises :class:`LlmError`."""
        ...

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's state now. Raises :class:`LlmError`."""
        ...

    async def results(self, state: BatchState) -> dict[str, LineResult]:
        """The answers in a finished batch's files, by line key. Raises :class:`LlmError`."""
        ...

    def parse(self, body: Mapping[str, Any], request: LlmRequest | None) -> LlmResponse:
        """A line's completion body as a response. Raises :class:`LlmError` when malformed."""
        ...

    async def aclose(self) -> None:
        """Release what the API holds (the backend's connections are the backend's)."""
        ...


@dataclass(frozen=True)
class BatchRecord:
    """A batch the provider accepted: where, its id, the model, the cache keys of its lines,
    when it was submitted, whether its answers were collected, and the run that sent it."""

    provider: str
    batch_id: str
    model: str
    keys: tuple[str, ...]
    submitted: float
    status: str = OPEN
    run_id: str | None = None


class BatchRecords(Protocol):
    """Where batches are recorded (``HistoryStore.batches`` in a real run)."""

    def add(self, record: BatchRecord) -> None:
        """Keep ``record`` (committed before it returns)."""
        ...

    def pending(self, provider: str, model: str) -> list[BatchRecord]:
        """The batches of ``provider`` and ``model`` not yet collected, oldest first."""
        ...

    def close(self, provider: str, batch_id: str, status: str) -> None:
        """Mark a batch ``status`` (:data:`COLLECTED`)."""
        ...


@dataclass
class MemoryBatchRecords:
    """Batch records kept in memory, for a run without a history: nothing survives the process."""

    records: dict[tuple[str, str], BatchRecord] = field(default_factory=dict)

    def add(self, record: BatchRecord) -> None:
        """Keep ``record``."""
        self.records[(record.provider, record.batch_id)] = record

    def pending(self, provider: str, model: str) -> list[BatchRecord]:
        """The open batches of ``provider`` and ``model``."""
        return [
            r
            for r in self.records.values()
            if r.provider == provider and r.model == model and r.status == OPEN
        ]

    def close(self, provider: str, batch_id: str, status: str) -> None:
        """Mark a batch ``status``."""
        found = self.records.get((provider, batch_id))
        if found is not None:
            self.records[(provider, batch_id)] = dataclasses.replace(found, status=status)


@dataclass(frozen=True)
class BatchSettings:
    """When a queue becomes a batch and how often a batch is polled."""

    max_lines: int = 5000
    idle_s: float = 2.0
    poll_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_lines < 1:
            raise ValueError("max_lines must be at least 1")
        if self.idle_s < 0 or self.poll_s <= 0:
            raise ValueError("idle_s cannot be negative and poll_s must be positive")


@dataclass
class BatchProgress:
    """Batches so far: ``submitted`` (sent by this client), ``resumed`` (found open from an
    earlier run), ``running`` (being waited on now), ``done`` (over); their ``lines`` (those of
    the batches resumed too), the lines of the batches over (``lines_done``), the calls a batch
    answered, and the calls that went as ordinary calls (``retried``)."""

    submitted: int = 0
    resumed: int = 0
    running: int = 0
    done: int = 0
    lines: int = 0
    lines_done: int = 0
    answered: int = 0
    retried: int = 0

    def describe(self) -> str:
        """In words, for a console line: ``batches: 2 submitted, 1 running, 1 done · lines
        40/90 done`` (then ``, 3 sent one at a time`` when some were)."""
        words = f"batches: {self.submitted} submitted, {self.running} running, {self.done} done"
        if self.resumed:
            words += f" ({self.resumed} resumed)"
        words += f" · lines {self.lines_done:,}/{self.lines:,} done"
        if self.retried:
            words += f", {self.retried:,} sent one at a time"
        return words


Progress = Callable[[BatchProgress], None]

IMMEDIATE = frozenset({"user_simulator"})
"""The judge handles that never wait for a batch: the simulated user's
(:data:`assay.results.model.SIMULATOR`; its next turn needs this one's answer)."""


class BatchingClient(LlmClient):
    """An :class:`LlmClient` that sends its cache misses through a provider's batch API (see the
    module docstring). The keyword arguments it shares with :class:`LlmClient` mean the same;
    ordinary calls (a line's retry) use them."""

    def __init__(
        self,
        backend: LlmBackend,
        api: BatchApi,
        *,
        records: BatchRecords | None = None,
        settings: BatchSettings = BatchSettings(),  # frozen, so sharing the default is safe
        on_progress: Progress | None = None,
        run_id: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 120.0,
        retry: RetryPolicy = _DEFAULT_RETRY,
        cache: ResponseCache | ResponseStore | None = None,
        limit: SharedLimit | None = None,
        endpoint: Endpoint | None = None,
    ) -> None:
        super().__init__(
            backend,
            concurrency=concurrency,
            timeout_s=timeout_s,
            retry=retry,
            cache=cache,
            limit=limit,
            endpoint=endpoint,
        )
        self._provider_api = api
        self._plain_settings = (concurrency, timeout_s, retry, cache, limit)
        self._plain: LlmClient | None = None
        self._batch_records: BatchRecords = records if records is not None else MemoryBatchRecords()
        self._batch_settings = settings
        self._progress_hook = on_progress
        self._batch_run_id = run_id
        self._batch_cache = cache
        self._max_attempts = retry.max_attempts
        left = retry.max_attempts - 1
        self._ordinary_client = (
            LlmClient(
                backend,
                concurrency=concurrency,
                timeout_s=timeout_s,
                retry=dataclasses.replace(retry, max_attempts=left),
                limit=limit,
                endpoint=self.endpoint,
            )
            if left >= 1
            else None
        )
        self.progress = BatchProgress()
        self.batched = TokenUsage()
        """Usage of the responses batches gave (priced at the provider's batch rate)."""
        self._line_requests: dict[str, LlmRequest] = {}
        self._line_waiters: dict[str, list[asyncio.Future[_Answer]]] = {}
        self._batch_queue: list[str] = []
        self._in_batch: dict[str, str] = {}
        self._last_joined = 0.0
        self._flusher: asyncio.Task[None] | None = None
        self._batch_tasks: set[asyncio.Task[None]] = set()
        self._batches_resumed = False
        self._batches_off: str | None = None  # why batches are no longer tried

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        """The response to ``request``: from the cache, else from a batch (waiting until the
        provider answers it), else, when the batch gave no answer, from an ordinary call."""
        key = self.cache_key(request, sample)
        hit = await self._cache_hit(key)
        if hit is not None:
            self.stats.cache_hits += 1
            return hit.model_copy(update={"cached": True, "usage": TokenUsage(cache_hits=1)})
        self._resume()
        if self._batches_off is not None:
            return await self._as_ordinary(request, self._batches_off)
        outcome, batch_id = await self._join(key, request)
        if isinstance(outcome, str):
            return await self._as_ordinary(request, outcome)
        try:
            response = self._provider_api.parse(outcome, request)
        except LlmError as error:
            return await self._as_ordinary(request, f"its batch answer was unusable: {error}")
        self.progress.answered += 1
        self._count_batched(response)
        self.batched = self.batched + response.usage
        usage = response.usage.model_copy(update={"batched": response.usage})
        raw = {**(response.raw or {}), BATCH_ID: batch_id} if batch_id else response.raw
        return response.model_copy(update={"usage": usage, "raw": raw})

    def immediate(self) -> LlmClient:
        """An ordinary client of the same backend, cache and limits, with the whole retry
        policy: for the calls that cannot wait for a batch (the simulated user's turns). One
        per batching client; closing this one closes the backend."""
        if self._plain is None:
            concurrency, timeout_s, retry, cache, limit = self._plain_settings
            self._plain = LlmClient(
                self.backend,
                concurrency=concurrency,
                timeout_s=timeout_s,
                retry=retry,
                cache=cache,
                limit=limit,
                endpoint=self.endpoint,
            )
        return self._plain

    async def aclose(self) -> None:
        """Stop waiting on batches (they stay recorded as open, so a later run collects them),
        then close the API and the backend."""
        tasks = [*self._batch_tasks, *([self._flusher] if self._flusher else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._provider_api.aclose()
        await super().aclose()

    # -- queueing ---------------------------------------------------------------------------

    def _join(self, key: str, request: LlmRequest) -> asyncio.Future[_Answer]:
        """A future for ``key``'s line: the one already waited on (the same request asked
        twice, or a line of a batch found open), else a new one, queued."""
        future: asyncio.Future[_Answer] = asyncio.get_running_loop().create_future()
        self._line_requests.setdefault(key, request)
        waiters = self._line_waiters.setdefault(key, [])
        waiters.append(future)
        if len(waiters) == 1 and key not in self._in_batch:
            self._batch_queue.append(key)
            self._last_joined = time.monotonic()
            if len(self._batch_queue) >= self._batch_settings.max_lines:
                self._submit_queue()
            elif self._flusher is None:
                self._flusher = asyncio.create_task(self._flush_when_idle())
        return future

    async def _flush_when_idle(self) -> None:
        """Submit the queue once no call has joined it for ``idle_s``."""
        try:
            while self._batch_queue:
                wait = self._last_joined + self._batch_settings.idle_s - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                self._submit_queue()
        finally:
            self._flusher = None

    def _submit_queue(self) -> None:
        keys = self._batch_queue[: self._batch_settings.max_lines]
        del self._batch_queue[: len(keys)]
        if keys:
            self._spawn_batch(self._run_batch(keys, None))

    def _resume(self) -> None:
        """Once: wait on the batches an earlier run left open, instead of sending them again."""
        if self._batches_resumed:
            return
        self._batches_resumed = True
        for record in self._batch_records.pending(self._provider_api.provider, self.model):
            for key in record.keys:
                self._in_batch[key] = record.batch_id
            self.progress.resumed += 1
            self.progress.lines += len(record.keys)
            self._spawn_batch(self._run_batch(list(record.keys), record.batch_id))

    def _spawn_batch(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._batch_tasks.add(task)
        task.add_done_callback(self._batch_tasks.discard)

    # -- one batch --------------------------------------------------------------------------

    async def _run_batch(self, keys: list[str], batch_id: str | None) -> None:
        """Submit (unless resuming ``batch_id``), poll until over, keep and hand out the
        answers; a line without one is handed why."""
        results: dict[str, LineResult] = {}
        missing = "the batch gave no answer for it"
        try:
            if batch_id is None:
                batch_id = await self._submit(keys)
            for key in keys:
                self._in_batch[key] = batch_id
            self.progress.running += 1
            self._report_progress()
            try:
                state = await self._poll(batch_id)
            finally:
                self.progress.running -= 1
            self.progress.done += 1
            self.progress.lines_done += len(keys)
            if state.files:
                results = await self._provider_api.results(state)
            missing = _missing(batch_id, state)
        except LlmError as error:
            missing = f"batch {batch_id or '(not submitted)'} failed: {redact(str(error))}"
        await self._hand_out(keys, results, missing, batch_id)
        if batch_id is not None:
            self._batch_records.close(self._provider_api.provider, batch_id, COLLECTED)
        self._report_progress()

    async def _submit(self, keys: list[str]) -> str:
        lines = [BatchLine(key, self._line_requests[key]) for key in keys]
        try:
            batch_id = await self._provider_api.submit(lines)
        except LlmError as error:
            if not error.retryable:
                self._batches_off = f"the batch API could not be used ({redact(str(error))})"
                logger.warning("%s; sending judge calls one at a time", self._batches_off)
            raise
        self._batch_records.add(
            BatchRecord(
                provider=self._provider_api.provider,
                batch_id=batch_id,
                model=self.model,
                keys=tuple(keys),
                submitted=time.time(),
                run_id=self._batch_run_id,
            )
        )
        self.progress.submitted += 1
        self.progress.lines += len(keys)
        return batch_id

    async def _poll(self, batch_id: str) -> BatchState:
        """Poll every ``poll_s`` until the batch is over; up to :data:`POLL_ERRORS` failed polls
        in a row are waited out."""
        errors = 0
        while True:
            try:
                state = await self._provider_api.poll(batch_id)
            except LlmError as error:
                errors += 1
                if not error.retryable or errors >= POLL_ERRORS:
                    raise
            else:
                errors = 0
                if state.done:
                    return state
            await asyncio.sleep(self._batch_settings.poll_s)

    async def _hand_out(
        self, keys: list[str], results: dict[str, LineResult], why: str, batch_id: str | None
    ) -> None:
        """Keep each answer in the cache and wake the calls waiting on its line."""
        for key in keys:
            result = results.get(key, why)
            if not isinstance(result, str):
                await self._keep(key, result)
            self._in_batch.pop(key, None)
            self._line_requests.pop(key, None)
            for future in self._line_waiters.pop(key, []):
                if not future.done():
                    future.set_result((result, batch_id))

    async def _keep(self, key: str, body: Mapping[str, Any]) -> None:
        """Put a line's answer in the cache, whether or not a call waits on it (a line of a
        resumed batch may be asked for later)."""
        if self._batch_cache is None:
            return
        try:
            response = self._provider_api.parse(body, self._line_requests.get(key))
        except LlmError:
            return
        await _settled(
            self._batch_cache.put(key, response, backend=self.backend.name, model=self.model)
        )

    # -- ordinary calls -----------------------------------------------------------------------

    async def _as_ordinary(self, request: LlmRequest, why: str) -> LlmResponse:
        """``request`` as an ordinary call, with the attempts left after the batch's; raises
        :class:`LlmCallError` saying why the batch gave no answer when that fails too."""
        self.progress.retried += 1
        self._report_progress()
        if self._ordinary_client is None:
            self.stats.failures += 1
            raise LlmCallError(
                f"{why}; no attempt left for an ordinary call ({self._max_attempts} allowed)"
            )
        try:
            response = await self._ordinary_client.generate(request)
        except LlmUnavailableError:
            self.stats.failures += 1
            raise
        except LlmError as error:
            self.stats.failures += 1
            raise LlmCallError(
                f"{why}; then as an ordinary call: {error}",
                retryable=error.retryable,
                status=error.status,
            ) from None
        self._count_batched(response)
        self.stats.retries += response.usage.retries
        return response

    def _count_batched(self, response: LlmResponse) -> None:
        self.stats.calls += 1
        self.stats.prompt_tokens += response.usage.prompt_tokens
        self.stats.completion_tokens += response.usage.completion_tokens

    async def _cache_hit(self, key: str) -> LlmResponse | None:
        if self._batch_cache is None:
            return None
        return await _settled(self._batch_cache.get(key))

    def _report_progress(self) -> None:
        if self._progress_hook is not None:
            self._progress_hook(dataclasses.replace(self.progress))


def _missing(batch_id: str, state: BatchState) -> str:
    """Why a line of a finished batch has no answer."""
    if state.error:
        return f"batch {batch_id} {state.status}: {redact(state.error)}"
    if state.status == "completed":
        return f"batch {batch_id} completed without an answer for it"
    return f"batch {batch_id} {state.status} before answering it"


async def _settled(value: _T | Awaitable[_T]) -> _T:
    """``value``, awaited first when a store's method gave an awaitable (a remote store)."""
    if inspect.isawaitable(value):
        return await value
    return value
