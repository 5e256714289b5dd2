"""Which user simulator plays each case: the static conversation replayed, or a simulated user.

Cases with a static ``conversation`` replay its user messages. Cases with a
``conversation_scenario`` need an LLM-backed simulated user; until that is wired into the runner
they stop before the first turn with a reason, and are NOT_EVALUATED.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.agents.base import Agent
from assay.config import EvalConfig
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.metrics.registry import JudgeProvider
from assay.runner.agent_run import SimulatorFactory
from assay.runner.inference import Simulator
from assay.simulation.base import NextUserMessage, SimulatorStatus
from assay.simulation.static import StaticUserSimulator

SCENARIO_NOT_WIRED = (
    "conversation_scenario cases need the LLM-backed user simulator, which the runner does not "
    "drive yet; run this case from recorded traces instead"
)


class _Unavailable:
    """A simulator that cannot start: no message, with the reason."""

    def __init__(self, reason: str) -> None:
        self._reason = reason

    async def next_message(self, history: Sequence[Invocation]) -> NextUserMessage:
        return NextUserMessage.stopped(SimulatorStatus.NO_MESSAGE_GENERATED, self._reason)


def simulators_for(config: EvalConfig, judges: JudgeProvider | None) -> SimulatorFactory:
    """The simulator factory for one eval set's cases."""

    def make(case: EvalCase, agent: Agent) -> Simulator:
        if case.conversation is not None:
            return StaticUserSimulator(case.conversation)
        return _Unavailable(SCENARIO_NOT_WIRED)

    return make
