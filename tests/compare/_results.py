"""Building small result sets by hand for the comparison and report tests."""

from __future__ import annotations

from collections.abc import Mapping

from assay import __version__
from assay.metrics.base import EvalStatus
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalSetResult,
    SetNotes,
)

Metrics = Mapping[str, tuple[float | None, EvalStatus]]


def case(
    eval_id: str,
    metrics: Metrics,
    *,
    run: int = 1,
    threshold: float = 0.8,
    status: EvalStatus | None = None,
    not_applicable: tuple[str, ...] = (),
    reason: str | None = None,
    metric_reasons: Mapping[str, str] | None = None,
) -> EvalCaseResult:
    """A case result with these metrics (score and status each); its final status is FAILED when
    a metric failed, else PASSED, unless ``status`` says otherwise."""
    rows = [
        EvalMetricResult(
            metric_name=name,
            threshold=None if st is EvalStatus.INFORMATIONAL else threshold,
            score=score,
            eval_status=st,
        )
        for name, (score, st) in metrics.items()
    ]
    failed = any(
        r.eval_status is EvalStatus.FAILED and r.metric_name not in not_applicable for r in rows
    )
    final = status or (EvalStatus.FAILED if failed else EvalStatus.PASSED)
    return EvalCaseResult(
        eval_id=eval_id,
        final_eval_status=final,
        overall_eval_metric_results=rows,
        assay=CaseNotes(
            run=run,
            not_applicable=list(not_applicable),
            reason=reason,
            metric_reasons=dict(metric_reasons or {}),
            duration_s=0.25,
        ),
    )


def scored(score: float, threshold: float = 0.8) -> tuple[float, EvalStatus]:
    """A score with the status its threshold gives it."""
    return score, EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


def eval_set(set_id: str, *cases: EvalCaseResult) -> EvalSetResult:
    """An eval-set result holding ``cases``."""
    return EvalSetResult(
        eval_set_result_id=f"{set_id}_1",
        eval_set_id=set_id,
        eval_case_results=list(cases),
        creation_timestamp=1_700_000_000.0,
        assay=SetNotes(version=__version__, duration_s=1.5),
    )


def priced(
    result: EvalSetResult,
    costs: Mapping[str, float | None],
    cap: float | None = None,
) -> EvalSetResult:
    """``result`` with judge calls for each metric of ``costs`` (a call of 100 tokens in, 10 out)
    and their cost in dollars recorded in its notes, None leaving a metric's price unknown (its
    judge a model no price table has); ``cap`` the run's ``--max-cost``."""
    from assay.llm.base import TokenUsage
    from assay.results.model import JudgeInfo

    assert result.assay is not None
    for metric, dollars in costs.items():
        result.assay.usage[metric] = TokenUsage(prompt_tokens=100, completion_tokens=10, calls=1)
        result.assay.judges[metric] = JudgeInfo(model="openai:no-such-priced-model")
        if dollars is not None:
            result.assay.cost_usd[metric] = dollars
    result.assay.max_cost_usd = cap
    return result
