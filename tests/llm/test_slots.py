"""Which waiting call goes next: the earliest case's, and within it the one sharing the longest
prompt start with the call that freed its slot."""

from __future__ import annotations

import asyncio

import pytest

from assay.llm.base import LlmRequest
from assay.llm.slots import ACTIVITY, CURRENT_CASE, PromptSlots, shared_start, working_on


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


Call = tuple[tuple[int, ...] | None, LlmRequest]
"""A call of the case at that place in the run (None: of no case), with its request."""


async def _order_by_case(slots: PromptSlots, first: Call, *waiting: Call) -> list[str]:
    """As :func:`_order`, each call made inside its case."""
    ran: list[str] = []
    release = asyncio.Event()

    async def call(case: tuple[int, ...] | None, request: LlmRequest, hold: bool = False) -> None:
        if case is not None:
            with working_on(case):
                await held(request, hold)
        else:
            await held(request, hold)

    async def held(request: LlmRequest, hold: bool) -> None:
        async with slots.hold(request):
            ran.append(request.messages[-1].content)
            if hold:
                await release.wait()

    holder = asyncio.ensure_future(call(*first, hold=True))
    await asyncio.sleep(0)
    others = [asyncio.ensure_future(call(*one)) for one in waiting]
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(holder, *others)
    return ran


def test_a_freed_slot_goes_to_the_earliest_case_whatever_the_prompts_share() -> None:
    ran = asyncio.run(
        _order_by_case(
            PromptSlots(1),
            ((0, 0, 1), _request("case 1 turn 1 <final_answer>")),
            ((0, 2, 1), _request("case 1 turn 1 <tool_use>")),  # shares most, but a later case
            ((1, 0, 1), _request("second set")),
            ((0, 1, 2), _request("case 2 run 2")),
            ((0, 1, 1), _request("case 2 run 1")),
        )
    )
    assert ran == [
        "case 1 turn 1 <final_answer>",
        "case 2 run 1",
        "case 2 run 2",
        "case 1 turn 1 <tool_use>",
        "second set",
    ]


def test_within_a_case_the_call_sharing_the_longest_start_goes_first() -> None:
    case = (0, 3, 1)
    ran = asyncio.run(
        _order_by_case(
            PromptSlots(1),
            (case, _request("turn 1 <final_answer>")),
            (case, _request("other", system="fact-check")),
            ((0, 4, 1), _request("turn 1 <final_answer> again")),  # the next case's: after
            (case, _request("turn 2 <tool_use>")),
            (case, _request("turn 1 <tool_use>")),
        )
    )
    assert ran == [
        "turn 1 <final_answer>",
        "turn 1 <tool_use>",
        "turn 2 <tool_use>",
        "other",
        "turn 1 <final_answer> again",
    ]


def test_calls_of_no_case_go_before_any_case_s_in_their_own_order() -> None:
    ran = asyncio.run(
        _order_by_case(
            PromptSlots(1),
            ((0, 0, 1), _request("first")),
            ((0, 0, 1), _request("case")),
            (None, _request("b", system="two")),
            (None, _request("a", system="one")),
        )
    )
    assert ran == ["first", "b", "a", "case"]


def test_the_case_mark_is_set_only_inside_its_block() -> None:
    assert CURRENT_CASE.get() is None
    with working_on((0, 1, 1)) as clock:
        assert CURRENT_CASE.get() is clock and clock.order == (0, 1, 1)
    assert CURRENT_CASE.get() is None


def test_a_case_s_clock_counts_as_queued_only_the_time_it_waited_with_nothing_in_flight() -> None:
    async def main() -> tuple[float, float]:
        slots = PromptSlots(1)
        release = asyncio.Event()

        async def other_case() -> None:
            with working_on((0, 0, 1)):
                async with slots.hold(_request("first")):
                    await release.wait()

        async def this_case() -> float:
            with working_on((0, 1, 1)) as clock:
                async with slots.hold(_request("second")):
                    pass
                return clock.queued_s

        done_before = ACTIVITY.done
        holder = asyncio.ensure_future(other_case())
        await asyncio.sleep(0)
        waiting = asyncio.ensure_future(this_case())
        await asyncio.sleep(0.2)  # the other case holds the only slot
        release.set()
        await holder
        queued = await waiting
        return queued, ACTIVITY.done - done_before

    queued, finished = asyncio.run(main())
    assert queued >= 0.15  # about the 0.2 s it waited (an upper bound would depend on the machine)
    assert finished == 2


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
