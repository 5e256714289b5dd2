"""Running evaluations: scoring cases and the evaluate() entry points."""

from assay.report.progress import RunUpdate
from assay.runner.evaluate import EvalSetJob, evaluate, evaluate_sync, summarize
from assay.runner.scoring import ConfiguredMetric, case_status, score_case

__all__ = [
    "ConfiguredMetric",
    "EvalSetJob",
    "RunUpdate",
    "case_status",
    "evaluate",
    "evaluate_sync",
    "score_case",
    "summarize",
]
