"""Large runs for the report tests: case results read back from a spill file one at a time, as a
huge run's are, counting how often they are read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from assay._internal.spill import SpilledSequence, shared_spill
from assay.results.model import EvalCaseResult, EvalSetResult, SetNotes


class CountedCases(Sequence[EvalCaseResult]):
    """Case results parsed from the process's spill file on each pass; counts the passes and
    the cases parsed, and fails a test that indexes it (a report must read cases in order)."""

    def __init__(self, cases: Iterable[dict[str, Any]]) -> None:
        spill = shared_spill()
        key = spill.new_key("report-test")
        count = 0
        for batch in _batches(cases):
            count += spill.put_many(
                "cases", [(key, count + i, body) for i, body in enumerate(batch)]
            )
        self.inner = SpilledSequence(spill, "cases", key, count, EvalCaseResult.model_validate_json)
        self.passes = 0
        self.parsed = 0

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[EvalCaseResult]:
        self.passes += 1
        for case in self.inner:
            self.parsed += 1
            yield case

    @overload
    def __getitem__(self, index: int) -> EvalCaseResult: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[EvalCaseResult]: ...
    def __getitem__(self, index: int | slice) -> EvalCaseResult | Sequence[EvalCaseResult]:
        raise AssertionError(f"a report indexed the cases ({index!r})")


def _batches(cases: Iterable[dict[str, Any]], size: int = 2_000) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for case in cases:
        batch.append(json.dumps(case).encode())
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def lazy_result(cases: CountedCases, eval_set_id: str = "travel") -> EvalSetResult:
    """An eval-set result whose cases are ``cases``, unvalidated (validation would list them)."""
    return EvalSetResult.model_construct(
        eval_set_result_id=f"r-{eval_set_id}",
        eval_set_result_name=None,
        eval_set_id=eval_set_id,
        eval_case_results=cases,
        creation_timestamp=1_700_000_000.0,
        assay=SetNotes(version="0", duration_s=1.5),
    )


def many(count: int, failing_every: int, template: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``count`` copies of the case ``template`` named ``case-00000``…; every
    ``failing_every``-th FAILED (its first metric scored 0), every other one of those
    NOT_EVALUATED instead."""
    for n in range(count):
        case = dict(template, eval_id=f"case-{n:05d}")
        if n % failing_every == failing_every - 1:
            status = 3 if (n // failing_every) % 2 else 2
            rows = [dict(template["overall_eval_metric_results"][0], score=0.0, eval_status=status)]
            rows += template["overall_eval_metric_results"][1:]
            case.update(final_eval_status=status, overall_eval_metric_results=rows)
        yield case
