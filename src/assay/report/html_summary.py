"""The summary blocks of the HTML report (:mod:`assay.report.html`): per eval set and over the
run, the counts, each metric's pass and fail counts, mean score and score histogram, the judges,
the tokens used and what the judges cost (:mod:`assay.report.cost`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.report import numbers
from assay.report.cost import RunCost, cost_of
from assay.report.judge_agreement import MEASURE_HINT, JudgedMetric, judged_metrics
from assay.report.rows import UsageRow
from assay.results.model import EvalCaseResult, EvalSetResult

_BINS = 10
_CHART_W, _CHART_H = 200, 60


@dataclass(frozen=True)
class Bar:
    """One histogram bin, with its SVG geometry."""

    x: float
    y: float
    width: float
    height: float
    count: int
    label: str


@dataclass(frozen=True)
class Histogram:
    """A score distribution as SVG bars over ``[low, high]``."""

    bars: list[Bar]
    low: str
    high: str
    width: int = _CHART_W
    height: int = _CHART_H


HISTOGRAM_MIN = 20
"""Scores a metric needs before the summary draws their distribution (a histogram of five
cases says nothing the counts do not)."""


@dataclass(frozen=True)
class MetricSummary:
    """One metric over a group of cases; an informational one (which never passes or fails)
    has its mean value with its unit and no counts."""

    name: str
    scored: int
    mean: str
    passed: int
    failed: int
    not_evaluated: int
    histogram: Histogram | None
    informational: bool = False


@dataclass(frozen=True)
class JudgeRow:
    """A metric's judge in words, how far it agrees with people, and the smoke-test warning
    (empty when there is none)."""

    metric: str
    judge: str
    agreement: str = ""
    detail: str = ""
    warning: str = ""


@dataclass(frozen=True)
class Summary:
    """A group of cases (an eval set, or the whole run)."""

    title: str
    path: str | None
    total: int
    passed: int
    failed: int
    not_evaluated: int
    pass_rate: str
    duration: str
    metrics: list[MetricSummary]
    judges: list[JudgeRow]
    usage: list[UsageRow]
    cost: RunCost | None = None
    """What the judges cost, per metric and in all, with the run's cap; None when they cost
    nothing (:func:`~assay.report.cost.cost_of`)."""


@dataclass
class _Scores:
    values: list[float] = field(default_factory=list)
    statuses: list[EvalStatus] = field(default_factory=list)


def score_text(score: float | None, informational: bool = False) -> str:
    """A score as every report writes it (:func:`assay.report.numbers.score_text`); an
    informational value with up to four significant digits (:func:`value_text` gives it its
    unit where the metric is known)."""
    if score is None:
        return "-"
    return f"{score:.4g}" if informational else numbers.score_text(score)


def value_text(metric: str, value: float | None) -> str:
    """An informational metric's value with its unit (``12 ms``, ``1,234``)."""
    return numbers.value_text(metric, value)


def status_class(status: EvalStatus) -> str:
    return status.name.lower().replace("_", "-")


def _rate(passed: int, total: int) -> str:
    return "-" if total == 0 else f"{100 * passed / total:.1f}%"


def histogram(values: Sequence[float]) -> Histogram | None:
    """Ten bins over [0, 1] (or over the values' range when they leave it); None when empty."""
    if not values:
        return None
    low, high = (0.0, 1.0) if min(values) >= 0 and max(values) <= 1 else (min(values), max(values))
    span = high - low
    counts = [0] * _BINS
    for value in values:
        index = 0 if span == 0 else min(int((value - low) / span * _BINS), _BINS - 1)
        counts[index] += 1
    return draw(counts, low, high)


def draw(counts: Sequence[int], low: float, high: float) -> Histogram:
    """SVG bars for :data:`_BINS` bin counts over ``[low, high]``."""
    span = high - low
    tallest = max(counts)
    width = _CHART_W / _BINS
    bars = []
    for i, count in enumerate(counts):
        height = 0.0 if tallest == 0 else (_CHART_H - 2) * count / tallest
        start = low + span * i / _BINS
        end = low + span * (i + 1) / _BINS
        bars.append(
            Bar(
                x=round(i * width + 1, 2),
                y=round(_CHART_H - height, 2),
                width=round(width - 2, 2),
                height=round(height, 2),
                count=count,
                label=f"{start:.4g}–{end:.4g}: {count}",
            )
        )
    return Histogram(bars, f"{low:.4g}", f"{high:.4g}")


class ScoreBins:
    """A histogram of :data:`_BINS` bins kept as values arrive, in constant memory, with exact
    counts: over [0, 1] (a score of 1 in the top bin, as :func:`histogram` has it) while the
    values stay there, and otherwise over a range that doubles toward a value outside it, each
    new bin the sum of two old ones (the bins then start at 0, or at the first value outside
    [0, 1], rather than at the smallest value)."""

    def __init__(self) -> None:
        self.low, self.span = 0.0, 1.0
        self.counts = [0] * _BINS
        self.ones = 0  # values of exactly 1 while the range is [0, 1]
        self.unit = True
        self.seen = 0

    def add(self, value: float) -> None:
        self.seen += 1
        if self.unit and value == 1.0:
            self.ones += 1
            return
        if self.seen == 1 and not 0 <= value <= 1:
            self.unit, self.low, self.span = False, value, max(abs(value) * 2.0**-20, 2.0**-30)
        while not self.low <= value < self.low + self.span:
            self._double(left=value < self.low)
        self.counts[self._index(value)] += 1

    def _index(self, value: float) -> int:
        return max(0, min(int((value - self.low) / self.span * _BINS), _BINS - 1))

    def _double(self, *, left: bool) -> None:
        pairs = [self.counts[i] + self.counts[i + 1] for i in range(0, _BINS, 2)]
        empty = [0] * (_BINS - len(pairs))
        if left:
            self.counts, self.low = empty + pairs, self.low - self.span
        else:
            self.counts = pairs + empty
        self.span *= 2
        if self.unit:
            self.unit = False
            self.counts[self._index(1.0)] += self.ones
            self.ones = 0

    def histogram(self) -> Histogram | None:
        """The bars; None before any value."""
        if not self.seen:
            return None
        counts = list(self.counts)
        counts[-1] += self.ones
        return draw(counts, self.low, self.low + self.span)


def _metric_summaries(cases: Iterable[EvalCaseResult]) -> list[MetricSummary]:
    by_metric: dict[str, _Scores] = {}
    for case in cases:
        for row in case.overall_eval_metric_results:
            if row.metric_name in case.assay.not_applicable:
                continue
            scores = by_metric.setdefault(row.metric_name, _Scores())
            scores.statuses.append(row.eval_status)
            if row.score is not None and math.isfinite(row.score):
                scores.values.append(row.score)
    out = []
    for name, scores in by_metric.items():
        mean = sum(scores.values) / len(scores.values) if scores.values else None
        informational = all(s is EvalStatus.INFORMATIONAL for s in scores.statuses)
        drawn = not informational and len(scores.values) >= HISTOGRAM_MIN
        out.append(
            MetricSummary(
                name=name,
                scored=len(scores.values),
                mean=value_text(name, mean) if informational else score_text(mean),
                passed=scores.statuses.count(EvalStatus.PASSED),
                failed=scores.statuses.count(EvalStatus.FAILED),
                not_evaluated=scores.statuses.count(EvalStatus.NOT_EVALUATED),
                histogram=histogram(scores.values) if drawn else None,
                informational=informational,
            )
        )
    return out


def usage_row(who: str, usage: TokenUsage) -> UsageRow:
    return UsageRow(
        who,
        f"{usage.calls:,}",
        f"{usage.prompt_tokens:,}",
        f"{usage.completion_tokens:,}",
        f"{usage.cache_hits:,}",
    )


def summary(title: str, results: Sequence[EvalSetResult], *, cap: bool = True) -> Summary:
    """The block for ``results``' cases; ``cap=False`` leaves the run's ``--max-cost`` out of
    its cost (a block of one eval set of several: the cap is the whole run's)."""
    cases = [case for result in results for case in result.eval_case_results]
    statuses = [case.final_eval_status for case in cases]
    judges, usage, duration = _set_notes(results)
    only = results[0].assay if len(results) == 1 else None
    return Summary(
        title=title,
        path=only.eval_set_path if only else None,
        total=len(cases),
        passed=statuses.count(EvalStatus.PASSED),
        failed=statuses.count(EvalStatus.FAILED),
        not_evaluated=statuses.count(EvalStatus.NOT_EVALUATED),
        pass_rate=_rate(statuses.count(EvalStatus.PASSED), len(cases)),
        duration=f"{duration:.1f} s",
        metrics=_metric_summaries(cases),
        judges=judges,
        usage=usage,
        cost=cost_of(results, cap=cap),
    )


def _set_notes(results: Sequence[EvalSetResult]) -> tuple[list[JudgeRow], list[UsageRow], float]:
    """The judges, the tokens they used and the duration, over the sets' notes."""
    judges: dict[str, JudgeRow] = {}
    usage: dict[str, TokenUsage] = {}
    duration = 0.0
    for result in results:
        if result.assay is None:
            continue
        duration += result.assay.duration_s
        for metric, info in result.assay.judges.items():
            described = info.describe()
            judges[metric] = JudgeRow(
                metric, described or f"no judge: {info.unavailable or 'unavailable'}"
            )
        for judged in judged_metrics(result):
            judges[judged.metric] = _judge_row(judged)
        for metric, used in result.assay.usage.items():
            usage[metric] = usage.get(metric, TokenUsage()) + used
    return (
        [judges[metric] for metric in sorted(judges)],
        [usage_row(who, used) for who, used in sorted(usage.items())],
        duration,
    )


@dataclass
class _Tally:
    """One metric over a group of cases, as they arrive."""

    passed: int = 0
    failed: int = 0
    not_evaluated: int = 0
    graded: bool = False  # some status other than INFORMATIONAL
    score_sum: float = 0.0
    bins: ScoreBins = field(default_factory=ScoreBins)


class SummaryBuilder:
    """:func:`summary`'s block for a group of cases too many to hold: fed a case at a time,
    holding counts and :class:`ScoreBins` only (``cap`` as :func:`summary` has it)."""

    def __init__(self, title: str, results: Sequence[EvalSetResult], *, cap: bool = True) -> None:
        self.title, self.results, self.cap = title, results, cap
        self.counts = dict.fromkeys(EvalStatus, 0)
        self.metrics: dict[str, _Tally] = {}

    def add(self, case: EvalCaseResult) -> None:
        self.counts[case.final_eval_status] += 1
        for row in case.overall_eval_metric_results:
            if row.metric_name in case.assay.not_applicable:
                continue
            tally = self.metrics.setdefault(row.metric_name, _Tally())
            status = row.eval_status
            tally.passed += status is EvalStatus.PASSED
            tally.failed += status is EvalStatus.FAILED
            tally.not_evaluated += status is EvalStatus.NOT_EVALUATED
            tally.graded |= status is not EvalStatus.INFORMATIONAL
            if row.score is not None and math.isfinite(row.score):
                tally.score_sum += row.score
                tally.bins.add(row.score)

    def build(self) -> Summary:
        judges, usage, duration = _set_notes(self.results)
        only = self.results[0].assay if len(self.results) == 1 else None
        total = sum(self.counts.values())
        passed = self.counts[EvalStatus.PASSED]
        return Summary(
            title=self.title,
            path=only.eval_set_path if only else None,
            total=total,
            passed=passed,
            failed=self.counts[EvalStatus.FAILED],
            not_evaluated=self.counts[EvalStatus.NOT_EVALUATED],
            pass_rate=_rate(passed, total),
            duration=f"{duration:.1f} s",
            metrics=[_tallied(name, tally) for name, tally in self.metrics.items()],
            judges=judges,
            usage=usage,
            cost=cost_of(self.results, cap=self.cap),
        )


def _tallied(name: str, tally: _Tally) -> MetricSummary:
    scored = tally.bins.seen
    mean = tally.score_sum / scored if scored else None
    drawn = tally.graded and scored >= HISTOGRAM_MIN
    return MetricSummary(
        name=name,
        scored=scored,
        mean=score_text(mean) if tally.graded else value_text(name, mean),
        passed=tally.passed,
        failed=tally.failed,
        not_evaluated=tally.not_evaluated,
        histogram=tally.bins.histogram() if drawn else None,
        informational=not tally.graded,
    )


def _judge_row(judged: JudgedMetric) -> JudgeRow:
    found = judged.agreement
    if found is None:
        return JudgeRow(judged.metric, judged.judge, judged.text, MEASURE_HINT)
    detail = "shipped with assay: " if found.bundled else ""
    detail += f"prompt {found.prompt_version}, measured {found.card_date}"
    if found.labels_file:
        detail += f" on {found.labels_file}"
    return JudgeRow(judged.metric, judged.judge, judged.text, detail, judged.warning or "")
