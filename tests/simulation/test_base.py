"""NextUserMessage and the statuses: ADK's values, a message exactly when successful."""

from __future__ import annotations

import pytest
from google.adk.evaluation.simulation.user_simulator import Status as AdkStatus
from pydantic import ValidationError

from assay.evalset.content import Content
from assay.simulation import NextUserMessage, SimulatorStatus


def test_the_statuses_are_adks_with_the_same_values() -> None:
    assert [s.value for s in SimulatorStatus] == [s.value for s in AdkStatus]
    assert SimulatorStatus.SUCCESS == "success"


def test_a_successful_answer_carries_a_message() -> None:
    message = Content.from_text("hello", role="user")
    answer = NextUserMessage.success(message)
    assert answer.status is SimulatorStatus.SUCCESS
    assert answer.user_message == message
    assert answer.reason is None


@pytest.mark.parametrize("status", [s for s in SimulatorStatus if s is not SimulatorStatus.SUCCESS])
def test_only_success_may_carry_a_message(status: SimulatorStatus) -> None:
    with pytest.raises(ValidationError, match="when, and only when"):
        NextUserMessage(status=status, user_message=Content.from_text("x", role="user"))
    assert NextUserMessage.stopped(status, "why").reason == "why"


def test_success_without_a_message_is_refused() -> None:
    with pytest.raises(ValidationError, match="when, and only when"):
        NextUserMessage(status=SimulatorStatus.SUCCESS)
