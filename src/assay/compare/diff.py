"""Matching the cases of two runs and measuring what changed, case by case and metric by metric.

Cases are matched by ``(eval_set_id, eval_id, run)``. A matched case that PASSED in the base run
and is FAILED or NOT_EVALUATED in the candidate is a *case regression*
(:attr:`Comparison.case_regressions`), whatever the statistics say about the aggregate.

For every metric, only the cases where both runs have a usable value count: a score on both
sides for the mean change and the bootstrap interval, PASSED or FAILED on both sides for the
pass rates and the McNemar test. Metrics that do not apply to a case (``assay.not_applicable``)
are left out for that case. Each row records how many matched cases it counted and, for the
others, why they were left out (:attr:`MetricChange.left_out`), so the row's n and the number of
matched cases can always be reconciled. Cases found in only one run are kept in
:attr:`Comparison.only_in_base` / :attr:`Comparison.only_in_candidate`.

A metric *regressed* when the interval for its mean score change lies wholly below zero, or
when McNemar's test is significant at ``alpha`` and more cases went pass→fail than fail→pass.
The interval only counts with at least :func:`~assay.compare.stats.min_pairs_to_test` scored
cases (below that no paired test could be significant; the percentile bootstrap would still
claim it). Informational metrics (token counts, durations) have no better direction and never
regress.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Union

from pydantic import BaseModel, ConfigDict

from assay.compare.stats import Interval, mcnemar_exact, min_pairs_to_test, paired_bootstrap_ci
from assay.errors import InputError, Problem
from assay.metrics.base import EvalStatus
from assay.report.cost import RunCost, run_cost
from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult

CASE_VERDICT = "(case verdict)"
"""The name of the row comparing whole cases' final statuses."""

_JUDGED = (EvalStatus.PASSED, EvalStatus.FAILED)

NOT_APPLICABLE = "not applicable"
"""Why a matched case is left out of a metric's row: the metric does not apply to it."""


def _not_evaluated(side: str) -> str:
    return f"not evaluated in {side}"


def _not_measured(side: str) -> str:
    return f"not measured in {side}"


_BASE, _CANDIDATE, _EITHER = "the base run", "the candidate run", "either run"

_Case = Union["CaseDigest", EvalCaseResult]
"""A case as the comparison reads it: its digest, or the result itself."""


class CaseRegression(BaseModel):
    """A matched case that PASSED in the base run and did not pass in the candidate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: CaseKey
    became: EvalStatus
    """FAILED or NOT_EVALUATED: the case's final status in the candidate run."""
    failed_metrics: tuple[str, ...] = ()
    """The metrics that failed for it in the candidate run (in its results' order)."""
    reason: str | None = None
    """Why it was not evaluated, as the candidate's results say (``assay.reason``)."""

    @property
    def became_label(self) -> str:
        """``failed`` or ``not evaluated``."""
        return "failed" if self.became is EvalStatus.FAILED else "not evaluated"


@dataclass(frozen=True)
class MetricChange:
    """How one metric (or the case verdict) changed between two runs on the matched cases."""

    name: str
    informational: bool = False
    compared: int = 0
    """Matched cases this row counts: scored or judged in both runs (its n)."""
    left_out: tuple[tuple[str, int], ...] = ()
    """The other matched cases, counted by why they were left out (most frequent first); the
    counts and :attr:`compared` add up to :attr:`Comparison.matched`."""
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
    min_pairs: int = 1
    """The fewest scored cases or discordant pairs with which a test could be significant."""
    unchanged: bool = False
    """Every counted case has the same score and status in both runs."""
    regressed: bool = False
    improved: bool = False

    @property
    def discordant(self) -> int:
        """Cases that flipped either way (McNemar's discordant pairs)."""
        return len(self.to_fail) + len(self.to_pass)

    @property
    def testable(self) -> bool:
        """Whether the bootstrap (enough scored cases) or McNemar (enough flips) could reach
        significance; when not, "no significant change" would claim more than the data can."""
        return self.scored >= self.min_pairs or self.discordant >= self.min_pairs

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
    case_regressions: list[CaseRegression] = field(default_factory=list)
    only_in_base: list[CaseKey] = field(default_factory=list)
    only_in_candidate: list[CaseKey] = field(default_factory=list)
    base_cost: RunCost = field(default_factory=RunCost)
    """What the base run's judges cost (from its sets' notes)."""
    candidate_cost: RunCost = field(default_factory=RunCost)
    """What the candidate run's judges cost."""

    @property
    def rows(self) -> list[MetricChange]:
        """Every metric's row, then the case-verdict row."""
        return [*self.metrics, self.verdict]

    @property
    def regressions(self) -> list[MetricChange]:
        """The rows that got significantly worse."""
        return [row for row in self.rows if row.regressed]

    @property
    def min_pairs(self) -> int:
        """The fewest scored cases or discordant pairs a test needs at :attr:`alpha`."""
        return min_pairs_to_test(self.alpha)


@dataclass
class _Pairs:
    """One metric's paired observations, gathered case by case."""

    informational: bool = False
    base_scores: list[float] = field(default_factory=list)
    candidate_scores: list[float] = field(default_factory=list)
    statuses: list[tuple[CaseKey, bool, bool]] = field(default_factory=list)
    compared: int = 0
    left_out: Counter[str] = field(default_factory=Counter)


class _Row(NamedTuple):
    """What the comparison reads of one metric row."""

    metric_name: str
    score: float | None
    eval_status: EvalStatus


class CaseDigest(NamedTuple):
    """What the comparison reads of one case result: a few hundred bytes, where a full result
    may hold kilobytes, so that two runs of 50,000 cases can be matched in memory."""

    final_eval_status: EvalStatus
    reason: str | None
    rows: tuple[_Row, ...]
    """Its overall metric rows, without the metrics that do not apply to it."""
    not_applicable: frozenset[str]

    @classmethod
    def of(cls, case: EvalCaseResult) -> CaseDigest:
        skipped = frozenset(case.assay.not_applicable)
        rows = tuple(
            _Row(sys.intern(row.metric_name), row.score, row.eval_status)
            for row in case.overall_eval_metric_results
            if row.metric_name not in skipped
        )
        return cls(case.final_eval_status, case.assay.reason, rows, skipped)


def index_cases(results: Sequence[EvalSetResult], source: str) -> dict[CaseKey, CaseDigest]:
    """Every case result of a run by its key, as a :class:`CaseDigest` (one pass over the
    cases); an :class:`InputError` naming ``source`` when the same case and run appears twice
    (the comparison would be ambiguous)."""
    cases: dict[CaseKey, CaseDigest] = {}
    problems: list[Problem] = []
    for result in results:
        set_id = sys.intern(result.eval_set_id)
        for case in result.eval_case_results:
            key = CaseKey(set_id, case.eval_id, case.assay.run)
            if key in cases:
                problems.append(
                    Problem(
                        source,
                        "",
                        f"case '{key.label}' appears twice; expected one result per case and run",
                    )
                )
            cases[key] = CaseDigest.of(case)
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
    names = list(
        dict.fromkeys(
            name for key in matched for case in (before[key], after[key]) for name in _usable(case)
        )
    )
    pairs = {name: _Pairs() for name in names}
    verdicts = _Pairs()
    regressions: list[CaseRegression] = []
    for key in matched:
        old, new = before[key], after[key]
        usable = (_usable(old), _usable(new))
        for name in names:
            _gather(key, name, (old, new), usable, pairs[name])
        _gather_verdict(key, old, new, verdicts)
        regression = case_regression(key, old, new)
        if regression is not None:
            regressions.append(regression)
    settings = (alpha, resamples, seed)
    return Comparison(
        base=base_label,
        candidate=candidate_label,
        alpha=alpha,
        resamples=resamples,
        seed=seed,
        matched=len(matched),
        metrics=[_change(name, p, *settings) for name, p in pairs.items()],
        verdict=_change(CASE_VERDICT, verdicts, *settings),
        case_regressions=regressions,
        only_in_base=[key for key in before if key not in after],
        only_in_candidate=[key for key in after if key not in before],
        base_cost=run_cost(base),
        candidate_cost=run_cost(candidate),
    )


def case_regression(key: CaseKey, old: _Case, new: _Case) -> CaseRegression | None:
    """The regression when the case PASSED in ``old`` and is FAILED or NOT_EVALUATED in ``new``;
    None otherwise (a case that was not passing cannot regress)."""
    became = new.final_eval_status
    lost = (EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)
    if old.final_eval_status is not EvalStatus.PASSED or became not in lost:
        return None
    failed = tuple(
        name for name, row in _usable(new).items() if row.eval_status is EvalStatus.FAILED
    )
    reason = _reason(new) if became is EvalStatus.NOT_EVALUATED else None
    return CaseRegression(key=key, became=became, failed_metrics=failed, reason=reason)


def _usable(case: _Case) -> dict[str, _Row | EvalMetricResult]:
    """The case's overall metric rows, without the metrics that do not apply to it."""
    if isinstance(case, CaseDigest):
        return {row.metric_name: row for row in case.rows}
    skipped = set(case.assay.not_applicable)
    return {
        row.metric_name: row
        for row in case.overall_eval_metric_results
        if row.metric_name not in skipped
    }


def _reason(case: _Case) -> str | None:
    return case.reason if isinstance(case, CaseDigest) else case.assay.reason


def _skipped(case: _Case) -> Collection[str]:
    return case.not_applicable if isinstance(case, CaseDigest) else case.assay.not_applicable


def _gather(
    key: CaseKey,
    name: str,
    cases: tuple[_Case, _Case],
    usable: tuple[dict[str, _Row | EvalMetricResult], dict[str, _Row | EvalMetricResult]],
    entry: _Pairs,
) -> None:
    """Add one matched case's paired score and status on metric ``name``, or the reason it
    cannot be paired."""
    a, b = usable[0].get(name), usable[1].get(name)
    rows = [row for row in (a, b) if row is not None]
    entry.informational |= any(r.eval_status is EvalStatus.INFORMATIONAL for r in rows)
    counted = False
    if a is not None and b is not None:
        if a.score is not None and b.score is not None and _finite(a.score, b.score):
            entry.base_scores.append(a.score)
            entry.candidate_scores.append(b.score)
            counted = True
        if a.eval_status in _JUDGED and b.eval_status in _JUDGED:
            passed = EvalStatus.PASSED
            entry.statuses.append((key, a.eval_status is passed, b.eval_status is passed))
            counted = True
    if counted:
        entry.compared += 1
    else:
        entry.left_out[_left_out_reason(name, cases, (a, b))] += 1


def _gather_verdict(key: CaseKey, old: _Case, new: _Case, entry: _Pairs) -> None:
    """Add one matched case's final statuses to the case-verdict row, or why they cannot pair."""
    judged = [case.final_eval_status in _JUDGED for case in (old, new)]
    if all(judged):
        passed = EvalStatus.PASSED
        entry.statuses.append(
            (key, old.final_eval_status is passed, new.final_eval_status is passed)
        )
        entry.compared += 1
    else:
        entry.left_out[_on_sides(_not_evaluated, not judged[0], not judged[1])] += 1


def _on_sides(reason: Callable[[str], str], base: bool, candidate: bool) -> str:
    """``reason`` for the side(s) at fault: the base run, the candidate run or either run."""
    return reason(_EITHER if base and candidate else _BASE if base else _CANDIDATE)


def _left_out_reason(
    name: str,
    cases: tuple[_Case, _Case],
    rows: tuple[_Row | EvalMetricResult | None, _Row | EvalMetricResult | None],
) -> str:
    """Why metric ``name`` has no pair for this case: a case not evaluated in a run comes first
    (it explains everything else; the other run counts as not evaluated too when its row for the
    metric has no value), then the metric not applying, then a run with no row for it or no
    usable value in its row."""
    old, new = cases
    if any(case.final_eval_status is EvalStatus.NOT_EVALUATED for case in cases):
        down = [
            case.final_eval_status is EvalStatus.NOT_EVALUATED
            or (row is not None and not _has_value(row))
            for case, row in zip(cases, rows, strict=True)
        ]
        return _on_sides(_not_evaluated, *down)
    if any(name in _skipped(case) for case in (old, new)):
        return NOT_APPLICABLE
    missing = [row is None for row in rows]
    if any(missing):
        return _on_sides(_not_measured, *missing)
    unusable = [row is not None and not _has_value(row) for row in rows]
    if any(unusable):
        return _on_sides(_not_evaluated, *unusable)
    return "scored in one run, judged in the other"


def _has_value(row: _Row | EvalMetricResult) -> bool:
    """Whether a metric row has a finite score or a pass/fail status."""
    finite = row.score is not None and _finite(row.score)
    return finite or row.eval_status in _JUDGED


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
    needed = min_pairs_to_test(alpha)
    # An interval from fewer pairs than any paired test would need is shown, but not trusted.
    bootstrapped = interval is not None and len(pairs.base_scores) >= needed
    worse = bootstrapped and interval is not None and interval.high < 0
    better = bootstrapped and interval is not None and interval.low > 0
    regressed = graded and (worse or (significant and len(to_fail) > len(to_pass)))
    improved = (
        graded and not regressed and (better or (significant and len(to_pass) > len(to_fail)))
    )
    same_scores = all(
        old == new for old, new in zip(pairs.base_scores, pairs.candidate_scores, strict=True)
    )
    return MetricChange(
        name=name,
        informational=pairs.informational,
        compared=pairs.compared,
        left_out=tuple(sorted(pairs.left_out.items(), key=lambda item: (-item[1], item[0]))),
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
        min_pairs=needed,
        unchanged=pairs.compared > 0 and same_scores and not to_fail and not to_pass,
        regressed=regressed,
        improved=improved,
    )
