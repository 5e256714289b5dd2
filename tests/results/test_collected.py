"""CaseResults: a set's results held while few, spilled to disk past a limit, read back in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import Example

from assay._internal.spill import Spill
from assay.evalset.io import load_eval_set
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.metrics.notes import MetricNotes
from assay.report.console import SetView
from assay.results.collected import (
    CaseResults,
    Head,
    heads,
    keep_bytes,
    keep_cases,
    pack_output,
    spill_forms,
    texts,
)
from assay.results.model import EvalCaseResult, EvalSetResult, summarize
from assay.results.traces import load_traces
from assay.runner.evaluate import EvalSetJob, evaluate_sync


@pytest.fixture
def results(example: Example) -> list[EvalCaseResult]:
    job = EvalSetJob(load_eval_set(example.evalset))
    [result] = evaluate_sync([job], load_traces([example.traces]))
    return list(result.eval_case_results)


@pytest.fixture
def spill(tmp_path: Path) -> Spill:
    made = Spill(tmp_path)
    yield made
    made.close()


def _collected(results: list[EvalCaseResult], keep: int, spill: Spill | None = None) -> CaseResults:
    """``results`` appended one by one to a collection that holds ``keep`` before spilling."""
    collected = CaseResults(keep=keep, spill=spill)
    for result in results:
        collected.append(result)
    return collected


def test_results_under_the_limit_are_held_as_they_are(results: list[EvalCaseResult]) -> None:
    collected = CaseResults(keep=len(results))
    for result in results:
        collected.append(result)

    assert not collected.spilled
    assert [id(r) for r in collected] == [id(r) for r in results]


def test_results_past_the_limit_are_spilled_and_read_back_equal_in_order(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    collected = _collected(results * 3, 2, spill)
    collected.close()

    assert collected.spilled
    assert len(collected) == 3 * len(results)
    assert list(collected) == results * 3
    assert collected[4] == results[4 % len(results)]
    assert collected[-1] == results[-1]
    assert list(collected[1:4]) == (results * 3)[1:4]
    assert collected == results * 3
    with pytest.raises(IndexError):
        collected[3 * len(results)]


def test_spilled_results_are_not_kept_in_memory(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    collected = _collected(results, 0, spill)
    collected.close()

    assert [id(r) for r in collected].count(id(results[0])) == 0  # each read is a new object
    assert spill.indexes("result", collected._key) == list(range(len(results)))


def test_the_summary_usage_and_unevaluated_count_are_kept_as_results_arrive(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    collected = _collected(results, 1, spill)

    assert collected.summary == summarize(results)
    assert collected.unevaluated_in_passed == sum(
        len(r.unevaluated_metrics()) for r in results if r.final_eval_status is EvalStatus.PASSED
    )
    assert collected.usage.keys() == {m for r in results for m in r.assay.metrics}


def _big(result: EvalCaseResult, n: int, size: int) -> EvalCaseResult:
    """``result`` whose first row's actual invocation carries a tool result ``size`` long."""
    [row, *rest] = result.eval_metric_result_per_invocation
    actual = row.actual_invocation.model_copy(update={"invocation_id": f"big-{n}-" + "x" * size})
    rows = [row.model_copy(update={"actual_invocation": actual}), *rest]
    return result.model_copy(update={"eval_metric_result_per_invocation": rows})


def test_big_results_spill_once_their_json_passes_the_byte_budget_long_before_the_case_limit(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    with_rows = next(r for r in results if r.eval_metric_result_per_invocation)
    big = [_big(with_rows, n, 100_000) for n in range(12)]
    collected = CaseResults(keep=2000, spill=spill, max_bytes=450_000)
    for result in big[:4]:
        collected.append(result)
    assert not collected.spilled and 400_000 < collected.held_bytes <= 450_000

    collected.append(big[4])  # past the budget: everything goes to the spill file
    for result in big[5:]:
        collected.append(result)
    collected.close()

    assert collected.spilled and collected.held_bytes == 0
    assert list(collected) == big
    assert list(collected.texts()) == [_indented(r) for r in big]


def test_the_case_limit_still_spills_small_results_under_the_byte_budget(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    collected = CaseResults(keep=2, spill=spill, max_bytes=10**9)
    for result in results:
        collected.append(result)
    assert collected.spilled and list(collected) == results


def test_the_byte_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_KEEP_BYTES", "1000")
    assert keep_bytes() == 1000
    monkeypatch.setenv("ASSAY_KEEP_BYTES", "lots")
    assert keep_bytes() == 8 * 1024 * 1024
    monkeypatch.delenv("ASSAY_KEEP_BYTES")
    assert keep_bytes() == 8 * 1024 * 1024


def test_the_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_KEEP_CASES", "7")
    assert keep_cases() == 7
    monkeypatch.setenv("ASSAY_KEEP_CASES", "many")
    assert keep_cases() == 2000
    monkeypatch.delenv("ASSAY_KEEP_CASES")
    assert keep_cases() == 2000


def _indented(result: EvalCaseResult) -> bytes:
    return result.model_dump_json(indent=2, exclude_none=True).encode()


def _odd(results: list[EvalCaseResult]) -> list[EvalCaseResult]:
    """``results`` and copies with what an indenter could lay out differently: text beyond
    ASCII, escapes, empty objects and lists."""
    odd = results[0].model_copy(
        update={
            "eval_id": 'réservations ✈ 予約 "quoted" \\ back\nslash\u2028',
            "session_details": {"empty": {}, "none": [], "nested": [{}, [[]]], "n": 1e16},
            "eval_metric_results": [],
        }
    )
    return [*results, odd]


@pytest.mark.parametrize("keep", [0, 100])
def test_texts_are_each_result_as_the_results_file_indents_it_held_or_spilled(
    results: list[EvalCaseResult], spill: Spill, keep: int
) -> None:
    cases = _odd(results)
    collected = _collected(cases, keep, spill)

    assert collected.spilled == (keep == 0)
    expected = [_indented(r) for r in cases]
    assert list(collected.texts()) == expected
    assert list(texts(collected)) == list(texts(cases)) == expected


@pytest.mark.parametrize("keep", [2, 100])
def test_a_result_is_serialised_once_held_or_spilled_and_written(
    results: list[EvalCaseResult], spill: Spill, monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    calls: list[object] = []
    serializer = EvalCaseResult.__pydantic_serializer__

    class Counting:
        def to_json(self, value: object, **options: object) -> bytes:
            calls.append(value)
            return serializer.to_json(value, **options)  # type: ignore[arg-type]

    expected = [_indented(r) for r in results]
    monkeypatch.setattr(EvalCaseResult, "__pydantic_serializer__", Counting())
    collected = _collected(results, keep, spill)  # 2: two held, then spilled with the rest
    collected.close()
    assert collected.spilled == (keep == 2) and len(calls) == len(results)

    assert list(collected.texts()) == expected
    assert list(collected.heads())
    assert len(calls) == len(results)  # neither writing nor counting serialises again


def test_spilled_heads_are_what_counting_and_picking_cases_reads(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    collected = _collected(results, 1, spill)

    def read(head: Head) -> tuple[object, ...]:
        rows = [(r.metric_name, r.eval_status, r.score) for r in head.overall_eval_metric_results]
        notes = (head.assay.run, list(head.assay.not_applicable))
        return head.eval_id, head.final_eval_status, rows, notes

    found = list(collected.heads())
    assert [read(head) for head in found] == [read(r) for r in results]
    assert not any(isinstance(head, EvalCaseResult) for head in found)  # no model built
    statuses = {row.eval_status for head in found for row in head.overall_eval_metric_results}
    assert all(type(status) is EvalStatus for status in statuses)  # compared with `is`
    assert list(heads(results)) == results  # a plain list is read whole


def test_a_console_of_spilled_results_lists_the_failing_cases_whole(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    collected = _collected(results, 0, spill)
    failing = [r for r in results if r.final_eval_status is not EvalStatus.PASSED]

    view = SetView.of(EvalSetResult.model_construct(eval_case_results=collected), max_cases=1)

    assert failing and view.total == len(results) and view.not_passed == len(failing)
    assert view.listed == failing[:1]  # with its rows per invocation, for the details
    assert view.listed[0].eval_metric_result_per_invocation


def test_results_stored_as_another_process_made_them_read_back_as_those_appended_whole(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    whole = _collected(results, len(results) + 1)  # held: the results file's texts from models
    made_elsewhere = CaseResults(spill=spill)
    for result in results:
        compact = result.__pydantic_serializer__.to_json(result, exclude_none=True)
        summary = result.model_copy(update={"eval_metric_result_per_invocation": []})
        made_elsewhere.append(summary, spill_forms(result, compact))
    made_elsewhere.close()

    assert made_elsewhere.spilled  # never held: the summaries are not the results
    assert list(made_elsewhere.texts()) == list(whole.texts())
    assert list(made_elsewhere) == results
    assert [(h.eval_id, h.final_eval_status) for h in made_elsewhere.heads()] == [
        (r.eval_id, r.final_eval_status) for r in results
    ]
    assert made_elsewhere.summary == whole.summary == summarize(results)
    assert made_elsewhere.usage == whole.usage
    assert made_elsewhere.unevaluated_in_passed == whole.unevaluated_in_passed


def _counted_apart(results: list[EvalCaseResult]) -> list[EvalCaseResult]:
    """``results`` and copies that count apart: judged with tokens, a simulated user's tokens,
    passed with an applicable metric not evaluated (and one not evaluated but not applicable)."""
    first = results[0]
    judged = first.model_copy(deep=True)
    judged.assay.metrics = {
        "safety_v1": MetricNotes(usage=TokenUsage(prompt_tokens=7, completion_tokens=2, calls=1)),
        "hallucinations_v1": MetricNotes(usage=TokenUsage(cache_hits=3)),
    }
    judged.assay.simulator_usage = TokenUsage(prompt_tokens=11, calls=2, retries=1)
    unevaluated = first.model_copy(deep=True)
    rows = unevaluated.overall_eval_metric_results
    rows[0] = rows[0].model_copy(update={"eval_status": EvalStatus.NOT_EVALUATED})
    rows[1] = rows[1].model_copy(update={"eval_status": EvalStatus.NOT_EVALUATED})
    unevaluated.assay.not_applicable = [rows[1].metric_name]
    assert unevaluated.final_eval_status is EvalStatus.PASSED
    return [*results, judged, unevaluated]


def test_outputs_the_history_kept_add_back_as_the_results_they_were_made_from(
    results: list[EvalCaseResult], spill: Spill
) -> None:
    cases = _counted_apart(results)
    whole = _collected(cases, len(cases) + 1)
    added_back = CaseResults(spill=spill)
    for result in cases:
        compact = result.__pydantic_serializer__.to_json(result, exclude_none=True)
        summary = result.model_copy(update={"eval_metric_result_per_invocation": []})
        added_back.append_output(pack_output(spill_forms(result, compact), summary))
    added_back.close()

    assert list(added_back.texts()) == list(whole.texts())
    assert list(added_back) == cases
    assert added_back.summary == whole.summary == summarize(cases)
    assert added_back.usage == whole.usage
    assert whole.usage["safety_v1"].prompt_tokens == 7
    assert whole.usage["user_simulator"].retries == 1
    assert added_back.unevaluated_in_passed == whole.unevaluated_in_passed == 1
