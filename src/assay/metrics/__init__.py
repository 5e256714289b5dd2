"""Metrics: one module per criterion, a shared result model, and the registry."""

from assay.metrics.base import (
    EvalStatus,
    Metric,
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    status_for,
)
from assay.metrics.registry import MetricRegistry, UnavailableMetric, default_registry
from assay.metrics.rouge import ResponseMatchMetric, rouge1_fmeasure
from assay.metrics.trajectory import (
    ToolTrajectoryMetric,
    any_order_match,
    exact_match,
    in_order_match,
)

__all__ = [
    "EvalStatus",
    "Metric",
    "MetricInfo",
    "MetricRegistry",
    "MetricResult",
    "PerInvocationResult",
    "ResponseMatchMetric",
    "ToolTrajectoryMetric",
    "UnavailableMetric",
    "any_order_match",
    "default_registry",
    "exact_match",
    "in_order_match",
    "rouge1_fmeasure",
    "status_for",
]
