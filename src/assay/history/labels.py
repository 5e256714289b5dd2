"""People's labels kept in the run history: one row each in ``labels`` (``assay view`` writes
them as a person labels a judged verdict; its export writes the labels file ``assay judge
agree``/``align`` read).

A label is on one judged unit of one recorded case (run, eval set, case, run number, criterion,
turn, and the rubric or sentence where the criterion's unit has one) by one labeller; a new label
by the same labeller on the same unit replaces the old one. Each is written in a transaction of
its own, committed before the call returns, so a crash loses no label already saved.

:class:`Labels` holds the SQL; it reads and writes through the
:class:`~assay.history.store.HistoryStore` that made it (its connection, lock and errors), as
:class:`~assay.history.cards.JudgeCards` does. The table is in :mod:`assay.history.schema`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from assay.history.cards import Read, Write
from assay.results.keys import CaseKey

UnitKey = tuple[str, str, str, int, str, int, str, int]
"""A labelled unit: run, eval set, eval id, run number, criterion, turn, rubric, sentence."""


def unit_key(
    run_id: str,
    case: CaseKey,
    criterion: str,
    invocation: int,
    rubric: str | None,
    sentence: int | None,
) -> UnitKey:
    """The key of one judged unit, as labels are stored and matched (no rubric: "", no
    sentence: 0)."""
    return (run_id, *case, criterion, invocation, rubric or "", sentence or 0)


@dataclass(frozen=True)
class StoredLabel:
    """One person's label on one judged unit of a recorded case."""

    run_id: str
    case: CaseKey
    criterion: str
    invocation: int
    """The turn's number from 1."""
    label: str
    labeller: str
    rubric: str | None = None
    sentence: int | None = None
    reason: str = ""
    created: float = 0.0
    """When it was set (seconds since the epoch); 0: now, when it is stored."""

    @property
    def unit(self) -> UnitKey:
        """What the label is on, whoever set it."""
        return unit_key(
            self.run_id, self.case, self.criterion, self.invocation, self.rubric, self.sentence
        )


_COLUMNS = (
    "run_id, eval_set_id, eval_id, run_number, criterion, invocation, rubric, sentence, "
    "labeller, label, reason, created"
)


def _row(row: tuple[object, ...]) -> StoredLabel:
    run_id, set_id, eval_id, run, criterion, invocation, rubric, sentence, who, label, why, when = (
        row
    )
    return StoredLabel(
        run_id=str(run_id),
        case=CaseKey(str(set_id), str(eval_id), int(str(run))),
        criterion=str(criterion),
        invocation=int(str(invocation)),
        label=str(label),
        labeller=str(who),
        rubric=str(rubric) or None,
        sentence=int(str(sentence)) or None,
        reason=str(why),
        created=float(str(when)),
    )


class Labels:
    """The history's labels (``store.labels``)."""

    def __init__(self, read: Read, write: Write) -> None:
        self._read, self._write = read, write

    def put(self, label: StoredLabel) -> StoredLabel:
        """Keep ``label``, replacing this labeller's earlier label on the same unit; committed
        before it returns. The label as stored (with its time)."""
        kept = label if label.created else replace(label, created=time.time())
        self._write(
            f"INSERT OR REPLACE INTO labels ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                kept.run_id,
                kept.case.eval_set_id,
                kept.case.eval_id,
                kept.case.run,
                kept.criterion,
                kept.invocation,
                kept.rubric or "",
                kept.sentence or 0,
                kept.labeller,
                kept.label,
                kept.reason,
                kept.created,
            ),
        )
        return kept

    def of_run(self, run_id: str, labeller: str | None = None) -> list[StoredLabel]:
        """The run's labels (only ``labeller``'s when given), in the order they were set."""
        if labeller is None:
            rows = self._read(
                f"SELECT {_COLUMNS} FROM labels WHERE run_id = ? ORDER BY created, rowid",
                (run_id,),
            )
        else:
            rows = self._read(
                f"SELECT {_COLUMNS} FROM labels WHERE run_id = ? AND labeller = ? "
                "ORDER BY created, rowid",
                (run_id, labeller),
            )
        return [_row(row) for row in rows]

    def of_case(self, run_id: str, case: CaseKey) -> list[StoredLabel]:
        """Every labeller's labels on one recorded case."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM labels WHERE run_id = ? AND eval_set_id = ? AND eval_id = ? "
            "AND run_number = ? ORDER BY created, rowid",
            (run_id, case.eval_set_id, case.eval_id, case.run),
        )
        return [_row(row) for row in rows]

    def counts(self, run_id: str | None = None) -> dict[str, int]:
        """How many labels each criterion has (in one run, or in every run)."""
        if run_id is None:
            rows = self._read("SELECT criterion, COUNT(*) FROM labels GROUP BY criterion", ())
        else:
            rows = self._read(
                "SELECT criterion, COUNT(*) FROM labels WHERE run_id = ? GROUP BY criterion",
                (run_id,),
            )
        return {str(name): int(str(count)) for name, count in rows}

    def everything(self) -> list[StoredLabel]:
        """Every label in the history (for people's agreement with each other)."""
        rows = self._read(f"SELECT {_COLUMNS} FROM labels ORDER BY created, rowid", ())
        return [_row(row) for row in rows]
