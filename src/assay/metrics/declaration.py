"""What a metric is, declared once beside its implementation.

A :class:`MetricDeclaration` names the metric's class (whose :class:`~assay.metrics.base.MetricInfo`
says its name, what it measures, what it needs and whose definition it follows) and everything the
rest of assay asks about it: the criterion model its config entry is validated as, the kind of
case it applies to, its default threshold, the module of its judge prompts, how people label
what its judge decides (:class:`Labelling`, read by :mod:`assay.agreement`) and how a report says
why it failed. The registry, ``assay metrics``, the agreement tools and the reports read it;
none keeps a table of its own keyed by the metric's name.

A metric of one's own is declared the same way and registered with one line
(:func:`assay.metrics.registry.register_metric`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from assay.config import BaseCriterion
from assay.metrics.base import Metric, MetricInfo

CaseKind = Literal["conversation", "scenario"]
"""The kind of case a metric applies to: a static ``conversation`` (it compares against the
expected invocations) or a ``conversation_scenario`` (it judges the simulated user)."""

LabelUnit = Literal["turn", "rubric", "sentence", "conversation"]
"""What one person's label is on: a turn's verdict, one rubric's verdict in a turn, one sentence
of an answer (or the whole answer), or the whole conversation (on its last turn)."""

ReportDetail = Literal["trajectory", "overlap", "verdict"]
"""How a report says why the metric failed a case: the first tool call that did not match, the
turn's word overlap against the threshold, or the judge's verdict (else the score)."""


@dataclass(frozen=True)
class Labelling:
    """How people label what a judged metric decides, and how the judge's label is read.

    ``labels`` are the labels a person may give, the positive one first; ``answer_labels``, for a
    metric labelled per sentence, the labels of a whole answer instead. ``field`` is the key of
    the judge's closed choice that holds its verdict and ``positive`` the options of that choice
    that are the positive label (what a judge profile's rule decides on). ``threshold`` is the
    least score of a unit that is the judge's positive label; None: the criterion's threshold (a
    conversation scored as the share of its rubrics met). ``last_turn``: judged once on the whole
    conversation, its result (and label) on the last turn. ``rubric_type`` is the rubric type a
    rubric label must be of. ``needs_expected``: a label needs the case's expected invocations,
    one per recorded turn. ``exemplars``: the judge reads a case in one request with one verdict,
    so a labelled case can be shown whole as an exemplar. ``prompts``: the other prompts ``assay
    judge align --prompt`` may ask it with."""

    labels: tuple[str, ...]
    field: str
    positive: tuple[str, ...]
    unit: LabelUnit = "turn"
    answer_labels: tuple[str, ...] = ()
    threshold: float | None = 1.0
    last_turn: bool = False
    rubric_type: str | None = None
    needs_expected: bool = False
    exemplars: bool = False
    prompts: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricDeclaration:
    """Everything a metric is, in one place.

    ``metric`` is its class: built as ``metric(criterion)``, or ``metric(criterion, judge)`` when
    its info says it needs a judge, unless ``build`` says otherwise. ``criterion`` is the model its
    config entry is validated as. ``applies_to`` limits it to one kind of case. ``default_threshold``
    is the threshold it gets when no config file is given (None: the config must give one).
    ``prompts`` names its judge prompts' module under :mod:`assay.metrics.prompts` (hashed into a
    judge card's prompt version with its own module's constants), ``shared_prompts`` another
    prompts module its judge is also asked with. ``labelling`` says how people label it (None: it
    takes no labels). ``report`` says how a report explains a failure."""

    metric: type[Any]
    criterion: type[BaseCriterion] = BaseCriterion
    build: Callable[..., Metric] | None = None
    applies_to: CaseKind | None = None
    default_threshold: float | None = None
    prompts: str | None = None
    shared_prompts: str | None = None
    labelling: Labelling | None = None
    report: ReportDetail = "verdict"

    @property
    def info(self) -> MetricInfo:
        """What the metric is (its class's info)."""
        info = self.metric.info
        if not isinstance(info, MetricInfo):
            raise TypeError(f"{self.metric.__name__}.info is not a MetricInfo")
        return info

    @property
    def name(self) -> str:
        """The metric's name, as a config's ``criteria`` names it."""
        return self.info.name

    @property
    def judged(self) -> bool:
        """Whether the metric asks an LLM judge."""
        return self.info.needs_judge

    def create(self, criterion: Any, judge: Any = None) -> Metric:
        """The metric built from its criterion (and, for a judged one, its judge)."""
        build = self.build or self.metric
        made: Metric = build(criterion, judge) if self.judged else build(criterion)
        return made
