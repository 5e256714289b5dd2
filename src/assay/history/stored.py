"""A run's case results read back from the history file as they are needed, not all at once.

A run of a million cases holds gigabytes as models; :class:`StoredCases` is a run's eval set as a
read-only sequence that holds the cases' row ids only (8 bytes a case) and decodes each case
(:func:`~assay.history.compact.decode`) when it is reached, reading a batch of rows at a time
through a connection of its own (so it outlives the :class:`~assay.history.store.HistoryStore`
that made it). :class:`DoneCases` is a run's recorded cases by key: every lookup is a query,
nothing is kept. :class:`KeptCases` is the same for the run that resumes it (``--resume``),
which asks for nearly every case in about the order they were stored: its keys are indexed once
and its texts read a batch at a time, ahead of the runner.
"""

from __future__ import annotations

import sqlite3
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, overload

from pydantic import ValidationError

from assay.evalset.invocation import Invocation
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

    def __call__(
        self,
        eval_id: str,
        text: str,
        actual: Sequence[Invocation] | None = None,
        expected: Sequence[Invocation] | None = None,
    ) -> EvalCaseResult:
        """The case result ``text`` holds; ``actual`` and ``expected``, when given, are the
        case's invocations as read from the run's traces and its eval set's conversation (what
        references to them stand for: not read again)."""
        if self._inputs is None and may_need_inputs(text):
            self._inputs = self._load()
        try:
            return decode(text, self.headers, self._inputs, actual, expected)
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


_AHEAD = 8 * BATCH
"""Rows a :class:`KeptCases` holds read ahead of the case asked for, at most."""


class Kept(NamedTuple):
    """A kept case result as stored: its record, and (where the case was scored in a worker
    process, by this version of assay) its output as
    :func:`~assay.results.collected.pack_output` made it, which a resumed run adds back as it
    is; else None."""

    text: str
    output: bytes | None


class KeptCases(DoneCases):
    """A resumed run's recorded case results (``--resume``), read for the run that keeps them:
    the keys are indexed in one pass when it is made (a hash and a row id, 16 bytes a case),
    and the stored texts are read in row order a batch at a time, ahead of the case asked for,
    as the runner asks for them (in eval-set order, which is about the order they were
    written), so a run that keeps every case reads the history in a few queries per thousand
    cases rather than one per case. A case asked for again, or far out of order, is one query.
    """

    def __init__(
        self,
        run_id: str,
        read: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]],
        decoder: Decoder,
        outputs: bool = True,
    ) -> None:
        super().__init__(run_id, read, decoder)
        self._outputs = "output" if outputs else "NULL"
        """The column the rows' outputs are read from: none (NULL) when ``outputs`` is false
        (another version of assay made them)."""
        self._read_to = -1
        """Every row up to this row id has been read ahead (and is held, taken or dropped)."""
        self._ahead: dict[int, tuple[CaseKey, Kept]] = {}
        hashes, rowids = array("q"), array("q")
        for rowid, key in self._keys():
            hashes.append(hash(key))
            rowids.append(rowid)
        order = sorted(range(len(hashes)), key=hashes.__getitem__)
        self._hashes = array("q", map(hashes.__getitem__, order))
        self._rowids = array("q", map(rowids.__getitem__, order))

    def _keys(self) -> Iterator[tuple[int, CaseKey]]:
        last = -1
        while True:
            rows = self._read(
                "SELECT rowid, eval_set_id, eval_id, run_number FROM case_results "
                "WHERE +run_id = ? AND rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?",
                (self._run_id, last, self._last, 8 * BATCH),
            )
            for rowid, set_id, eval_id, run in rows:
                last = int(rowid)
                yield last, CaseKey(str(set_id), str(eval_id), int(run))
            if len(rows) < 8 * BATCH:
                return

    def _row(self, rowid: int) -> tuple[CaseKey, Kept] | None:
        """The key, text and output of one of the run's rows: read ahead, or else queried."""
        held = self._ahead.get(rowid)
        if held is not None:
            return held
        columns = f"eval_set_id, eval_id, run_number, result, {self._outputs}"
        if rowid <= self._read_to:  # taken already, or dropped: asked again
            rows = self._read(f"SELECT {columns} FROM case_results WHERE rowid = ?", (rowid,))
            if not rows:
                return None
            [(set_id, eval_id, run, text, output)] = rows
            return CaseKey(str(set_id), str(eval_id), int(run)), Kept(str(text), output)
        while self._read_to < rowid:
            rows = self._read(
                f"SELECT rowid, {columns} FROM case_results "
                "WHERE +run_id = ? AND rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?",
                (self._run_id, self._read_to, self._last, BATCH),
            )
            for found, set_id, eval_id, run, text, output in rows:
                key = CaseKey(str(set_id), str(eval_id), int(run))
                self._ahead[int(found)] = (key, Kept(str(text), output))
            self._read_to = int(rows[-1][0]) if len(rows) == BATCH else self._last
        while len(self._ahead) > _AHEAD:  # the oldest held, never asked for: dropped
            del self._ahead[next(iter(self._ahead))]
        return self._ahead.get(rowid)

    def _find(self, key: object, take: bool) -> Kept | None:
        """What is stored of ``key``'s case (dropped from the rows held ahead if ``take``)."""
        if not (isinstance(key, tuple) and len(key) == 3):
            return None
        try:
            wanted = hash(key)
        except TypeError:  # no case has such a key
            return None
        at = bisect_left(self._hashes, wanted)
        while at < len(self._hashes) and self._hashes[at] == wanted:
            rowid = self._rowids[at]
            row = self._row(rowid)
            if row is not None and row[0] == key:
                if take:
                    self._ahead.pop(rowid, None)
                return row[1]
            at += 1
        return None

    def __contains__(self, key: object) -> bool:
        return self._find(key, take=False) is not None

    def __len__(self) -> int:
        return len(self._rowids)

    def __getitem__(self, key: CaseKey) -> EvalCaseResult:
        found = self.result(key)
        if found is None:
            raise KeyError(key)
        return found

    def result(
        self,
        key: tuple[str, str, int],
        actual: Sequence[Invocation] | None = None,
        expected: Sequence[Invocation] | None = None,
    ) -> EvalCaseResult | None:
        """The case result kept for ``key`` (None when the run has none), decoded with the
        invocations ``actual`` and ``expected`` where its text refers to the run's traces and
        eval set."""
        found = self._find(key, take=True)
        return None if found is None else self.decode(key, found.text, actual, expected)

    def decode(
        self,
        key: tuple[str, str, int],
        text: str,
        actual: Sequence[Invocation] | None = None,
        expected: Sequence[Invocation] | None = None,
    ) -> EvalCaseResult:
        """The case result ``text`` (taken for ``key``) holds."""
        return self._decoder(key[1], text, actual, expected)

    def take(self, key: tuple[str, str, int]) -> Kept | None:
        """What is stored of the case result kept for ``key``, not decoded (its output may be
        added as it is; another process may decode its text, with :meth:`detached_decoder`);
        None when the run has none."""
        return self._find(key, take=True)

    def detached_decoder(self) -> Decoder:
        """A decoder of this run's texts that reads nothing from the history or the inputs:
        a text is decoded with the invocations it is given, or not at all (for another
        process, where this one's connections must not be used)."""
        decoder = self._decoder
        return Decoder(decoder.path, decoder.run_id, decoder.headers, Inputs(), Inputs)

    def stored(self) -> StoredCases:
        """Every kept case result, in the order they were stored, decoded as they are reached
        (through a connection of its own: it outlives the store)."""
        return StoredCases(self._decoder.path, sorted(self._rowids), self._decoder)


def kept_result(
    done: Mapping[tuple[str, str, int], EvalCaseResult] | None,
    key: tuple[str, str, int],
    actual: Sequence[Invocation] | None,
    expected: Sequence[Invocation] | None = None,
) -> EvalCaseResult | None:
    """The result a resumed run keeps for ``key`` (None when it has none): from
    :class:`KeptCases`, decoded with ``actual`` and ``expected``, the case's invocations and
    conversation the runner has just read (so neither the traces nor a streamed eval set is
    read again)."""
    if done is None:
        return None
    if isinstance(done, KeptCases):
        return done.result(key, actual, expected)
    return done.get(key)  # not `or`: len() may query


def kept_output(
    done: Mapping[tuple[str, str, int], EvalCaseResult] | None,
    key: tuple[str, str, int],
    actual: Sequence[Invocation] | None,
    expected: Sequence[Invocation] | None = None,
) -> EvalCaseResult | bytes | None:
    """What a resumed run keeps for ``key``: its output as the history keeps it, where it has
    one (:attr:`Kept.output`, added back as it is), else :func:`kept_result`."""
    if isinstance(done, KeptCases):
        found = done.take(key)
        if found is None or found.output is not None:
            return None if found is None else found.output
        return done.decode(key, found.text, actual, expected)
    return kept_result(done, key, actual, expected)
