"""Replaying a static conversation: each invocation's user message, in order.

As ADK 2.13's ``StaticUserSimulator``: the history is not looked at, and once every message has
been given the answer is STOP_SIGNAL_DETECTED (there is no "end of script" status).
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.evalset.invocation import Invocation
from assay.simulation.base import NextUserMessage, SimulatorStatus


class StaticUserSimulator:
    """Gives the user messages of a recorded conversation, one per call."""

    def __init__(self, conversation: Sequence[Invocation]) -> None:
        self._messages = [invocation.user_content for invocation in conversation]
        self._next = 0

    async def next_message(self, history: Sequence[Invocation]) -> NextUserMessage:
        """The next recorded user message; STOP_SIGNAL_DETECTED after the last one."""
        if self._next >= len(self._messages):
            return NextUserMessage.stopped(
                SimulatorStatus.STOP_SIGNAL_DETECTED,
                f"the conversation's {len(self._messages)} user message(s) have all been sent",
            )
        message = self._messages[self._next]
        self._next += 1
        return NextUserMessage.success(message)
