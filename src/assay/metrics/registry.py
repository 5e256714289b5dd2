"""Metric name -> metric factory.

Each factory takes the criterion configured for the metric and returns a :class:`Metric`. Names
the config knows but no metric implements yet score NOT_EVALUATED with the reason
"not implemented yet" instead of failing the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, cast

from assay.config import CRITERION_TYPES, BaseCriterion, ToolTrajectoryCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.metrics.base import Metric, MetricInfo, MetricResult, not_evaluated
from assay.metrics.efficiency import EFFICIENCY_METRICS
from assay.metrics.rouge import ResponseMatchMetric
from assay.metrics.trajectory import ToolTrajectoryMetric

MetricFactory = Callable[[Any], Metric]


class UnavailableMetric:
    """A metric that cannot run here; every case gets NOT_EVALUATED with the reason."""

    info: ClassVar[MetricInfo] = MetricInfo(name="unavailable", description="")

    def __init__(self, name: str, criterion: BaseCriterion | None, reason: str) -> None:
        self.name = name
        self.criterion = criterion
        self.reason = reason

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """NOT_EVALUATED, with the reason."""
        return not_evaluated(self.name, self.criterion, actual, self.reason, expected)


class MetricRegistry:
    """An explicit, per-instance map from metric name to factory. Duplicates are errors."""

    def __init__(self) -> None:
        self._factories: dict[str, MetricFactory] = {}

    def register(self, name: str, factory: MetricFactory, *, override: bool = False) -> None:
        """Add a metric; registering a name twice is an error unless ``override``."""
        if name in self._factories and not override:
            raise ValueError(f"metric '{name}' is already registered")
        self._factories[name] = factory

    def names(self) -> list[str]:
        """The registered metric names."""
        return list(self._factories)

    def create(self, name: str, criterion: BaseCriterion | None) -> Metric:
        """The metric for ``name`` built from its criterion, or an :class:`UnavailableMetric`."""
        factory = self._factories.get(name)
        if factory is None:
            reason = (
                "not implemented yet"
                if name in CRITERION_TYPES
                else "custom metrics (custom_metrics in the config) are not implemented yet"
            )
            return UnavailableMetric(name, criterion, reason)
        return factory(criterion)


def _trajectory(criterion: Any) -> Metric:
    return ToolTrajectoryMetric(cast(ToolTrajectoryCriterion, criterion))


def _rouge(criterion: Any) -> Metric:
    return ResponseMatchMetric(cast(BaseCriterion, criterion))


BUILTIN_METRICS: Mapping[str, MetricFactory] = {
    "tool_trajectory_avg_score": _trajectory,
    "response_match_score": _rouge,
}


def default_registry() -> MetricRegistry:
    """A registry holding every built-in metric."""
    registry = MetricRegistry()
    for name, factory in BUILTIN_METRICS.items():
        registry.register(name, factory)
    for name, efficiency_factory in EFFICIENCY_METRICS.items():
        registry.register(name, efficiency_factory)
    return registry
