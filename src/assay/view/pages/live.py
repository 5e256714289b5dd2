"""A run in progress, live: ``GET /runs/{run_id}/events``, server-sent events of its cases.

The stream polls the history file every :data:`POLL_S` through a read-only SQLite connection of
its own (the writer, ``assay eval`` in this process or another, is never blocked: WAL mode), and
sends, as ``event: case``, each case that finished since the last poll (its place, status and
each metric's status and score, read from the stored record without decoding the whole case),
then ``event: counts`` (finished, passed, failed, not evaluated, and the run's total when it is
known), and ``event: end`` once the run is no longer ``running``. A run that has already ended
gets its counts and ``end`` at once, without its cases (its page lists them). A comment line
every :data:`HEARTBEAT_S` keeps proxies and the browser from giving up on a quiet run.

New cases are found by their ``case_results`` rowid, which grows as rows are committed, so a
poll reads only the rows after the last one it saw (a range of the table's own b-tree: no scan
of the run, however large), in the order they were written. A running run's stream starts with
its last :data:`BACKLOG` cases (a page shows no more than that many added rows), and keeps its
counts from the cases it reads (counted in full once at the start and again at the end). Each
case event's ``id`` is its rowid, so a browser that reconnects (it sends the last id as
``Last-Event-ID``; ``?after=ID`` does the same) gets only the cases after it.

A stream ends when the client goes away (Starlette cancels it) and when the server stops:
uvicorn waits for open responses before it shuts down, so whoever stops the server calls
:func:`close_streams` first, which every stream notices within one poll.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio.to_thread
import pydantic_core
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from assay.history.compact import RECORD_VERSION, parse_header
from assay.history.records import HistoryError, pid_alive
from assay.metrics.base import EvalStatus
from assay.report import numbers
from assay.report.html_summary import status_class
from assay.view.context import view_of

POLL_S = 0.5
"""Seconds between two looks at the history."""
HEARTBEAT_S = 15.0
"""Seconds of silence after which a comment line is sent."""
BATCH = 500
"""Cases read per query (a run's backlog is sent a batch at a time, without waiting)."""
BACKLOG = 1000
"""A running run's cases its stream starts with, at most (the latest)."""
RETRY_MS = 2000
"""How long a browser waits before it reconnects a dropped stream."""


@dataclass
class LiveState:
    """What the app's streams share: whether the server is closing, and the totals of runs
    whose size the process running them knows (``assay eval --view``)."""

    closing: threading.Event = field(default_factory=threading.Event)
    totals: dict[str, int] = field(default_factory=dict)
    open: int = 0
    """Streams now open (they are all on the server's event loop)."""


_STATE_LOCK = threading.Lock()


def live_state(app: Starlette) -> LiveState:
    """The app's :class:`LiveState` (made on first use)."""
    with _STATE_LOCK:
        state = getattr(app.state, "live", None)
        if not isinstance(state, LiveState):
            state = LiveState()
            app.state.live = state
        return state


def close_streams(app: Starlette, grace_s: float = 0.0) -> None:
    """End every open event stream of ``app`` (within one poll) and refuse new ones: call it
    before stopping the server, which otherwise waits for them. ``grace_s``: first wait that
    long for them to end by themselves (a run that has just ended sends its ``end`` within one
    poll)."""
    state = live_state(app)
    deadline = time.monotonic() + grace_s
    while state.open and time.monotonic() < deadline:
        time.sleep(0.05)
    state.closing.set()


def expect_cases(app: Starlette, run_id: str, total: int) -> None:
    """Say that run ``run_id`` will have ``total`` case results (the streams send "N of M")."""
    live_state(app).totals[run_id] = total


@dataclass(frozen=True)
class LiveCase:
    """One finished case as the stream sends it."""

    eval_set_id: str
    eval_id: str
    run: int
    status: int
    rowid: int
    metrics: list[dict[str, Any]]

    def event(self, run_id: str) -> dict[str, Any]:
        place = "/".join(quote(str(part), safe="") for part in (self.eval_set_id, self.eval_id))
        return {
            "set": self.eval_set_id,
            "eval_id": self.eval_id,
            "run": self.run,
            "key": f"{self.eval_set_id}/{self.eval_id}/{self.run}",
            "status": _status_name(self.status),
            "class": _status_class(self.status),
            "href": f"/runs/{quote(run_id, safe='')}/cases/{place}/{self.run}",
            "metrics": self.metrics,
        }


@dataclass
class Poll:
    """What one look at the history found."""

    status: str
    cases: list[LiveCase]
    counts: dict[str, int]
    more: bool
    """More cases are waiting (the batch was full): look again at once."""


class RunReader:
    """Reads one run's newly finished cases, in the order they were written, through a
    read-only connection of its own; :meth:`close` when done."""

    def __init__(self, path: Path, run_id: str, after: int | None = None) -> None:
        self.path, self.run_id = path, run_id
        self.cursor = after
        """The rowid of the last case read (None: not started)."""
        self._counts: dict[str, int] = {}
        self._counted_to = 0
        """The last rowid :meth:`counts` counted: later ones are counted as they are read."""
        self._names: dict[int, list[tuple[str, float | None]]] = {}
        try:
            self._db = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, timeout=5, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise HistoryError(f"{path}: cannot read the run history: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return list(self._db.execute(sql, params).fetchall())
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot read the run history: {exc}") from None

    def status(self) -> str | None:
        """The run's status (a ``running`` run whose process on this host is gone reads as
        ``interrupted``); None when there is no such run."""
        rows = self._read("SELECT status, host, pid FROM runs WHERE id = ?", (self.run_id,))
        if not rows:
            return None
        status, host, pid = rows[0]
        if status == "running" and host == socket.gethostname() and pid and not pid_alive(pid):
            return "interrupted"
        return str(status)

    def counts(self) -> dict[str, int]:
        """Finished, passed, failed and not evaluated case results, counted afresh."""
        found = dict.fromkeys(("passed", "failed", "not_evaluated"), 0)
        for status, count, last in self._read(
            "SELECT status, COUNT(*), MAX(rowid) FROM case_results WHERE run_id = ? "
            "GROUP BY status",
            (self.run_id,),
        ):
            found[_COUNTED.get(int(status), "not_evaluated")] += int(count)
            self._counted_to = max(self._counted_to, int(last))
        self._counts = {"finished": sum(found.values()), **found}
        return dict(self._counts)

    def _start(self) -> None:
        """Count the run, and start from its last :data:`BACKLOG` cases (or where asked)."""
        self.counts()
        if self.cursor is None:
            rows = self._read(
                "SELECT rowid FROM case_results WHERE run_id = ? ORDER BY rowid DESC "
                "LIMIT 1 OFFSET ?",
                (self.run_id, BACKLOG),
            ) or self._read(  # fewer: from its first, else from the end of the table
                "SELECT COALESCE((SELECT MIN(rowid) FROM case_results WHERE run_id = ?) - 1, "
                "(SELECT MAX(rowid) FROM case_results), 0)",
                (self.run_id,),
            )
            self.cursor = int(rows[0][0])

    def new_cases(self) -> list[LiveCase]:
        """Up to :data:`BATCH` cases committed since the last call, oldest first (counted)."""
        if self.cursor is None:
            self._start()
        rows = self._read(
            "SELECT rowid, eval_set_id, eval_id, run_number, status, result FROM case_results "
            "WHERE rowid > ? AND +run_id = ? ORDER BY rowid LIMIT ?",  # + : by rowid range
            (self.cursor, self.run_id, BATCH),
        )
        found: list[LiveCase] = []
        for rowid, set_id, eval_id, run, status, text in rows:
            self.cursor = int(rowid)
            if rowid > self._counted_to:
                word = _COUNTED.get(int(status), "not_evaluated")
                self._counts[word] = self._counts.get(word, 0) + 1
                self._counts["finished"] = self._counts.get("finished", 0) + 1
            found.append(
                LiveCase(
                    str(set_id), str(eval_id), int(run), int(status), int(rowid),
                    self._metrics(str(text)),
                )
            )  # fmt: skip
        return found

    def _metrics(self, text: str) -> list[dict[str, Any]]:
        """Each metric's name, status and score, as the case's own verdicts (not per turn)."""
        try:
            data = pydantic_core.from_json(text)
        except ValueError:
            return []
        if isinstance(data, dict) and data.get("v") == RECORD_VERSION:
            heads = self._header(int(data.get("k", -1)))
            statuses = bytes.fromhex(str(data.get("t", "")))
            scores = data.get("s") or []
            return [
                _metric(name, statuses[i], scores[i] if i < len(scores) else None, threshold)
                for i, (name, threshold) in enumerate(heads)
                if i < len(statuses)
            ]
        overall = data.get("overall_eval_metric_results") if isinstance(data, dict) else None
        return [
            _metric(m.get("metric_name"), m.get("eval_status"), m.get("score"), m.get("threshold"))
            for m in overall or []
            if isinstance(m, dict)
        ]

    def _header(self, number: int) -> list[tuple[str, float | None]]:
        if number not in self._names:
            for found, text in self._read(
                "SELECT number, header FROM run_metrics WHERE run_id = ?", (self.run_id,)
            ):
                heads = parse_header(str(text))
                self._names[int(found)] = [(str(h[0]), h[1]) for h in heads]
        return self._names.get(number, [])

    def first_poll(self) -> Poll:
        """:meth:`poll`, but a run that has already ended gets its counts only (its page lists
        its cases)."""
        status = self.status() or "missing"
        if status == "running":
            return self.poll()
        return Poll(status, [], self.counts(), False)

    def poll(self) -> Poll:
        """The run's status, then its new cases (so a run read as ended has all of them), and
        its counts (counted afresh once it has ended)."""
        status = self.status() or "missing"
        cases = self.new_cases()
        more = len(cases) == BATCH
        counts = self.counts() if status != "running" and not more else dict(self._counts)
        return Poll(status, cases, counts, more)


_COUNTED = {int(EvalStatus.PASSED): "passed", int(EvalStatus.FAILED): "failed"}


def _metric(name: Any, status: Any, score: Any, threshold: Any) -> dict[str, Any]:
    value = float(score) if isinstance(score, int | float) else None
    limit = float(threshold) if isinstance(threshold, int | float) else None
    code = int(status) if isinstance(status, int) else int(EvalStatus.NOT_EVALUATED)
    informational = code == EvalStatus.INFORMATIONAL
    text = (
        numbers.value_text(str(name), value) if informational else numbers.score_text(value, limit)
    )
    return {
        "name": str(name),
        "status": _status_name(code),
        "class": _status_class(code),
        "text": text,
    }


def _status_name(code: int) -> str:
    try:
        return EvalStatus(code).name
    except ValueError:
        return str(code)


def _status_class(code: int) -> str:
    try:
        return status_class(EvalStatus(code))
    except ValueError:
        return "n-a"


def _event(name: str, data: Any, event_id: str | None = None) -> str:
    lines = [f"event: {name}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    lines.append(f"data: {json.dumps(data, separators=(',', ':'))}")
    return "\n".join(lines) + "\n\n"


def _counts_event(run_id: str, poll: Poll, state: LiveState) -> dict[str, Any]:
    counts: dict[str, Any] = dict(poll.counts)
    total = state.totals.get(run_id)
    if poll.status != "running":
        total = max(total or 0, counts.get("finished", 0))
    return {"run": run_id, "status": poll.status, "total": total, **counts}


async def stream(reader: RunReader, state: LiveState) -> AsyncIterator[str]:
    """The run's events until it ends, the client goes away or the server closes."""
    run_id = reader.run_id
    state.open += 1
    try:
        yield f"retry: {RETRY_MS}\n\n"
        first, quiet_since = True, time.monotonic()
        while not state.closing.is_set():
            poll = await anyio.to_thread.run_sync(reader.first_poll if first else reader.poll)
            for case in poll.cases:
                yield _event("case", case.event(run_id), str(case.rowid))
            if first or poll.cases or poll.status != "running":
                yield _event("counts", _counts_event(run_id, poll, state))
                quiet_since = time.monotonic()
            first = False
            if poll.status != "running" and not poll.more:
                yield _event("end", _counts_event(run_id, poll, state))
                return
            if poll.more:
                continue
            if time.monotonic() - quiet_since >= HEARTBEAT_S:
                yield ": keep-alive\n\n"
                quiet_since = time.monotonic()
            await _sleep(POLL_S, state)
    finally:
        state.open -= 1
        reader.close()


async def _sleep(seconds: float, state: LiveState) -> None:
    """Wait ``seconds``, in short steps, so a closing server is noticed soon."""
    deadline = time.monotonic() + seconds
    while not state.closing.is_set() and (left := deadline - time.monotonic()) > 0:
        await anyio.sleep(min(left, 0.1))


def _after(request: Request) -> int | None:
    """The last case a reconnecting browser had (``Last-Event-ID``), or ``?after=``."""
    raw = request.headers.get("last-event-id") or request.query_params.get("after")
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


async def events(request: Request) -> Response:
    """``GET /runs/{run_id}/events``: the run's server-sent events (404 for no such run)."""
    view = view_of(request)
    state = live_state(request.app)
    if state.closing.is_set():
        return PlainTextResponse("503: the view is stopping\n", status_code=503)
    ref = request.path_params["run_id"]
    try:
        info = await anyio.to_thread.run_sync(view.store.find, ref)
    except HistoryError as exc:
        return PlainTextResponse(f"500: {exc}\n", status_code=500)
    if info is None:
        return PlainTextResponse(f"404: no run {ref!r} in the history\n", status_code=404)
    try:
        reader = RunReader(view.store.path, info.id, _after(request))
    except HistoryError as exc:
        return PlainTextResponse(f"500: {exc}\n", status_code=500)
    return StreamingResponse(
        stream(reader, state),
        media_type="text/event-stream",
        headers={"X-Accel-Buffering": "no"},
    )


routes: list[BaseRoute] = [Route("/runs/{run_id}/events", events, methods=["GET"])]
