"""How far each judge agrees with people, in words, for every view of a run (console, HTML,
JUnit, Markdown, ``assay show``): from the ``agreement`` the results carry beside each judged
metric (the judge card chosen for it, :mod:`assay.agreement.cards`). Every view takes its words
from :func:`agreement_words`, so they say the same thing.

A figure always comes with kappa's 95% interval, the number of labels and the labels file
behind it (the embedded judge's bundled cards: ``benchmarks/judge_agreement test half``), and a
plain reading of what it means for the verdicts, by these bands:

* fewer than :data:`~assay.results.model.FEW_AGREEMENT_LABELS` labels: **too few labels** to
  tell; the figure is given as a count (``3 of 4 labels``), never as a bare percentage;
* kappa below :data:`SMOKE_KAPPA`: **at chance on this criterion** (below 0 with an interval
  below 0: **worse than chance**); kappa undefined (one label throughout), or an interval that
  reaches 0: **not told from chance**. Each: "a smoke test, not a decision";
* :data:`SMOKE_KAPPA` to 0.4: **weak agreement**, a hint, not a decision;
* 0.4 to 0.6: **moderate agreement**, check its failures by hand;
* 0.6 to 0.8: **good agreement**; 0.8 and above: **strong agreement**.

A reading that says "a smoke test" also gives a warning wherever the run is shown. A judge
whose agreement was measured for another prompt version of the criterion (other options,
rubrics or profile than the embedded judge's bundled card was measured with) is said to be so,
with no figure: a figure from another prompt is not this one's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.results.model import (
    FEW_AGREEMENT_LABELS,
    SIMULATOR,
    EvalSetResult,
    JudgeAgreement,
    JudgeInfo,
)

SMOKE_KAPPA = 0.2
"""Below this kappa (or with none), a judge's verdicts are a smoke test."""
NOT_MEASURED = "judge agreement not measured"
OTHER_PROMPT = "judge agreement measured for the default prompt, not this configuration"
MEASURE_HINT = "assay judge agree LABELS measures it"
BUNDLED_LABELS = "benchmarks/judge_agreement test half"
"""How the labels behind the embedded judge's bundled cards are named."""
SMOKE = "a smoke test, not a decision"
"""What a reading at chance says of the verdicts."""
_BANDS = (
    (0.8, "strong agreement", ""),
    (0.6, "good agreement", ""),
    (0.4, "moderate agreement", "check its failures by hand"),
    (SMOKE_KAPPA, "weak agreement", "a hint, not a decision"),
)
"""Kappa from which a reading holds, highest first: its state and its advice (below the last,
or with an interval that reaches 0: at chance)."""


@dataclass(frozen=True)
class AgreementWords:
    """What every view says about one judged metric's agreement with people."""

    text: str
    """``judge agrees with people on 53% (kappa 0.06 [+0.00, +0.21]; 34 labels,
    benchmarks/judge_agreement test half): at chance on this criterion: a smoke test, not a
    decision``, or why there is no figure."""
    warning: str | None = None
    """``the judge of safety_v1 is at chance on this criterion (...)``, where its verdicts are a
    smoke test; else None."""
    measured: bool = True
    """False when there is no figure (not measured, or measured for another prompt)."""


def agreement_words(metric: str, info: JudgeInfo) -> AgreementWords:
    """The words for ``metric``'s judge, from what the results carry (:class:`JudgeInfo`)."""
    found = info.agreement
    if found is None:
        text = OTHER_PROMPT if info.other_prompt_version else NOT_MEASURED
        return AgreementWords(text, None, measured=False)
    return figure_words(metric, found)


def figure_words(metric: str, found: JudgeAgreement) -> AgreementWords:
    """The words for a figure (a judge card's, as :meth:`~assay.agreement.cards.JudgeCard.
    agreement_info` gives it) of ``metric``'s judge."""
    state, advice, smoke = reading(found)
    said = f"{state}: {advice}" if advice else state
    verb = "agreed with people on" if found.few else "agrees with people on"
    text = f"judge {verb} {_figures(found)}: {said}"
    warning = None
    if smoke:
        warning = f"the judge of {metric} is {state} (kappa {_kappa(found)} on {found.labels} "
        warning += f"labels): {advice}"
    return AgreementWords(text, warning)


def _figures(found: JudgeAgreement) -> str:
    """``53% (kappa 0.06 [+0.00, +0.21]; 34 labels, <labels file>)``; from too few labels, a
    count instead of a percentage (``3 of 4 labels (kappa ...; <labels file>)``)."""
    kappa = f"kappa {_kappa(found)}"
    span = interval(found)
    if span:
        kappa += f" {span}"
    source = labels_source(found)
    if found.few:
        return f"{rate(found)} labels ({kappa}; {source})"
    return f"{rate(found)} ({kappa}; {found.labels} labels, {source})"


def rate(found: JudgeAgreement) -> str:
    """The agreement: ``53%``, or from too few labels a count (``3 of 4``), never a bare
    percentage."""
    if found.few:
        agreed = "?" if found.agreement is None else str(round(found.agreement * found.labels))
        return f"{agreed} of {found.labels}"
    return "-" if found.agreement is None else f"{found.agreement:.0%}"


def reading(found: JudgeAgreement) -> tuple[str, str, bool]:
    """What a figure means for the verdicts (the bands in the module's docs): its state, the
    advice that goes with it, and whether it makes the verdicts a smoke test."""
    if found.few:
        return f"too few labels to tell ({FEW_AGREEMENT_LABELS} needed)", "", False
    kappa, span = found.kappa, found.kappa_interval
    if kappa is None:
        return "not told from chance (one label throughout)", SMOKE, True
    if kappa < 0 and span is not None and span[1] < 0:
        return "worse than chance on this criterion", SMOKE, True
    if kappa < SMOKE_KAPPA:
        return "at chance on this criterion", SMOKE, True
    if span is not None and span[0] <= 0:
        return "not told from chance on these labels", SMOKE, True
    return next((state, advice, False) for floor, state, advice in _BANDS if kappa >= floor)


def labels_source(found: JudgeAgreement) -> str:
    """The labels file behind a figure: the benchmark's for a bundled card, else the file the
    card names (relative to the working folder when inside it)."""
    if found.bundled:
        return BUNDLED_LABELS
    if not found.labels_file:
        return "labels file not recorded"
    path = Path(found.labels_file)
    try:
        return str(path.relative_to(Path.cwd())) if path.is_absolute() else str(path)
    except (ValueError, OSError):  # outside it, or the working folder is gone
        return found.labels_file


@dataclass(frozen=True)
class JudgedMetric:
    """One judged metric of a set: its judge in words, how far that judge agrees with people
    (None: no figure) and the words every view shows for it."""

    metric: str
    judge: str
    agreement: JudgeAgreement | None
    words: AgreementWords

    @property
    def text(self) -> str:
        """:attr:`AgreementWords.text`."""
        return self.words.text

    @property
    def warning(self) -> str | None:
        """The plain warning when its verdicts are a smoke test; else None."""
        return self.words.warning

    @property
    def measured(self) -> bool:
        """Whether there is a figure (else not measured, or measured for another prompt)."""
        return self.words.measured


def judged_metrics(result: EvalSetResult) -> list[JudgedMetric]:
    """The set's metrics that had a judge (the simulated user left out), in the results' order."""
    if result.assay is None:
        return []
    return [
        JudgedMetric(metric, _with_profile(info), info.agreement, agreement_words(metric, info))
        for metric, info in result.assay.judges.items()
        if _judged(metric, info)
    ]


def _with_profile(info: JudgeInfo) -> str:
    """The judge in words, and how a judge profile decided its verdicts where one did."""
    described = info.describe() or ""
    return f"{described}; {info.profile}" if info.profile else described


def _judged(metric: str, info: JudgeInfo) -> bool:
    return metric != SIMULATOR and info.model is not None


def _kappa(agreement: JudgeAgreement) -> str:
    return "undefined" if agreement.kappa is None else f"{agreement.kappa:.2f}"


def interval(agreement: JudgeAgreement) -> str:
    """Kappa's 95% interval, ``[+0.42, +0.77]``, or ``''`` when there is none."""
    found = agreement.kappa_interval
    return "" if found is None else f"[{found[0]:+.2f}, {found[1]:+.2f}]"


def is_smoke_test(agreement: JudgeAgreement) -> bool:
    """Whether a figure makes its judge's verdicts a smoke test (its reading is at chance)."""
    return reading(agreement)[2]
