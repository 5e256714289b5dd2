"""The statistics behind ``assay compare``: a paired bootstrap interval and an exact McNemar test.

Both work on paired observations: the same case scored in the base run and in the candidate run.

- :func:`paired_bootstrap_ci` resamples the per-case score differences (candidate minus base)
  with replacement and takes the percentile interval of their means. Seeded, so a comparison
  prints the same interval every time.
- :func:`mcnemar_exact` is the exact two-sided McNemar test: under "no change", each discordant
  pair (a case that flipped) is equally likely to have flipped either way, so the number of
  pass→fail flips is Binomial(flips, 1/2). The p-value is computed with integers
  (:func:`math.comb`), exactly, then rounded once to a float.
- :func:`min_pairs_to_test` is the fewest paired cases (or flips) with which either test could
  ever call a change significant at a given ``alpha``; below it ``assay compare`` says "too few
  cases to test" instead of "no significant change".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

_CHUNK_CELLS = 2_000_000
"""Resampled indices drawn at once (rows x cases), so memory stays small for large runs."""


@dataclass(frozen=True)
class Interval:
    """A confidence interval for a mean difference, and the observed difference itself."""

    estimate: float
    low: float
    high: float
    level: float
    """The interval's coverage, e.g. 0.95."""


def paired_bootstrap_ci(
    base: Sequence[float],
    candidate: Sequence[float],
    *,
    resamples: int = 10_000,
    alpha: float = 0.05,
    seed: int = 0,
) -> Interval | None:
    """The percentile bootstrap interval for ``mean(candidate - base)`` over paired scores.

    Cases are resampled as pairs, so a case's base and candidate scores stay together. Returns
    None with no pairs; with one pair (or identical differences) the interval is that point.
    """
    if len(base) != len(candidate):
        raise ValueError(f"paired samples differ in length: {len(base)} and {len(candidate)}")
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be between 0 and 1")
    if not base:
        return None
    diffs = np.asarray(candidate, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    estimate = float(diffs.mean())
    means = _resampled_means(diffs, resamples, np.random.default_rng(seed))
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return Interval(estimate, float(low), float(high), 1.0 - alpha)


def _resampled_means(diffs: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The means of ``resamples`` bootstrap samples of ``diffs``.

    When the differences take few distinct values (pass/fail-like metrics, judge verdicts), a
    bootstrap sample's mean depends only on how often each value was drawn, which is multinomial:
    drawing those counts gives the same distribution at a fraction of the cost. Otherwise cases
    are drawn by index, in chunks so memory stays bounded for large runs.
    """
    n = len(diffs)
    values, counts = np.unique(diffs, return_counts=True)
    if len(values) * 4 <= n:
        drawn = rng.multinomial(n, counts / n, size=resamples)
        return np.asarray(drawn @ values / n, dtype=np.float64)
    rows = max(1, _CHUNK_CELLS // n)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        picks = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = diffs[picks].mean(axis=1)
    return means


def mcnemar_exact(to_fail: int, to_pass: int) -> float:
    """The exact two-sided McNemar p-value for ``to_fail`` pass→fail and ``to_pass`` fail→pass
    flips: twice the smaller binomial tail under p = 1/2, capped at 1 (1.0 with no flips)."""
    if to_fail < 0 or to_pass < 0:
        raise ValueError("flip counts cannot be negative")
    flips = to_fail + to_pass
    if flips == 0:
        return 1.0
    tail = sum(math.comb(flips, k) for k in range(min(to_fail, to_pass) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**flips)))


def min_pairs_to_test(alpha: float) -> int:
    """The fewest discordant pairs for which McNemar's exact test can reach ``p < alpha``.

    With ``n`` discordant pairs all flipped the same way, the exact two-sided p-value is at its
    smallest, ``2 * 0.5**n``; while that is not below ``alpha`` no outcome of the test can be
    significant, so it is computed here rather than assumed (6 at alpha 0.05, 8 at 0.01).

    ``assay compare`` applies the same floor to the paired bootstrap's number of scored cases.
    With ``n`` pairs, even a test that assumes nothing about the differences but their symmetry
    under "no change" (the sign-flip test) cannot reach ``p < alpha`` below this floor, however
    large the differences. The percentile bootstrap ignores that: it treats the ``n`` observed
    differences as the whole population, so with one pair its interval is a single point and any
    change would look significant, and with a handful its coverage falls well under the nominal
    level. An interval from fewer pairs is still shown, but it does not decide the verdict.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be between 0 and 1")
    pairs = 1
    while 2 * 0.5**pairs >= alpha:  # exact in binary floating point: powers of two
        pairs += 1
    return pairs
