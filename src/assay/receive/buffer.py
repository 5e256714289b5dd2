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
``max_sessions`` open (the one idle longest is closed early, with a problem). Spans of a trace
that already closed (late or re-sent ones) are dropped. Sessions scored are remembered by a
digest of their spans, so spans sent twice are not scored twice.
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
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
"""


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
            return len(self._groups())

    def add(self, spans: Sequence[Span], now: float) -> None:
        """Keep ``spans`` (one request's) until their sessions close."""
        by_trace: dict[str, list[Span]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, []).append(span)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                for trace_id, group in by_trace.items():
                    self._add_trace(trace_id, group, now)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _add_trace(self, trace_id: str, spans: list[Span], now: float) -> None:
        if trace_id in self._closed:
            self.dropped += len(spans)
            return
        trace = self._traces.get(trace_id)
        if trace is None:
            self._make_room(now)
            trace = self._traces[trace_id] = _Trace(None, False, 0, now)
        trace.session = trace.session or _session_of(spans)
        trace.last = now
        group = self._group_spans(trace.session or trace_id) if trace.session else trace.spans
        room = self.limits.max_spans - group
        if room < len(spans):
            self.dropped += len(spans) - max(room, 0)
            spans = spans[: max(room, 0)]
            trace.problem = (
                f"more than {self.limits.max_spans} spans in the session: the rest were dropped"
            )
        trace.ended = trace.ended or any(span.parent_id is None for span in spans)
        trace.spans += len(spans)
        if spans:
            self._db.execute(
                "INSERT INTO spans VALUES (?, ?)", (trace_id, pickle.dumps(spans, protocol=5))
            )
        self._db.execute(
            "INSERT OR REPLACE INTO traces VALUES (?, ?, ?, ?, ?, ?)",
            (trace_id, trace.session, int(trace.ended), trace.spans, trace.last, trace.problem),
        )

    def _group_spans(self, key: str) -> int:
        return sum(t.spans for tid, t in self._traces.items() if (t.session or tid) == key)

    def _groups(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for trace_id, trace in self._traces.items():
            groups.setdefault(trace.session or trace_id, []).append(trace_id)
        return groups

    def _make_room(self, now: float) -> None:
        """Over ``max_sessions`` open: the session idle longest is marked to close now."""
        groups = self._groups()
        if len(groups) < self.limits.max_sessions:
            return
        oldest = min(groups, key=lambda key: max(self._traces[t].last for t in groups[key]))
        for trace_id in groups[oldest]:
            trace = self._traces[trace_id]
            trace.last = now - self.limits.idle_timeout_s - 1
            trace.problem = trace.problem or (
                f"closed early: more than {self.limits.max_sessions} sessions were open at once"
            )

    def due(self, now: float) -> list[str]:
        """The sessions to close now (see the module docstring)."""
        with self._lock:
            due = []
            for key, trace_ids in self._groups().items():
                traces = [self._traces[t] for t in trace_ids]
                last = max(t.last for t in traces)
                ended = all(t.ended for t in traces)
                keyed = any(t.session for t in traces)
                if now - last >= self.limits.idle_timeout_s or (
                    ended and (not keyed or now - last >= self.limits.settle_s)
                ):
                    due.append(key)
            return due

    def take(self, key: str) -> Closed:
        """The spans of session ``key`` (kept until :meth:`done`)."""
        with self._lock:
            trace_ids = [t for t, trace in self._traces.items() if (trace.session or t) == key]
            spans: list[Span] = []
            for trace_id in trace_ids:
                for (body,) in self._db.execute(
                    "SELECT body FROM spans WHERE trace_id = ? ORDER BY rowid", (trace_id,)
                ):
                    spans.extend(pickle.loads(body))
            problems = [p for t in trace_ids if (p := self._traces[t].problem)]
            if not all(self._traces[t].ended for t in trace_ids):
                problems.append(
                    f"never ended: its root span had not arrived after "
                    f"{self.limits.idle_timeout_s:g} s without a span (--idle-timeout)"
                )
        problem = "; ".join(dict.fromkeys(problems)) or None
        return Closed(key, trace_ids, spans, problem, digest_of(spans))

    def scored_before(self, digest: str) -> bool:
        with self._lock:
            found = self._db.execute("SELECT 1 FROM done WHERE digest = ?", (digest,)).fetchone()
        return found is not None

    def done(self, closed: Closed, now: float) -> None:
        """Forget a scored session's spans; remember its digest (not scored again)."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                for trace_id in closed.traces:
                    self._db.execute("DELETE FROM spans WHERE trace_id = ?", (trace_id,))
                    self._db.execute("DELETE FROM traces WHERE trace_id = ?", (trace_id,))
                self._db.execute(
                    "INSERT OR REPLACE INTO done VALUES (?, ?, ?)", (closed.digest, closed.key, now)
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            for trace_id in closed.traces:
                self._traces.pop(trace_id, None)
                self._closed[trace_id] = None
            while len(self._closed) > 100_000:
                self._closed.popitem(last=False)

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
