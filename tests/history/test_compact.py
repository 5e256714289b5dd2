"""The compact stored form of a case result: small, and read back exactly as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import Example

from assay.config import EvalConfig, load_config
from assay.evalset.invocation import Invocation
from assay.evalset.io import load_eval_set
from assay.history.compact import (
    CaseEncoder,
    Inputs,
    RecordError,
    decode,
    may_need_inputs,
)
from assay.metrics.base import EvalStatus
from assay.results.captured import CapturedRows
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
)
from assay.results.traces import Traces, load_traces
from assay.runner.evaluate import EvalSetJob, evaluate_sync


def _example_run(example: Example) -> tuple[Inputs, list[EvalCaseResult]]:
    """The example scored from its traces with every criterion (judged ones by the stub),
    with the inputs the run read."""
    job = EvalSetJob(load_eval_set(example.evalset), load_config(example.config), "config")
    traces = load_traces([example.traces])
    [result] = evaluate_sync([job], traces)
    return Inputs([job.loaded.eval_set], traces), result.eval_case_results


def _round_trip(encoder: CaseEncoder, result: EvalCaseResult, inputs: Inputs | None) -> str:
    encoded = encoder.encode(result)
    assert decode(encoded.text, dict(enumerate(encoder.headers)), inputs) == result
    return encoded.text


def test_every_case_of_a_judged_run_reads_back_equal(example: Example) -> None:
    inputs, results = _example_run(example)
    encoder = CaseEncoder(inputs)

    texts = [_round_trip(encoder, result, inputs) for result in results]

    judged = [r for r in results if r.assay.metrics]
    assert judged, "the example's judged metrics left no notes"
    assert all(text.startswith('{"v":2') for text in texts)
    assert any('"D":[[' in text for text in texts)  # a metric's details, the same on every row
    assert len(encoder.headers) == 1  # one config, one header for the whole run


def test_invocations_from_the_inputs_are_stored_by_reference(example: Example) -> None:
    inputs, results = _example_run(example)
    encoder = CaseEncoder(inputs)
    conversation = next(r for r in results if r.eval_metric_result_per_invocation)

    text = encoder.encode(conversation).text

    full = conversation.model_dump_json(exclude_none=True)
    assert '"a":["t",' in text and '"e":[0,' in text and may_need_inputs(text)
    assert '"user_content"' not in text and '"intermediate_data"' not in text
    assert len(text) * 2 < len(full)


def test_a_reference_cannot_be_read_without_the_inputs(example: Example) -> None:
    inputs, results = _example_run(example)
    encoder = CaseEncoder(inputs)
    case = next(r for r in results if r.eval_metric_result_per_invocation)
    text = encoder.encode(case).text

    with pytest.raises(RecordError, match="not in the run's inputs"):
        decode(text, dict(enumerate(encoder.headers)), None)
    with pytest.raises(RecordError, match="traces"):
        decode(text, dict(enumerate(encoder.headers)), Inputs(inputs.eval_sets, Traces()))


def test_invocations_the_inputs_do_not_hold_are_stored_whole(example: Example) -> None:
    inputs, results = _example_run(example)
    case = next(r for r in results if r.eval_metric_result_per_invocation)
    agent_made = case.model_copy(deep=True)  # equal invocations, but not the loaded objects
    encoder = CaseEncoder(inputs)

    text = _round_trip(encoder, agent_made, None)

    assert '"a":[{' in text and '"e":{"inline"' in text and not may_need_inputs(text)


def _row(name: str, score: float, **extra: object) -> EvalMetricResult:
    return EvalMetricResult.model_validate(
        {"metric_name": name, "threshold": 0.5, "score": score, "eval_status": 1, **extra}
    )


def _case(rows: list[list[EvalMetricResult]], **notes: object) -> EvalCaseResult:
    invocation = Invocation.model_validate(
        {"invocation_id": "i", "user_content": {"parts": [{"text": "hi"}]}}
    )
    return EvalCaseResult(
        eval_set_id="s",
        eval_id="c",
        final_eval_status=EvalStatus.PASSED,
        overall_eval_metric_results=rows[0],
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(actual_invocation=invocation, eval_metric_results=r)
            for r in rows[1:]
        ],
        session_details={"state": {"k": 1}},
        assay=CaseNotes.model_validate(notes),
    )


def test_rows_that_do_not_follow_the_case_metrics_are_stored_in_full() -> None:
    irregular = _case([[_row("a", 1.0)], [_row("b", 1.0)]])
    custom = _case([[_row("a", 1.0, custom_function_path="m.f")]])
    encoder = CaseEncoder()

    for result in (irregular, custom):
        text = _round_trip(encoder, result, None)
        assert not text.startswith('{"v":2')


def test_another_criterion_gets_its_own_header_and_known_ones_are_reused() -> None:
    first = _case([[_row("a", 1.0)], [_row("a", 0.0)]])
    other = _case([[_row("a", 1.0, criterion={"threshold": 0.9})]])
    encoder = CaseEncoder()

    new = [encoder.encode(r).new_header is not None for r in (first, other, first, other)]

    assert new == [True, True, False, False] and len(encoder.headers) == 2
    for result in (first, other):
        _round_trip(encoder, result, None)


def test_details_notes_and_session_details_survive() -> None:
    rubric = EvalMetricResultDetails.model_validate(
        {"rubric_scores": [{"rubric_id": "r1", "score": 1.0, "rationale": "fine"}]}
    )
    rows = [
        [_row("a", 1.0, details=rubric), _row("b", None, eval_status=4)],
        [_row("a", 1.0), _row("b", 2.0, details={"duration_details": {"total_seconds": 1.5}})],
    ]
    result = _case(rows, reason="why", metric_reasons={"b": "no"}, not_applicable=["b"], run=2)

    text = _round_trip(CaseEncoder(), result, None)

    assert '"d":[[0,' in text


def test_the_encoder_knows_every_field_of_the_models_it_encodes() -> None:
    # A new field on these models must be taught to the encoder and decoder (compact.py),
    # or it would be dropped from the history without a word.
    assert list(EvalMetricResult.model_fields) == [
        "metric_name", "threshold", "criterion", "custom_function_path", "score",
        "eval_status", "details",
    ]  # fmt: skip
    assert list(EvalCaseResult.model_fields) == [
        "eval_set_file", "eval_set_id", "eval_id", "final_eval_status", "eval_metric_results",
        "overall_eval_metric_results", "eval_metric_result_per_invocation", "session_id",
        "session_details", "user_id", "assay",
    ]  # fmt: skip
    assert list(EvalMetricResultPerInvocation.model_fields) == [
        "actual_invocation", "expected_invocation", "eval_metric_results",
    ]  # fmt: skip
    assert set(CaseNotes.model_fields) == {
        "reason", "metric_reasons", "not_applicable", "run", "simulator_usage", "duration_s",
        "metrics",
    }  # fmt: skip


def test_a_full_result_reads_back_as_schema_version_1_stored_it(tmp_path: Path) -> None:
    result = _case([[_row("a", 1.0)], [_row("a", 0.0)]])

    assert decode(result.model_dump_json(exclude_none=True), {}, None) == result


def test_rows_captured_while_scoring_encode_as_the_rows_read_back(example: Example) -> None:
    job = EvalSetJob(load_eval_set(example.evalset), load_config(example.config), "config")
    traces = load_traces([example.traces])
    captures: dict[int, CapturedRows] = {}
    [result] = evaluate_sync([job], traces, captures=captures)
    inputs = Inputs([job.loaded.eval_set], traces)
    with_captured, read_back = CaseEncoder(inputs), CaseEncoder(inputs)

    for case in result.eval_case_results:
        fast = with_captured.encode(case, captures.pop(id(case)))
        slow = read_back.encode(case)
        assert fast.text == slow.text and fast.new_header == slow.new_header
        assert decode(fast.text, dict(enumerate(with_captured.headers)), inputs) == case
    assert captures == {}


def test_captured_details_that_vary_by_row_and_by_case_encode_as_read_back(
    example: Example,
) -> None:
    """Rows made of no rubric scores: a metric's details shared by its rows (and remembered from
    case to case) or differing by row, all stored as reading the rows back stores them."""
    config = EvalConfig.model_validate({"criteria": {"response_match_score": 0.5}})
    eval_set = load_eval_set(example.evalset)
    traces = load_traces([example.traces])
    cases = list(traces.by_case.values())
    assert [len(c) for c in cases] == [1, 2, 1, 1, 2]
    cases[0][0].duration = 2.0
    for number, invocation in enumerate(cases[1]):
        invocation.duration = 1.0 + number  # differs by row
    cases[3][0].duration = 2.0  # as case 0, after case 2 had none
    for invocation in cases[4]:
        invocation.duration = 3.0  # the same on every row, not as before
    job = EvalSetJob(eval_set, config, "inline")
    captures: dict[int, CapturedRows] = {}
    [result] = evaluate_sync([job], traces, captures=captures)
    inputs = Inputs([eval_set.eval_set], traces)
    with_captured, read_back = CaseEncoder(inputs), CaseEncoder(inputs)

    texts = []
    for case in result.eval_case_results:
        fast = with_captured.encode(case, captures.pop(id(case)))
        assert fast.text == read_back.encode(case).text
        assert decode(fast.text, dict(enumerate(with_captured.headers)), inputs) == case
        texts.append(fast.text)
    assert ['"total_seconds":2.0' in text for text in texts] == [True, True, False, True, False]
    assert ['"d":[[' in text for text in texts] == [False, True, False, False, False]
    assert '[4,{"duration_details":{"total_seconds":3.0,' in texts[4]


def test_a_record_reads_back_with_the_invocations_its_reader_already_has(
    example: Example,
) -> None:
    inputs, results = _example_run(example)
    encoder = CaseEncoder(inputs)
    result = next(r for r in results if r.eval_metric_result_per_invocation)
    text = encoder.encode(result).text
    headers = dict(enumerate(encoder.headers))
    rows = result.eval_metric_result_per_invocation
    actual = [row.actual_invocation for row in rows]
    expected = [row.expected_invocation for row in rows]

    given = decode(text, headers, None, actual, expected)  # no inputs needed: both are given

    assert given == result
    assert all(
        row.actual_invocation is a and row.expected_invocation is e
        for row, a, e in zip(given.eval_metric_result_per_invocation, actual, expected, strict=True)
    )


def test_a_record_whose_values_are_not_of_their_types_is_validated_row_by_row() -> None:
    encoder = CaseEncoder()
    result = EvalCaseResult(
        eval_set_id="s",
        eval_id="c",
        final_eval_status=EvalStatus.PASSED,
        overall_eval_metric_results=[
            EvalMetricResult(metric_name="m", threshold=0.5, score=1.0, eval_status=1)
        ],
        assay=CaseNotes(),
    )
    stored = encoder.encode(result).text
    headers = dict(enumerate(encoder.headers))
    text = stored.replace('"s":[1.0]', '"s":[1]')  # an int, as JSON allows

    back = decode(text, headers, None)

    assert back == result and type(back.overall_eval_metric_results[0].score) is float
    for unknown in (stored, text):  # a status no EvalStatus has: refused either way
        with pytest.raises((KeyError, ValueError)):
            decode(unknown.replace('"t":"01"', '"t":"09"'), headers, None)
