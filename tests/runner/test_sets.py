"""Handing cases on in order (:func:`assay.runner.sets.in_order`): a case's context stays its own,
and a failure comes after the cases before it."""

from __future__ import annotations

import asyncio

import pytest

from assay.llm.slots import CURRENT_CASE, working_on
from assay.runner.sets import in_order


def test_a_case_that_waits_goes_on_in_the_context_it_started_in() -> None:
    """A case marks its calls with a context variable (``working_on``) before it first waits:
    the task it goes on in resets it there, and the variable never leaks to the runner."""
    during: list[object] = []

    async def one(n: int) -> int:
        with working_on((0, n, 1)) as clock:
            if n % 2:
                await asyncio.sleep(0.001)
            assert CURRENT_CASE.get() is clock
        return n

    async def run() -> list[int]:
        handed = []
        async for n in in_order(iter(range(20)), one, window=4):
            during.append(CURRENT_CASE.get())
            handed.append(n)
        return handed

    assert asyncio.run(run()) == list(range(20))
    assert during == [None] * 20


def test_a_case_failing_before_it_waits_fails_after_the_cases_before_it_are_handed_on() -> None:
    handed: list[int] = []

    async def one(n: int) -> int:
        if n == 2:
            raise RuntimeError("broken")
        await asyncio.sleep(0.01 if n == 0 else 0)
        return n

    async def run() -> None:
        async for n in in_order(iter(range(6)), one, window=4):
            handed.append(n)

    with pytest.raises(RuntimeError, match="broken"):
        asyncio.run(run())
    assert handed == [0, 1]
