"""Running the async core from synchronous code."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


def run_sync(awaitable: Awaitable[T]) -> T:
    """``asyncio.run(awaitable)``, returning its result.

    The result is not the main task's result: on Python 3.11, ``asyncio.run`` ends by calling
    ``signal.getsignal``, which formats the main task's ``repr``, and with it the ``repr`` of
    the task's result. For the results of a large run that took longer than the run itself
    (12 of 15 seconds for 1,500 cases).
    """
    found: list[T] = []

    async def main() -> None:
        found.append(await awaitable)

    asyncio.run(main())
    return found[0]
