"""How far a judge's labels agree with people's, over any set of labels (``valid``/``invalid``,
``yes``/``no``, the five hallucination labels).

A pair is (the person's label, the judge's label); the judge's is None when it gave none (the
call failed, or its answer could not be read). Such a pair counts as a disagreement in the
agreement rate, which is over every pair, and is left out of kappa, which needs two labels; both
counts are reported, so a judge that fails often cannot look good by failing.

Cohen's kappa is (observed - chance) / (1 - chance), chance being the agreement two raters with
these label frequencies would reach by luck. Its interval is a percentile bootstrap over the
pairs (seeded, so a report reads the same twice). With fewer than :data:`FEW` labelled pairs
the interval is too wide to mean much; :attr:`Agreement.few` says so, and the figures are still
given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FEW = 10
"""Fewer labelled pairs than this give an interval too wide to mean much."""

Pair = tuple[str, str | None]


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (person, judge) labels; None with no pairs, or when chance agreement
    is total (both gave one and the same label throughout: nothing to tell apart)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(person == judge for person, judge in pairs) / n
    people = Counter(person for person, _ in pairs)
    judges = Counter(judge for _, judge in pairs)
    chance = sum(people[label] * judges[label] for label in people) / (n * n)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def bootstrap_kappa(
    pairs: Sequence[tuple[str, str]],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of Cohen's kappa over ``pairs`` (resampled with
    replacement ``resamples`` times); None with fewer than two pairs or when kappa is undefined
    in most resamples. Resamples where kappa is undefined (one label throughout) are left out."""
    if len(pairs) < 2 or not 0.0 < level < 1.0:
        return None
    labels = sorted({label for pair in pairs for label in pair})
    index = {label: i for i, label in enumerate(labels)}
    people = np.array([index[p] for p, _ in pairs])
    judges = np.array([index[j] for _, j in pairs])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(pairs), size=(resamples, len(pairs)))
    kappas = _kappas(people[draws], judges[draws], len(labels))
    kappas = kappas[np.isfinite(kappas)]
    if len(kappas) < resamples / 2:
        return None
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return float(low), float(high)


def _kappas(
    people: npt.NDArray[np.int64], judges: npt.NDArray[np.int64], count: int
) -> npt.NDArray[np.float64]:
    """Kappa of each row of label indices (NaN where chance agreement is total)."""
    observed = (people == judges).mean(axis=1)
    chance = np.zeros(people.shape[0])
    for label in range(count):
        chance += (people == label).mean(axis=1) * (judges == label).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa: npt.NDArray[np.float64] = (observed - chance) / (1.0 - chance)
    kappa[chance >= 1.0 - 1e-12] = np.nan
    return kappa


@dataclass(frozen=True)
class Agreement:
    """How a judge's labels compare with people's on one criterion (or several pooled)."""

    pairs: int
    """Labelled units: every pair, with or without a judge label."""
    judged: int
    """Pairs the judge gave a label for."""
    agree: int
    kappa: float | None
    kappa_interval: tuple[float, float] | None
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    """``confusion[person][judge]``: how often each of the person's labels got each of the
    judge's (``"none"`` for no label)."""
    person_positive_rate: float | None = None
    judge_positive_rate: float | None = None
    """The share of pairs labelled ``positive`` by each (the judge's over the judged pairs)."""

    @property
    def rate(self) -> float | None:
        """Agreement over every pair: a pair the judge gave no label for disagrees."""
        return self.agree / self.pairs if self.pairs else None

    @property
    def unjudged(self) -> int:
        """Pairs with no judge label."""
        return self.pairs - self.judged

    @property
    def few(self) -> bool:
        """Too few judged pairs for the interval to mean much (fewer than :data:`FEW`)."""
        return self.judged < FEW


NO_LABEL = "none"
"""How :attr:`Agreement.confusion` names a missing judge label."""


def agreement(
    pairs: Sequence[Pair], *, positive: str | None = None, resamples: int = 2000, seed: int = 0
) -> Agreement:
    """The figures of ``pairs`` of (person's label, judge's label or None); ``positive`` names
    the label whose rates are reported (``valid``, ``yes``, ``safe``, ``supported``)."""
    judged = [(person, judge) for person, judge in pairs if judge is not None]
    confusion: dict[str, dict[str, int]] = {}
    for person, judge in pairs:
        row = confusion.setdefault(person, {})
        said = NO_LABEL if judge is None else judge
        row[said] = row.get(said, 0) + 1
    person_rate = judge_rate = None
    if positive is not None and pairs:
        person_rate = sum(person == positive for person, _ in pairs) / len(pairs)
        if judged:
            judge_rate = sum(judge == positive for _, judge in judged) / len(judged)
    return Agreement(
        pairs=len(pairs),
        judged=len(judged),
        agree=sum(person == judge for person, judge in judged),
        kappa=cohen_kappa(judged),
        kappa_interval=bootstrap_kappa(judged, resamples=resamples, seed=seed),
        confusion=confusion,
        person_positive_rate=person_rate,
        judge_positive_rate=judge_rate,
    )
