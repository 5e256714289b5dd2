"""Evaluating agents from pytest: a function to call from a test, a pytest plugin that turns
eval-set files into tests (:mod:`assay.testing.plugin`), and a drop-in for ADK's
``AgentEvaluator``."""

from assay.agents.spec import agent_factory
from assay.testing.adk_compat import AgentEvaluator
from assay.testing.evaluate import aevaluate_agent, evaluate_agent, load_jobs
from assay.testing.failures import EvaluationFailed, assert_passed, failure_report

__all__ = [
    "AgentEvaluator",
    "EvaluationFailed",
    "aevaluate_agent",
    "agent_factory",
    "assert_passed",
    "evaluate_agent",
    "failure_report",
    "load_jobs",
]
