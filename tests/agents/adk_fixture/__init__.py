"""An ADK agent package for tests (``--agent tests/agents/adk_fixture``)."""

from . import agent
from .agent import root_agent

__all__ = ["agent", "root_agent"]
