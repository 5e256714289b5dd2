"""A run's case results read back from the history as they are reached: lazy set results,
``done_cases`` for ``--resume``, and ``assay show`` of a large run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _support import RunCli

from assay import compare
from assay.history.records import case_row
from assay.history.store import HistoryStore
from assay.history.stored import BATCH, DoneCases, KeptCases, StoredCases
from assay.metrics.base import EvalStatus
from assay.results.keys import CaseKey
from assay.results.model import CaseNotes, EvalCaseResult, EvalSetResult, SetNotes

CONFIG = {"sets": [{"path": "a.evalset.json", "eval_set_id": "s"}], "judge_model": None}


def case(eval_id: str, status: EvalStatus = EvalStatus.PASSED, run: int = 1) -> EvalCaseResult:
    return EvalCaseResult(
        eval_set_id="s", eval_id=eval_id, final_eval_status=status, assay=CaseNotes(run=run)
    )


def record(store: HistoryStore, run: str, cases: list[EvalCaseResult]) -> None:
    rows = [case_row(c, c.model_dump_json(exclude_none=True)) for c in cases]
    for start in range(0, len(rows), 1_000):
        store.write_cases(run, rows[start : start + 1_000])


@pytest.fixture
def store(tmp_path: Path) -> HistoryStore:
    with HistoryStore(tmp_path / "history.sqlite") as opened:
        yield opened  # type: ignore[misc]


def test_a_finished_runs_cases_read_lazily_in_case_order_after_the_store_closes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.sqlite"
    cases = [
        case(f"c{n:04d}", EvalStatus.FAILED if n % 7 == 0 else EvalStatus.PASSED)
        for n in range(1_200)
    ]
    with HistoryStore(path) as store:
        run = store.start_run(["a.evalset.json"], CONFIG)
        record(store, run, list(reversed(cases)))
        result = EvalSetResult(
            eval_set_result_id="r",
            eval_set_id="s",
            eval_case_results=cases,
            assay=SetNotes(version="1"),
        )
        store.finish_run(run, [result])
        [back] = store.results(run)
    lazy = back.eval_case_results
    assert isinstance(lazy, StoredCases) and len(lazy) == 1_200
    assert [c.eval_id for c in lazy] == [c.eval_id for c in cases]
    assert lazy[-1] == cases[-1] and lazy[10:12] == cases[10:12]
    assert back == result


def test_an_unfinished_runs_cases_read_lazily_by_set_with_their_counts(store: HistoryStore) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    record(
        store, run, [case("b", EvalStatus.FAILED), case("a"), case("c", EvalStatus.NOT_EVALUATED)]
    )
    [result] = store.results(run)
    assert isinstance(result.eval_case_results, StoredCases)
    assert [c.eval_id for c in result.eval_case_results] == ["b", "a", "c"]
    assert result.assay is not None
    assert (result.assay.summary.passed, result.assay.summary.failed) == (1, 1)
    assert result.assay.summary.not_evaluated == 1


def test_done_cases_look_each_case_up_in_the_history(store: HistoryStore) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    record(store, run, [case("one"), case("two", EvalStatus.FAILED), case("two", run=2)])
    done = store.done_cases(run)
    assert isinstance(done, DoneCases)
    assert len(done) == 3 and ("s", "two", 2) in done and ("s", "two", 3) not in done
    assert done[("s", "two", 1)] == case("two", EvalStatus.FAILED)
    assert done.get(("s", "none", 1)) is None and ("s",) not in done
    assert list(done) == [("s", "one", 1), ("s", "two", 1), ("s", "two", 2)]
    with pytest.raises(KeyError):
        done[("s", "none", 1)]
    record(store, run, [case("three")])  # recorded after (the resumed run goes on): not done
    assert len(done) == 3 and ("s", "three", 1) not in done
    assert list(done) == [("s", "one", 1), ("s", "two", 1), ("s", "two", 2)]
    assert len(store.done_cases(run)) == 4


def test_the_history_keys_case_results_by_the_one_case_key_the_comparison_uses(
    store: HistoryStore,
) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    record(store, run, [case("one"), case("one", run=2)])
    for keys in (list(store.done_cases(run)), list(store.case_results(run))):
        assert keys == [CaseKey("s", "one", 1), CaseKey("s", "one", 2)]
        assert all(isinstance(key, CaseKey) for key in keys)
        assert [key.label for key in keys] == ["s / one", "s / one (run 2)"]
    assert compare.CaseKey is CaseKey


def test_done_cases_iterate_past_a_batch_in_stored_order(store: HistoryStore) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    other = store.start_run(["a.evalset.json"], CONFIG)
    names = [f"c{n:04d}" for n in range(1_100)]
    record(store, run, [case(name) for name in names])
    record(store, other, [case("elsewhere")])
    assert [key[1] for key in store.done_cases(run)] == names


def _counting_reads(store: HistoryStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every query the store runs from now on (its SQL), as they run."""
    seen: list[str] = []
    read = store._read

    def counted(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        seen.append(sql)
        return read(sql, params)

    monkeypatch.setattr(store, "_read", counted)
    return seen


def test_kept_cases_read_a_whole_run_in_stored_order_a_batch_at_a_time(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    cases = [
        case(f"c{n:04d}", EvalStatus.FAILED if n % 3 else EvalStatus.PASSED) for n in range(1_500)
    ]
    record(store, run, cases)
    queries = _counting_reads(store, monkeypatch)

    kept = store.kept_cases(run)
    made = len(queries)
    assert isinstance(kept, KeptCases) and len(kept) == 1_500 and len(queries) == made
    # asked for nearly in the order they were stored, as the runner asks: a window out of order
    order = [n + (1 if n % 2 == 0 else -1) for n in range(1_500)]
    assert [kept.result(("s", f"c{n:04d}", 1)) for n in order] == [cases[n] for n in order]
    assert len(queries) - made <= 1_500 // BATCH + 1  # texts read ahead, never a case at a time
    assert all("rowid = ?" not in sql for sql in queries)


def test_kept_cases_answer_any_key_as_done_cases_do(store: HistoryStore) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    written = [case("one"), case("two", EvalStatus.FAILED), case("two", run=2)]
    record(store, run, written)
    kept = store.kept_cases(run)
    record(store, run, [case("three")])  # recorded after (the resumed run goes on): not kept

    assert len(kept) == 3 and ("s", "two", 2) in kept and ("s", "three", 1) not in kept
    assert ("s", "none", 1) not in kept and ("s",) not in kept and kept.get(("s", "x", 1)) is None
    assert (["s"], "one", 1) not in kept  # a key no case can have, unhashable too
    assert kept[("s", "two", 1)] == written[1]
    assert kept[("s", "two", 1)] == written[1]  # asked again: read again
    assert kept.result(("s", "one", 1)) == written[0]
    with pytest.raises(KeyError):
        kept[("s", "three", 1)]
    assert list(kept) == [("s", "one", 1), ("s", "two", 1), ("s", "two", 2)]
    assert list(kept.stored()) == written


def test_show_prints_a_large_recorded_run(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        run = store.start_run(["a.evalset.json"], CONFIG)
        cases = [
            case(f"c{n:04d}", EvalStatus.FAILED if n % 50 == 0 else EvalStatus.PASSED)
            for n in range(3_000)
        ]
        record(store, run, cases)
        store.finish_run(
            run,
            [
                EvalSetResult(
                    eval_set_result_id="r",
                    eval_set_id="s",
                    eval_case_results=cases,
                    assay=SetNotes(version="1", summary={"passed": 2_940, "failed": 60}),
                )
            ],
        )
    shown = run_cli("show", run, "--history-file", path, "--max-cases", "5")
    assert shown.code == 0, shown.output
    assert "s: 3,000 cases" in shown.output
    assert "5 of the 60 cases that did not pass" in shown.output
    assert "2940 passed" in shown.output and "60 failed" in shown.output
