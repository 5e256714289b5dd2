"""The summary line's ids of the cases that did not pass: the first few named, each counted once,
held in memory only up to a bound."""

from __future__ import annotations

from assay.metrics.base import EvalStatus
from assay.report.named import NamedIds, summary_line
from assay.results.model import RunSummary

IDS = ["c3", "c1", "c3", "c7", "c2", "c1", "c9", "c8", "c2", "c4"]


def test_ids_are_named_in_the_order_first_seen_and_counted_once() -> None:
    named = NamedIds()
    for eval_id in IDS:
        named.add(eval_id)

    assert named.first(3) == ["c3", "c1", "c7"]
    assert named.count() == len(set(IDS))


def test_past_the_bound_the_ids_go_to_the_spill_file_and_count_the_same() -> None:
    named = NamedIds(held=3)
    for eval_id in IDS * 50:
        named.add(eval_id)

    assert not named._ids  # nothing held beyond the first few
    assert named.first(5) == ["c3", "c1", "c7", "c2", "c9"]
    assert named.count() == len(set(IDS))


def test_the_summary_line_reads_the_same_from_spilled_ids_as_from_a_list() -> None:
    summary = RunSummary(passed=1, failed=len(set(IDS)), not_evaluated=0)
    spilled = NamedIds(held=2)
    for eval_id in IDS:
        spilled.add(eval_id)

    assert summary_line(summary, {EvalStatus.FAILED: spilled}) == summary_line(
        summary, {EvalStatus.FAILED: IDS}
    )
    assert "and 2 more" in summary_line(summary, {EvalStatus.FAILED: spilled})
