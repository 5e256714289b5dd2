"""Converting a span store to traces JSON with several processes (``assay traces convert``).

Building invocations is pure Python and most of a conversion's time; the sessions are
independent, so worker processes each build a share (in chunks, read from the span store's
SQLite file) and send back the JSON of each, which the parent writes in session order.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from assay.traces.export import session_key
from assay.traces.store import Group, SessionStream, build_group

Built = tuple[str, str, str | None, list[str]]
"""A session built by a worker: its case key, its invocations' JSON, problem and notes."""

_CHUNK = 64
_db: sqlite3.Connection | None = None
_attribute: str | None = None


def _start(path: str, attribute: str | None) -> None:
    global _db, _attribute
    _db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    _attribute = attribute


def _build(groups: list[Group]) -> list[Built]:
    assert _db is not None
    found: list[Built] = []
    for group in groups:
        session = build_group(_db, group)
        text = "[" + ", ".join(i.model_dump_json(exclude_none=True) for i in session.invocations)
        text += "]"
        found.append((session_key(session, _attribute), text, session.problem, session.notes))
    return found


def _chunks(groups: list[Group]) -> Iterator[list[Group]]:
    for start in range(0, len(groups), _CHUNK):
        yield groups[start : start + _CHUNK]


def built_sessions(
    stream: SessionStream, attribute: str | None = None, workers: int | None = None
) -> Iterator[Built]:
    """Every session of ``stream`` built (in worker processes when there are enough sessions
    and CPUs), in session order. Closes the stream."""
    groups = stream.groups()
    count = workers or min(os.cpu_count() or 1, 8)
    try:
        if count < 2 or len(groups) < 4 * _CHUNK:
            _start(stream.path, attribute)
            for chunk in _chunks(groups):
                yield from _build(chunk)
            return
        context = multiprocessing.get_context("spawn")
        with context.Pool(count, initializer=_start, initargs=(stream.path, attribute)) as pool:
            for built in pool.imap(_build, _chunks(groups)):
                yield from built
    finally:
        stream.close()


def write_built(built: Iterable[Built], out: str | Path) -> tuple[int, list[Built]]:
    """Write ``{key: [Invocation, ...]}`` atomically; the number of sessions and, for each
    session with a problem or notes, its entry (without the JSON)."""
    path = Path(out)
    handle, name = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent or ".")
    count, said = 0, []
    seen: dict[str, int] = {}
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write("{")
            for key, text, problem, notes in built:
                seen[key] = seen.get(key, 0) + 1
                unique = key if seen[key] == 1 else f"{key}~{seen[key]}"
                file.write(",\n" if count else "\n")
                file.write(f"  {json.dumps(unique, ensure_ascii=False)}: {text}")
                count += 1
                if problem is not None or notes:
                    said.append((unique, "", problem, notes))
            file.write("\n}\n")
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return count, said
