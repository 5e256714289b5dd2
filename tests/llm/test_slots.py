"""Which waiting call goes next: the one sharing the longest prompt start with the call that
freed its slot."""

from __future__ import annotations

import asyncio

import pytest

from assay.llm.base import LlmRequest
from assay.llm.slots import PromptSlots, shared_start


def _request(user: str, system: str = "grade") -> LlmRequest:
    return LlmRequest.user(user, system=system)


async def _order(slots: PromptSlots, first: LlmRequest, *waiting: LlmRequest) -> list[str]:
    """Run ``first``, queue ``waiting`` in order while it holds its slot; the order they ran."""
    ran: list[str] = []
    release = asyncio.Event()

    async def call(request: LlmRequest, hold: bool = False) -> None:
        async with slots.hold(request):
            ran.append(request.messages[-1].content)
            if hold:
                await release.wait()

    holder = asyncio.ensure_future(call(first, hold=True))
    await asyncio.sleep(0)
    others = [asyncio.ensure_future(call(request)) for request in waiting]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(holder, *others)
    return ran


def test_a_freed_slot_goes_to_the_call_sharing_the_longest_start_with_the_last() -> None:
    ran = asyncio.run(
        _order(
            PromptSlots(1),
            _request("turn 1 <final_answer>"),
            _request("other", system="fact-check"),
            _request("turn 2 <tool_use>"),
            _request("turn 1 <tool_use>"),
        )
    )
    assert ran == ["turn 1 <final_answer>", "turn 1 <tool_use>", "turn 2 <tool_use>", "other"]


def test_calls_sharing_nothing_go_first_come_first_served() -> None:
    ran = asyncio.run(
        _order(
            PromptSlots(1),
            _request("a", system="one"),
            _request("b", system="two"),
            _request("c", system="three"),
            _request("d", system="four"),
        )
    )
    assert ran == ["a", "b", "c", "d"]


def test_no_more_than_capacity_calls_hold_a_slot_at_once() -> None:
    slots, inside, most = PromptSlots(2), 0, 0

    async def call(i: int) -> None:
        nonlocal inside, most
        async with slots.hold(_request(str(i))):
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    async def main() -> None:
        await asyncio.gather(*(call(i) for i in range(6)))

    asyncio.run(main())
    assert most == 2


def test_a_cancelled_waiter_leaves_and_the_slot_still_frees() -> None:
    async def main() -> list[str]:
        slots, ran = PromptSlots(1), []
        release = asyncio.Event()

        async def call(name: str, hold: bool = False) -> None:
            async with slots.hold(_request(name)):
                ran.append(name)
                if hold:
                    await release.wait()

        holder = asyncio.ensure_future(call("holder", hold=True))
        await asyncio.sleep(0)
        gone, kept = asyncio.ensure_future(call("gone")), asyncio.ensure_future(call("kept"))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(holder, kept)
        async with slots.hold(_request("after")):  # the slot came back
            ran.append("after")
        return ran

    assert asyncio.run(main()) == ["holder", "kept", "after"]


def test_a_waiter_cancelled_as_it_is_granted_passes_the_slot_on() -> None:
    async def main() -> list[str]:
        slots, ran = PromptSlots(1), []
        waiters: dict[str, asyncio.Future[None]] = {}

        async def call(name: str) -> None:
            async with slots.hold(_request(name)):
                ran.append(name)

        async def holder() -> None:
            async with slots.hold(_request("holder")):
                ran.append("holder")
                await asyncio.sleep(0.01)
            # the slot is now granted to "granted", which has not resumed yet
            waiters["granted"].cancel()

        held = asyncio.ensure_future(holder())
        await asyncio.sleep(0)
        waiters["granted"] = asyncio.ensure_future(call("granted"))
        await asyncio.sleep(0)
        waiters["next"] = asyncio.ensure_future(call("next"))
        everything = asyncio.gather(held, *waiters.values(), return_exceptions=True)
        await asyncio.wait_for(everything, 5)  # a slot lost with the cancelled waiter hangs
        return ran

    assert asyncio.run(main()) == ["holder", "next"]


@pytest.mark.parametrize(
    ("a", "b", "shared"),
    [("", "", 0), ("abc", "abd", 2), ("abc", "abc", 3), ("abc", "abcdef", 3), ("x", "y", 0)],
)
def test_shared_start_is_the_longest_common_prefix(a: str, b: str, shared: int) -> None:
    assert shared_start(a, b) == shared


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        PromptSlots(0)
