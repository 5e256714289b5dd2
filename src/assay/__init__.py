"""assay: evaluate LLM agents with ADK-compatible eval sets, criteria and results.

The names below are imported on first use (PEP 562), so ``import assay`` (and the ``assay``
command, whose modules live in this package) loads none of pydantic, numpy or the rest until a
name that needs them is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay._version import __version__
    from assay.config import EvalConfig, default_config, load_config, parse_config
    from assay.errors import (
        AssayError,
        ConfigError,
        EvalSetError,
        InputError,
        Problem,
        TracesError,
    )
    from assay.evalset import EvalCase, EvalSet, Invocation, load_eval_set, write_eval_set
    from assay.metrics import EvalStatus, MetricResult
    from assay.results import EvalSetResult, Traces, load_traces
    from assay.runner import EvalSetJob, RunUpdate, evaluate, evaluate_sync

_HOMES = {
    "assay._version": ("__version__",),
    "assay.config": ("EvalConfig", "default_config", "load_config", "parse_config"),
    "assay.errors": (
        "AssayError",
        "ConfigError",
        "EvalSetError",
        "InputError",
        "Problem",
        "TracesError",
    ),
    "assay.evalset": ("EvalCase", "EvalSet", "Invocation", "load_eval_set", "write_eval_set"),
    "assay.metrics": ("EvalStatus", "MetricResult"),
    "assay.results": ("EvalSetResult", "Traces", "load_traces"),
    "assay.runner": ("EvalSetJob", "RunUpdate", "evaluate", "evaluate_sync"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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
    "RunUpdate",
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


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use (then kept in this module)."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
