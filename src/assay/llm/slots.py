"""Which waiting call goes next: the earliest case's, and within it the one whose prompt shares
the longest start with the prompt of the call that just finished.

A run scores several cases at once, and with few slots (the embedded judge has one) their calls
queue together. Handing a freed slot to the earliest case's waiting call (in the run's order:
eval set, case, run) finishes cases in turn: the first case is reported after its own calls, not
after every case's, and results appear steadily. The case a call belongs to is
:data:`CURRENT_CASE`, set by the runner around the case's work (:func:`working_on`); asyncio
tasks copy it, so no metric passes it on. Calls of no case (``assay judge agree``, say) go
before any case's, in the order below.

Among one case's calls, the prompt decides. A model behind a prompt cache (llama.cpp, embedded
or served; Ollama) reads only the part of a prompt its cache does not already hold, and its cache
holds what it has just read. Two judges that read the same turn in the same words (the two rubric
judges do) pay for that turn once when their calls run back to back, and twice when other prompts
run in between; so the slot goes to the call sharing the longest start with the call that freed
it (the earliest on a tie). Across cases the prompt only breaks ties, so it never costs the order.
The order changes what is read again, never an answer: a judge answers a prompt the same whatever
ran before it (the embedded judge settles a near-tie by reading the prompt from scratch).

:data:`ACTIVITY` counts, for progress lines, the calls of this process at a backend, waiting, and
finished with the seconds they held a slot; each case's :class:`CaseClock` counts the seconds the
case spent with calls waiting and none in flight, which is queue time, not the case's own work.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from assay.llm.base import LlmRequest


class CaseClock:
    """One case's place in the run's order, and the seconds it spent queued: with calls waiting
    for a slot and none in flight."""

    def __init__(self, order: tuple[int, ...]) -> None:
        self.order = order
        self.queued_s = 0.0
        self._waiting = 0
        self._in_flight = 0
        self._since: float | None = None  # when it began to be queued

    def change(self, waiting: int = 0, in_flight: int = 0) -> None:
        self._waiting += waiting
        self._in_flight += in_flight
        queued = self._waiting > 0 and self._in_flight == 0
        if queued and self._since is None:
            self._since = time.perf_counter()
        elif not queued and self._since is not None:
            self.queued_s += time.perf_counter() - self._since
            self._since = None

    def working_s(self, wall_s: float) -> float:
        """Of ``wall_s`` seconds spent on the case, those not queued."""
        queued = self.queued_s
        if self._since is not None:
            queued += time.perf_counter() - self._since
        return max(wall_s - queued, 0.0)


CURRENT_CASE: ContextVar[CaseClock | None] = ContextVar("assay_current_case", default=None)
"""The case whose work is running (None outside a case): what a waiting call is ordered by."""


@contextmanager
def working_on(order: tuple[int, ...]) -> Iterator[CaseClock]:
    """Mark the calls made inside the block (and in tasks started there) as the case at
    ``order``'s; its clock is yielded."""
    clock = CaseClock(order)
    token = CURRENT_CASE.set(clock)
    try:
        yield clock
    finally:
        CURRENT_CASE.reset(token)


@dataclass
class Activity:
    """The LLM calls of this process now at a backend (``in_flight``), waiting for a slot
    (``waiting``) and finished (``done``, which held slots for ``busy_s`` seconds in all), over
    every client: what a progress line reports."""

    in_flight: int = 0
    waiting: int = 0
    done: int = 0
    busy_s: float = 0.0
    slots: weakref.WeakSet[PromptSlots] = field(default_factory=weakref.WeakSet)

    def busy_capacity(self) -> int:
        """The slots of the clients that now have calls in flight or waiting (0 if none)."""
        try:
            return sum(s.capacity for s in list(self.slots) if s.busy)
        except RuntimeError:  # a client made on the loop's thread while a progress thread reads
            return 0


ACTIVITY = Activity()


@dataclass
class _Waiter:
    arrival: int
    prompt: str
    granted: asyncio.Future[None]
    case: CaseClock | None

    @property
    def rank(self) -> tuple[int, ...]:
        """Calls of no case first, then by the case's place in the run."""
        return (0,) if self.case is None else (1, *self.case.order)


class PromptSlots:
    """At most ``capacity`` calls at a time. A freed slot goes to a waiter of the earliest case
    (:data:`CURRENT_CASE` when it began waiting), and among those to the one whose prompt shares
    the longest start with the prompt of the call that freed it (the earliest on a tie)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.held = 0
        """Slots held now: above :attr:`capacity` for a while after :meth:`resize` lowered it
        (calls in flight are never cut off; no slot is handed on until they drop below it)."""
        self._waiters = _Queue()
        self._arrivals = itertools.count()
        ACTIVITY.slots.add(self)

    @property
    def busy(self) -> bool:
        """Whether a call holds a slot or waits for one."""
        return self.held > 0 or bool(self._waiters)

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot now."""
        return len(self._waiters)

    def resize(self, capacity: int) -> None:
        """Allow ``capacity`` calls at a time from now on (an adaptive limit moved): more slots
        go to waiting calls at once; fewer take effect as calls in flight finish."""
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._grant("")

    @asynccontextmanager
    async def hold(self, request: LlmRequest) -> AsyncIterator[None]:
        """Wait for a slot, hold it for the block, then hand it on."""
        prompt = prompt_text(request)
        case = CURRENT_CASE.get()
        if self.held < self.capacity and not self._waiters:
            self.held += 1
        else:
            await self._wait(_Waiter(next(self._arrivals), prompt, _future(), case))
        ACTIVITY.in_flight += 1
        if case is not None:
            case.change(in_flight=1)
        started = time.perf_counter()
        try:
            yield
        finally:
            ACTIVITY.in_flight -= 1
            ACTIVITY.done += 1
            ACTIVITY.busy_s += time.perf_counter() - started
            if case is not None:
                case.change(in_flight=-1)
            self._release(prompt)

    async def _wait(self, waiter: _Waiter) -> None:
        self._waiters.add(waiter)
        ACTIVITY.waiting += 1
        if waiter.case is not None:
            waiter.case.change(waiting=1)
        try:
            await waiter.granted
        except asyncio.CancelledError:
            if waiter.granted.done() and not waiter.granted.cancelled():
                self._release(waiter.prompt)  # granted as it was cancelled: pass the slot on
            else:
                self._waiters.remove(waiter)
            raise
        finally:
            ACTIVITY.waiting -= 1
            if waiter.case is not None:
                waiter.case.change(waiting=-1)

    def _release(self, last: str) -> None:
        self.held -= 1
        self._grant(last)

    def _grant(self, last: str) -> None:
        """Hand free slots to waiters, each to the one :class:`PromptSlots` says goes next."""
        while self._waiters and self.held < self.capacity:
            chosen = self._waiters.pop_next(last)
            self.held += 1
            chosen.granted.set_result(None)


class _Queue:
    """The waiters, by rank, each rank's sorted by (prompt, arrival): the prompt sharing the
    longest start with another is beside it in that order, so choosing the next call costs a
    few comparisons of prompts, not one per waiter (a run queues thousands)."""

    def __init__(self) -> None:
        self._ranks: dict[tuple[int, ...], list[tuple[str, int]]] = {}
        self._by_arrival: dict[int, _Waiter] = {}

    def __len__(self) -> int:
        return len(self._by_arrival)

    def add(self, waiter: _Waiter) -> None:
        bisect.insort(self._ranks.setdefault(waiter.rank, []), (waiter.prompt, waiter.arrival))
        self._by_arrival[waiter.arrival] = waiter

    def remove(self, waiter: _Waiter) -> None:
        keys = self._ranks[waiter.rank]
        del keys[bisect.bisect_left(keys, (waiter.prompt, waiter.arrival))]
        if not keys:
            del self._ranks[waiter.rank]
        del self._by_arrival[waiter.arrival]

    def pop_next(self, last: str) -> _Waiter:
        """Remove and return the waiter of the earliest rank whose prompt shares the longest
        start with ``last``, the earliest to arrive on a tie."""
        keys = self._ranks[min(self._ranks)]
        at = bisect.bisect_left(keys, (last, -1))
        longest = max(shared_start(last, keys[i][0]) for i in (at - 1, at) if 0 <= i < len(keys))
        low, high = 0, len(keys)
        if longest:  # the prompts starting with those characters lie together
            start = last[:longest]
            low = bisect.bisect_left(keys, (start, -1))
            high = bisect.bisect_left(keys, (start + _LAST_CHARACTER, -1), low)
        index = min(range(low, high), key=lambda i: keys[i][1])
        waiter = self._by_arrival[keys[index][1]]
        self.remove(waiter)
        return waiter


_LAST_CHARACTER = chr(0x10FFFF)


def _future() -> asyncio.Future[None]:
    return asyncio.get_running_loop().create_future()


def prompt_text(request: LlmRequest) -> str:
    """The request's messages in order, as the start of its prompt reads them."""
    return "".join(f"<{m.role}>{m.content}" for m in request.messages)


def shared_start(a: str, b: str) -> int:
    """The length of the longest common start of ``a`` and ``b`` (found by halving)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
