"""The failure message: which case runs count as failing, and how much of each is shown."""

from __future__ import annotations

from assay.evalset.content import Content, Part
from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultPerInvocation,
    EvalSetResult,
)
from assay.testing import failure_report
from assay.testing.failures import BLOCKS_SHOWN, TEXT_LIMIT, TURNS_SHOWN, clip


def _row(name: str, status: EvalStatus, score: float | None = None) -> EvalMetricResult:
    return EvalMetricResult(metric_name=name, threshold=0.5, score=score, eval_status=status)


def _text(text: str, role: str = "user") -> Content:
    return Content(role=role, parts=[Part(text=text)])


def _case(
    eval_id: str,
    status: EvalStatus,
    rows: list[EvalMetricResult],
    turns: int = 0,
    **notes: object,
) -> EvalCaseResult:
    per_turn = [
        EvalMetricResultPerInvocation(
            actual_invocation=Invocation(
                user_content=_text(f"question {i}"), final_response=_text("x" * 500, "model")
            ),
            eval_metric_results=[_row("response_match_score", EvalStatus.FAILED, 0.1)],
        )
        for i in range(turns)
    ]
    return EvalCaseResult(
        eval_id=eval_id,
        final_eval_status=status,
        overall_eval_metric_results=rows,
        eval_metric_result_per_invocation=per_turn,
        assay=CaseNotes.model_validate(notes),
    )


def _set(*cases: EvalCaseResult) -> EvalSetResult:
    return EvalSetResult(eval_set_result_id="r", eval_set_id="s", eval_case_results=list(cases))


def test_a_not_evaluated_metric_fails_a_passing_case_unless_it_does_not_apply() -> None:
    rows = [
        _row("response_match_score", EvalStatus.PASSED, 1.0),
        _row("tool_trajectory_avg_score", EvalStatus.NOT_EVALUATED),
        _row("tool_call_count_v1", EvalStatus.INFORMATIONAL),
    ]
    applies = _case("c", EvalStatus.PASSED, rows)
    does_not_apply = _case(
        "c", EvalStatus.PASSED, rows, not_applicable=["tool_trajectory_avg_score"]
    )
    report = failure_report([_set(applies)])
    assert report is not None and "NOT_EVALUATED tool_trajectory_avg_score" in report
    assert "tool_call_count_v1" not in report
    assert failure_report([_set(does_not_apply)]) is None


def test_long_texts_and_many_turns_and_cases_are_cut_short() -> None:
    failing = [_row("response_match_score", EvalStatus.FAILED, 0.1)]
    cases = [_case(f"c{i}", EvalStatus.FAILED, failing, turns=TURNS_SHOWN + 2) for i in range(20)]
    report = failure_report([_set(*cases)])
    assert report is not None
    assert "x" * TEXT_LIMIT not in report and "x" * (TEXT_LIMIT - 10) + "…" in report
    assert "… and 2 more failing turn(s)" in report
    assert f"… and {20 - BLOCKS_SHOWN} more (see the results for every case)" in report
    assert len(report) < 20_000


def test_a_case_reason_shared_by_every_metric_is_said_once() -> None:
    reason = "turn 1: the agent did not answer within 5 s"
    rows = [_row("response_match_score", EvalStatus.NOT_EVALUATED)]
    case = _case("c", EvalStatus.NOT_EVALUATED, rows, reason=reason,
                 metric_reasons={"response_match_score": reason})  # fmt: skip
    report = failure_report([_set(case)])
    assert report is not None
    assert report.count(reason) == 1


def test_clip_keeps_short_text_and_flattens_whitespace() -> None:
    assert clip("a\n  b") == "a b"
    assert clip("abcdef", 4) == "abc…"
