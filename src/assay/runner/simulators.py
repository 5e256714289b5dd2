"""Which user simulator plays each case: the static conversation replayed, or a simulated user.

Cases with a static ``conversation`` replay its user messages. Cases with a
``conversation_scenario`` get the LLM-backed simulated user of :mod:`assay.simulation`. Its model
is chosen the way a judge's is (``--judge-model``, ``ASSAY_JUDGE_MODEL``, then
``user_simulator_config.model`` when the config sets it, then Gemini or the embedded model), and
its calls go through the run's judge pool: the same cache, limits and retries. The stop signal is
the ``per_turn_user_simulator_quality_v1`` criterion's, so the simulated user and the criterion
that judges it agree on when the conversation is over (ADK's simulator ignores it).

A scenario that cannot be simulated (no model, an unknown persona, custom instructions missing
a placeholder) stops before its first turn with the reason, and the case is NOT_EVALUATED.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.agents.base import Agent, CaseContext
from assay.config import (
    EvalConfig,
    JudgeModelOptions,
    LlmAsAJudgeCriterion,
    LlmBackedUserSimulatorCriterion,
)
from assay.errors import UserSimulatorError
from assay.evalset.invocation import Invocation
from assay.llm.base import LlmRequest, LlmResponse
from assay.llm.judge import Judge
from assay.metrics.registry import NO_JUDGE_PROVIDER, JudgeProvider
from assay.results.model import SIMULATOR
from assay.runner.agent_run import SimulatorFactory
from assay.runner.inference import Simulator
from assay.simulation.base import (
    DEFAULT_STOP_SIGNAL,
    NextUserMessage,
    SimulatorStatus,
)
from assay.simulation.factory import simulator_for

SIMULATOR_CRITERION = "per_turn_user_simulator_quality_v1"


class _Unavailable:
    """A simulator that cannot start: no message, with the reason."""

    def __init__(self, reason: str) -> None:
        self._reason = reason

    async def next_message(self, history: Sequence[Invocation]) -> NextUserMessage:
        return NextUserMessage.stopped(SimulatorStatus.NO_MESSAGE_GENERATED, self._reason)


class _JudgeCaller:
    """A judge handle as the simulator's client: its calls are counted per case."""

    def __init__(self, judge: Judge, case_id: str) -> None:
        self._judge = judge
        self._case_id = case_id

    @property
    def model(self) -> str:
        return self._judge.model

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        return await self._judge.ask(request, sample=sample, case_id=self._case_id)


def stop_signal(config: EvalConfig) -> str:
    """The stop signal of the config's simulator-quality criterion, else ADK's default."""
    criterion = config.criteria.get(SIMULATOR_CRITERION)
    if isinstance(criterion, LlmBackedUserSimulatorCriterion):
        return criterion.stop_signal
    return DEFAULT_STOP_SIGNAL


def simulator_judge(config: EvalConfig, judges: JudgeProvider | None) -> Judge | str:
    """The LLM handle that plays the user, or why there is none."""
    if judges is None:
        return NO_JUDGE_PROVIDER
    settings = config.user_simulator_config
    criterion = None
    if settings is not None and "model" in settings.model_fields_set:
        criterion = LlmAsAJudgeCriterion(  # only its judge model is read
            threshold=0.0, judge_model_options=JudgeModelOptions(judge_model=settings.model)
        )
    return judges.judge_for(SIMULATOR, criterion)


def simulators_for(config: EvalConfig, judges: JudgeProvider | None) -> SimulatorFactory:
    """The simulator factory for one eval set's cases."""
    signal = stop_signal(config)
    judge: Judge | str | None = None

    def make(context: CaseContext, agent: Agent) -> Simulator:
        nonlocal judge
        case = context.case
        client = None
        if case.conversation_scenario is not None:
            if judge is None:  # chosen once per set, and only when a scenario needs it
                judge = simulator_judge(config, judges)
            if isinstance(judge, str):
                return _Unavailable(f"no model to play the user: {judge}")
            client = _JudgeCaller(judge, case.eval_id)
        try:
            return simulator_for(
                case,
                config.user_simulator_config,
                client,
                signal,
                agent.name,
                sample=context.run - 1,
            )
        except UserSimulatorError as exc:
            return _Unavailable(str(exc))

    return make
