"""Results: ADK's EvalSetResult JSON shape and recorded traces."""

from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalSetResult,
    RunSummary,
    SetNotes,
)
from assay.results.traces import Traces, load_traces

__all__ = [
    "CaseNotes",
    "EvalCaseResult",
    "EvalMetricResult",
    "EvalMetricResultDetails",
    "EvalMetricResultPerInvocation",
    "EvalSetResult",
    "RunSummary",
    "SetNotes",
    "Traces",
    "load_traces",
]
