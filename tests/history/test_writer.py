"""The history's writer thread: cases handed over are committed, in order, and a failing
history never stops the run."""

from __future__ import annotations

import sqlite3
import threading
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


def test_cases_handed_over_are_committed_in_order_with_their_headers(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        run = store.start_run(["a"], {})
        writer = HistoryWriter(store, run)
        writer.write(_row("one", (0, '[["m", 0.5, null]]')))
        writer.write(_row("two"))
        writer.close()

        assert _written(store.path) == ["one", "two"]
        assert store.run_headers(run) == {0: (("m", 0.5, None, None),)}
        assert writer.error is None


def test_cases_that_finish_while_the_writer_is_busy_are_written_together(
    tmp_path: Path,
) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        run = store.start_run(["a"], {})
        writer = HistoryWriter(store, run)
        release = threading.Event()
        writes: list[int] = []
        original = store.write_cases

        def counting(run_id: str, rows: list[CaseRow]) -> None:  # type: ignore[override]
            writes.append(len(rows))
            original(run_id, rows)

        store.write_cases = counting  # type: ignore[method-assign]
        writer.do(lambda _store: release.wait(5))  # the writer is busy ...
        for eval_id in ("a", "b", "c"):
            writer.write(_row(eval_id))  # ... while three cases finish
        release.set()
        writer.close()

    assert writes == [3] and _written(tmp_path / "h.sqlite") == ["a", "b", "c"]


def test_a_failing_write_is_kept_as_the_error_and_nothing_more_is_written(
    tmp_path: Path,
) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        run = store.start_run(["a"], {})
        writer = HistoryWriter(store, run)
        writer.do(lambda s: s._connection().execute("DROP TABLE case_results"))
        writer.write(_row("lost"))
        later: list[str] = []
        writer.do(lambda _s: later.append("ran"))
        writer.close()

    assert writer.error is not None and "cannot write the run history" in writer.error
    assert later == []


def test_a_task_that_raises_is_reported_not_raised(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        writer = HistoryWriter(store, store.start_run(["a"], {}))

        def vanished(_store: HistoryStore) -> None:
            raise FileNotFoundError("evalset.json")

        writer.do(vanished)
        writer.close()

    assert writer.error is not None and "FileNotFoundError" in writer.error
