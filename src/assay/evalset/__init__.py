"""The data model of eval sets (ADK's JSON shape) and its file formats."""

from assay.evalset.case import (
    ConversationScenario,
    ConversationScenarios,
    EvalCase,
    EvalSet,
    SessionInput,
    UserBehavior,
    UserPersona,
)
from assay.evalset.content import Content, FunctionCall, FunctionResponse, Part, content_text
from assay.evalset.invocation import (
    AgentDetails,
    AppDetails,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
)
from assay.evalset.io import LoadedEvalSet, load_eval_set, write_eval_set
from assay.evalset.rubric import Rubric, RubricContent, RubricScore

__all__ = [
    "AgentDetails",
    "AppDetails",
    "Content",
    "ConversationScenario",
    "ConversationScenarios",
    "EvalCase",
    "EvalSet",
    "FunctionCall",
    "FunctionResponse",
    "IntermediateData",
    "Invocation",
    "InvocationEvent",
    "InvocationEvents",
    "LoadedEvalSet",
    "Part",
    "Rubric",
    "RubricContent",
    "RubricScore",
    "SessionInput",
    "UserBehavior",
    "UserPersona",
    "content_text",
    "load_eval_set",
    "write_eval_set",
]
