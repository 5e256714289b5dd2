"""Agents under evaluation: the protocol, and adapters for each way to name one."""

from assay.agents.base import (
    Agent,
    AgentError,
    AgentFactory,
    AgentTurn,
    CaseContext,
    Session,
    ToolCall,
    TurnResult,
    to_turn,
    turn_from_events,
)
from assay.agents.python import AgentLoadError, FunctionAgent
from assay.agents.spec import factory_for, resolve_agent

__all__ = [
    "Agent",
    "AgentError",
    "AgentFactory",
    "AgentLoadError",
    "AgentTurn",
    "CaseContext",
    "FunctionAgent",
    "Session",
    "ToolCall",
    "TurnResult",
    "factory_for",
    "resolve_agent",
    "to_turn",
    "turn_from_events",
]
