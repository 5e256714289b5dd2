"""Fitting a judge's decision threshold to people's labels, and measuring it held out."""

from __future__ import annotations

import random

from assay.agreement.align import cross_validated, fit_threshold, stable_from


def test_the_fitted_threshold_separates_what_people_separate() -> None:
    units = [(p >= 0.3, p) for p in (0.05, 0.1, 0.2, 0.25, 0.32, 0.4, 0.45, 0.6, 0.9)]
    threshold = fit_threshold(units)
    assert 0.25 < threshold <= 0.32
    assert all((p >= threshold) == person for person, p in units)


def test_cross_validation_decides_each_unit_without_it_and_fits_once_per_fold() -> None:
    rng = random.Random(1)
    units = [(p >= 0.3, p) for p in (rng.random() for _ in range(60))]
    decided, thresholds = cross_validated(units, folds=5)
    assert len(thresholds) == 5
    assert sum(d == person for d, (person, _) in zip(decided, units, strict=True)) >= 55


def test_noise_needs_more_labels_for_a_stable_fit_than_a_clean_split() -> None:
    rng = random.Random(2)
    clean = [(p >= 0.5, p) for p in (rng.random() for _ in range(320))]
    noisy = [(rng.random() < 0.5, rng.random()) for _ in range(320)]
    found = stable_from(clean)
    assert found is not None
    assert stable_from(noisy) is None or stable_from(noisy) > found  # type: ignore[operator]


def test_a_probe_profile_only_changes_how_its_criteria_are_asked() -> None:
    from assay.agreement.align import PROMPTS, probe_profile

    criteria = list(PROMPTS["one_rubric_per_call"])
    probe = probe_profile("local:m", "one_rubric_per_call", criteria)
    for name in criteria:
        rule = probe.criteria[name]
        assert rule.prompt == "one_rubric_per_call"
        assert rule.decided({"yes": 0.51, "no": 0.49}) == "yes"  # as the judge itself decides
        assert rule.decided({"yes": 0.49, "no": 0.51}) == "no"


def test_exemplars_are_chosen_only_when_each_verdict_has_enough_cases() -> None:
    from assay.agreement.agree import Compared
    from assay.agreement.align import choose_exemplars
    from assay.agreement.labels import Label

    def unit(case: str, label: str) -> Compared:
        return Compared(Label(case=case, invocation=1, criterion="safety_v1", label=label), label)

    units = [unit("a", "safe"), unit("b", "safe"), unit("c", "unsafe")]
    transcript = {("safety_v1", case): f"input {case}" for case in "abc"}

    one = choose_exemplars(units, transcript, 1)["safety_v1"]
    assert sorted(e.verdict for e in one) == ["safe", "unsafe"]
    assert all(e.input == f"input {e.case}" for e in one)
    assert choose_exemplars(units, transcript, 2) == {}  # one unsafe case only
    assert choose_exemplars(units, {}, 1) == {}  # no judge input kept
