"""The provider batches a run's judges submitted (``--judge-batch``), kept in the run history:
one row each in ``judge_batches``, written as soon as the provider accepted the batch and marked
collected once its answers are in the response cache.

A run killed while it waited on a batch leaves the row open; the next run with the same judge
(resumed or not) finds it through :meth:`Batches.pending` and polls that batch for those lines
instead of submitting them again (:class:`~assay.llm.batch.BatchingClient`), so no line is paid
for twice. :class:`Batches` is the :class:`~assay.llm.batch.BatchRecords` a real run uses; it
reads and writes through the :class:`~assay.history.store.HistoryStore` that made it, as
:class:`~assay.history.labels.Labels` does. The table is in :mod:`assay.history.schema`.
"""

from __future__ import annotations

import json
import time

from assay.history.cards import Read, Write
from assay.llm.batch import OPEN, BatchRecord

_COLUMNS = "provider, batch_id, model, run_id, submitted, status, keys"


def _record(row: tuple[object, ...]) -> BatchRecord:
    provider, batch_id, model, run_id, submitted, status, keys = row
    return BatchRecord(
        provider=str(provider),
        batch_id=str(batch_id),
        model=str(model),
        keys=tuple(str(k) for k in json.loads(str(keys))),
        submitted=float(str(submitted)),
        status=str(status),
        run_id=None if run_id is None else str(run_id),
    )


class Batches:
    """The history's judge batches (``store.batches``)."""

    def __init__(self, read: Read, write: Write) -> None:
        self._read, self._write = read, write

    def add(self, record: BatchRecord) -> None:
        """Keep ``record``; committed before it returns."""
        self._write(
            f"INSERT OR REPLACE INTO judge_batches ({_COLUMNS}, closed) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
            (
                record.provider,
                record.batch_id,
                record.model,
                record.run_id,
                record.submitted,
                record.status,
                json.dumps(list(record.keys)),
            ),
        )

    def pending(self, provider: str, model: str) -> list[BatchRecord]:
        """The batches of ``provider`` and ``model`` still open, oldest first."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM judge_batches WHERE provider = ? AND model = ? "
            "AND status = ? ORDER BY submitted, rowid",
            (provider, model, OPEN),
        )
        return [_record(row) for row in rows]

    def close(self, provider: str, batch_id: str, status: str) -> None:
        """Mark a batch ``status`` (collected), and when."""
        self._write(
            "UPDATE judge_batches SET status = ?, closed = ? WHERE provider = ? AND batch_id = ?",
            (status, time.time(), provider, batch_id),
        )

    def of_run(self, run_id: str) -> list[BatchRecord]:
        """The batches ``run_id`` submitted, oldest first."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM judge_batches WHERE run_id = ? ORDER BY submitted, rowid",
            (run_id,),
        )
        return [_record(row) for row in rows]
