"""Writing a run's cases to the history, in small batches, on the run's own thread.

A case is written within ``interval_s`` (50 ms) of finishing: the cases that finish within that
time are written together, in one transaction with one INSERT, when the next one finishes after
it, or, while the run waits on agents or judges, by a timer on the run's event loop. So a
SIGKILL loses at most the last 50 ms of cases (``--resume`` runs them again), and a fast
deterministic run pays for a commit every 50 ms rather than for every case.

Only work that lets go of the GIL goes to another thread: reading, hashing and compressing the
run's input files (``prepare``); what it produces is stored with the next batch. (A writer
thread doing the SQLite work was measured and rejected: handing the GIL back and forth for every
batch slowed a 10,000-case deterministic run by a quarter.)

A write that fails stops the writing (the first error is kept in :attr:`HistoryWriter.error`);
the run is never stopped by it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from assay.history.records import CaseRow, HistoryError
from assay.history.store import HistoryStore

Task = Callable[[HistoryStore], None]
"""Work done with the history on the run's thread (storing the inputs, the run's end)."""


class HistoryWriter:
    """Writes one run's cases to ``store``; :meth:`close` writes what is left."""

    def __init__(
        self,
        store: HistoryStore,
        run_id: str,
        *,
        interval_s: float = 0.05,
        prepare: Callable[[], Task] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.interval_s = interval_s
        self.error: str | None = None
        self._pending: list[CaseRow] = []
        self._due = time.monotonic() + interval_s
        self._timer: asyncio.TimerHandle | None = None
        self._prepared: list[Task | BaseException] = []
        self._preparing: threading.Thread | None = None
        if prepare is not None:
            self._preparing = threading.Thread(
                target=self._prepare, args=(prepare,), name="assay-inputs", daemon=True
            )
            self._preparing.start()

    def write(self, row: CaseRow) -> None:
        """A finished case: written with the others of its batch."""
        if self.error is not None:
            return
        self._pending.append(row)
        if time.monotonic() >= self._due:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no event loop: the next write or close() writes it
                return
            self._timer = loop.call_later(self.interval_s, self._on_timer)

    def flush(self) -> None:
        """Write the pending cases, and the prepared inputs if they are ready, now."""
        self._due = time.monotonic() + self.interval_s
        if self._preparing is not None and not self._preparing.is_alive():
            self._preparing = None
            for prepared in self._prepared:
                if isinstance(prepared, BaseException):
                    self._fail(prepared)
                else:
                    self.do(prepared)
        rows, self._pending = self._pending, []
        if rows and self.error is None:
            try:
                self.store.write_cases(self.run_id, rows)
            except HistoryError as exc:
                self.error = str(exc)

    def do(self, task: Task) -> None:
        """Work with the history now (after the pending cases)."""
        if self._pending:
            self.flush()
        if self.error is None:
            try:
                task(self.store)
            except Exception as exc:  # a file that vanished, say: the run goes on unrecorded
                self._fail(exc)

    def close(self) -> None:
        """Wait for the inputs and write everything pending."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._preparing is not None:
            self._preparing.join()
        self.flush()

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def _prepare(self, prepare: Callable[[], Task]) -> None:
        try:
            self._prepared.append(prepare())
        except BaseException as exc:  # reported by flush(), on the run's thread
            self._prepared.append(exc)

    def _fail(self, exc: BaseException) -> None:
        if self.error is None:
            if isinstance(exc, HistoryError):
                self.error = str(exc)
            else:
                self.error = f"{self.store.path}: not recorded: {type(exc).__name__}: {exc}"
