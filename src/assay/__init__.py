"""assay: evaluate LLM agents with ADK-compatible eval sets, criteria and results."""

from assay._version import __version__
from assay.config import EvalConfig, default_config, load_config, parse_config
from assay.errors import AssayError, ConfigError, EvalSetError, InputError, Problem, TracesError
from assay.evalset import EvalCase, EvalSet, Invocation, load_eval_set, write_eval_set
from assay.metrics import EvalStatus, MetricResult
from assay.results import EvalSetResult, Traces, load_traces
from assay.runner import EvalSetJob, evaluate, evaluate_sync

__all__ = [
    "AssayError",
    "ConfigError",
    "EvalCase",
    "EvalConfig",
    "EvalSet",
    "EvalSetError",
    "EvalSetJob",
    "EvalSetResult",
    "EvalStatus",
    "InputError",
    "Invocation",
    "MetricResult",
    "Problem",
    "Traces",
    "TracesError",
    "__version__",
    "default_config",
    "evaluate",
    "evaluate_sync",
    "load_config",
    "load_eval_set",
    "load_traces",
    "parse_config",
    "write_eval_set",
]
