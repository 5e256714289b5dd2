"""Metric name -> metric factory.

Each factory takes the criterion configured for the metric and returns a :class:`Metric`. An
LLM-judged metric's factory also takes the :class:`~assay.llm.judge.Judge` a
:class:`JudgeProvider` chose for it; when no judge can be had, the metric scores NOT_EVALUATED
with the provider's reason (which says how to get one). Names the config knows but no metric
implements yet score NOT_EVALUATED with the reason "not implemented yet" instead of failing the
run.

What each metric is (its :class:`MetricInfo`) is registered beside its factory, for the judged
ones as a loader that imports their module only when asked; :meth:`MetricRegistry.catalog`
lists every metric with those facts, the default threshold and whether it is implemented
(``assay metrics`` prints it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import Any, ClassVar, Literal, Protocol, cast

from assay.config import (
    CRITERION_TYPES,
    DEFAULT_CRITERIA,
    BaseCriterion,
    HallucinationsCriterion,
    LlmAsAJudgeCriterion,
    LlmBackedUserSimulatorCriterion,
    RubricsBasedCriterion,
    ToolTrajectoryCriterion,
)
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.judge import Judge
from assay.metrics.base import Metric, MetricInfo, MetricResult, not_evaluated
from assay.metrics.efficiency import (
    EFFICIENCY_METRICS,
    InferenceCallCountMetric,
    InvocationDurationMetric,
    TokenUsageMetric,
    ToolCallCountMetric,
)
from assay.metrics.rouge import ResponseMatchMetric
from assay.metrics.trajectory import ToolTrajectoryMetric

CaseKind = Literal["conversation", "scenario"]
"""The kind of case a metric applies to: a static ``conversation`` (it compares against the
expected invocations) or a ``conversation_scenario`` (it judges the simulated user)."""

MetricFactory = Callable[[Any], Metric]
JudgedMetricFactory = Callable[[Any, Judge], Metric]

InfoSource = MetricInfo | Callable[[], MetricInfo]
"""A metric's :class:`MetricInfo`, or a function returning it (which may import its module)."""

NO_JUDGE_PROVIDER = "no LLM judge was configured for this run"
NOT_IMPLEMENTED = "not implemented yet"
"""The reason a metric the config knows (:data:`~assay.config.CRITERION_TYPES`) but no registered
metric implements scores NOT_EVALUATED."""


class JudgeProvider(Protocol):
    """Chooses the judge for a judged metric, or says why there is none."""

    def judge_for(self, metric: str, criterion: BaseCriterion | None) -> Judge | str:
        """The judge for ``metric``, or the reason it cannot have one (how to fix it)."""
        ...


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


@dataclass(frozen=True)
class MetricEntry:
    """One metric as ``assay metrics`` lists it: what it is, whether assay scores it, and the
    threshold it gets when no config file is given (None: the config must give one, or, for an
    informational metric, it takes none)."""

    info: MetricInfo
    implemented: bool
    default_threshold: float | None


class MetricRegistry:
    """An explicit, per-instance map from metric name to factory. Duplicates are errors."""

    def __init__(self) -> None:
        self._factories: dict[str, MetricFactory] = {}
        self._judged: dict[str, JudgedMetricFactory] = {}
        self._applies: dict[str, CaseKind] = {}
        self._info: dict[str, InfoSource] = {}

    def register(
        self,
        name: str,
        factory: MetricFactory,
        *,
        override: bool = False,
        applies_to: CaseKind | None = None,
        info: InfoSource | None = None,
    ) -> None:
        """Add a metric; registering a name twice is an error unless ``override``.
        ``applies_to`` limits it to one kind of case (see :data:`CaseKind`); on the other kind
        it is not applicable. ``info`` says what the metric is (see :meth:`info`)."""
        self._check_new(name, override)
        self._factories[name] = factory
        self._set_applies(name, applies_to)
        self._set_info(name, info)

    def register_judged(
        self,
        name: str,
        factory: JudgedMetricFactory,
        *,
        override: bool = False,
        applies_to: CaseKind | None = None,
        info: InfoSource | None = None,
    ) -> None:
        """Add an LLM-judged metric, built with the judge a :class:`JudgeProvider` chooses."""
        self._check_new(name, override)
        self._judged[name] = factory
        self._set_applies(name, applies_to)
        self._set_info(name, info)

    def _set_info(self, name: str, info: InfoSource | None) -> None:
        if info is None:
            self._info.pop(name, None)
        else:
            self._info[name] = info

    def info(self, name: str) -> MetricInfo | None:
        """What the registered metric ``name`` is, or None when it was registered without its
        info (or is not registered)."""
        source = self._info.get(name)
        if source is None or isinstance(source, MetricInfo):
            return source
        return source()

    def unimplemented(self) -> list[str]:
        """The metrics a config may name (:data:`~assay.config.CRITERION_TYPES`) that no
        registered metric implements: they score NOT_EVALUATED, :data:`NOT_IMPLEMENTED`."""
        return [name for name in CRITERION_TYPES if not self.is_registered(name)]

    def catalog(self) -> list[MetricEntry]:
        """Every metric: the registered ones in registration order, then those not implemented
        yet, each with its info and its default threshold (ADK's default criteria, used when no
        config file is given)."""
        entries = []
        for name in self.names():
            info = self.info(name) or MetricInfo(
                name=name, description="", needs_judge=self.is_judged(name)
            )
            entries.append(MetricEntry(info, True, DEFAULT_CRITERIA.get(name)))
        for name in self.unimplemented():
            info = MetricInfo(name=name, description="")
            entries.append(MetricEntry(info, False, DEFAULT_CRITERIA.get(name)))
        return entries

    def _set_applies(self, name: str, applies_to: CaseKind | None) -> None:
        if applies_to is None:
            self._applies.pop(name, None)
        else:
            self._applies[name] = applies_to

    def applies_to(self, name: str) -> CaseKind | None:
        """The one kind of case the metric applies to, or None for every case."""
        return self._applies.get(name)

    def _check_new(self, name: str, override: bool) -> None:
        if self.is_registered(name) and not override:
            raise ValueError(f"metric '{name}' is already registered")
        self._factories.pop(name, None)
        self._judged.pop(name, None)

    def names(self) -> list[str]:
        """The registered metric names."""
        return [*self._factories, *self._judged]

    def is_registered(self, name: str) -> bool:
        """Whether a metric (judged or not) is registered under ``name``."""
        return name in self._factories or name in self._judged

    def is_judged(self, name: str) -> bool:
        """Whether the metric asks an LLM judge."""
        return name in self._judged

    def create(
        self, name: str, criterion: BaseCriterion | None, judges: JudgeProvider | None = None
    ) -> Metric:
        """The metric for ``name`` built from its criterion, or an :class:`UnavailableMetric`."""
        judged = self._judged.get(name)
        if judged is not None:
            judge = judges.judge_for(name, criterion) if judges is not None else NO_JUDGE_PROVIDER
            if isinstance(judge, str):
                return UnavailableMetric(name, criterion, judge)
            return judged(criterion, judge)
        factory = self._factories.get(name)
        if factory is None:
            reason = (
                NOT_IMPLEMENTED
                if name in CRITERION_TYPES
                # A custom metric is built from its custom_metrics entry, not from here
                # (assay.metrics.custom.custom_metric, called by the runner's
                # configured_metrics).
                else "no metric is registered under this name; a custom metric runs from its "
                "custom_metrics entry in the config"
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

BUILTIN_INFO: Mapping[str, MetricInfo] = {
    metric.info.name: metric.info
    for metric in (
        ToolTrajectoryMetric,
        ResponseMatchMetric,
        ToolCallCountMetric,
        InferenceCallCountMetric,
        TokenUsageMetric,
        InvocationDurationMetric,
    )
}
"""What the deterministic and efficiency metrics are (their modules are imported already)."""

# The judged metrics' modules are imported when a metric is built, so that importing the
# registry stays cheap for runs that use no judge.


def _final_response_match(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.final_response_match import FinalResponseMatchV2Metric

    return FinalResponseMatchV2Metric(cast(LlmAsAJudgeCriterion, criterion), judge)


def _rubric_final_response(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.rubrics import RubricFinalResponseQualityMetric

    return RubricFinalResponseQualityMetric(cast(RubricsBasedCriterion, criterion), judge)


def _rubric_tool_use(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.rubrics import RubricToolUseQualityMetric

    return RubricToolUseQualityMetric(cast(RubricsBasedCriterion, criterion), judge)


def _rubric_multi_turn(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.rubric_multi_turn import RubricMultiTurnTrajectoryQualityMetric

    return RubricMultiTurnTrajectoryQualityMetric(cast(RubricsBasedCriterion, criterion), judge)


def _hallucinations(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.hallucinations import HallucinationsMetric

    return HallucinationsMetric(cast(HallucinationsCriterion, criterion), judge)


def _safety(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.safety import SafetyMetric

    return SafetyMetric(cast(BaseCriterion, criterion), judge)


def _coherence(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.coherence import CoherenceMetric

    return CoherenceMetric(cast(BaseCriterion, criterion), judge)


def _multi_turn(target: str) -> JudgedMetricFactory:
    """The factory of the conversation-level metric class at ``module:Class``."""

    def make(criterion: Any, judge: Judge) -> Metric:
        module, _, attribute = target.partition(":")
        metric: Metric = getattr(import_module(module), attribute)(
            cast(BaseCriterion, criterion), judge
        )
        return metric

    return make


_TASK_SUCCESS = "assay.metrics.multi_turn:MultiTurnTaskSuccessMetric"
_TRAJECTORY_QUALITY = "assay.metrics.multi_turn:MultiTurnTrajectoryQualityMetric"
_TOOL_USE_QUALITY = "assay.metrics.multi_turn:MultiTurnToolUseQualityMetric"


def _simulator_quality(criterion: Any, judge: Judge) -> Metric:
    from assay.metrics.simulator_quality import UserSimulatorQualityMetric
    from assay.simulation.personas import BUILTIN_PERSONAS

    return UserSimulatorQualityMetric(
        cast(LlmBackedUserSimulatorCriterion, criterion), judge, personas=BUILTIN_PERSONAS.get
    )


JUDGED_METRICS: Mapping[str, JudgedMetricFactory] = {
    "final_response_match_v2": _final_response_match,
    "rubric_based_final_response_quality_v1": _rubric_final_response,
    "rubric_based_tool_use_quality_v1": _rubric_tool_use,
    "rubric_based_multi_turn_trajectory_quality_v1": _rubric_multi_turn,
    "hallucinations_v1": _hallucinations,
    "safety_v1": _safety,
    "response_evaluation_score": _coherence,
    "multi_turn_task_success_v1": _multi_turn(_TASK_SUCCESS),
    "multi_turn_trajectory_quality_v1": _multi_turn(_TRAJECTORY_QUALITY),
    "multi_turn_tool_use_quality_v1": _multi_turn(_TOOL_USE_QUALITY),
    "per_turn_user_simulator_quality_v1": _simulator_quality,
}
"""The LLM-judged criteria; each factory gets its criterion and the judge chosen for it."""


def _info_of(target: str) -> Callable[[], MetricInfo]:
    """A loader of the ``info`` of the metric class at ``module:Class``, imported when called."""

    def load() -> MetricInfo:
        module, _, attribute = target.partition(":")
        info = getattr(import_module(module), attribute).info
        if not isinstance(info, MetricInfo):
            raise TypeError(f"{target}.info is not a MetricInfo")
        return info

    return load


JUDGED_INFO: Mapping[str, Callable[[], MetricInfo]] = {
    "final_response_match_v2": _info_of(
        "assay.metrics.final_response_match:FinalResponseMatchV2Metric"
    ),
    "rubric_based_final_response_quality_v1": _info_of(
        "assay.metrics.rubrics:RubricFinalResponseQualityMetric"
    ),
    "rubric_based_tool_use_quality_v1": _info_of(
        "assay.metrics.rubrics:RubricToolUseQualityMetric"
    ),
    "rubric_based_multi_turn_trajectory_quality_v1": _info_of(
        "assay.metrics.rubric_multi_turn:RubricMultiTurnTrajectoryQualityMetric"
    ),
    "hallucinations_v1": _info_of("assay.metrics.hallucinations:HallucinationsMetric"),
    "safety_v1": _info_of("assay.metrics.safety:SafetyMetric"),
    "response_evaluation_score": _info_of("assay.metrics.coherence:CoherenceMetric"),
    "multi_turn_task_success_v1": _info_of(_TASK_SUCCESS),
    "multi_turn_trajectory_quality_v1": _info_of(_TRAJECTORY_QUALITY),
    "multi_turn_tool_use_quality_v1": _info_of(_TOOL_USE_QUALITY),
    "per_turn_user_simulator_quality_v1": _info_of(
        "assay.metrics.simulator_quality:UserSimulatorQualityMetric"
    ),
}
"""What the judged metrics are, read from their classes when asked (importing their modules)."""


APPLIES_TO: Mapping[str, CaseKind] = {
    "tool_trajectory_avg_score": "conversation",
    "response_match_score": "conversation",
    "final_response_match_v2": "conversation",
    "response_evaluation_score": "conversation",
    "per_turn_user_simulator_quality_v1": "scenario",
}
"""The built-in metrics that apply to one kind of case only: those comparing against expected
invocations need a static conversation; the simulated user's judge needs a scenario."""


def default_registry() -> MetricRegistry:
    """A registry holding every built-in metric."""
    registry = MetricRegistry()
    for name, factory in BUILTIN_METRICS.items():
        registry.register(
            name, factory, applies_to=APPLIES_TO.get(name), info=BUILTIN_INFO.get(name)
        )
    for name, efficiency_factory in EFFICIENCY_METRICS.items():
        registry.register(name, efficiency_factory, info=BUILTIN_INFO.get(name))
    for name, judged in JUDGED_METRICS.items():
        registry.register_judged(
            name, judged, applies_to=APPLIES_TO.get(name), info=JUDGED_INFO.get(name)
        )
    return registry
