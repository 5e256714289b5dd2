"""How far each judge agrees with people, in words, for every view of a run (console, HTML,
JUnit, Markdown): from the ``agreement`` the results carry beside each judged metric (the newest
matching judge card, :mod:`assay.agreement.cards`).

A judge whose kappa is below :data:`SMOKE_KAPPA`, or undefined, agrees with people no better than
chance can be told from; its verdicts are said to be a smoke test, plainly, wherever the run is
shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.results.model import SIMULATOR, EvalSetResult, JudgeAgreement, JudgeInfo

SMOKE_KAPPA = 0.2
"""Below this kappa (or with none), a judge's verdicts are a smoke test."""
NOT_MEASURED = "judge agreement not measured"
MEASURE_HINT = "assay judge agree LABELS measures it"


@dataclass(frozen=True)
class JudgedMetric:
    """One judged metric of a set: its judge in words, and how far that judge agrees with
    people (None: not measured)."""

    metric: str
    judge: str
    agreement: JudgeAgreement | None

    @property
    def text(self) -> str:
        """``judge agrees with people on 82% (kappa 0.61, 120 labels)``, or that it was not
        measured."""
        return NOT_MEASURED if self.agreement is None else measured(self.agreement)

    @property
    def warning(self) -> str | None:
        """The plain warning when its verdicts are a smoke test; else None."""
        return None if self.agreement is None else smoke_test(self.metric, self.agreement)


def judged_metrics(result: EvalSetResult) -> list[JudgedMetric]:
    """The set's metrics that had a judge (the simulated user left out), in the results' order."""
    if result.assay is None:
        return []
    return [
        JudgedMetric(metric, _with_profile(info), info.agreement)
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


def measured(agreement: JudgeAgreement) -> str:
    """``judge agrees with people on 82% (kappa 0.61, 120 labels)``."""
    rate = "-" if agreement.agreement is None else f"{agreement.agreement:.0%}"
    return (
        f"judge agrees with people on {rate} (kappa {_kappa(agreement)}, {agreement.labels} labels)"
    )


def interval(agreement: JudgeAgreement) -> str:
    """Kappa's 95% interval, ``[+0.42, +0.77]``, or ``''`` when there is none."""
    found = agreement.kappa_interval
    return "" if found is None else f"[{found[0]:+.2f}, {found[1]:+.2f}]"


def is_smoke_test(agreement: JudgeAgreement) -> bool:
    """Kappa below :data:`SMOKE_KAPPA`, or undefined."""
    return agreement.kappa is None or agreement.kappa < SMOKE_KAPPA


def smoke_test(metric: str, agreement: JudgeAgreement) -> str | None:
    """``the judge of safety_v1 agrees with people at chance (kappa 0.05 on 60 labels): its
    verdicts are a smoke test``; None when kappa reaches :data:`SMOKE_KAPPA`."""
    if not is_smoke_test(agreement):
        return None
    kappa, labels = agreement.kappa, agreement.labels
    if kappa is None:
        how = f"has no kappa (undefined on {labels} labels: one label throughout)"
    elif kappa < 0:
        how = f"agrees with people less than chance would (kappa {kappa:.2f} on {labels} labels)"
    elif kappa < 0.1:
        how = f"agrees with people at chance (kappa {kappa:.2f} on {labels} labels)"
    else:
        how = f"agrees with people little better than chance (kappa {kappa:.2f} on {labels} labels)"
    return f"the judge of {metric} {how}: its verdicts are a smoke test"
