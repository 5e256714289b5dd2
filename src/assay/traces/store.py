"""Reading span files into sessions with bounded memory.

The spans are put into a temporary SQLite file as they are read (a trace's spans under its id);
in memory only each trace's session key, first start and file are kept. Then each session's
traces are read back, built into a :class:`~assay.traces.sessions.Session` and dropped, one
session at a time, in the order the sessions started.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import Problem, TracesError
from assay.traces.lines import file_rows
from assay.traces.sessions import Session, build_session
from assay.traces.spans import Span

_BATCH = 2000


@dataclass
class _Trace:
    session: str | None
    start_ns: int
    file: str
    last_span: str = ""


@dataclass(frozen=True)
class Group:
    """A session to build: its key (``trace:<id>`` when no session id), traces, file, and
    the file problems that cut its traces short."""

    key: str
    trace_ids: list[str]
    source: str
    cut: list[str]


def build_group(db: sqlite3.Connection, group: Group) -> Session:
    """The session of ``group``, its spans read from the span store ``db``."""
    spans: list[Span] = []
    for trace_id in group.trace_ids:
        rows = db.execute("SELECT body FROM spans WHERE trace = ?", (trace_id,))
        spans.extend(Span.from_tuple(pickle.loads(body)) for (body,) in rows)
    session_id = None if group.key.startswith("trace:") else group.key
    found = build_session(spans, group.source, session_id)
    if group.cut:
        found.problem = "; ".join(filter(None, [found.problem, *group.cut]))
    return found


@dataclass
class SessionStream:
    """The sessions of span files, read one at a time (see :func:`load_sessions`).

    ``problems`` lists the files' own problems (cut short, not OTLP...): the spans before each
    were kept, and the sessions of the traces it cut short carry it as their ``problem``.
    """

    problems: list[Problem] = field(default_factory=list)
    _db: sqlite3.Connection | None = None
    _path: str = ""
    _traces: dict[str, _Trace] = field(default_factory=dict)
    _cut: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        """The temporary SQLite file the spans are in (table ``spans(trace, body)``)."""
        return self._path

    def groups(self) -> list[Group]:
        """Each session's traces, sessions in the order they started."""
        found: dict[str, list[str]] = {}
        for trace_id, trace in sorted(self._traces.items(), key=lambda kv: kv[1].start_ns):
            found.setdefault(trace.session or f"trace:{trace_id}", []).append(trace_id)
        return [
            Group(
                key,
                ids,
                self._traces[ids[0]].file,
                [self._cut[t] for t in ids if t in self._cut],
            )
            for key, ids in found.items()
        ]

    def __iter__(self) -> Iterator[Session]:
        try:
            for group in self.groups():
                assert self._db is not None
                yield build_group(self._db, group)
        finally:
            self.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
            Path(self._path).unlink(missing_ok=True)

    def __len__(self) -> int:
        return len({t.session or f"trace:{i}" for i, t in self._traces.items()})


def load_sessions(
    paths: Iterable[str | Path], *, strict: bool = False, workers: int = 1
) -> SessionStream:
    """Read span files into a :class:`SessionStream`. With ``strict``, a file problem raises
    :class:`~assay.errors.TracesError` (every file's, after all were read) instead of being
    listed in ``problems``. With ``workers`` above 1, OTLP/JSON lines are parsed by that many
    processes (:mod:`assay.traces.lines`)."""
    handle, name = tempfile.mkstemp(prefix="assay-spans-", suffix=".sqlite")
    os.close(handle)
    db = sqlite3.connect(name, isolation_level=None)
    db.executescript(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
        "CREATE TABLE spans (trace TEXT NOT NULL, body BLOB NOT NULL);"
    )
    stream = SessionStream(_db=db, _path=name)
    try:
        for path in paths:
            _read_into(stream, db, str(path), workers)
        db.execute("CREATE INDEX spans_trace ON spans (trace)")
    except BaseException:
        stream.close()
        raise
    if strict and stream.problems:
        stream.close()
        raise TracesError(stream.problems)
    return stream


def _read_into(stream: SessionStream, db: sqlite3.Connection, file: str, workers: int) -> None:
    batch: list[tuple[str, bytes]] = []
    last: _Trace | None = None
    last_id = ""
    try:
        for trace_id, session, start_ns, span_id, body in file_rows(file, workers):
            trace = stream._traces.get(trace_id)
            if trace is None:
                trace = stream._traces[trace_id] = _Trace(None, start_ns, file)
            trace.start_ns = min(trace.start_ns, start_ns)
            if trace.session is None:
                trace.session = session
            trace.last_span, last, last_id = span_id, trace, trace_id
            batch.append((trace_id, body))
            if len(batch) >= _BATCH:
                _flush(db, batch)
    except TracesError as exc:
        stream.problems.extend(exc.problems)
        if last is not None:
            stream._cut[last_id] = f"{exc.problems[0]}: this trace may be incomplete"
    _flush(db, batch)


def _flush(db: sqlite3.Connection, batch: list[tuple[str, bytes]]) -> None:
    if batch:
        db.execute("BEGIN")
        db.executemany("INSERT INTO spans VALUES (?, ?)", batch)
        db.execute("COMMIT")
        batch.clear()
