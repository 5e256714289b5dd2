"""StaticUserSimulator: each recorded user message in order, then STOP_SIGNAL_DETECTED, as ADK."""

from __future__ import annotations

import asyncio

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.simulation.static_user_simulator import (
    StaticUserSimulator as AdkStaticUserSimulator,
)

from assay.simulation import NextUserMessage, SimulatorStatus, StaticUserSimulator

from ._helpers import turn

CONVERSATION = [turn("first", "a1"), turn("second", "a2"), turn("third", "a3")]


async def _drain(simulator: StaticUserSimulator, calls: int) -> list[NextUserMessage]:
    return [await simulator.next_message(CONVERSATION[:i]) for i in range(calls)]


def test_the_user_messages_come_back_in_order_then_the_stop_signal_status() -> None:
    answers = asyncio.run(_drain(StaticUserSimulator(CONVERSATION), 5))

    assert [a.status for a in answers] == [SimulatorStatus.SUCCESS] * 3 + [
        SimulatorStatus.STOP_SIGNAL_DETECTED
    ] * 2
    assert [a.user_message for a in answers[:3]] == [i.user_content for i in CONVERSATION]
    assert answers[3].reason == "the conversation's 3 user message(s) have all been sent"


def test_an_empty_conversation_stops_at_once() -> None:
    answer = asyncio.run(StaticUserSimulator([]).next_message([]))
    assert answer.status is SimulatorStatus.STOP_SIGNAL_DETECTED


@pytest.mark.filterwarnings("ignore:.*EXPERIMENTAL")
def test_the_sequence_of_statuses_and_texts_matches_adks_static_simulator() -> None:
    adk = AdkStaticUserSimulator(
        static_conversation=[
            AdkInvocation.model_validate(i.model_dump(exclude_none=True)) for i in CONVERSATION
        ]
    )

    async def both() -> list[tuple[str, str | None, str, str | None]]:
        ours = StaticUserSimulator(CONVERSATION)
        out = []
        for _ in range(4):
            a = await ours.next_message([])
            b = await adk.get_next_user_message([])
            out.append(
                (
                    a.status.value,
                    a.user_message.parts[0].text
                    if a.user_message and a.user_message.parts
                    else None,
                    b.status.value,
                    b.user_message.parts[0].text
                    if b.user_message and b.user_message.parts
                    else None,
                )
            )
        return out

    for ours_status, ours_text, adk_status, adk_text in asyncio.run(both()):
        assert (ours_status, ours_text) == (adk_status, adk_text)
