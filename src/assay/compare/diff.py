"""Matching the cases of two runs and measuring what changed, metric by metric.

Cases are matched by ``(eval_set_id, eval_id, run)``. For every metric, only the cases where
both runs have a usable value count: a score on both sides for the mean change and the bootstrap
interval, PASSED or FAILED on both sides for the pass rates and the McNemar test. Metrics that
do not apply to a case (``assay.not_applicable``) are left out for that case. Cases found in only
one run are kept in :attr:`Comparison.only_in_base` / :attr:`Comparison.only_in_candidate`.

A metric *regressed* when the interval for its mean score change lies wholly below zero, or
when McNemar's test is significant at ``alpha`` and more cases went pass→fail than fail→pass.
Informational metrics (token counts, durations) have no better direction and never regress.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from assay.compare.stats import Interval, mcnemar_exact, paired_bootstrap_ci
from assay.errors import InputError, Problem
from assay.metrics.base import EvalStatus
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult

CASE_VERDICT = "(case verdict)"
"""The name of the row comparing whole cases' final statuses."""

_JUDGED = (EvalStatus.PASSED, EvalStatus.FAILED)


class CaseKey(NamedTuple):
    """Which case a result belongs to: eval set, eval case and run number."""

    eval_set_id: str
    eval_id: str
    run: int

    @property
    def label(self) -> str:
        """``set / case``, with ``(run N)`` after it for runs other than the first."""
        run = f" (run {self.run})" if self.run != 1 else ""
        return f"{self.eval_set_id} / {self.eval_id}{run}"


@dataclass(frozen=True)
class MetricChange:
    """How one metric (or the case verdict) changed between two runs on the matched cases."""

    name: str
    informational: bool = False
    scored: int = 0
    """Cases with a score in both runs."""
    base_mean: float | None = None
    candidate_mean: float | None = None
    interval: Interval | None = None
    judged: int = 0
    """Cases PASSED or FAILED in both runs."""
    base_passed: int = 0
    candidate_passed: int = 0
    to_fail: tuple[CaseKey, ...] = ()
    to_pass: tuple[CaseKey, ...] = ()
    p_value: float = 1.0
    regressed: bool = False
    improved: bool = False

    @property
    def mean_change(self) -> float | None:
        """Candidate mean minus base mean, over the cases scored in both."""
        if self.base_mean is None or self.candidate_mean is None:
            return None
        return self.candidate_mean - self.base_mean

    @property
    def base_pass_rate(self) -> float | None:
        """The base run's pass rate over the cases judged in both runs."""
        return self.base_passed / self.judged if self.judged else None

    @property
    def candidate_pass_rate(self) -> float | None:
        """The candidate run's pass rate over the cases judged in both runs."""
        return self.candidate_passed / self.judged if self.judged else None

    @property
    def pass_rate_change(self) -> float | None:
        """Candidate pass rate minus base pass rate."""
        if not self.judged:
            return None
        return (self.candidate_passed - self.base_passed) / self.judged


@dataclass(frozen=True)
class Comparison:
    """Everything ``assay compare`` reports about two runs."""

    base: str
    candidate: str
    alpha: float
    resamples: int
    seed: int
    matched: int
    metrics: list[MetricChange] = field(default_factory=list)
    verdict: MetricChange = field(default_factory=lambda: MetricChange(CASE_VERDICT))
    only_in_base: list[CaseKey] = field(default_factory=list)
    only_in_candidate: list[CaseKey] = field(default_factory=list)

    @property
    def rows(self) -> list[MetricChange]:
        """Every metric's row, then the case-verdict row."""
        return [*self.metrics, self.verdict]

    @property
    def regressions(self) -> list[MetricChange]:
        """The rows that got significantly worse."""
        return [row for row in self.rows if row.regressed]


@dataclass
class _Pairs:
    """One metric's paired observations, gathered case by case."""

    informational: bool = False
    base_scores: list[float] = field(default_factory=list)
    candidate_scores: list[float] = field(default_factory=list)
    statuses: list[tuple[CaseKey, bool, bool]] = field(default_factory=list)


def index_cases(results: Sequence[EvalSetResult], source: str) -> dict[CaseKey, EvalCaseResult]:
    """Every case result of a run by its key; an :class:`InputError` naming ``source`` when the
    same case and run appears twice (the comparison would be ambiguous)."""
    cases: dict[CaseKey, EvalCaseResult] = {}
    problems: list[Problem] = []
    for result in results:
        for case in result.eval_case_results:
            key = CaseKey(result.eval_set_id, case.eval_id, case.assay.run)
            if key in cases:
                problems.append(
                    Problem(
                        source,
                        "",
                        f"case '{key.label}' appears twice; expected one result per case and run",
                    )
                )
            cases[key] = case
    if problems:
        raise InputError(problems)
    return cases


def compare_runs(
    base: Sequence[EvalSetResult],
    candidate: Sequence[EvalSetResult],
    *,
    base_label: str = "base",
    candidate_label: str = "candidate",
    alpha: float = 0.05,
    resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Match the two runs' cases and compare every metric and the case verdicts."""
    before = index_cases(base, base_label)
    after = index_cases(candidate, candidate_label)
    matched = [key for key in before if key in after]
    pairs: dict[str, _Pairs] = {}
    verdicts: list[tuple[CaseKey, bool, bool]] = []
    for key in matched:
        _gather(key, before[key], after[key], pairs)
        old, new = before[key].final_eval_status, after[key].final_eval_status
        if old in _JUDGED and new in _JUDGED:
            verdicts.append((key, old is EvalStatus.PASSED, new is EvalStatus.PASSED))
    settings = (alpha, resamples, seed)
    return Comparison(
        base=base_label,
        candidate=candidate_label,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
        matched=len(matched),
        metrics=[_change(name, p, *settings) for name, p in pairs.items()],
        verdict=_change(CASE_VERDICT, _Pairs(statuses=verdicts), *settings),
        only_in_base=[key for key in before if key not in after],
        only_in_candidate=[key for key in after if key not in before],
    )


def _usable(case: EvalCaseResult) -> dict[str, EvalMetricResult]:
    """The case's overall metric rows, without the metrics that do not apply to it."""
    skipped = set(case.assay.not_applicable)
    return {
        row.metric_name: row
        for row in case.overall_eval_metric_results
        if row.metric_name not in skipped
    }


def _gather(
    key: CaseKey, old: EvalCaseResult, new: EvalCaseResult, pairs: dict[str, _Pairs]
) -> None:
    """Add one matched case's paired scores and statuses to every metric both runs have."""
    before, after = _usable(old), _usable(new)
    for name in [*before, *(n for n in after if n not in before)]:
        entry = pairs.setdefault(name, _Pairs())
        rows = [row for row in (before.get(name), after.get(name)) if row is not None]
        entry.informational |= any(r.eval_status is EvalStatus.INFORMATIONAL for r in rows)
        if len(rows) < 2:
            continue
        a, b = rows
        if a.score is not None and b.score is not None and _finite(a.score, b.score):
            entry.base_scores.append(a.score)
            entry.candidate_scores.append(b.score)
        if a.eval_status in _JUDGED and b.eval_status in _JUDGED:
            passed = EvalStatus.PASSED
            entry.statuses.append((key, a.eval_status is passed, b.eval_status is passed))


def _finite(*scores: float) -> bool:
    return all(math.isfinite(score) for score in scores)


def _mean(values: Iterable[float]) -> float | None:
    listed = list(values)
    return sum(listed) / len(listed) if listed else None


def _change(name: str, pairs: _Pairs, alpha: float, resamples: int, seed: int) -> MetricChange:
    """One row of the comparison from a metric's paired observations."""
    interval = paired_bootstrap_ci(
        pairs.base_scores, pairs.candidate_scores, resamples=resamples, alpha=alpha, seed=seed
    )
    to_fail = tuple(key for key, old, new in pairs.statuses if old and not new)
    to_pass = tuple(key for key, old, new in pairs.statuses if new and not old)
    p_value = mcnemar_exact(len(to_fail), len(to_pass))
    significant = p_value < alpha
    graded = not pairs.informational
    worse = interval is not None and interval.high < 0
    better = interval is not None and interval.low > 0
    regressed = graded and (worse or (significant and len(to_fail) > len(to_pass)))
    improved = (
        graded and not regressed and (better or (significant and len(to_pass) > len(to_fail)))
    )
    return MetricChange(
        name=name,
        informational=pairs.informational,
        scored=len(pairs.base_scores),
        base_mean=_mean(pairs.base_scores),
        candidate_mean=_mean(pairs.candidate_scores),
        interval=interval,
        judged=len(pairs.statuses),
        base_passed=sum(1 for _, old, _new in pairs.statuses if old),
        candidate_passed=sum(1 for _, _old, new in pairs.statuses if new),
        to_fail=to_fail,
        to_pass=to_pass,
        p_value=p_value,
        regressed=regressed,
        improved=improved,
    )
