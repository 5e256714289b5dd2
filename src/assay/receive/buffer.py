"""Received spans kept until their session closes: in a SQLite file, so a restart loses none.

Spans are grouped by trace as they arrive; a trace whose spans carry a session id
(``gen_ai.conversation.id``, ``gcp.vertex.agent.session_id`` or ``session.id``, on any span)
belongs to that session, else the trace is a session of its own. The closing rule:

* a trace is *ended* once its root span (a span with no parent) has arrived: an exporter sends a
  span when it ends and a parent ends after its children, so by then the trace is whole;
* a session of one trace (no session id) closes as soon as its trace ends;
* a session with a session id closes when every trace of it has ended and no span has come
  for ``settle_s`` (the next turn of the conversation would come within it);
* any session closes after ``idle_timeout_s`` without a span, with a problem when some trace of
  it never ended (its case is NOT_EVALUATED, saying so).

Bounds: ``max_spans`` per session (more are dropped and the session gets a problem), and
``max_sessions`` open, not yet ended (the one idle longest is closed early, with a problem).
Sessions ended or closed early stay in the file until they are scored; the file holds at most
``2 * max_sessions`` sessions of at most ``max_spans`` spans each. When it is full (scoring is
behind) the server answers 503, which exporters retry later; spans of new sessions that a request
brings past the bound are refused (counted in :attr:`SpanBuffer.rejected`, the request answered
with an OTLP partial success). Spans of a trace that already
closed (late or re-sent ones) are dropped. Sessions scored are remembered by a
digest of their spans, so spans sent twice are not scored twice.
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assay.traces import Span

SESSION_ATTRIBUTES = ("gen_ai.conversation.id", "gcp.vertex.agent.session_id", "session.id")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS spans (trace_id TEXT NOT NULL, body BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS spans_trace ON spans (trace_id);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY, session TEXT, ended INTEGER, spans INTEGER,
    last REAL, problem TEXT
);
CREATE TABLE IF NOT EXISTS done (digest TEXT PRIMARY KEY, session TEXT, at REAL);
CREATE TABLE IF NOT EXISTS recording (digest TEXT PRIMARY KEY, session TEXT, case_id TEXT);
"""

_PARAMETERS = 900
"""Values bound in one statement (``IN (...)`` ids, multi-row inserts): under SQLite's oldest
limit of 999 parameters. One statement for many rows lets go of the GIL once, not per row."""


@dataclass
class _Trace:
    session: str | None
    ended: bool
    spans: int
    last: float
    problem: str | None = None


@dataclass
class Closed:
    """A session taken to be scored: its spans, a problem the buffer found, its digest."""

    key: str
    traces: list[str]
    spans: list[Span]
    problem: str | None
    digest: str


@dataclass
class Limits:
    """The buffer's bounds and clocks (see the module docstring)."""

    idle_timeout_s: float = 300.0
    settle_s: float = 2.0
    max_spans: int = 20_000
    max_sessions: int = 1_000


@dataclass
class SpanBuffer:
    """The spans of open sessions, in ``path`` (a SQLite file); safe from any thread."""

    path: Path
    limits: Limits = field(default_factory=Limits)
    dropped: int = 0
    """Spans dropped so far (over a bound, or late)."""
    rejected: int = 0
    """Spans of new sessions refused so far (the buffer full of sessions waiting to be scored)."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._traces: dict[str, _Trace] = {
            str(row[0]): _Trace(row[1], bool(row[2]), int(row[3]), float(row[4]), row[5])
            for row in self._db.execute(
                "SELECT trace_id, session, ended, spans, last, problem FROM traces"
            )
        }
        self._members: dict[str, list[str]] = {}
        """The open sessions' trace ids, by session key (its session id, else its trace id)."""
        for trace_id, trace in self._traces.items():
            self._members.setdefault(trace.session or trace_id, []).append(trace_id)
        self._evicted: set[str] = set()
        """Keys of sessions closed early to make room, waiting to be scored."""
        self._open: set[str] = set()
        """Keys of the open sessions (some trace not ended, not closed early): kept as spans
        come, so making room for a session costs nothing until the open cap is reached."""
        for key in self._members:
            self._refresh(key)
        self._closed: OrderedDict[str, None] = OrderedDict()

    def meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    @property
    def open_sessions(self) -> int:
        with self._lock:
            return len(self._members)

    def add(self, spans: Sequence[Span], now: float) -> int:
        """Keep ``spans`` (one request's) until their sessions close; how many were refused
        (spans of new sessions while the buffer is full, see the module docstring)."""
        by_trace: dict[str, list[Span]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, []).append(span)
        with self._lock:
            rows: list[tuple[str, bytes]] = []
            self._db.execute("BEGIN")
            try:
                refused = sum(
                    self._add_trace(tid, group, now, rows) for tid, group in by_trace.items()
                )
                # the request's rows in a few statements, not two a trace: each statement lets
                # go of the GIL, and waits to get it back while the scorer holds it
                self._insert("INSERT INTO spans VALUES", rows)
                self._insert(
                    "INSERT OR REPLACE INTO traces VALUES",
                    [
                        (t, x.session, int(x.ended), x.spans, x.last, x.problem)
                        for t in by_trace
                        if (x := self._traces.get(t)) is not None
                    ],
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self.rejected += refused
            return refused

    def _add_trace(
        self, trace_id: str, spans: list[Span], now: float, rows: list[tuple[str, bytes]]
    ) -> int:
        """Keep one trace's spans of a request (its row added to ``rows``, its trace row
        written by :meth:`add`); how many were refused."""
        if trace_id in self._closed:
            self.dropped += len(spans)
            return 0
        trace = self._traces.get(trace_id)
        if trace is None:
            session = _session_of(spans)
            held = self._group_spans(session) if session else 0
            if session is not None and held >= self.limits.max_spans:  # full: no empty trace row
                self.dropped += len(spans)
                self._overflowed(self._members[session][0])
                return 0
            if not held and not self._make_room(now):
                return len(spans)
            trace = self._traces[trace_id] = _Trace(session, False, 0, now)
            self._members.setdefault(session or trace_id, []).append(trace_id)
        if trace.session is None and (session := _session_of(spans)) is not None:
            self._join(trace_id, session)
        trace.last = now
        group = self._group_spans(trace.session) if trace.session else trace.spans
        room = self.limits.max_spans - group
        trace.ended = trace.ended or any(span.parent_id is None for span in spans)
        if room < len(spans):
            self.dropped += len(spans) - max(room, 0)
            spans = spans[: max(room, 0)]
            self._overflowed(trace_id)
        trace.spans += len(spans)
        self._refresh(trace.session or trace_id)
        if spans:
            rows.append((trace_id, pickle.dumps(spans, protocol=5)))
        return 0

    def _insert(self, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
        """``rows`` inserted by multi-row statements of at most ``_PARAMETERS`` parameters."""
        if not rows:
            return
        width = len(rows[0])
        step = _PARAMETERS // width
        marks = "(" + ",".join("?" * width) + ")"
        for at in range(0, len(rows), step):
            chunk = rows[at : at + step]
            self._db.execute(
                f"{sql} {','.join([marks] * len(chunk))}", [v for row in chunk for v in row]
            )

    def _delete(self, table: str, trace_ids: Sequence[str]) -> None:
        """The rows of ``trace_ids`` deleted from ``table``, a few hundred ids a statement."""
        for at in range(0, len(trace_ids), _PARAMETERS):
            chunk = trace_ids[at : at + _PARAMETERS]
            marks = ",".join("?" * len(chunk))
            self._db.execute(f"DELETE FROM {table} WHERE trace_id IN ({marks})", chunk)

    def _overflowed(self, trace_id: str) -> None:
        """The session of ``trace_id`` lost spans over ``max_spans``: its problem, kept."""
        problem = f"more than {self.limits.max_spans} spans in the session: the rest were dropped"
        self._traces[trace_id].problem = problem
        self._db.execute("UPDATE traces SET problem = ? WHERE trace_id = ?", (problem, trace_id))

    def _join(self, trace_id: str, session: str) -> None:
        """A trace first seen without a session id turns out to be of ``session``."""
        self._traces[trace_id].session = session
        self._members.pop(trace_id, None)
        self._members.setdefault(session, []).append(trace_id)
        if trace_id in self._evicted:
            self._evicted.discard(trace_id)
            self._evicted.add(session)
        self._refresh(trace_id)
        self._refresh(session)

    def _refresh(self, key: str) -> None:
        """Whether session ``key`` is open, after a change to it."""
        ids = self._members.get(key)
        if ids and key not in self._evicted and not all(self._traces[t].ended for t in ids):
            self._open.add(key)
        else:
            self._open.discard(key)

    def _group_spans(self, key: str) -> int:
        return sum(self._traces[t].spans for t in self._members.get(key, ()))

    @property
    def full(self) -> bool:
        """Whether as many sessions wait to be scored as may be open (no room for a new one)."""
        with self._lock:
            return len(self._members) >= 2 * self.limits.max_sessions

    def _make_room(self, now: float) -> bool:
        """Room for one more session: at ``max_sessions`` open (not yet ended, not closed
        early), the one idle longest is marked to close now, with a problem; False when the
        buffer holds ``2 * max_sessions`` (the rest wait to be scored)."""
        if len(self._members) < self.limits.max_sessions:
            return True
        if len(self._members) >= 2 * self.limits.max_sessions:
            return False
        if len(self._open) < self.limits.max_sessions:
            return True
        open_keys = [key for key in self._members if key in self._open]  # first seen wins ties
        oldest = min(open_keys, key=lambda k: max(self._traces[t].last for t in self._members[k]))
        self._evicted.add(oldest)
        self._open.discard(oldest)
        for trace_id in self._members[oldest]:
            trace = self._traces[trace_id]
            trace.last = now - self.limits.idle_timeout_s - 1
            early = f"closed early: more than {self.limits.max_sessions} sessions were open at once"
            trace.problem = "; ".join(p for p in (trace.problem, early) if p)
            self._db.execute(
                "UPDATE traces SET last = ?, problem = ? WHERE trace_id = ?",
                (trace.last, trace.problem, trace_id),
            )
        return True

    def due(self, now: float) -> list[str]:
        """The sessions to close now (see the module docstring)."""
        with self._lock:
            due = []
            for key, trace_ids in self._members.items():
                traces = [self._traces[t] for t in trace_ids]
                last = max(t.last for t in traces)
                ended = all(t.ended for t in traces)
                keyed = any(t.session for t in traces)
                if (
                    now - last >= self.limits.idle_timeout_s
                    or (ended and (not keyed or now - last >= self.limits.settle_s))
                    or key in self._evicted
                ):
                    due.append(key)
            return due

    def spans_of(self, key: str) -> int:
        """How many spans session ``key`` holds (what taking it brings into memory)."""
        with self._lock:
            return self._group_spans(key)

    def take(self, key: str) -> Closed:
        """The spans of session ``key`` (kept until :meth:`done`)."""
        [closed] = self.take_many([key])
        return closed

    def take_many(self, keys: Sequence[str]) -> list[Closed]:
        """The spans of sessions ``keys``, in order (kept until :meth:`done_many`): read
        together, a query per few hundred traces rather than one per trace."""
        with self._lock:
            members = [list(self._members.get(key, ())) for key in keys]
            bodies = self._bodies([t for ids in members for t in ids])
            problems = [self._problems(key, ids) for key, ids in zip(keys, members, strict=True)]
        taken = []
        for key, ids, found in zip(keys, members, problems, strict=True):
            spans = [span for t in ids for body in bodies.get(t, ()) for span in pickle.loads(body)]
            problem = "; ".join(dict.fromkeys(found)) or None
            taken.append(Closed(key, ids, spans, problem, digest_of(spans)))
        return taken

    def _bodies(self, trace_ids: list[str]) -> dict[str, list[bytes]]:
        """The pickled span lists of ``trace_ids``, each trace's in the order they came."""
        found: dict[str, list[bytes]] = {}
        for at in range(0, len(trace_ids), _PARAMETERS):
            chunk = trace_ids[at : at + _PARAMETERS]
            marks = ",".join("?" * len(chunk))
            for trace_id, body in self._db.execute(
                f"SELECT trace_id, body FROM spans WHERE trace_id IN ({marks}) ORDER BY rowid",
                chunk,
            ):
                found.setdefault(str(trace_id), []).append(body)
        return found

    def _problems(self, key: str, trace_ids: list[str]) -> list[str]:
        problems = [p for t in trace_ids if (p := self._traces[t].problem)]
        if key not in self._evicted and not all(self._traces[t].ended for t in trace_ids):
            problems.append(
                f"never ended: its root span had not arrived after "
                f"{self.limits.idle_timeout_s:g} s without a span (--idle-timeout)"
            )
        return problems

    def scored_before(self, digest: str) -> bool:
        return bool(self.scored_among([digest]))

    def scored_among(self, digests: Sequence[str]) -> set[str]:
        """Those of ``digests`` scored before (their sessions are not scored again)."""
        found: set[str] = set()
        with self._lock:
            for at in range(0, len(digests), _PARAMETERS):
                chunk = list(digests[at : at + _PARAMETERS])
                marks = ",".join("?" * len(chunk))
                query = f"SELECT digest FROM done WHERE digest IN ({marks})"
                found.update(str(row[0]) for row in self._db.execute(query, chunk))
        return found

    def recording(self, cases: Sequence[tuple[str, str, str]]) -> None:
        """Note, before their cases are written to the history, the sessions about to be
        recorded (digest, session, case id): a crash between that write and :meth:`done_many`
        is then settled at the next start (:meth:`settle`) instead of scoring them twice."""
        if not cases:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._insert("INSERT OR REPLACE INTO recording VALUES", list(cases))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def settle(self, recorded: Callable[[str], bool], now: float) -> int:
        """At a start: each session noted as being recorded whose case the history holds
        (``recorded(case_id)``) counts as scored (its spans are forgotten when it is next due,
        never scored again); the others are scored afresh. How many were recorded."""
        with self._lock:
            rows = self._db.execute("SELECT digest, session, case_id FROM recording").fetchall()
            kept = [(str(d), s, now) for d, s, case_id in rows if recorded(str(case_id))]
            self._db.execute("BEGIN")
            try:
                self._insert("INSERT OR REPLACE INTO done VALUES", kept)
                self._db.execute("DELETE FROM recording")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return len(kept)

    def done(self, closed: Closed, now: float) -> None:
        """Forget a scored session's spans; remember its digest (not scored again)."""
        self.done_many([closed], now)

    def done_many(self, closed: Sequence[Closed], now: float) -> None:
        """Forget scored sessions' spans and remember their digests, in one transaction."""
        if not closed:
            return
        trace_ids = [trace_id for item in closed for trace_id in item.traces]
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._delete("spans", trace_ids)
                self._delete("traces", trace_ids)
                self._insert(
                    "INSERT OR REPLACE INTO done VALUES",
                    [(item.digest, item.key, now) for item in closed],
                )
                self._delete_recording([item.digest for item in closed])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            for item in closed:
                self._forget(item)
            while len(self._closed) > 100_000:
                self._closed.popitem(last=False)

    def _delete_recording(self, digests: Sequence[str]) -> None:
        for at in range(0, len(digests), _PARAMETERS):
            chunk = list(digests[at : at + _PARAMETERS])
            marks = ",".join("?" * len(chunk))
            self._db.execute(f"DELETE FROM recording WHERE digest IN ({marks})", chunk)

    def _forget(self, closed: Closed) -> None:
        """A session's traces out of the open ones (its spans and rows already deleted)."""
        self._evicted.discard(closed.key)
        if self._members.get(closed.key) == closed.traces:
            del self._members[closed.key]
        else:  # traces came for the session while it was scored: they stay open
            left = [t for t in self._members.get(closed.key, ()) if t not in closed.traces]
            self._members.pop(closed.key, None)
            if left:
                self._members[closed.key] = left
        for trace_id in closed.traces:
            self._traces.pop(trace_id, None)
            self._closed[trace_id] = None
        self._refresh(closed.key)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _session_of(spans: Iterable[Span]) -> str | None:
    for span in spans:
        for name in SESSION_ATTRIBUTES:
            value = span.attributes.get(name)
            if value:
                return str(value)
    return None


def digest_of(spans: Iterable[Span]) -> str:
    """The sha256 of a session's spans (their ids and ends, in order): equal for spans re-sent."""
    found = hashlib.sha256()
    for key in sorted((s.trace_id, s.span_id, s.end_ns) for s in spans):
        found.update(f"{key[0]}:{key[1]}:{key[2]};".encode())
    return found.hexdigest()
