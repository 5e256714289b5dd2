"""Agreement, Cohen's kappa and its bootstrap interval, confusion and positive rates."""

from __future__ import annotations

import pytest

from assay.agreement import agreement, bootstrap_kappa, cohen_kappa
from assay.agreement.stats import FEW, NO_LABEL


def _pairs(**counts: int) -> list[tuple[str, str]]:
    """``yes_no=3``: three pairs where the person said yes and the judge no."""
    pairs = []
    for key, count in counts.items():
        person, judge = key.split("_")
        pairs += [(person, judge)] * count
    return pairs


def test_kappa_matches_the_textbook_example() -> None:
    # 50 items: both yes 20, both no 15, person yes/judge no 5, person no/judge yes 10:
    # observed 0.7, chance 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa 0.4
    pairs = _pairs(yes_yes=20, yes_no=5, no_yes=10, no_no=15)
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_a_judge_that_says_yes_to_everything_has_kappa_zero_whatever_its_agreement() -> None:
    pairs = _pairs(yes_yes=16, no_yes=14)
    found = agreement(pairs, positive="yes")
    assert found.kappa == pytest.approx(0.0)
    assert found.rate == pytest.approx(16 / 30)
    assert (found.person_positive_rate, found.judge_positive_rate) == (pytest.approx(16 / 30), 1.0)


def test_kappa_over_several_labels() -> None:
    labels = ["supported", "unsupported", "contradictory"]
    perfect = [(label, label) for label in labels * 4]
    assert cohen_kappa(perfect) == pytest.approx(1.0)
    shifted = [(label, labels[(i + 1) % 3]) for i, label in enumerate(labels)] * 4
    assert cohen_kappa(shifted) == pytest.approx(-0.5)


def test_kappa_is_undefined_without_pairs_or_when_both_give_one_label_throughout() -> None:
    assert cohen_kappa([]) is None
    assert cohen_kappa(_pairs(yes_yes=12)) is None


def test_a_pair_the_judge_did_not_label_disagrees_and_stays_out_of_kappa() -> None:
    pairs: list[tuple[str, str | None]] = [*_pairs(yes_yes=6, no_no=6), ("yes", None), ("no", None)]
    found = agreement(pairs, positive="yes")
    assert (found.pairs, found.judged, found.unjudged, found.agree) == (14, 12, 2, 12)
    assert found.rate == pytest.approx(12 / 14)
    assert found.kappa == pytest.approx(1.0)
    assert found.confusion == {"yes": {"yes": 6, NO_LABEL: 1}, "no": {"no": 6, NO_LABEL: 1}}


def test_the_interval_holds_the_estimate_and_is_the_same_for_the_same_seed() -> None:
    pairs = _pairs(yes_yes=20, yes_no=5, no_yes=10, no_no=15)
    interval = bootstrap_kappa(pairs, seed=3)
    assert interval is not None
    low, high = interval
    assert low < 0.4 < high
    assert low > 0.1 and high < 0.7  # about ±0.25 at n = 50
    assert bootstrap_kappa(pairs, seed=3) == interval
    assert bootstrap_kappa(pairs, seed=4) != interval


def test_more_pairs_give_a_narrower_interval() -> None:
    small = bootstrap_kappa(_pairs(yes_yes=8, yes_no=2, no_yes=4, no_no=6))
    large = bootstrap_kappa(_pairs(yes_yes=80, yes_no=20, no_yes=40, no_no=60))
    assert small is not None and large is not None
    assert large[1] - large[0] < (small[1] - small[0]) / 2


def test_a_perfect_judge_has_an_interval_of_one() -> None:
    assert bootstrap_kappa(_pairs(yes_yes=10, no_no=10)) == (1.0, 1.0)


def test_no_interval_from_a_single_pair_or_a_single_label() -> None:
    assert bootstrap_kappa(_pairs(yes_yes=1)) is None
    assert bootstrap_kappa(_pairs(yes_yes=30)) is None


def test_fewer_than_ten_judged_pairs_are_flagged_as_few() -> None:
    assert agreement(_pairs(yes_yes=FEW - 1)).few
    assert not agreement(_pairs(yes_yes=5, no_no=FEW - 5)).few
