"""A response cache and concurrency limits shared by many processes (a Ray cluster's workers).

Two protocols are the hooks :class:`~assay.llm.client.LlmClient` (and
:class:`~assay.llm.selection.JudgePool`) take:

* :class:`ResponseStore`: where responses are looked up and kept. The on-disk
  :class:`~assay.llm.cache.ResponseCache` is one; :class:`RemoteStore` is another, whose methods
  are awaited.
* :class:`SharedLimit`: a slot per call of a key (``judge:<model>``, ``agent``), held while an
  attempt is in flight, bounding that key across every process sharing the limit.

Their cluster-side halves are plain classes here, made into Ray actors by
:func:`shared_actors` given the imported ``ray`` module (nothing here imports Ray):

* :class:`Limiter` keeps, per key, a FIFO semaphore. A slot is leased to an *owner* (one task of
  the run) in a *generation*: a task run again after its worker died starts a new generation,
  which frees what the dead attempt held, so a killed worker never keeps a slot. Its size
  adapts (:class:`~assay.llm.adaptive.AdaptiveLimit`, the first caller's limit the ceiling) to
  the outcomes the workers hand back with their slots (:class:`~assay.llm.adaptive.SharedSlot`),
  so the whole cluster backs off when the server refuses any worker, and grows again together.
* :class:`CacheRelay` answers the workers' lookups from the driver: the driver's
  :class:`CacheBridge` thread collects the keys asked for and the responses to keep, looks them
  up in (and writes them to) its own :class:`~assay.llm.cache.ResponseCache`, and sends the
  answers back. The cache file stays on the driver's machine, whatever the cluster is.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.llm.adaptive import AdaptiveLimit, Outcome, SharedSlot, Ticket
from assay.llm.base import LlmResponse
from assay.llm.cache import ResponseCache

ASK_TIMEOUT_S = 60.0
"""How long a worker waits for the driver to answer a cache lookup before taking it as a miss."""

Put = tuple[str, str, str, str]
"""A response to keep: key, the response as JSON, backend, model."""


class ResponseStore(Protocol):
    """Responses by cache key (see :meth:`~assay.llm.client.LlmClient.cache_key`); either method
    may return an awaitable, which the client awaits."""

    def get(self, key: str) -> LlmResponse | Awaitable[LlmResponse | None] | None: ...

    def put(
        self, key: str, response: LlmResponse, *, backend: str, model: str
    ) -> Awaitable[None] | None: ...


class SharedLimit(Protocol):
    """Slots shared across processes: :meth:`hold` waits for one of ``key``'s ``limit`` slots (the
    first caller's ``limit`` fixes it) and holds it for the ``async with`` block. It may yield a
    :class:`~assay.llm.adaptive.SharedSlot`, whose outcome the caller then sets for the limit to
    adapt to."""

    def hold(self, key: str, limit: int) -> AbstractAsyncContextManager[object]: ...


# --- the limiter -------------------------------------------------------------------------------


@dataclass
class _Gate:
    limit: int
    adaptive: AdaptiveLimit
    held: int = 0
    waiting: deque[asyncio.Future[None]] = field(default_factory=deque)
    peak: int = 0


@dataclass(frozen=True)
class _Lease:
    key: str
    owner: str
    generation: int
    ticket: Ticket | None = None


class Limiter:
    """Per-key FIFO semaphores with leases (an async Ray actor: see the module docstring)."""

    def __init__(self) -> None:
        self._gates: dict[str, _Gate] = {}
        self._leases: dict[int, _Lease] = {}
        self._generations: dict[str, int] = {}
        self._ids = itertools.count(1)

    async def begin(self, owner: str) -> int:
        """A new generation for ``owner`` (a task starting, or starting again): the slots its
        earlier attempts hold are freed, and those they still wait for are freed when granted."""
        generation = self._generations.get(owner, 0) + 1
        self._generations[owner] = generation
        self._free_owner(owner)
        return generation

    async def end(self, owner: str) -> None:
        """Free every slot ``owner`` holds (its task has finished, or failed for good)."""
        self._generations[owner] = self._generations.get(owner, 0) + 1
        self._free_owner(owner)

    async def acquire(self, key: str, limit: int, owner: str, generation: int) -> int:
        """Wait for a slot of ``key``; the lease's id, or 0 when ``owner`` moved on meanwhile."""
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = _Gate(max(1, limit), AdaptiveLimit(max(1, limit)))
        if gate.held < gate.limit and not gate.waiting:
            gate.held += 1
        else:
            granted = asyncio.get_running_loop().create_future()
            gate.waiting.append(granted)
            await granted  # release counted the slot as held when it handed it over
        gate.peak = max(gate.peak, gate.held)
        if self._generations.get(owner, 0) != generation:
            self._release_slot(key)
            return 0
        await _pause(gate.adaptive)
        lease = next(self._ids)
        self._leases[lease] = _Lease(key, owner, generation, gate.adaptive.sent())
        return lease

    async def release(self, lease: int, outcome: Outcome | None = None) -> None:
        """Give back the slot of ``lease`` (a lease already freed is ignored), adapting its
        key's limit to the ``outcome`` of the attempt it held, when one is given."""
        found = self._leases.pop(lease, None)
        if found is None:
            return
        gate = self._gates[found.key]
        if found.ticket is not None:
            if outcome is None:  # not reported: only the count in flight changes
                gate.adaptive.forget(found.ticket)
            else:
                gate.adaptive.finished(found.ticket, outcome, time.monotonic())
                gate.limit = gate.adaptive.limit
        self._release_slot(found.key)

    async def limits(self) -> dict[str, int]:
        """The limit each key has adapted to now."""
        return {key: gate.limit for key, gate in self._gates.items()}

    async def peaks(self) -> dict[str, int]:
        """The most slots held at once so far, per key."""
        return {key: gate.peak for key, gate in self._gates.items()}

    def _free_owner(self, owner: str) -> None:
        for lease, found in list(self._leases.items()):
            if found.owner == owner:
                del self._leases[lease]
                if found.ticket is not None:
                    self._gates[found.key].adaptive.forget(found.ticket)
                self._release_slot(found.key)

    def _release_slot(self, key: str) -> None:
        gate = self._gates[key]
        gate.held -= 1
        while gate.waiting and gate.held < gate.limit:
            waiter = gate.waiting.popleft()
            if not waiter.done():
                gate.held += 1
                waiter.set_result(None)


class RemoteLimit:
    """A :class:`SharedLimit` served by a :class:`Limiter` actor, for one owner's generation."""

    def __init__(self, actor: Any, owner: str, generation: int) -> None:
        self._actor = actor
        self._owner = owner
        self._generation = generation

    @contextlib.asynccontextmanager
    async def _held(self, key: str, limit: int) -> AsyncIterator[object]:
        lease = await self._actor.acquire.remote(key, limit, self._owner, self._generation)
        slot = SharedSlot()
        try:
            yield slot
        finally:
            await self._actor.release.remote(lease, slot.outcome)

    def hold(self, key: str, limit: int) -> AbstractAsyncContextManager[object]:
        return self._held(key, limit)


async def _pause(adaptive: AdaptiveLimit) -> None:
    """Wait out a pause the limit set (a ``Retry-After`` for every worker)."""
    while (wait := adaptive.paused_until - time.monotonic()) > 0:
        await asyncio.sleep(wait)


# --- the cache ---------------------------------------------------------------------------------


class CacheRelay:
    """Passes the workers' cache lookups and writes to the driver (an async Ray actor)."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[asyncio.Future[str | None]]] = {}
        self._asked: list[str] = []
        self._puts: list[Put] = []
        self._wake: asyncio.Event | None = None

    async def get(self, key: str) -> str | None:
        """The response stored under ``key`` as JSON (None: a miss, or no answer in time)."""
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        if key not in self._waiting:
            self._asked.append(key)
        self._waiting.setdefault(key, []).append(answer)
        self._event().set()
        try:
            return await asyncio.wait_for(answer, ASK_TIMEOUT_S)
        except TimeoutError:
            return None

    async def put(self, key: str, response: str, backend: str, model: str) -> None:
        """Keep ``response`` (JSON) under ``key``, by the driver's next exchange."""
        self._puts.append((key, response, backend, model))
        self._event().set()

    async def exchange(
        self, answers: dict[str, str | None], wait_s: float
    ) -> tuple[list[str], list[Put]]:
        """The driver's side: hand over ``answers`` to the lookups waiting for them, then wait up
        to ``wait_s`` for new lookups or writes, and return them."""
        for key, value in answers.items():
            for waiter in self._waiting.pop(key, []):
                if not waiter.done():
                    waiter.set_result(value)
        wake = self._event()
        if not self._asked and not self._puts and wait_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), wait_s)
        wake.clear()
        asked, self._asked = self._asked, []
        puts, self._puts = self._puts, []
        return asked, puts

    def _event(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake


class RemoteStore:
    """A :class:`ResponseStore` served by a :class:`CacheRelay` actor."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    async def get(self, key: str) -> LlmResponse | None:
        found: str | None = await self._actor.get.remote(key)
        return None if found is None else LlmResponse.model_validate_json(found)

    async def put(self, key: str, response: LlmResponse, *, backend: str, model: str) -> None:
        await self._actor.put.remote(key, response.model_dump_json(), backend, model)


Exchange = Callable[[dict[str, str | None], float], tuple[list[str], list[Put]]]
"""One call of :meth:`CacheRelay.exchange` from the driver (made blocking by the caller)."""


class CacheBridge:
    """The driver's thread answering a :class:`CacheRelay` from a local
    :class:`~assay.llm.cache.ResponseCache`. :meth:`close` stops it once every write the relay
    holds is kept."""

    def __init__(self, cache: ResponseCache, exchange: Exchange, poll_s: float = 0.5) -> None:
        self._cache = cache
        self._exchange = exchange
        self._poll_s = poll_s
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self.answered = 0
        self.kept = 0
        self._thread = threading.Thread(target=self._loop, name="assay-cache-bridge", daemon=True)

    def start(self) -> CacheBridge:
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop the thread, keeping every write made so far."""
        self._stop.set()
        self._thread.join()
        if self.error is None:
            with contextlib.suppress(Exception):  # a cluster gone at the end loses only writes
                self._round({}, 0.0)

    def _loop(self) -> None:
        answers: dict[str, str | None] = {}
        try:
            while not self._stop.is_set():
                answers = self._round(answers, self._poll_s)
        except Exception as exc:  # the cluster went away: lookups then time out as misses
            self.error = exc

    def _round(self, answers: dict[str, str | None], wait_s: float) -> dict[str, str | None]:
        asked, puts = self._exchange(answers, wait_s)
        for key, text, backend, model in puts:
            self._cache.put(
                key, LlmResponse.model_validate_json(text), backend=backend, model=model
            )
            self.kept += 1
        found: dict[str, str | None] = {}
        for key in asked:
            hit = self._cache.get(key)
            found[key] = None if hit is None else hit.model_dump_json()
            self.answered += 1
        return found


@contextlib.contextmanager
def shared_actors(
    ray: Any, cache: ResponseCache | None, **options: Any
) -> Iterator[tuple[Any, Any | None]]:
    """For the block, a :class:`Limiter` actor and, with ``cache``, a :class:`CacheRelay` actor
    that a :class:`CacheBridge` thread answers from it (``ray`` is the imported module;
    ``options`` go to ``ray.remote``); both are killed after it."""
    make = ray.remote(num_cpus=0, max_concurrency=10_000, **options)
    limiter = make(Limiter).remote()
    relay: Any = make(CacheRelay).remote() if cache is not None else None
    bridge = None
    if cache is not None:

        def exchange(answers: dict[str, str | None], wait_s: float) -> tuple[list[str], list[Put]]:
            found: tuple[list[str], list[Put]] = ray.get(relay.exchange.remote(answers, wait_s))
            return found

        bridge = CacheBridge(cache, exchange).start()
    try:
        yield limiter, relay
    finally:
        if bridge is not None:
            bridge.close()
        for handle in (limiter, relay):
            if handle is not None:
                ray.kill(handle)
