"""Writing a run's cases: in batches on the run's thread, committed within the interval, the
input files prepared on a thread, and a failing history never stopping the run."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from assay.history.records import CaseRow
from assay.history.store import HistoryStore
from assay.history.writer import HistoryWriter


def _row(eval_id: str, header: tuple[int, str] | None = None) -> CaseRow:
    return CaseRow("s", eval_id, 1, 1, 0, 0.0, f'{{"eval_id": "{eval_id}"}}', header)


def _written(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT eval_id FROM case_results ORDER BY rowid")]
    finally:
        db.close()


def _counting(store: HistoryStore) -> list[int]:
    """The sizes of the batches ``store`` writes."""
    batches: list[int] = []
    original = store.write_cases

    def counting(run_id: str, rows: list[CaseRow]) -> None:  # type: ignore[override]
        batches.append(len(rows))
        original(run_id, rows)

    store.write_cases = counting  # type: ignore[method-assign]
    return batches


def test_cases_are_committed_in_order_with_their_headers(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        run = store.start_run(["a"], {})
        writer = HistoryWriter(store, run)
        writer.write(_row("one", (0, '[["m", 0.5, null]]')))
        writer.write(_row("two"))
        writer.close()

        assert _written(store.path) == ["one", "two"]
        assert store.run_headers(run) == {0: (("m", 0.5, None, None),)}
        assert writer.error is None


def test_cases_finishing_within_the_interval_are_written_together(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        batches = _counting(store)
        writer = HistoryWriter(store, store.start_run(["a"], {}), interval_s=0.2)
        for eval_id in ("a", "b", "c"):
            writer.write(_row(eval_id))
        assert _written(store.path) == []  # not yet due
        time.sleep(0.25)
        writer.write(_row("d"))  # due: this case and those before it are written now
        assert _written(store.path) == ["a", "b", "c", "d"]
        writer.write(_row("e"))
        writer.close()

    assert batches == [4, 1]


def test_a_run_waiting_on_its_event_loop_still_gets_its_cases_written(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        writer = HistoryWriter(store, store.start_run(["a"], {}), interval_s=0.05)

        async def run() -> list[str]:
            writer.write(_row("slow"))  # then the run waits, on a judge say
            await asyncio.sleep(0.2)
            return _written(store.path)

        assert asyncio.run(run()) == ["slow"]
        writer.close()


def test_inputs_are_prepared_on_a_thread_and_stored_with_the_next_batch(tmp_path: Path) -> None:
    stored: list[str] = []

    def prepare() -> Callable[[HistoryStore], None]:
        time.sleep(0.1)  # reading and compressing files
        return lambda _store: stored.append("inputs")

    with HistoryStore(tmp_path / "h.sqlite") as store:
        writer = HistoryWriter(store, store.start_run(["a"], {}), prepare=prepare)
        writer.flush()
        assert stored == []  # not ready: the run is not held up
        writer.close()

    assert stored == ["inputs"] and writer.error is None


def test_a_failing_write_is_kept_as_the_error_and_nothing_more_is_written(
    tmp_path: Path,
) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        writer = HistoryWriter(store, store.start_run(["a"], {}))
        writer.do(lambda s: s._connection().execute("DROP TABLE case_results"))
        writer.write(_row("lost"))
        writer.flush()
        later: list[str] = []
        writer.do(lambda _s: later.append("ran"))
        writer.close()

    assert writer.error is not None and "cannot write the run history" in writer.error
    assert later == []


def test_inputs_that_cannot_be_read_are_reported_not_raised(tmp_path: Path) -> None:
    def vanished() -> Callable[[HistoryStore], None]:
        raise FileNotFoundError("evalset.json")

    with HistoryStore(tmp_path / "h.sqlite") as store:
        writer = HistoryWriter(store, store.start_run(["a"], {}), prepare=vanished)
        writer.write(_row("kept"))
        writer.close()

    assert writer.error is not None and "FileNotFoundError" in writer.error
