"""``assay judge align``: fit, per criterion, the decision threshold that makes a judge agree
best with a team's labels, measured by cross-validation, and write it as a judge profile.

The judge is run once on the labelled units (:func:`~assay.agreement.agree.agree`); each unit
then has the judge's probability of the positive label (from log-probabilities, or the share of
positive votes where the backend gives none). The threshold is the one that maximises Cohen's
kappa on the units it is fitted on (ties: the higher agreement, then the middle of the tied
range). "Before" is the judge as it decides unaided; "after" is measured on held-out units only:
the units are split into stratified folds, each fold's units are decided by the threshold
fitted on the other folds, and the held-out decisions are pooled. The profile's threshold is
then fitted on every unit.

A profile re-decides the judge's choices one at a time (:mod:`assay.llm.profile`), so a criterion
whose label is decided over several of them (the ``multi_turn_*_v1`` criteria: the share of
rubrics met against the criterion's threshold) is fitted and reported but given no rule.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from assay.agreement.agree import DECISIONS, AgreeReport, Compared
from assay.agreement.labels import LABEL_SETS, label_set, labelling
from assay.agreement.stats import Agreement, agreement, cohen_kappa
from assay.llm.profile import CriterionProfile, Exemplar, JudgeProfile

FOLDS = 5
STABLE_SPREAD = 0.1
"""A fit is called stable when the thresholds fitted on random halves of that many labels lie
within this of each other (the middle 80% of them)."""
_SIZES = (10, 20, 30, 40, 60, 80, 120, 160, 240, 320)
_DRAWS = 50


@dataclass(frozen=True)
class Fitted:
    """What alignment found for one criterion."""

    criterion: str
    decision: str | None
    """``probability``, ``votes``, or None when nothing could be fitted (see ``note``)."""
    threshold: float | None
    before: Agreement
    after: Agreement
    """Cross-validated: each unit decided by a threshold fitted without it."""
    fold_thresholds: tuple[float, ...] = ()
    stable_from: int | None = None
    """The fewest labels at which a fit was stable (see :data:`STABLE_SPREAD`), if any size
    up to the labels given was."""
    notes: tuple[str, ...] = field(default_factory=tuple)


def fit_threshold(units: Sequence[tuple[bool, float]]) -> float:
    """The threshold on probability that maximises kappa between people's side (True:
    positive) and ``probability >= threshold`` (ties: the higher agreement, then the middle of
    the best range)."""
    values = sorted({p for _, p in units})
    candidates = [0.0] + [(a + b) / 2 for a, b in itertools.pairwise(values)] + [1.0]
    best: tuple[float, float] | None = None
    tied: list[float] = []
    for threshold in candidates:
        said = [(person, p >= threshold) for person, p in units]
        kappa = cohen_kappa([(str(a), str(b)) for a, b in said])
        rate = sum(a == b for a, b in said) / len(said)
        score = (-1.0 if kappa is None else kappa, rate)
        if best is None or score > best:
            best, tied = score, [threshold]
        elif score == best:
            tied.append(threshold)
    return tied[len(tied) // 2] if tied else 0.5


def _folds(units: Sequence[tuple[bool, float]], folds: int, seed: int) -> list[int]:
    """A stratified fold number per unit."""
    rng = random.Random(seed)
    out = [0] * len(units)
    for side in (True, False):
        indices = [i for i, (person, _) in enumerate(units) if person is side]
        rng.shuffle(indices)
        for rank, index in enumerate(indices):
            out[index] = rank % folds
    return out


def cross_validated(
    units: Sequence[tuple[bool, float]], folds: int = FOLDS, seed: int = 0
) -> tuple[list[bool], list[float]]:
    """Each unit decided by the threshold fitted on the other folds, and those thresholds."""
    fold_of = _folds(units, min(folds, len(units)), seed)
    decided = [False] * len(units)
    thresholds = []
    for fold in sorted(set(fold_of)):
        train = [u for u, f in zip(units, fold_of, strict=True) if f != fold]
        if not train:
            continue
        threshold = fit_threshold(train)
        thresholds.append(threshold)
        for index, f in enumerate(fold_of):
            if f == fold:
                decided[index] = units[index][1] >= threshold
    return decided, thresholds


def stable_from(units: Sequence[tuple[bool, float]], seed: int = 0) -> int | None:
    """The fewest labels (of a few sizes up to those given) at which thresholds fitted on random
    draws of that many agree within :data:`STABLE_SPREAD` (middle 80%)."""
    rng = random.Random(seed)
    for size in (s for s in _SIZES if s <= len(units)):
        fitted = sorted(fit_threshold(rng.sample(list(units), size)) for _ in range(_DRAWS))
        low, high = fitted[_DRAWS // 10], fitted[_DRAWS - 1 - _DRAWS // 10]
        if high - low <= STABLE_SPREAD:
            return size
    return None


def fit_criterion(criterion: str, compared: Sequence[Compared]) -> Fitted:
    """Fit one criterion's threshold on its labelled units (see the module docs)."""
    positive = compared[0].positive if compared else ""
    before = agreement([(c.label.label, c.judge) for c in compared], positive=positive)
    usable = [c for c in compared if c.probability is not None]
    notes: list[str] = []
    by_votes = any(c.by_votes for c in usable)
    if by_votes:
        notes.append(
            "the judge's backend gave no log-probabilities: the threshold is on the share of "
            "positive votes over num_samples"
        )
        if all(c.probability in (0.0, 1.0) for c in usable):
            notes.append("with one sample per unit a vote share is 0 or 1: ask for more samples")
    sides = {c.label.label == positive for c in usable}
    if len(usable) < 2 or len(sides) < 2:
        notes.append("too few labelled units with a judge probability on both sides to fit")
        return Fitted(criterion, None, None, before, before, notes=tuple(notes))
    units = [(c.label.label == positive, c.probability or 0.0) for c in usable]
    decided, thresholds = cross_validated(units)
    negative = _negative(compared, positive)
    held_out = dict(zip((id(c) for c in usable), decided, strict=True))
    pairs: list[tuple[str, str | None]] = []
    for c in compared:
        if id(c) in held_out:
            pairs.append((c.label.label, positive if held_out[id(c)] else negative))
        else:
            pairs.append((c.label.label, None))
    after = agreement(pairs, positive=positive)
    return Fitted(
        criterion,
        "votes" if by_votes else "probability",
        fit_threshold(units),
        before,
        after,
        tuple(thresholds),
        stable_from(units),
        tuple(notes),
    )


def _negative(compared: Sequence[Compared], positive: str) -> str:
    first = compared[0]
    labels = label_set(first.label.criterion, sentence=first.label.sentence is not None)
    return next(label for label in labels if label != positive)


NOT_PROFILED = (
    "no rule is written to the profile: the judge's label here is decided over several rubric "
    "verdicts (the share met against the criterion's threshold), and a profile decides one "
    "verdict at a time; change the criterion's threshold in the config instead"
)


def align(
    report: AgreeReport,
    *,
    labels: dict[str, str],
    prompts: dict[str, str] | None = None,
    exemplars: dict[str, list[Exemplar]] | None = None,
    unaided: AgreeReport | None = None,
) -> tuple[JudgeProfile, list[Fitted]]:
    """Fit every labelled criterion of ``report``; the profile holds those whose fitted rule did
    better held out than the judge unaided (:func:`helps`). ``labels`` names the labels file
    (``path``, ``sha256``); ``prompts`` the prompt each criterion was asked with, where not its
    default, and ``exemplars`` the exemplars it was shown. Where ``report`` was asked so,
    ``unaided`` is the judge asked plainly: "before" comes from it."""
    fitted = []
    criteria: dict[str, CriterionProfile] = {}
    for name in report.by_criterion:
        units = [c for c in report.compared if c.label.criterion == name]
        found = fit_criterion(name, units)
        if unaided is not None and name in unaided.by_criterion:
            found = dataclasses.replace(found, before=unaided.by_criterion[name])
        whole = _on_conversation(name)
        if whole:
            found = dataclasses.replace(found, notes=(*found.notes, NOT_PROFILED))
        fitted.append(found)
        if found.decision is None or found.threshold is None or not helps(found):
            continue
        if whole:
            continue
        key, positive = DECISIONS[name]
        criteria[name] = CriterionProfile(
            decision="probability" if found.decision == "probability" else "votes",
            field=key,
            positive=list(positive),
            threshold=round(found.threshold, 4),
            prompt=(prompts or {}).get(name, "default"),
            exemplars=(exemplars or {}).get(name, []),
            fit=_fit_record(found),
        )
    models = set(report.judge_models.values())
    judge_model = models.pop() if len(models) == 1 else ""
    return JudgeProfile(judge_model=judge_model, labels=labels, criteria=criteria), fitted


def helps(found: Fitted) -> bool:
    """Whether the fitted rule did better held out than the judge unaided (kappa, else the
    agreement rate): a rule that does not is left out of the profile."""
    before, after = found.before, found.after
    if before.kappa is not None and after.kappa is not None and after.kappa != before.kappa:
        return after.kappa > before.kappa
    return (after.rate or 0.0) > (before.rate or 0.0)


def _fit_record(found: Fitted) -> dict[str, object]:
    def figures(a: Agreement) -> dict[str, object]:
        return {"labels": a.pairs, "agreement": a.rate, "kappa": a.kappa}

    return {
        "folds": len(found.fold_thresholds),
        "fold_thresholds": [round(t, 4) for t in found.fold_thresholds],
        "before": figures(found.before),
        "after_cross_validated": figures(found.after),
        "stable_from_labels": found.stable_from,
    }


def _on_conversation(name: str) -> bool:
    """Whether people label ``name`` on the whole conversation (its judge's label is a share
    of rubrics against the threshold, which a profile does not re-decide)."""
    how = labelling(name)
    return how is not None and how.unit == "conversation"


class _Prompts(Mapping[str, tuple[str, ...]]):
    """Per prompt ``align --prompt`` can ask a judge with, the criteria that offer it, read off
    their declarations."""

    def _offered(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {}
        for name in LABEL_SETS:
            how = labelling(name)
            for prompt in how.prompts if how else ():
                found.setdefault(prompt, []).append(name)
        return {prompt: tuple(names) for prompt, names in found.items()}

    def __getitem__(self, prompt: str) -> tuple[str, ...]:
        return self._offered()[prompt]

    def __iter__(self) -> Iterator[str]:
        return iter(self._offered())

    def __len__(self) -> int:
        return len(self._offered())


PROMPTS: Mapping[str, tuple[str, ...]] = _Prompts()
"""The prompts ``align --prompt`` can ask a judge with, and the criteria that offer each."""


def probe_profile(
    judge_model: str,
    prompt: str,
    criteria: list[str],
    exemplars: dict[str, list[Exemplar]] | None = None,
) -> JudgeProfile:
    """A profile that only changes how ``criteria`` are asked (a prompt, exemplars; a threshold
    of 0.5 on two options decides as the judge does), for fitting a judge asked that way."""
    rule = {
        name: CriterionProfile(
            decision="probability",
            field=DECISIONS[name][0],
            positive=list(DECISIONS[name][1]),
            threshold=0.5,
            prompt=prompt if name in PROMPTS.get(prompt, ()) else "default",
            exemplars=(exemplars or {}).get(name, []),
        )
        for name in criteria
    }
    return JudgeProfile(judge_model=judge_model, criteria=rule, source="align --prompt")


class _Exemplary(Sequence[str]):
    """The criteria whose declaration says a labelled case can be shown whole as an exemplar."""

    def _names(self) -> list[str]:
        return [name for name in LABEL_SETS if (how := labelling(name)) and how.exemplars]

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())


EXEMPLAR_CRITERIA: Sequence[str] = _Exemplary()
"""Criteria whose judge reads a case in one request with one verdict, so a labelled case can be
shown whole as an exemplar."""


def choose_exemplars(
    compared: Sequence[Compared],
    transcript: dict[tuple[str, str], str],
    per_side: int,
    seed: int = 0,
) -> dict[str, list[Exemplar]]:
    """Per criterion of :data:`EXEMPLAR_CRITERIA`, ``per_side`` labelled cases of each side
    (positive, negative), drawn with ``seed`` among those whose judge input was kept, shown with
    the label people gave; balanced, or none when a side has too few."""
    chosen: dict[str, list[Exemplar]] = {}
    rng = random.Random(seed)
    for name in EXEMPLAR_CRITERIA:
        units = [c for c in compared if c.label.criterion == name]
        sides: dict[bool, list[Compared]] = {True: [], False: []}
        for unit in units:
            if (name, unit.label.case) in transcript:
                sides[unit.label.label == unit.positive].append(unit)
        if min(len(found) for found in sides.values()) < per_side or per_side < 1:
            continue
        picked = [u for side in (True, False) for u in rng.sample(sides[side], per_side)]
        rng.shuffle(picked)
        chosen[name] = [
            Exemplar(
                input=transcript[(name, u.label.case)], verdict=u.label.label, case=u.label.case
            )
            for u in picked
        ]
    return chosen
