"""Metric name -> metric factory.

Each factory takes the criterion configured for the metric and returns a :class:`Metric`. An
LLM-judged metric's factory also takes the :class:`~assay.llm.judge.Judge` a
:class:`JudgeProvider` chose for it; when no judge can be had, the metric scores NOT_EVALUATED
with the provider's reason (which says how to get one). Names the config knows but no metric
implements yet score NOT_EVALUATED with the reason "not implemented yet" instead of failing the
run.

Every built-in metric is added from its :class:`~assay.metrics.declaration.MetricDeclaration`,
declared beside its implementation (the judged ones through a loader that imports their module
only when asked); a metric of one's own is added the same way with one line,
:func:`register_metric`. :meth:`MetricRegistry.catalog` lists every metric with its info, its
default threshold and whether it is implemented (``assay metrics`` prints it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, partial
from importlib import import_module
from typing import Any, ClassVar, Protocol

from assay.config import CRITERION_TYPES, DEFAULT_CRITERIA, BaseCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.judge import Judge
from assay.metrics import efficiency, rouge, trajectory
from assay.metrics.base import Metric, MetricInfo, MetricResult, not_evaluated
from assay.metrics.declaration import CaseKind as CaseKind
from assay.metrics.declaration import MetricDeclaration

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
        self._declared: dict[str, Callable[[], MetricDeclaration]] = {}

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

    def declare(self, declaration: MetricDeclaration, *, override: bool = False) -> None:
        """Add a metric from its declaration (its name, factory, judge, case kind and info)."""
        self._add(declaration.name, declaration.judged, lambda: declaration, override)

    def declare_lazily(
        self, name: str, load: Callable[[], MetricDeclaration], *, override: bool = False
    ) -> None:
        """Add the judged metric ``name`` whose declaration ``load`` returns, called (importing
        its module) only when the metric is built or asked about."""
        self._add(name, True, load, override)

    def _add(
        self, name: str, judged: bool, load: Callable[[], MetricDeclaration], override: bool
    ) -> None:
        if judged:
            self.register_judged(name, lambda c, j: load().create(c, j), override=override)
        else:
            self.register(name, lambda c: load().create(c), override=override)
        self._info[name] = lambda: load().info
        self._declared[name] = load

    def declaration(self, name: str) -> MetricDeclaration | None:
        """The declaration of the registered metric ``name``, or None when it was registered
        without one (or is not registered)."""
        load = self._declared.get(name)
        return load() if load is not None else None

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
            declared = self.declaration(name)
            default = declared.default_threshold if declared else DEFAULT_CRITERIA.get(name)
            entries.append(MetricEntry(info, True, default))
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
        declared = self.declaration(name)
        return declared.applies_to if declared is not None else self._applies.get(name)

    def _check_new(self, name: str, override: bool) -> None:
        if self.is_registered(name) and not override:
            raise ValueError(f"metric '{name}' is already registered")
        self._factories.pop(name, None)
        self._judged.pop(name, None)
        self._declared.pop(name, None)

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


BUILTIN_DECLARATIONS: tuple[MetricDeclaration, ...] = (
    trajectory.DECLARATION,
    rouge.DECLARATION,
    *efficiency.DECLARATIONS,
)
"""The deterministic and efficiency metrics (their modules are imported already)."""

JUDGED_DECLARATIONS: tuple[tuple[str, str], ...] = (
    ("final_response_match_v2", "assay.metrics.final_response_match:DECLARATION"),
    ("rubric_based_final_response_quality_v1", "assay.metrics.rubric_declarations:FINAL_RESPONSE"),
    ("rubric_based_tool_use_quality_v1", "assay.metrics.rubric_declarations:TOOL_USE"),
    (
        "rubric_based_multi_turn_trajectory_quality_v1",
        "assay.metrics.rubric_multi_turn:DECLARATION",
    ),
    ("hallucinations_v1", "assay.metrics.hallucinations:DECLARATION"),
    ("safety_v1", "assay.metrics.safety:DECLARATION"),
    ("response_evaluation_score", "assay.metrics.coherence:DECLARATION"),
    ("multi_turn_task_success_v1", "assay.metrics.multi_turn:TASK_SUCCESS_DECLARATION"),
    ("multi_turn_trajectory_quality_v1", "assay.metrics.multi_turn:TRAJECTORY_QUALITY_DECLARATION"),
    ("multi_turn_tool_use_quality_v1", "assay.metrics.multi_turn:TOOL_USE_QUALITY_DECLARATION"),
    ("per_turn_user_simulator_quality_v1", "assay.metrics.simulator_quality:DECLARATION"),
)
"""The LLM-judged metrics, each with where its declaration is: the index only, every fact about
the metric is in its declaration, read (its module imported) when a metric is built or asked
about, so that importing the registry stays cheap for runs that use no judge."""


@cache
def _load(target: str) -> MetricDeclaration:
    """The declaration at ``module:ATTRIBUTE``, its module imported now."""
    module, _, attribute = target.partition(":")
    found = getattr(import_module(module), attribute)
    if not isinstance(found, MetricDeclaration):
        raise TypeError(f"{target} is not a MetricDeclaration")
    return found


_REGISTERED: dict[str, MetricDeclaration] = {}
"""The metrics registered with :func:`register_metric`, in registration order."""


def register_metric(declaration: MetricDeclaration, *, override: bool = False) -> None:
    """Make a metric of one's own known everywhere, from its declaration alone: configs may name
    it (it is added to :data:`~assay.config.CRITERION_TYPES`), :func:`default_registry` builds
    it, ``assay metrics`` lists it, and the agreement tools and reports read its declaration.
    Registering a name twice is an error unless ``override``; ADK's names cannot be taken."""
    name = declaration.name
    if not override and (name in _REGISTERED or declaration_of(name) is not None):
        raise ValueError(f"metric '{name}' is already registered")
    CRITERION_TYPES.add(name, declaration.criterion)
    _REGISTERED[name] = declaration


def unregister_metric(name: str) -> None:
    """Forget a metric registered with :func:`register_metric` (nothing when it was not)."""
    if _REGISTERED.pop(name, None) is not None:
        CRITERION_TYPES.remove(name)


def declaration_of(name: str) -> MetricDeclaration | None:
    """The declaration of the metric ``name`` (registered or built in; a judged one's module is
    imported now), or None for a name no declared metric has."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    found = next((d for d in BUILTIN_DECLARATIONS if d.name == name), None)
    if found is not None:
        return found
    target = dict(JUDGED_DECLARATIONS).get(name)
    return _load(target) if target is not None else None


def declarations() -> list[MetricDeclaration]:
    """Every declared metric, built-in then registered (importing the judged metrics' modules)."""
    judged = [_load(target) for _, target in JUDGED_DECLARATIONS]
    return [*BUILTIN_DECLARATIONS, *judged, *_REGISTERED.values()]


def default_registry() -> MetricRegistry:
    """A registry holding every built-in metric, then every one registered with
    :func:`register_metric`."""
    registry = MetricRegistry()
    for declared in BUILTIN_DECLARATIONS:
        registry.declare(declared)
    for name, target in JUDGED_DECLARATIONS:
        registry.declare_lazily(name, partial(_load, target))
    for declared in _REGISTERED.values():
        registry.declare(declared)
    return registry
