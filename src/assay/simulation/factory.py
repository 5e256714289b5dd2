"""Which simulator plays the user of a case (ADK 2.13's ``UserSimulatorProvider``).

A case with a static ``conversation`` replays it (the config and the LLM are not used); a case
with a ``conversation_scenario`` gets the LLM-backed simulator.
"""

from __future__ import annotations

from assay.config.simulator import UserSimulatorConfig
from assay.errors import UserSimulatorError
from assay.evalset.case import EvalCase
from assay.llm.judge import LlmCaller
from assay.simulation.base import UserSimulator
from assay.simulation.llm_backed import LlmBackedUserSimulator
from assay.simulation.static import StaticUserSimulator


def simulator_for(
    case: EvalCase,
    config: UserSimulatorConfig | None,
    client: LlmCaller | None,
    stop_signal: str,
    agent_name: str,
    *,
    sample: int = 0,
) -> UserSimulator:
    """The user simulator for one conversation of ``case``.

    ``client`` may be None for a static conversation; a scenario without one is a
    :class:`~assay.errors.UserSimulatorError`, as are the set-up errors of
    :class:`~assay.simulation.llm_backed.LlmBackedUserSimulator` (an unknown persona id, custom
    instructions missing ``{{ persona }}``). ``sample`` tells the runs of one case apart in the
    response cache.
    """
    if case.conversation is not None:
        return StaticUserSimulator(case.conversation)
    scenario = case.conversation_scenario
    if scenario is None:  # EvalCase's validator makes this impossible; say so if it happens
        raise UserSimulatorError(
            f"case {case.eval_id!r} has neither a conversation nor a conversation_scenario"
        )
    if config is not None and config.type == "llm_audio":
        raise UserSimulatorError(
            f"case {case.eval_id!r}: ADK's audio user simulator (user_simulator_config.type "
            "'llm_audio') is not available in assay"
        )
    if client is None:
        raise UserSimulatorError(
            f"case {case.eval_id!r} has a conversation_scenario, which needs a model to play "
            "the user (user_simulator_config.model)"
        )
    try:
        return LlmBackedUserSimulator(
            scenario, config, client, stop_signal, agent_name, sample=sample
        )
    except UserSimulatorError as exc:
        raise UserSimulatorError(f"case {case.eval_id!r}: {exc}") from None
