"""The run history: every ``assay eval`` run and each of its case results, in one SQLite file.

The file is ``.assay/history.sqlite`` beside the response cache (``$ASSAY_CACHE_DIR``), or
``$ASSAY_HISTORY``. It is opened in WAL mode with ``synchronous=NORMAL``: a committed case
survives the process being killed (only a power cut may lose the last commits), and readers
(``assay runs`` while a run goes on) never block the writer.

The tables, and what each schema version added, are in :mod:`assay.history.schema`.
The judge cards it keeps are read and written by :mod:`assay.history.cards`, people's labels
by :mod:`assay.history.labels` (:attr:`HistoryStore.labels`).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import tempfile
import threading
import time
import zlib
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from assay._version import __version__
from assay.errors import InputError
from assay.history.batches import Batches
from assay.history.cards import CardKey, JudgeCards
from assay.history.compact import Header, Inputs, RecordError, decode, may_need_inputs, parse_header
from assay.history.inputs import InputFile, PackedInput, keep_blob, load_stored, place, unpack
from assay.history.labels import Labels
from assay.history.records import (
    CaseRow,
    HistoryError,
    RunInfo,
    case_row,
    config_hash,
    new_run_id,
    run_info,
    run_judges,
)
from assay.history.schema import SCHEMA_VERSION as SCHEMA_VERSION
from assay.history.schema import upgrade
from assay.history.stored import Decoder, DoneCases, KeptCases, StoredCases
from assay.metrics.base import EvalStatus
from assay.results.collected import heads
from assay.results.keys import CaseKey as CaseKey
from assay.results.model import EvalCaseResult, EvalSetResult, RunSummary, SetNotes

LATEST = "latest"


_INSERT_CASES = (
    "INSERT OR REPLACE INTO case_results (run_id, eval_set_id, eval_id, run_number, status, "
    "tokens, written, result, output) VALUES "
)
_CASE_PLACES = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
_ROWS_PER_INSERT = 100
"""Rows per INSERT: one statement per batch (each statement lets go of the GIL once, where
``executemany`` would for every row), and 900 parameters, under SQLite's oldest limit of 999."""


class HistoryStore:
    """The history file, opened (and created, with its folder) on first use.

    One connection, guarded by a lock so threads may share the store; use as a context manager
    or call :meth:`close`.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._cards = JudgeCards(self._read, self._write)
        self.labels = Labels(self._read, self._write)
        """People's labels on the runs' judged units (:mod:`assay.history.labels`)."""
        self.batches = Batches(self._read, self._write)
        """The provider batches the runs' judges submitted (:mod:`assay.history.batches`)."""

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- connection -----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._db is not None:
            return self._db
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"{self.path}: cannot open the run history: {exc}") from None
        try:
            self._prepare(db)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise HistoryError(
                f"{self.path}: not a usable run history ({exc}); move it away or set "
                "ASSAY_HISTORY to another file"
            ) from None
        self._db = db
        return db

    def _prepare(self, db: sqlite3.Connection) -> None:
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        upgrade(db)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _write(self, sql: str, params: Sequence[Any]) -> None:
        try:
            with self._transaction() as db:
                db.execute(sql, params)
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot write the run history: {exc}") from None

    # -- writing --------------------------------------------------------------------------

    def start_run(
        self,
        eval_sets: Sequence[str],
        config: Mapping[str, Any],
        *,
        judges: Sequence[str] = (),
        source: str = "assay",
        started: float | None = None,
        commit: str | None = None,
        run_id: str | None = None,
        config_digest: str | None = None,
    ) -> str:
        """Record a new run as ``running``; its id."""
        started = time.time() if started is None else started
        run_id = run_id or new_run_id(started)
        self._write(
            "INSERT INTO runs (id, started, status, source, eval_sets, config, config_hash, "
            "judges, assay_version, git_commit, host, pid) "
            "VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                started,
                source,
                json.dumps(list(eval_sets)),
                json.dumps(config, sort_keys=True),
                config_digest or config_hash(config),
                json.dumps(list(judges)),
                __version__,
                commit,
                socket.gethostname(),
                os.getpid(),
            ),
        )
        return run_id

    def reopen(self, run_id: str) -> None:
        """Mark a run ``running`` again, by this process (``--resume``)."""
        self._write(
            "UPDATE runs SET status = 'running', finished = NULL, host = ?, pid = ? WHERE id = ?",
            (socket.gethostname(), os.getpid(), run_id),
        )

    def record_case(self, run_id: str, result: EvalCaseResult) -> None:
        """Write one case result, in full, in its own transaction (replacing an earlier one)."""
        self.write_cases(run_id, [case_row(result, result.model_dump_json(exclude_none=True))])

    def write_cases(self, run_id: str, rows: Sequence[CaseRow]) -> None:
        """Write finished cases, and the metric headers they introduce, in one transaction."""
        headers = [(run_id, *row.header) for row in rows if row.header is not None]
        values = [
            (
                run_id,
                r.eval_set_id,
                r.eval_id,
                r.run,
                r.status,
                r.tokens,
                r.written,
                r.text,
                r.output,
            )
            for r in rows
        ]
        try:
            with self._transaction() as db:
                if headers:
                    db.executemany("INSERT OR REPLACE INTO run_metrics VALUES (?, ?, ?)", headers)
                for start in range(0, len(values), _ROWS_PER_INSERT):
                    chunk = values[start : start + _ROWS_PER_INSERT]
                    db.execute(
                        _INSERT_CASES + ",".join([_CASE_PLACES] * len(chunk)),
                        [value for row in chunk for value in row],
                    )
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot write the run history: {exc}") from None

    def store_inputs(
        self, run_id: str, packed: Sequence[PackedInput], config: Mapping[str, Any]
    ) -> None:
        """Keep the run's input files (each file's bytes once, by sha256) and its config, now
        with the files' hashes."""
        try:
            with self._transaction() as db:
                for item in packed:
                    if item.packed is not None:
                        keep_blob(db, item.sha256, item.size, item.packed)
                    db.execute(
                        "INSERT OR REPLACE INTO run_inputs VALUES (?, ?, ?, ?, ?)",
                        (run_id, item.file.kind, item.file.position, item.file.path, item.sha256),
                    )
                db.execute(
                    "UPDATE runs SET config = ?, config_hash = ? WHERE id = ?",
                    (json.dumps(config, sort_keys=True), config_hash(config), run_id),
                )
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot write the run history: {exc}") from None

    def known_blobs(self, digests: Sequence[str]) -> set[str]:
        """Which of these sha256 the history already keeps. Safe from any thread: it reads
        through a connection of its own."""
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5)
        except sqlite3.Error:
            return set()
        try:
            marks = ",".join("?" * len(digests))
            rows = db.execute(f"SELECT sha256 FROM blobs WHERE sha256 IN ({marks})", digests)
            return {str(row[0]) for row in rows}
        except sqlite3.Error:
            return set()
        finally:
            db.close()

    def finish_run(
        self,
        run_id: str,
        results: Sequence[EvalSetResult],
        *,
        status: str = "finished",
        finished: float | None = None,
    ) -> None:
        """Store the set results' headers and case order, the judges and tokens, and the end."""
        judges = run_judges(results)
        tokens = sum(
            usage.total_tokens
            for result in results
            if result.assay is not None
            for usage in result.assay.usage.values()
        )
        try:
            with self._transaction() as db:
                db.execute("DELETE FROM run_sets WHERE run_id = ?", (run_id,))
                for position, result in enumerate(results):
                    cases = heads(result.eval_case_results)  # spilled ones not parsed whole
                    order = [[c.eval_id, c.assay.run] for c in cases]
                    header = result.model_dump_json(
                        exclude={"eval_case_results"}, exclude_none=True
                    )
                    db.execute(
                        "INSERT INTO run_sets VALUES (?, ?, ?, ?, ?)",
                        (run_id, position, result.eval_set_id, header, json.dumps(order)),
                    )
                db.execute(
                    "UPDATE runs SET status = ?, finished = ?, tokens = ?, "
                    "judges = CASE WHEN ? = '[]' THEN judges ELSE ? END WHERE id = ?",
                    (
                        status,
                        time.time() if finished is None else finished,
                        tokens,
                        json.dumps(judges),
                        json.dumps(judges),
                        run_id,
                    ),
                )
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot write the run history: {exc}") from None

    def mark(self, run_id: str, status: str) -> None:
        """Set a run's status (``interrupted`` when a run stops early)."""
        self._write(
            "UPDATE runs SET status = ?, finished = ? WHERE id = ?", (status, time.time(), run_id)
        )

    def add_judge_card(self, key: CardKey, created: float, card: str) -> None:
        """Keep a judge card (its JSON), measured at ``created``, under its key."""
        self._cards.add(key, created, card)

    # -- reading --------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read of the history's tables (``schema.py`` documents them), through
        the store's guarded connection: for readers that need a few keyed rows where the typed
        methods would read a whole run (the view's pages)."""
        return self._read(sql, params)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._lock:
                return list(self._connection().execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot read the run history: {exc}") from None

    def runs(self, limit: int | None = None) -> list[RunInfo]:
        """Runs, newest first."""
        rows = self._read(
            f"{_RUN_QUERY} GROUP BY r.id ORDER BY r.started DESC, r.id DESC LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [self._info(row) for row in rows]

    def run_ids(self) -> list[str]:
        """Every run id, oldest first."""
        return [str(row[0]) for row in self._read("SELECT id FROM runs ORDER BY started, id")]

    def find(self, ref: str) -> RunInfo | None:
        """The run ``ref`` names: an id, ``latest``, or an id's unique beginning."""
        if ref == LATEST:
            found = self.runs(limit=1)
            return found[0] if found else None
        rows = self._read(f"{_RUN_QUERY} WHERE r.id = ? GROUP BY r.id", (ref,))
        if not rows:
            rows = self._read(
                f"{_RUN_QUERY} WHERE r.id LIKE ? ESCAPE '\\' GROUP BY r.id", (_prefix(ref),)
            )
        return self._info(rows[0]) if len(rows) == 1 else None

    def get(self, ref: str) -> RunInfo:
        """:meth:`find`, or a :class:`HistoryError` saying what is there."""
        found = self.find(ref)
        if found is not None:
            return found
        if ref == LATEST:
            raise HistoryError(f"{self.path}: no run recorded yet")
        many = self._read("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\'", (_prefix(ref),))
        if len(many) > 1:
            names = ", ".join(str(r[0]) for r in many[:5])
            raise HistoryError(f"run '{ref}' is ambiguous in {self.path}: {names}")
        raise HistoryError(f"no run '{ref}' in {self.path} (`assay runs` lists them)")

    def find_import(self, digest: str) -> str | None:
        """The run an earlier import of the same file (by content hash) made."""
        rows = self._read(
            "SELECT id FROM runs WHERE source = 'adk' AND config_hash = ? LIMIT 1", (digest,)
        )
        return str(rows[0][0]) if rows else None

    def judge_cards(self, limit: int | None = None) -> list[str]:
        """Every judge card's JSON, newest first."""
        return self._cards.newest(limit)

    def judge_card(self, key: CardKey) -> str | None:
        """The JSON of the newest judge card of this judge model, criterion and prompt
        version; None when there is none."""
        return self._cards.find(key)

    def case_results(
        self, run_id: str, inputs: Inputs | None = None
    ) -> dict[CaseKey, EvalCaseResult]:
        """The run's recorded case results, in the order they were written. Those stored by
        reference are rebuilt from ``inputs`` (default: the run's input files, as stored)."""
        rows = self._read(
            "SELECT eval_set_id, eval_id, run_number, result FROM case_results "
            "WHERE run_id = ? ORDER BY written, rowid",
            (run_id,),
        )
        headers = self.run_headers(run_id)
        if inputs is None and any(may_need_inputs(text) for *_, text in rows):
            inputs = self.run_inputs(run_id)
        found: dict[CaseKey, EvalCaseResult] = {}
        for set_id, eval_id, run, text in rows:
            try:
                found[CaseKey(set_id, eval_id, run)] = decode(text, headers, inputs)
            except ValidationError as exc:
                raise HistoryError(
                    f"{self.path}: run {run_id}, case {eval_id}: unreadable result ({exc.error_count()} problem(s))"
                ) from None
            except (RecordError, ValueError, KeyError, TypeError) as exc:
                raise HistoryError(
                    f"{self.path}: run {run_id}, case {eval_id}: unreadable result ({exc})"
                ) from None
        return found

    def run_headers(self, run_id: str) -> dict[int, Header]:
        """The metric headers the run's compact case results refer to, by number."""
        rows = self._read("SELECT number, header FROM run_metrics WHERE run_id = ?", (run_id,))
        return {int(number): parse_header(text) for number, text in rows}

    def extract_inputs(self, run_id: str, folder: Path) -> list[tuple[InputFile, Path]]:
        """Write the run's input files back under ``folder`` (see
        :func:`~assay.history.inputs.place`), a chunk at a time; each with the file it was."""
        rows = self._read(
            "SELECT i.kind, i.position, i.path, i.sha256 FROM run_inputs i "
            "WHERE i.run_id = ? ORDER BY i.kind, i.position",
            (run_id,),
        )
        extracted = []
        for kind, position, path, digest in rows:
            file = InputFile(kind, position, path)
            target = place(file, folder)
            try:
                with target.open("wb") as out:
                    unpack(self._blob_parts(digest), out)
            except zlib.error as exc:
                raise HistoryError(
                    f"{self.path}: run {run_id}: its stored copy of {path} is damaged ({exc})"
                ) from None
            extracted.append((file, target))
        return extracted

    def _blob_parts(self, digest: str) -> Iterator[bytes]:
        """A stored file's compressed bytes: its one row, or its parts in order."""
        found = self._read("SELECT zlib FROM blobs WHERE sha256 = ?", (digest,))
        if not found:
            raise HistoryError(f"{self.path}: a stored input file ({digest[:12]}) is missing")
        if len(found[0][0]):
            yield bytes(found[0][0])
            return
        part = 0
        while row := self._read(
            "SELECT zlib FROM blob_parts WHERE sha256 = ? AND part = ?", (digest, part)
        ):
            yield bytes(row[0][0])
            part += 1

    def run_inputs(self, run_id: str) -> Inputs:
        """The run's eval sets and traces, loaded from its stored input files."""
        with tempfile.TemporaryDirectory(prefix="assay-run-") as folder:
            extracted = self.extract_inputs(run_id, Path(folder))
            if not extracted:
                raise HistoryError(
                    f"{self.path}: run {run_id}: its input files were not recorded (the run "
                    "was stopped before they were), so its case results cannot be read back"
                )
            try:
                return load_stored(extracted)
            except InputError as exc:
                raise HistoryError(f"{self.path}: run {run_id}: its stored inputs: {exc}") from None

    def done_cases(self, run_id: str, inputs: Inputs | None = None) -> DoneCases:
        """The run's recorded case results by key, read from the file on each lookup
        (``in``, ``get``, ``[]``: one query by the table's key; ``len``: a count); iteration
        gives the keys in the order the cases were stored. Those stored by reference are
        rebuilt from ``inputs`` (default: the run's input files, loaded when first needed)."""
        return DoneCases(run_id, self._read, self._decoder(run_id, inputs))

    def kept_cases(self, run_id: str, inputs: Inputs | None = None) -> KeptCases:
        """:meth:`done_cases` for the run that resumes ``run_id``: its keys indexed once, its
        texts read in stored order ahead of the runner (a few queries per thousand cases), with
        the outputs stored beside them where this version of assay recorded the run (else
        those texts are decoded)."""
        made_by = self._read("SELECT assay_version FROM runs WHERE id = ?", (run_id,))
        outputs = bool(made_by) and made_by[0][0] == __version__  # not get(): it counts cases
        return KeptCases(run_id, self._read, self._decoder(run_id, inputs), outputs)

    def _decoder(self, run_id: str, inputs: Inputs | None = None) -> Decoder:
        return Decoder(
            self.path, run_id, self.run_headers(run_id), inputs, lambda: self.run_inputs(run_id)
        )

    def results(self, ref: str) -> list[EvalSetResult]:
        """The run's eval-set results, as ``assay eval --output`` would have written them, each
        set's cases a :class:`~assay.history.stored.StoredCases`: read from the file as they
        are reached, a batch at a time, never all held (only their row ids are)."""
        info = self.get(ref)
        decoder = self._decoder(info.id)
        results: list[EvalSetResult] = []
        listed = 0
        for position, header in self._read(
            "SELECT position, header FROM run_sets WHERE run_id = ? ORDER BY position",
            (info.id,),
        ):
            rowids = self._listed_rowids(info.id, int(position))
            listed += len(rowids)
            result = EvalSetResult.model_validate_json(header)
            cases = StoredCases(self.path, rowids, decoder)
            results.append(result.model_copy(update={"eval_case_results": cases}))
        return results + self._unfinished_sets(info, decoder, listed)

    def _listed_rowids(self, run_id: str, position: int) -> list[int]:
        """The row ids of a finished set's cases, in its case order (a case listed twice, or
        not recorded, left out)."""
        try:
            rows = self._read(
                "SELECT c.rowid FROM run_sets s, json_each(s.case_order) j "
                "JOIN case_results c ON c.run_id = s.run_id AND c.eval_set_id = s.eval_set_id "
                "AND c.eval_id = json_extract(j.value, '$[0]') "
                "AND c.run_number = json_extract(j.value, '$[1]') "
                "WHERE s.run_id = ? AND s.position = ? GROUP BY c.rowid ORDER BY MIN(j.key)",
                (run_id, position),
            )
        except HistoryError:  # an SQLite without JSON functions: the order read in Python
            return self._listed_rowids_slowly(run_id, position)
        return [int(row[0]) for row in rows]

    def _listed_rowids_slowly(self, run_id: str, position: int) -> list[int]:
        [(set_id, order)] = self._read(
            "SELECT eval_set_id, case_order FROM run_sets WHERE run_id = ? AND position = ?",
            (run_id, position),
        )
        recorded = {
            (str(eval_id), int(run)): int(rowid)
            for rowid, eval_id, run in self._read(
                "SELECT rowid, eval_id, run_number FROM case_results "
                "WHERE run_id = ? AND eval_set_id = ?",
                (run_id, set_id),
            )
        }
        found = (recorded.pop((eval_id, run), None) for eval_id, run in json.loads(order))
        return [rowid for rowid in found if rowid is not None]

    def _unfinished_sets(self, info: RunInfo, decoder: Decoder, listed: int) -> list[EvalSetResult]:
        """Set results for the case results no finished set lists (a run that did not
        finish), each set's in the order they were written."""
        counted = self._read("SELECT COUNT(*) FROM case_results WHERE run_id = ?", (info.id,))
        if int(counted[0][0]) == listed:
            return []
        taken: set[int] = set()
        if listed:
            for (position,) in self._read(
                "SELECT position FROM run_sets WHERE run_id = ?", (info.id,)
            ):
                taken.update(self._listed_rowids(info.id, int(position)))
        by_set: dict[str, tuple[array[int], list[int]]] = {}
        for rowid, set_id, status in self._read(
            "SELECT rowid, eval_set_id, status FROM case_results WHERE run_id = ? "
            "ORDER BY written, rowid",
            (info.id,),
        ):
            if rowid in taken:
                continue
            rowids, counts = by_set.setdefault(str(set_id), (array("q"), [0, 0, 0]))
            rowids.append(int(rowid))
            counts[_COUNTED.get(int(status), 2)] += 1
        paths = {s.get("eval_set_id"): s.get("path") for s in info.config.get("sets", [])}
        return [
            EvalSetResult.model_construct(
                eval_set_result_id=f"{info.id}_{set_id}",
                eval_set_result_name=f"{info.id}_{set_id}".replace("/", "_"),
                eval_set_id=set_id,
                eval_case_results=StoredCases(self.path, rowids, decoder),
                creation_timestamp=info.started,
                assay=SetNotes(
                    version=info.assay_version,
                    eval_set_path=paths.get(set_id),
                    summary=RunSummary(passed=counts[0], failed=counts[1], not_evaluated=counts[2]),
                    warnings=[f"run {info.id} is {info.status}: these are the cases it recorded"],
                ),
            )
            for set_id, (rowids, counts) in by_set.items()
        ]

    def _info(self, row: tuple[Any, ...]) -> RunInfo:
        return run_info(row)


_RUN_QUERY = f"""
SELECT r.id, r.started, r.finished, r.status, r.source, r.eval_sets, r.config, r.config_hash,
       r.judges, r.assay_version, r.git_commit, r.host, r.pid, r.tokens,
       SUM(c.status = {int(EvalStatus.PASSED)}), SUM(c.status = {int(EvalStatus.FAILED)}),
       SUM(c.status NOT IN ({int(EvalStatus.PASSED)}, {int(EvalStatus.FAILED)})),
       SUM(c.tokens)
FROM runs r LEFT JOIN case_results c ON c.run_id = r.id
"""


def _prefix(ref: str) -> str:
    escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


_COUNTED = {int(EvalStatus.PASSED): 0, int(EvalStatus.FAILED): 1}
