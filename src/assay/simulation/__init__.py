"""User simulators: who plays the user's side of a conversation during inference."""

from assay.config.simulator import UserSimulatorConfig
from assay.errors import UserSimulatorError
from assay.simulation.base import (
    DEFAULT_STOP_SIGNAL,
    NextUserMessage,
    SimulatorStatus,
    UserSimulator,
)
from assay.simulation.factory import simulator_for
from assay.simulation.history import render_history
from assay.simulation.llm_backed import LlmBackedUserSimulator
from assay.simulation.personas import BUILTIN_PERSONAS, resolve_persona
from assay.simulation.static import StaticUserSimulator

__all__ = [
    "BUILTIN_PERSONAS",
    "DEFAULT_STOP_SIGNAL",
    "LlmBackedUserSimulator",
    "NextUserMessage",
    "SimulatorStatus",
    "StaticUserSimulator",
    "UserSimulator",
    "UserSimulatorConfig",
    "UserSimulatorError",
    "render_history",
    "resolve_persona",
    "simulator_for",
]
