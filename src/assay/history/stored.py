"""A run's case results read back from the history file as they are needed, not all at once.

A run of a million cases holds gigabytes as models; :class:`StoredCases` is a run's eval set as a
read-only sequence that holds the cases' row ids only (8 bytes a case) and decodes each case
(:func:`~assay.history.compact.decode`) when it is reached, reading a batch of rows at a time
through a connection of its own (so it outlives the :class:`~assay.history.store.HistoryStore`
that made it). :class:`DoneCases` is a run's recorded cases by key for ``--resume``: every
lookup is a query, nothing is kept.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from assay.history.compact import Header, Inputs, RecordError, decode, may_need_inputs
from assay.history.records import HistoryError
from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult

BATCH = 512
"""Rows read per query while iterating."""


class Decoder:
    """Turns a run's stored texts into case results: its metric headers, and its inputs, loaded
    the first time a text refers to them (``load_inputs``) unless given."""

    def __init__(
        self,
        path: Path,
        run_id: str,
        headers: Mapping[int, Header],
        inputs: Inputs | None,
        load_inputs: Callable[[], Inputs],
    ) -> None:
        self.path, self.run_id, self.headers = path, run_id, headers
        self._inputs, self._load = inputs, load_inputs

    def __call__(self, eval_id: str, text: str) -> EvalCaseResult:
        if self._inputs is None and may_need_inputs(text):
            self._inputs = self._load()
        try:
            return decode(text, self.headers, self._inputs)
        except ValidationError as exc:
            why = f"{exc.error_count()} problem(s)"
        except (RecordError, ValueError, KeyError, TypeError) as exc:
            why = str(exc)
        raise HistoryError(
            f"{self.path}: run {self.run_id}, case {eval_id}: unreadable result ({why})"
        )


def _connect(path: Path) -> sqlite3.Connection:
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise HistoryError(f"{path}: cannot read the run history: {exc}") from None


class StoredCases(Sequence[EvalCaseResult]):
    """Case results at the given ``case_results`` row ids, in that order, decoded on access."""

    def __init__(self, path: Path, rowids: Iterable[int], decoder: Decoder) -> None:
        self._path, self._decoder = path, decoder
        self._rowids = array("q", rowids)

    def __len__(self) -> int:
        return len(self._rowids)

    def _rows(self, wanted: Sequence[int]) -> list[tuple[str, str]]:
        """(eval id, stored text) of each row id in ``wanted``, in that order."""
        marks = ",".join("?" * len(wanted))
        db = _connect(self._path)
        try:
            found = {
                int(rowid): (str(eval_id), str(text))
                for rowid, eval_id, text in db.execute(
                    f"SELECT rowid, eval_id, result FROM case_results WHERE rowid IN ({marks})",
                    list(wanted),
                )
            }
        except sqlite3.Error as exc:
            raise HistoryError(f"{self._path}: cannot read the run history: {exc}") from None
        finally:
            db.close()
        missing = [rowid for rowid in wanted if rowid not in found]
        if missing:
            raise HistoryError(f"{self._path}: case results removed while being read")
        return [found[rowid] for rowid in wanted]

    @overload
    def __getitem__(self, index: int) -> EvalCaseResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[EvalCaseResult]: ...
    def __getitem__(self, index: int | slice) -> EvalCaseResult | list[EvalCaseResult]:
        if isinstance(index, slice):
            return [self._decoder(*row) for row in self._rows(self._rowids[index])]
        [row] = self._rows([self._rowids[index]])
        return self._decoder(*row)

    def __iter__(self) -> Iterator[EvalCaseResult]:
        for start in range(0, len(self._rowids), BATCH):
            for row in self._rows(self._rowids[start : start + BATCH]):
                yield self._decoder(*row)

    def __bool__(self) -> bool:
        return len(self._rowids) > 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} case results of run {self._decoder.run_id}>"


class DoneCases(Mapping[CaseKey, EvalCaseResult]):
    """A run's recorded case results by key, read from the history on each lookup (nothing is
    cached); keys in the order the cases were stored. ``read`` runs a query on the store."""

    def __init__(
        self,
        run_id: str,
        read: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]],
        decoder: Decoder,
    ) -> None:
        self._run_id, self._read, self._decoder = run_id, read, decoder
        found = read("SELECT MAX(rowid) FROM case_results WHERE run_id = ?", (run_id,))
        self._last = int(found[0][0]) if found and found[0][0] is not None else -1
        """The newest row when the mapping was made: cases the run records later (a resumed
        run goes on recording into the same run) are not among those it had."""

    def _text(self, key: object) -> str | None:
        if not (isinstance(key, tuple) and len(key) == 3):
            return None
        rows = self._read(
            "SELECT result FROM case_results WHERE run_id = ? AND eval_set_id = ? "
            "AND eval_id = ? AND run_number = ? AND rowid <= ?",
            (self._run_id, *key, self._last),
        )
        return str(rows[0][0]) if rows else None

    def __contains__(self, key: object) -> bool:
        return self._text(key) is not None

    def __getitem__(self, key: CaseKey) -> EvalCaseResult:
        text = self._text(key)
        if text is None:
            raise KeyError(key)
        return self._decoder(key[1], text)

    def __len__(self) -> int:
        rows = self._read(
            "SELECT COUNT(*) FROM case_results WHERE run_id = ? AND rowid <= ?",
            (self._run_id, self._last),
        )
        return int(rows[0][0])

    def __iter__(self) -> Iterator[CaseKey]:
        last = -1
        while True:
            rows = self._read(
                "SELECT rowid, eval_set_id, eval_id, run_number FROM case_results "
                "WHERE +run_id = ? AND rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?",
                (self._run_id, last, self._last, BATCH),
            )
            for rowid, set_id, eval_id, run in rows:
                last = int(rowid)
                yield CaseKey(str(set_id), str(eval_id), int(run))
            if len(rows) < BATCH:
                return
