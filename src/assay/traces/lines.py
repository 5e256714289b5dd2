"""Parsing OTLP/JSON lines with several processes while the span store is filled.

Reading a collector file is mostly JSON parsing and span building, and its lines are
independent: worker processes turn batches of lines into span rows (trace id, session id,
start, span id, the span's stored form) while the parent stores them, in file order. A batch
with a problem is parsed again in the parent, so that its message names the line and the span
before it exactly as a one-process read does.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections import deque
from collections.abc import Iterator
from multiprocessing.pool import AsyncResult
from pathlib import Path

from assay.errors import TracesError
from assay.traces import conventions as conv
from assay.traces.readers import Tracker, json_lines, line_spans, open_spans, read_spans
from assay.traces.spans import Span

Row = tuple[str, str | None, int, str, bytes]
"""A span as the store takes it: trace id, session id, start, span id, stored form."""

_LINES = 16
"""Lines a batch (a collector line holds one export batch: up to 512 spans)."""


def row(span: Span) -> Row:
    body = pickle.dumps(span.as_tuple(), protocol=5)
    return span.trace_id, conv.session_id(span), span.start_ns, span.span_id, body


def _rows(job: tuple[str, int, list[bytes]]) -> list[Row] | None:
    """A batch of lines as rows, or None when one has a problem (the parent reports it)."""
    file, first, lines = job
    tracker = Tracker(file)
    found: list[Row] = []
    try:
        for number, raw in enumerate(lines, start=first):
            tracker.line = number
            found.extend(row(span) for span in line_spans(raw, tracker))
    except TracesError:
        return None
    return found


def file_rows(path: str | Path, workers: int = 1) -> Iterator[Row]:
    """The rows of every span of a file, in file order (TracesError as :func:`read_spans`)."""
    if workers > 1:
        with open_spans(path) as handle:
            lines = json_lines(handle)
        if lines:
            yield from _parallel(str(path), workers)
            return
    for span in read_spans(path):
        yield row(span)


def _batches(handle: Iterator[bytes]) -> Iterator[tuple[int, list[bytes]]]:
    batch: list[bytes] = []
    first = 1
    for number, raw in enumerate(handle, start=1):
        batch.append(raw)
        if len(batch) == _LINES:
            yield first, batch
            batch, first = [], number + 1
    if batch:
        yield first, batch


def _parallel(file: str, workers: int) -> Iterator[Row]:
    tracker = Tracker(file)
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool, open_spans(file) as handle:
        waiting: deque[tuple[int, list[bytes], AsyncResult[list[Row] | None]]] = deque()
        try:
            for first, lines in _batches(handle):
                waiting.append((first, lines, pool.apply_async(_rows, ((file, first, lines),))))
                if len(waiting) > 2 * workers:  # bounded: the file is never all in flight
                    yield from _take(waiting.popleft(), tracker)
            while waiting:
                yield from _take(waiting.popleft(), tracker)
        finally:
            # Leaving with batches in flight (a bad line, a reader that stops early) would make
            # the pool's exit terminate workers mid-task, which can hang; let them finish first.
            pool.close()
            for _first, _lines, result in waiting:
                result.wait()
            pool.join()


def _take(
    done: tuple[int, list[bytes], AsyncResult[list[Row] | None]], tracker: Tracker
) -> Iterator[Row]:
    first, lines, result = done
    rows = result.get()
    if rows is None:  # parsed again here, for the exact message
        for number, raw in enumerate(lines, start=first):
            tracker.line = number
            for span in line_spans(raw, tracker):
                tracker.last_span = span.span_id
                yield row(span)
        return
    if rows:
        tracker.last_span = rows[-1][3]
    yield from rows
