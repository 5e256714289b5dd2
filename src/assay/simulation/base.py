"""What a user simulator is: the status of each answer, the answer, and the protocol.

A user simulator plays the user's side of one conversation. The runner asks it for the next user
message, passing the invocations completed so far; it answers with a message
(:attr:`SimulatorStatus.SUCCESS`) or says why there is none. The statuses are ADK 2.13's
(``google.adk.evaluation.simulation.user_simulator.Status``), with the same string values.

One simulator serves one conversation (one case, one run): like ADK's, the LLM-backed simulator
counts the messages it has produced.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol

from pydantic import model_validator

from assay.evalset._base import AssayModel
from assay.evalset.content import Content
from assay.evalset.invocation import Invocation

DEFAULT_STOP_SIGNAL = "</finished>"
"""What a simulated user writes to end the conversation, unless the
``per_turn_user_simulator_quality_v1`` criterion names another ``stop_signal``."""


class SimulatorStatus(enum.StrEnum):
    """Why a simulator did or did not produce a message (ADK's values)."""

    SUCCESS = "success"
    TURN_LIMIT_REACHED = "turn_limit_reached"
    STOP_SIGNAL_DETECTED = "stop_signal_detected"
    NO_MESSAGE_GENERATED = "no_message_generated"


class NextUserMessage(AssayModel):
    """A simulator's answer: a user message when ``status`` is SUCCESS, else none.

    ``reason`` says in words why there is no message (the turn limit, the stop signal, or what
    went wrong when none was generated); the runner records it.
    """

    status: SimulatorStatus
    user_message: Content | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _message_iff_success(self) -> NextUserMessage:
        success = self.status is SimulatorStatus.SUCCESS
        if success != (self.user_message is not None):
            raise ValueError(
                "a user_message is given when, and only when, the status is 'success' "
                f"(status {self.status.value!r}, "
                f"{'no message' if self.user_message is None else 'a message'})"
            )
        return self

    @classmethod
    def success(cls, message: Content) -> NextUserMessage:
        """A message for the agent."""
        return cls(status=SimulatorStatus.SUCCESS, user_message=message)

    @classmethod
    def stopped(cls, status: SimulatorStatus, reason: str) -> NextUserMessage:
        """No message, and why."""
        return cls(status=status, reason=reason)


class UserSimulator(Protocol):
    """The user's side of one conversation."""

    async def next_message(self, history: Sequence[Invocation]) -> NextUserMessage:
        """The next user message, given the invocations completed so far in this conversation
        (each with its user content, its events with their authors, and its final response)."""
        ...
