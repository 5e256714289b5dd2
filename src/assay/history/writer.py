"""The history's writer thread: a run hands it finished cases and goes on scoring.

SQLite does its work without Python's GIL, so the inserts and commits happen beside the run on
another core. When a case arrives the writer waits ``linger_s`` (20 ms) for the cases finishing
with it, then writes all it has in one transaction, one INSERT, and commits: a case is committed
within a few tens of milliseconds of finishing, and a fast deterministic run hands the GIL to the
writer a few times per batch rather than several times per case. A case is
encoded (:mod:`assay.history.compact`) by the run before it is handed over, since encoding needs
the GIL anyway.

A write that fails stops the writing (the first error is kept in :attr:`HistoryWriter.error`);
the run is never stopped by it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from assay.history.records import CaseRow, HistoryError
from assay.history.store import HistoryStore

Task = Callable[[HistoryStore], None]
"""Other work for the writer, done in order with the cases (storing the inputs, the run's end)."""


@dataclass(frozen=True)
class _Stop:
    pass


_STOP = _Stop()


class HistoryWriter:
    """Writes one run's cases to ``store`` from a thread of its own; :meth:`close` waits for
    everything handed over to be written."""

    def __init__(self, store: HistoryStore, run_id: str, linger_s: float = 0.02) -> None:
        self.store = store
        self.run_id = run_id
        self.linger_s = linger_s
        self.error: str | None = None
        self.cpu_s = 0.0
        """CPU seconds the writer's thread used, once it has stopped."""
        self._queue: queue.SimpleQueue[CaseRow | Task | _Stop] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="assay-history", daemon=True)
        self._thread.start()

    def write(self, row: CaseRow) -> None:
        """Hand over a finished case."""
        self._queue.put(row)

    def do(self, task: Task) -> None:
        """Hand over other work, done after the cases handed over before it."""
        self._queue.put(task)

    def close(self) -> None:
        """Write what was handed over and stop the thread."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    def _loop(self) -> None:
        while True:
            items = [self._queue.get()]
            if self.linger_s and not isinstance(items[0], _Stop):
                time.sleep(self.linger_s)  # let the cases finishing now join this write
            while not self._queue.empty():
                items.append(self._queue.get_nowait())
            rows: list[CaseRow] = []
            for item in items:
                if isinstance(item, CaseRow):
                    rows.append(item)
                    continue
                self._write(rows)
                rows = []
                if isinstance(item, _Stop):
                    self.cpu_s = time.thread_time()
                    return
                self._run(item)
            self._write(rows)

    def _write(self, rows: list[CaseRow]) -> None:
        if rows and self.error is None:
            try:
                self.store.write_cases(self.run_id, rows)
            except HistoryError as exc:
                self.error = str(exc)

    def _run(self, task: Task) -> None:
        if self.error is None:
            try:
                task(self.store)
            except HistoryError as exc:
                self.error = str(exc)
            except Exception as exc:  # a file that vanished, say: the run goes on unrecorded
                self.error = f"{self.store.path}: not recorded: {type(exc).__name__}: {exc}"
