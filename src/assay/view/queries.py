"""The history as the runs and run pages read it: paged, filtered, from SQLite, never a whole run
of case results in memory.

A run page needs, for every case of the run, only its key, its status and each metric's score
and status (the grid, the filters, the counts, the distributions): :class:`RunIndex` holds just
that, in flat arrays (about 150 bytes a case), read in one pass of SQLite's own JSON functions
over the stored records (:mod:`assay.history.compact`: ``k``, ``s``, ``t`` and the notes; a
case stored as full JSON, by its ``overall_eval_metric_results``). It is built once per run and
kept (:class:`Queries`, a few runs at a time): a finished run never changes, and a running one
is extended by the rows written since (``rowid`` beyond the last one read), so a page of a
50,000-case run costs a filter over arrays and one query for the 100 rows it shows.

Reads go through a read-only connection of their own, opened per call (cheap, and a writer in
another process is never blocked: the file is in WAL mode), not through the view's store.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic_core

from assay.history.records import RUN_COLUMNS, HistoryError, RunInfo, run_info
from assay.history.store import LATEST, HistoryStore
from assay.metrics.base import EvalStatus

PAGE_SIZE = 100
"""Cases a run page lists."""

KEPT_RUNS = 4
"""Run indexes kept at once (each about 150 bytes a case)."""

ABSENT, NOT_APPLICABLE = 0, 5
"""A metric's verdict code for a case it was not configured for, or not applicable to (the others
are :class:`EvalStatus` values)."""

ORDER = {int(EvalStatus.FAILED): 0, int(EvalStatus.NOT_EVALUATED): 1, int(EvalStatus.PASSED): 2}
"""The listing order: failed, not evaluated, passed (as the report's grid has it)."""

STATUS_NAMES = {s.name: int(s) for s in EvalStatus if s is not EvalStatus.INFORMATIONAL}

_EXTRACT = (
    "json_extract(result, '$.v', '$.k', '$.s', '$.t', '$.n.not_applicable', "
    "'$.overall_eval_metric_results', '$.assay.not_applicable')"
)


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the history file, closed after use."""
    if not path.exists():
        raise HistoryError(f"{path}: no run history here yet (`assay eval` records one)")
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise HistoryError(f"{path}: cannot read the run history: {exc}") from None
    with closing(db):
        try:
            yield db
        except sqlite3.Error as exc:
            raise HistoryError(f"{path}: cannot read the run history: {exc}") from None


@dataclass
class Column:
    """One metric of the run: its name, threshold, and each case's score (NaN: none) and
    verdict code."""

    name: str
    threshold: float | None
    scores: array[float] = field(default_factory=lambda: array("d"))
    verdicts: bytearray = field(default_factory=bytearray)

    @property
    def graded(self) -> bool:
        """Whether the metric passes or fails cases (it has a threshold, or some case passed or
        failed it); else it is an informational one, shown as a value."""
        return (
            self.threshold is not None
            or self.verdicts.count(int(EvalStatus.PASSED)) > 0
            or self.verdicts.count(int(EvalStatus.FAILED)) > 0
        )

    def judged_scores(self) -> list[float]:
        """The finite scores of the cases this metric judged (neither absent nor n/a)."""
        skipped = (ABSENT, NOT_APPLICABLE)
        return [
            s
            for s, v in zip(self.scores, self.verdicts, strict=True)
            if v not in skipped and s == s
        ]


@dataclass
class RunIndex:
    """What the run page needs of every case of one run, in the order the cases were written."""

    run_id: str
    keys: list[tuple[str, str, int]] = field(default_factory=list)
    rowids: array[int] = field(default_factory=lambda: array("q"))
    statuses: bytearray = field(default_factory=bytearray)
    columns: list[Column] = field(default_factory=list)
    by_name: dict[str, int] = field(default_factory=dict)
    headers: dict[int, list[int]] = field(default_factory=dict)
    """Each stored metric header's columns, in its order."""
    positions: dict[tuple[str, str, int], int] = field(default_factory=dict)
    last_rowid: int = 0
    complete: bool = False
    """Read to the end of a run that was no longer running when it was read."""
    memo: dict[str, Any] = field(default_factory=dict)
    """What pages computed from the index as it was (cleared when it grows)."""

    def __len__(self) -> int:
        return len(self.keys)

    def column(self, name: str, threshold: float | None) -> int:
        """The column of metric ``name``, added (absent for the cases before) if new."""
        found = self.by_name.get(name)
        if found is None:
            found = self.by_name[name] = len(self.columns)
            count = len(self.keys)
            self.columns.append(
                Column(name, threshold, array("d", [math.nan]) * count, bytearray(count))
            )
        return found


def _score(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


@dataclass
class _Batch:
    """Rows read in one pass, before they are put in the index's columns: compact records by
    metric header (positions, scores, status codes), the rest as (position, rows)."""

    compact: dict[int, tuple[list[int], list[list[Any]], list[bytes]]] = field(default_factory=dict)
    full: list[tuple[int, list[Any], list[str]]] = field(default_factory=list)
    not_applicable: list[tuple[int, list[str]]] = field(default_factory=list)


def _place(index: RunIndex, batch: _Batch, headers: dict[int, Any]) -> None:
    """Put a batch's metric rows in the index's columns (one slice assignment per column
    where a header's cases are contiguous, as in a run with one header)."""
    for number, (positions, scores, codes) in batch.compact.items():
        columns = index.headers.get(number)
        if columns is None:
            header = headers.get(number) or []
            columns = index.headers[number] = [index.column(h[0], h[1]) for h in header]
        contiguous = positions[-1] - positions[0] + 1 == len(positions)
        for i, c in enumerate(columns):
            column = index.columns[c]
            values = array("d", [math.nan if s[i] is None else s[i] for s in scores])
            verdicts = bytes(code[i] for code in codes)
            if contiguous:
                column.scores[positions[0] : positions[-1] + 1] = values
                column.verdicts[positions[0] : positions[-1] + 1] = verdicts
            else:
                for position, value, verdict in zip(positions, values, verdicts, strict=True):
                    column.scores[position] = value
                    column.verdicts[position] = verdict
    for position, overall, skipped in batch.full:
        for row in overall:
            name = str(row.get("metric_name", ""))
            column = index.columns[index.column(name, row.get("threshold"))]
            column.scores[position] = _score(row.get("score"))
            code = int(row.get("eval_status") or 3)
            column.verdicts[position] = NOT_APPLICABLE if name in skipped else code
    for position, names in batch.not_applicable:
        for name in names:
            if name in index.by_name:
                index.columns[index.by_name[name]].verdicts[position] = NOT_APPLICABLE


def extend(index: RunIndex, db: sqlite3.Connection) -> bool:
    """Read the run's rows written since the index was last extended; False when one of them
    replaces a case already read (a resumed run), so the index must be built afresh."""
    headers = {
        int(number): pydantic_core.from_json(text)
        for number, text in db.execute(
            "SELECT number, header FROM run_metrics WHERE run_id = ?", (index.run_id,)
        )
    }
    cursor = db.execute(
        f"SELECT rowid, eval_set_id, eval_id, run_number, status, {_EXTRACT} FROM case_results "
        "WHERE run_id = ? AND rowid > ? ORDER BY rowid",
        (index.run_id, index.last_rowid),
    )
    rows = cursor.fetchall()
    if not rows:
        return True
    start = len(index.keys)
    batch = _Batch()
    sets: dict[str, str] = {}
    positions = index.positions
    for offset, (rowid, set_id, eval_id, run, status, extracted) in enumerate(rows):
        key = (sets.setdefault(set_id, set_id), eval_id, run)
        if key in positions:
            return False
        position = positions[key] = start + offset
        index.keys.append(key)
        index.rowids.append(rowid)
        index.statuses.append(status)
        found: list[Any] = pydantic_core.from_json(extracted) if extracted else [None] * 7
        if found[0] == 2 and found[1] in headers:
            entry = batch.compact.setdefault(found[1], ([], [], []))
            entry[0].append(position)
            entry[1].append(found[2])
            entry[2].append(bytes.fromhex(found[3]))
            if found[4]:
                batch.not_applicable.append((position, found[4]))
        else:
            batch.full.append((position, found[5] or [], found[6] or []))
    for column in index.columns:  # room for the new cases in the columns there were
        column.scores.extend(array("d", [math.nan]) * len(rows))
        column.verdicts.extend(bytearray(len(rows)))
    _place(index, batch, headers)
    index.last_rowid = int(rows[-1][0])
    index.memo.clear()
    return True


@dataclass(frozen=True)
class Filters:
    """The run page's filters, from its query string."""

    status: int | None = None
    metric: str | None = None
    words: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.status is not None or self.metric is not None or bool(self.words)


def listing(index: RunIndex, filters: Filters) -> list[int]:
    """The positions of the cases the filters keep, in listing order: by status (the metric's,
    when one is named) failed first, then not evaluated, then passed, each in written order."""
    column = (
        index.columns[index.by_name[filters.metric]] if filters.metric in index.by_name else None
    )
    if filters.metric is not None and column is None:
        return []
    codes: bytes | bytearray = index.statuses if column is None else column.verdicts
    wanted = filters.status
    keep = range(len(index))
    if filters.words:
        words = filters.words
        keep = [  # type: ignore[assignment]
            i
            for i in keep
            if all(w in f"{index.keys[i][0]} {index.keys[i][1]}".lower() for w in words)
        ]
    if column is not None:
        keep = [i for i in keep if codes[i] not in (ABSENT, NOT_APPLICABLE)]  # type: ignore[assignment]
    if wanted is not None:
        return [i for i in keep if codes[i] == wanted]
    buckets: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
    for i in keep:
        buckets[ORDER.get(codes[i], 3)].append(i)
    return [*buckets[0], *buckets[1], *buckets[2], *buckets[3]]


@dataclass(frozen=True)
class CaseNotesText:
    """What a listed case's grid row shows besides its scores: why it or a metric was not
    evaluated."""

    reason: str | None
    metric_reasons: dict[str, str]


def page_notes(path: Path, rowids: Sequence[int]) -> dict[int, CaseNotesText]:
    """The notes of the cases of one page, by row id (one query)."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    sql = (
        "SELECT rowid, json_extract(result, '$.n.reason', '$.n.metric_reasons', "
        f"'$.assay.reason', '$.assay.metric_reasons') FROM case_results WHERE rowid IN ({marks})"
    )
    found: dict[int, CaseNotesText] = {}
    with reading(path) as db:
        for rowid, text in db.execute(sql, list(rowids)):
            reason, reasons, full_reason, full_reasons = (
                pydantic_core.from_json(text or "[]") or [None] * 4
            )
            found[int(rowid)] = CaseNotesText(
                reason or full_reason,
                {str(k): str(v) for k, v in (reasons or full_reasons or {}).items()},
            )
    return found


class Queries:
    """The view's run indexes, a few kept (least recently used goes first), each built and
    extended under its own lock so that two requests never read the same rows twice."""

    def __init__(self, store: HistoryStore, kept: int = KEPT_RUNS) -> None:
        self.store = store
        self.kept = kept
        self._indexes: OrderedDict[str, tuple[RunIndex, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.store.path

    def index(self, info: RunInfo) -> RunIndex:
        """The run's index, read up to what the history holds now (the index of a run that
        was not running when it was read is not read again)."""
        with self._lock:
            entry = self._indexes.get(info.id)
            if entry is None:
                entry = self._indexes[info.id] = (RunIndex(info.id), threading.Lock())
            self._indexes.move_to_end(info.id)
            while len(self._indexes) > self.kept:
                self._indexes.popitem(last=False)
        index, lock = entry
        with lock:
            if info.status != "running" and index.complete:
                return index
            with reading(self.path) as db:
                if not extend(index, db):
                    index = RunIndex(info.id)
                    extend(index, db)
            index.complete = info.status != "running"
            with self._lock:
                self._indexes[info.id] = (index, lock)
        return index


def set_headers(path: Path, run_id: str) -> list[str]:
    """The stored set results (without their cases) of a finished run, as JSON."""
    with reading(path) as db:
        return [
            str(row[0])
            for row in db.execute(
                "SELECT header FROM run_sets WHERE run_id = ? ORDER BY position", (run_id,)
            )
        ]


def find_run(path: Path, ref: str) -> RunInfo:
    """The run ``ref`` names (an id, its unique beginning, or ``latest``), read from the
    ``runs`` table alone (the store's lookup also counts every case of every run it matches,
    a scan of the whole run's records); a :class:`HistoryError` saying what is there if none."""
    with reading(path) as db:
        if ref == LATEST:
            rows = db.execute(
                f"SELECT {RUN_COLUMNS} FROM runs ORDER BY started DESC, id DESC LIMIT 1"
            ).fetchall()
            if not rows:
                raise HistoryError(f"{path}: no run recorded yet")
            return run_info(rows[0])
        rows = db.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (ref,)).fetchall()
        if not rows:
            escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = db.execute(
                f"SELECT {RUN_COLUMNS} FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 6", (escaped,)
            ).fetchall()
    if len(rows) == 1:
        return run_info(rows[0])
    if rows:
        names = ", ".join(str(row[0]) for row in rows[:5])
        raise HistoryError(f"run '{ref}' is ambiguous in {path}: {names}")
    raise HistoryError(f"no run '{ref}' in {path} (`assay runs` lists them)")


def all_runs(path: Path) -> tuple[list[RunInfo], dict[str, dict[str, tuple[int, int]]]]:
    """Every run, newest first, and each run's (passed, recorded) case counts by eval set: a
    finished run's from the summary stored with its sets, any other's counted from its rows."""
    counts: dict[str, dict[str, tuple[int, int]]] = {}
    unsummed: set[str] = set()
    with reading(path) as db:
        runs = [
            run_info(row)
            for row in db.execute(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY started DESC, id DESC")
        ]
        for run_id, set_id, summary in db.execute(
            "SELECT run_id, eval_set_id, json_extract(header, '$.assay.summary') FROM run_sets "
            "ORDER BY run_id, position"
        ):
            found = pydantic_core.from_json(summary) if summary else None
            if not isinstance(found, dict):
                unsummed.add(str(run_id))
                continue
            total = sum(int(found.get(k) or 0) for k in ("passed", "failed", "not_evaluated"))
            counts.setdefault(str(run_id), {})[str(set_id)] = (int(found.get("passed") or 0), total)
        for info in runs:
            if info.status == "finished" and info.id in counts and info.id not in unsummed:
                continue
            counts[info.id] = {
                str(set_id): (int(passed), int(total))
                for set_id, passed, total in db.execute(
                    f"SELECT eval_set_id, SUM(status = {int(EvalStatus.PASSED)}), COUNT(*) "
                    "FROM case_results WHERE run_id = ? GROUP BY eval_set_id",
                    (info.id,),
                )
            }
    return runs, counts


WARMED_RUNS = 2
"""The newest runs whose indexes the view builds as it starts (``ASSAY_VIEW_WARM_RUNS``; 0: none)."""


def warm(queries: Queries, runs: int | None = None) -> None:
    """Build the indexes of the newest ``runs`` runs (what a person opens first), so their run
    page's first screen does not wait for the whole run to be read; any error is left for the
    page to report."""
    if runs is None:
        raw = os.environ.get("ASSAY_VIEW_WARM_RUNS", "").strip()
        runs = int(raw) if raw.isdigit() else WARMED_RUNS
    if runs <= 0:
        return
    try:
        with reading(queries.path) as db:
            rows = db.execute(
                f"SELECT {RUN_COLUMNS} FROM runs ORDER BY started DESC, id DESC LIMIT ?", (runs,)
            ).fetchall()
        for row in rows:
            queries.index(run_info(row))
    except (HistoryError, sqlite3.Error, ValueError):
        return
