"""Running the async core from synchronous code."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


def in_event_loop() -> bool:
    """Whether this thread is running an event loop (asked without leaving an exception behind
    to be chained to whatever is raised next)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


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


def sync_of(
    async_function: Callable[P, Coroutine[Any, Any, T]], name: str, doc: str
) -> Callable[P, T]:
    """The synchronous form of ``async_function``, named ``name`` and documented by ``doc``.

    It takes the same parameters, which its signature shows (``help()``, IDEs and type checkers
    read them from ``async_function``), and runs it with :func:`run_sync`; inside a running event
    loop, where that cannot work, it raises a RuntimeError saying to await ``async_function``.
    """

    @functools.wraps(async_function)
    def sync(*args: P.args, **kwargs: P.kwargs) -> T:
        if in_event_loop():
            raise RuntimeError(
                f"{name}() cannot run inside a running event loop; "
                f"use `await {async_function.__name__}(...)` there"
            )
        # run outside any ``except`` block, so that what it raises opens with its own cause
        # rather than a chained "no running event loop"
        return run_sync(async_function(*args, **kwargs))

    sync.__name__ = sync.__qualname__ = name
    sync.__doc__ = doc
    return sync
