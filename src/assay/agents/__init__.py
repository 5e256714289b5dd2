"""Agents under evaluation: the protocol, and adapters for each way to name one."""

from assay.agents.base import (
    Agent,
    AgentError,
    AgentTurn,
    Session,
    ToolCall,
    TurnResult,
    to_turn,
    turn_from_events,
)
from assay.agents.python import AgentLoadError, FunctionAgent, python_agent

__all__ = [
    "Agent",
    "AgentError",
    "AgentLoadError",
    "AgentTurn",
    "FunctionAgent",
    "Session",
    "ToolCall",
    "TurnResult",
    "python_agent",
    "to_turn",
    "turn_from_events",
]
