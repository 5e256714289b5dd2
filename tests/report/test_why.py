"""The one-line why of a row: close judge votes flagged, passed or failed, and a verdict a judge
profile decided otherwise shown with what the judge said."""

from __future__ import annotations

from typing import Any

from assay.metrics.base import EvalStatus
from assay.metrics.notes import AlignedChoice, Alignment, InvocationNotes, JudgeSample, MetricNotes
from assay.report.why import case_reason, close_vote, why
from assay.results.model import CaseNotes, EvalCaseResult, EvalMetricResult

FRM = "final_response_match_v2"
RUBRIC = "rubric_based_final_response_quality_v1"
TOOLS = "rubric_based_tool_use_quality_v1"
TURN = {"invocation_id": "i1", "user_content": {"role": "user", "parts": [{"text": "Hi"}]}}


def _case(metric: str, *details: dict[str, Any]) -> EvalCaseResult:
    notes = MetricNotes(
        judge_model="m", per_invocation=[InvocationNotes(details=d) for d in details]
    )
    return EvalCaseResult(
        eval_id="c", final_eval_status=EvalStatus.PASSED, assay=CaseNotes(metrics={metric: notes})
    )


def _row(metric: str, status: EvalStatus, score: float | None = 1.0) -> EvalMetricResult:
    return EvalMetricResult(metric_name=metric, score=score, threshold=0.8, eval_status=status)


def test_a_verdict_decided_by_one_vote_is_flagged_even_when_it_passed() -> None:
    case = _case(FRM, {"votes": {"valid": 5, "invalid": 0, "none": 0}},
                 {"votes": {"valid": 3, "invalid": 2, "none": 0}})  # fmt: skip
    assert why(case, _row(FRM, EvalStatus.PASSED)) == "turn 2: decided by one vote, 3 valid to 2"


def test_a_tie_and_a_rubrics_close_vote_are_flagged_and_counted() -> None:
    case = _case(
        RUBRIC,
        {"rubrics": [{"rubric_id": "polite", "votes": {"yes": 2, "no": 2, "none": 1}}]},
        {"rubrics": [{"rubric_id": "short", "votes": {"yes": 1, "no": 2, "none": 0}}]},
    )
    assert close_vote(case, RUBRIC) == "turn 1 rubric polite: tied 2 yes to 2 no (and 1 more)"


def test_one_sample_or_a_clear_majority_is_not_flagged() -> None:
    single = _case(FRM, {"votes": {"valid": 1, "invalid": 0, "none": 0}})
    clear = _case(FRM, {"votes": {"valid": 4, "invalid": 1, "none": 0}})
    assert why(single, _row(FRM, EvalStatus.PASSED)) == ""
    assert close_vote(clear, FRM) == ""


def test_a_failed_rows_why_gets_the_close_vote_after_it() -> None:
    case = _case(FRM, {"votes": {"valid": 2, "invalid": 3, "none": 0}})
    text = why(case, _row(FRM, EvalStatus.FAILED, score=0.0))
    assert text == (
        "score 0.00 below the threshold 0.80; turn 1: decided by one vote, 3 invalid to 2"
    )


def test_a_custom_function_that_fails_a_score_above_the_threshold_is_said_to_have_decided() -> None:
    case = EvalCaseResult(eval_id="c", final_eval_status=EvalStatus.FAILED)
    row = EvalMetricResult(
        metric_name="tone",
        score=0.9,
        threshold=0.5,
        eval_status=EvalStatus.FAILED,
        custom_function_path="my_metrics.tone",
    )
    assert why(case, row) == "my_metrics.tone returned FAILED (score 0.90)"
    below = row.model_copy(update={"score": 0.2})
    assert why(case, below) == "score 0.20 below the threshold 0.50"


def _aligned_case(status: EvalStatus, said: str, decided: str, score: float) -> EvalCaseResult:
    sample = JudgeSample(
        sample=0,
        score=1.0 - score,
        verdict=said,
        probability=0.94,
        text=f'{{"verdict": "{said}"}}',
        aligned=Alignment(
            score=score,
            verdict=decided,
            choices=[
                AlignedChoice(path="verdict", judge_said=said, probability=0.94, decided=decided)
            ],
            rule="the embedded judge's calibration asks P(yes) >= 0.96 on this criterion",
        ),
    )
    notes = MetricNotes(judge_model="m", per_invocation=[InvocationNotes(samples=[sample])])
    row = EvalMetricResult(metric_name=TOOLS, score=score, threshold=0.8, eval_status=status)
    return EvalCaseResult(
        eval_id="greeting",
        final_eval_status=status,
        overall_eval_metric_results=[row],
        eval_metric_result_per_invocation=[
            {"actual_invocation": TURN, "eval_metric_results": [row]}
        ],
        assay=CaseNotes(metrics={TOOLS: notes}),
    )


def test_a_verdict_a_profile_decided_otherwise_says_what_the_judge_said_and_the_rule() -> None:
    case = _aligned_case(EvalStatus.FAILED, "yes", "no", 0.0)

    text = why(case, case.overall_eval_metric_results[0])

    assert text == (
        'turn 1: judge said "yes" (P(yes) 0.94); aligned to "no": the embedded judge\'s '
        "calibration asks P(yes) >= 0.96 on this criterion"
    )


def test_a_pass_a_profile_decided_is_said_too() -> None:
    case = _aligned_case(EvalStatus.PASSED, "no", "yes", 1.0)

    text = why(case, case.overall_eval_metric_results[0])

    assert text.startswith('turn 1: judge said "no" (P(no) 0.94); aligned to "yes": ')


def test_a_case_no_configured_criterion_applies_to_says_which_and_why() -> None:
    reason = "not applicable: needs expected invocations; this case is a scenario"
    names = ["tool_trajectory_avg_score", "response_match_score"]
    rows = [
        EvalMetricResult(metric_name=n, threshold=0.5, eval_status=EvalStatus.NOT_EVALUATED)
        for n in names
    ]
    rows.append(
        EvalMetricResult(metric_name="tool_call_count_v1", eval_status=EvalStatus.INFORMATIONAL)
    )
    case = EvalCaseResult(
        eval_id="scenario",
        final_eval_status=EvalStatus.NOT_EVALUATED,
        overall_eval_metric_results=rows,
        assay=CaseNotes(not_applicable=names, metric_reasons=dict.fromkeys(names, reason)),
    )
    assert case_reason(case) == (
        "no configured criterion applies to this case (tool_trajectory_avg_score, "
        "response_match_score: needs expected invocations; this case is a scenario)"
    )
    recorded = case.model_copy(update={"assay": CaseNotes(reason="no trace for this case")})
    assert case_reason(recorded) == "no trace for this case"
