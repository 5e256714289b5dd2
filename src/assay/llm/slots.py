"""Which waiting call goes next: the one whose prompt shares the longest start with the prompt
of the call that just finished.

A model behind a prompt cache (llama.cpp, embedded or served; Ollama) reads only the part of a
prompt its cache does not already hold, and its cache holds what it has just read. Two judges
that read the same turn in the same words (the two rubric judges do) pay for that turn once when
their calls run back to back, and twice when other prompts run in between. First come, first
served interleaves them by metric; these slots pair them. The order changes what is read again,
never an answer: a judge answers a prompt the same whatever ran before it (the embedded judge
settles a near-tie by reading the prompt from scratch).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from assay.llm.base import LlmRequest


@dataclass
class Activity:
    """The LLM calls of this process now at a backend (``in_flight``) and waiting for a slot
    (``waiting``), over every client: what a progress line reports while nothing finishes."""

    in_flight: int = 0
    waiting: int = 0


ACTIVITY = Activity()


@dataclass
class _Waiter:
    arrival: int
    prompt: str
    granted: asyncio.Future[None]


class PromptSlots:
    """At most ``capacity`` calls at a time. A freed slot goes to the waiter whose prompt shares
    the longest start with the prompt of the call that freed it (the earliest on a tie)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._free = capacity
        self._waiters: list[_Waiter] = []
        self._arrivals = itertools.count()

    @asynccontextmanager
    async def hold(self, request: LlmRequest) -> AsyncIterator[None]:
        """Wait for a slot, hold it for the block, then hand it on."""
        prompt = prompt_text(request)
        if self._free > 0 and not self._waiters:
            self._free -= 1
        else:
            granted = asyncio.get_running_loop().create_future()
            waiter = _Waiter(next(self._arrivals), prompt, granted)
            self._waiters.append(waiter)
            ACTIVITY.waiting += 1
            try:
                await granted
            except asyncio.CancelledError:
                if granted.done() and not granted.cancelled():
                    self._hand_on(prompt)  # granted as it was cancelled: pass the slot on
                else:
                    self._waiters.remove(waiter)
                raise
            finally:
                ACTIVITY.waiting -= 1
        ACTIVITY.in_flight += 1
        try:
            yield
        finally:
            ACTIVITY.in_flight -= 1
            self._hand_on(prompt)

    def _hand_on(self, last: str) -> None:
        if not self._waiters:
            self._free += 1
            return
        chosen = max(self._waiters, key=lambda w: (shared_start(last, w.prompt), -w.arrival))
        self._waiters.remove(chosen)
        chosen.granted.set_result(None)


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
