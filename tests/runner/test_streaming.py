"""The runner scores a window of cases at a time and hands them on in eval-set order, so a large
set's results need not be held: spilled results equal held ones."""

from __future__ import annotations

import asyncio
import random

import pytest
from _support import Example

from assay.evalset.io import load_eval_set
from assay.results.collected import CaseResults
from assay.results.traces import load_traces
from assay.runner.evaluate import EvalSetJob, evaluate_sync, in_order


def test_results_come_in_the_order_of_the_work_whatever_order_they_finish_in() -> None:
    delays = [random.Random(n).random() / 200 for n in range(50)]

    async def one(n: int) -> int:
        await asyncio.sleep(delays[n])
        return n

    async def run() -> list[int]:
        return [n async for n in in_order(iter(range(50)), one, window=8)]

    assert asyncio.run(run()) == list(range(50))


def test_no_more_than_the_window_is_started_ahead_of_what_was_handed_on() -> None:
    started: list[int] = []
    handed: list[int] = []

    def work() -> object:
        for n in range(40):
            started.append(n)
            yield n

    async def one(n: int) -> int:
        await asyncio.sleep(0)
        return n

    async def run() -> None:
        async for n in in_order(work(), one, window=5):
            assert len(started) - len(handed) <= 5
            handed.append(n)

    asyncio.run(run())
    assert handed == list(range(40))


def test_a_failure_cancels_the_cases_started_after_it() -> None:
    cancelled: list[int] = []

    async def one(n: int) -> int:
        if n == 0:
            raise RuntimeError("broken")
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return n

    async def run() -> list[int]:
        return [n async for n in in_order(iter(range(6)), one, window=4)]

    with pytest.raises(RuntimeError, match="broken"):
        asyncio.run(run())
    assert sorted(cancelled) == [1, 2, 3]


def test_a_run_whose_results_are_spilled_gives_what_a_held_run_gives(
    example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = EvalSetJob(load_eval_set(example.evalset))
    traces = load_traces([example.traces])
    [held] = evaluate_sync([job], traces)
    monkeypatch.setenv("ASSAY_KEEP_CASES", "1")
    [spilled] = evaluate_sync([job], traces)

    assert isinstance(spilled.eval_case_results, CaseResults)
    assert spilled.eval_case_results.spilled
    assert not isinstance(held.eval_case_results, CaseResults)

    def comparable(result: object) -> object:
        dumped = result.model_dump(
            mode="json",
            exclude={"eval_set_result_id", "eval_set_result_name", "creation_timestamp"},
        )  # type: ignore[attr-defined]
        dumped["assay"].pop("duration_s")
        for case in dumped["eval_case_results"]:
            case["assay"].pop("duration_s")
        return dumped

    assert comparable(spilled) == comparable(held)
    assert spilled.assay is not None and held.assay is not None
    assert spilled.assay.summary == held.assay.summary
