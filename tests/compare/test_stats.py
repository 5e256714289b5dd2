"""The paired bootstrap interval and the exact McNemar test, against known values."""

from __future__ import annotations

import math
import random

import pytest

from assay.compare.stats import mcnemar_exact, min_pairs_to_test, paired_bootstrap_ci


@pytest.mark.parametrize(
    ("to_fail", "to_pass", "expected"),
    [
        (0, 0, 1.0),  # no flips: no evidence
        (1, 0, 1.0),  # 2 * 1/2, capped
        (5, 0, 2 / 32),  # 2 * P(X <= 0), X ~ Bin(5, 1/2)
        (0, 5, 2 / 32),
        (1, 5, 2 * (1 + 6) / 64),  # 2 * (C(6,0) + C(6,1)) / 2^6
        (2, 8, 2 * (1 + 10 + 45) / 1024),
        (3, 3, 1.0),  # balanced flips
        (10, 0, 2 / 1024),
    ],
)
def test_mcnemar_matches_hand_computed_binomial_tails(
    to_fail: int, to_pass: int, expected: float
) -> None:
    assert mcnemar_exact(to_fail, to_pass) == pytest.approx(expected, rel=1e-12)


def _two_sided_binomial_in_log_space(k: int, n: int) -> float:
    """An independent reference: the two-sided exact binomial p (p = 1/2), summed in log space."""

    def pmf(i: int) -> float:
        return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)) / 2**n

    low = min(k, n - k)
    return min(1.0, 2 * sum(pmf(i) for i in range(low + 1)))


def test_mcnemar_agrees_with_a_log_space_binomial_reference() -> None:
    for to_fail, to_pass in [(0, 1), (4, 9), (12, 3), (60, 100), (250, 300), (7, 7)]:
        expected = _two_sided_binomial_in_log_space(to_fail, to_fail + to_pass)
        assert mcnemar_exact(to_fail, to_pass) == pytest.approx(expected, rel=1e-9)


def test_mcnemar_stays_exact_for_tiny_p_values() -> None:
    assert mcnemar_exact(1000, 0) == pytest.approx(2.0**-999, rel=1e-12)
    assert mcnemar_exact(1000, 1) == pytest.approx(1001 * 2.0**-1000, rel=1e-12)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="negative"):
        mcnemar_exact(-1, 2)


def _synthetic(n: int, shift: float, rng: random.Random) -> tuple[list[float], list[float]]:
    base = [rng.uniform(0.2, 0.9) for _ in range(n)]
    return base, [b + shift + rng.gauss(0, 0.1) for b in base]


def test_bootstrap_interval_contains_the_true_difference() -> None:
    base, candidate = _synthetic(80, -0.1, random.Random(7))
    interval = paired_bootstrap_ci(base, candidate, seed=1)
    assert interval is not None
    assert interval.low < -0.1 < interval.high
    assert interval.high < 0  # a real drop of 0.1 with noise 0.1 on 80 cases is detected
    assert interval.level == pytest.approx(0.95)


def test_bootstrap_interval_covers_about_as_often_as_its_level() -> None:
    rng = random.Random(11)
    covered = 0
    for trial in range(60):
        base, candidate = _synthetic(40, 0.05, rng)
        interval = paired_bootstrap_ci(base, candidate, resamples=2000, seed=trial)
        assert interval is not None
        covered += interval.low <= 0.05 <= interval.high
    assert covered >= 51  # 95% nominal; 51/60 leaves room for the percentile method's bias


def test_bootstrap_interval_width_matches_the_normal_approximation() -> None:
    base, candidate = _synthetic(400, 0.0, random.Random(3))
    diffs = [c - b for b, c in zip(base, candidate, strict=True)]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
    interval = paired_bootstrap_ci(base, candidate, seed=0)
    assert interval is not None
    assert interval.estimate == pytest.approx(mean)
    assert interval.high - interval.low == pytest.approx(2 * 1.96 * sd / 20, rel=0.1)


def test_bootstrap_is_deterministic_for_a_seed_and_varies_across_seeds() -> None:
    base, candidate = _synthetic(30, 0.0, random.Random(5))
    first = paired_bootstrap_ci(base, candidate, seed=42)
    assert first == paired_bootstrap_ci(base, candidate, seed=42)
    assert first != paired_bootstrap_ci(base, candidate, seed=43)


def test_bootstrap_level_follows_alpha() -> None:
    base, candidate = _synthetic(50, 0.0, random.Random(9))
    wide = paired_bootstrap_ci(base, candidate, alpha=0.01)
    narrow = paired_bootstrap_ci(base, candidate, alpha=0.2)
    assert wide is not None and narrow is not None
    assert wide.low < narrow.low < narrow.high < wide.high


def test_bootstrap_degenerate_inputs() -> None:
    assert paired_bootstrap_ci([], []) is None
    single = paired_bootstrap_ci([0.5], [0.75])
    assert single is not None and (single.low, single.high) == (0.25, 0.25)
    same = paired_bootstrap_ci([0.1, 0.9, 0.4], [0.1, 0.9, 0.4])
    assert same is not None and (same.low, same.high) == (0.0, 0.0)


def test_bootstrap_handles_many_cases_in_bounded_chunks() -> None:
    base, candidate = _synthetic(20_000, 0.02, random.Random(1))
    interval = paired_bootstrap_ci(base, candidate, resamples=500)
    assert interval is not None
    mean = sum(c - b for b, c in zip(base, candidate, strict=True)) / len(base)
    assert interval.estimate == pytest.approx(mean)
    assert interval.low < mean < interval.high
    assert interval.high - interval.low == pytest.approx(
        2 * 1.96 * 0.1 / math.sqrt(20_000), rel=0.15
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"resamples": 0}, "resamples"), ({"alpha": 1.0}, "alpha"), ({"alpha": 0.0}, "alpha")],
)
def test_bootstrap_rejects_bad_settings(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_bootstrap_ci([0.1], [0.2], **kwargs)  # type: ignore[arg-type]


def test_bootstrap_rejects_unpaired_samples() -> None:
    with pytest.raises(ValueError, match="length"):
        paired_bootstrap_ci([0.1, 0.2], [0.3])


def test_few_valued_differences_give_the_same_interval_as_resampling_cases() -> None:
    # 100 of 400 cases dropped from pass (1.0) to fail (0.0): drawn as value counts
    base, candidate = [1.0] * 400, [0.0] * 100 + [1.0] * 300
    interval = paired_bootstrap_ci(base, candidate, seed=2)
    assert interval is not None and interval.estimate == -0.25
    sd = math.sqrt(0.25 * 0.75 * 400 / 399)
    assert interval.low < -0.25 < interval.high
    assert interval.high - interval.low == pytest.approx(2 * 1.96 * sd / 20, rel=0.1)


@pytest.mark.parametrize(
    ("alpha", "needed"),
    [
        (0.05, 6),  # 2/32 = 0.0625 is not below 0.05; 2/64 is
        (0.01, 8),  # 2/128 = 0.0156, 2/256 = 0.0078
        (0.0625, 6),  # 2/32 equals alpha: p must be strictly below it
        (0.5, 3),
        (0.6, 2),
        (0.99, 2),  # one flip gives p = 1
        (1e-6, 21),  # log2(2 / 1e-6) = 20.9
    ],
)
def test_min_pairs_to_test_is_the_fewest_flips_that_can_be_significant(
    alpha: float, needed: int
) -> None:
    assert min_pairs_to_test(alpha) == needed
    assert mcnemar_exact(needed, 0) < alpha  # all flips one way: the smallest p there is
    assert mcnemar_exact(needed - 1, 0) >= alpha


def test_min_pairs_to_test_agrees_with_mcnemar_for_many_alphas() -> None:
    for alpha in [i / 1000 for i in range(1, 1000)]:
        needed = min_pairs_to_test(alpha)
        assert mcnemar_exact(needed, 0) < alpha <= mcnemar_exact(needed - 1, 0)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1])
def test_min_pairs_to_test_rejects_alpha_outside_0_1(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        min_pairs_to_test(alpha)
