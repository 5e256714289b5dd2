"""Reading large JSON inputs a piece at a time, without holding the file.

An eval set or traces file larger than ``ASSAY_STREAM_MB`` megabytes (:func:`should_stream`;
16 by default, ``0`` streams every file) is read with ijson: checked in full as it is read, each
case's JSON put into the process's spill file (:mod:`assay._internal.spill`) and parsed again only when the
case is scored. This module holds what the eval-set and traces readers share: the threshold, the
JSON event stream, a first pass that describes the top of a document without building its big
values (:func:`scan`), and a position for a syntax error ijson finds (:func:`syntax_problem`).

A file that ijson's parser rejects but that is not larger than :data:`EXACT_LIMIT` is read again
the eager way, so that its error (or its success: ``NaN`` is JSON to pydantic, not to ijson) is
exactly what a small file gives.
"""

from __future__ import annotations

import codecs
import io
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate, repeat, takewhile
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

import ijson  # type: ignore[import-untyped]

from assay.errors import Problem

DEFAULT_STREAM_MB = 4.0
"""Files larger than this many megabytes are streamed unless ``ASSAY_STREAM_MB`` says otherwise."""

EXACT_LIMIT = 32 * 1024 * 1024
"""Up to this many bytes, a file ijson rejects is read again the eager way for its exact error;
above it, the error is reported from ijson's message and the position found in the file."""

STARTS = frozenset({"start_map", "start_array"})
ENDS = frozenset({"end_map", "end_array"})
JsonError: type[Exception] = ijson.JSONError
"""What ijson raises for malformed JSON (or bytes that are not UTF-8)."""

_CHUNK = 64 * 1024


class NotStreamable(Exception):
    """The file has a shape the streaming readers leave to the eager ones (a legacy list, a key
    given twice...): read it the usual way."""


def stream_threshold_mb() -> float:
    """``ASSAY_STREAM_MB`` as a number of megabytes (the default when unset or not a number)."""
    raw = os.environ.get("ASSAY_STREAM_MB", "").strip()
    try:
        value = float(raw) if raw else DEFAULT_STREAM_MB
    except ValueError:
        return DEFAULT_STREAM_MB
    return max(value, 0.0) if math.isfinite(value) else DEFAULT_STREAM_MB


def should_stream(path: Path) -> bool:
    """Whether to stream ``path``: a file larger than the threshold (any file at ``0``)."""
    try:
        size = path.stat().st_size if path.is_file() else -1
    except OSError:
        return False
    limit = stream_threshold_mb()
    return size >= 0 and (limit == 0 or size > limit * 1024 * 1024)


@cache
def backend() -> Any:
    """ijson's C backend (yajl2_c), or its default one where that is not built."""
    try:
        return ijson.get_backend("yajl2_c")
    except (ImportError, ValueError):  # pragma: no cover - wheels ship the C backend
        return ijson


Source = Path | bytes
"""A JSON document to stream: a file, or the text of a document found inside one."""


@contextmanager
def open_json(source: Source) -> Iterator[BinaryIO]:
    """The document for reading bytes; a file's past a UTF-8 byte-order mark (the eager readers
    drop it from a file's text)."""
    with source.open("rb") if isinstance(source, Path) else io.BytesIO(source) as handle:
        if isinstance(source, bytes) or handle.read(3) != codecs.BOM_UTF8:
            handle.seek(0)
        yield handle


def events(handle: BinaryIO) -> Iterator[tuple[str, Any]]:
    """ijson's basic events; numbers as ``int`` or ``float``, as the json module gives them."""
    return iter(backend().basic_parse(handle, use_float=True))


def items(handle: BinaryIO, prefix: str) -> Iterator[Any]:
    """The values found at ``prefix`` (``eval_cases.item``), each built as plain data."""
    return iter(backend().items(handle, prefix, use_float=True))


def kvitems(handle: BinaryIO) -> Iterator[tuple[str, Any]]:
    """The members of the top-level object, each value built as plain data."""
    return iter(backend().kvitems(handle, "", use_float=True))


def build(event: str, value: Any, rest: Iterator[tuple[str, Any]]) -> Any:
    """The value that starts with ``(event, value)``, taking the rest of it from ``rest``."""
    if event not in STARTS:
        return value
    builder = ijson.ObjectBuilder()
    builder.event(event, value)
    depth = 1
    for event, value in rest:
        builder.event(event, value)
        if event in STARTS:
            depth += 1
        elif event in ENDS:
            depth -= 1
            if depth == 0:
                break
    return builder.value


_DEPTH = {"start_map": 1, "start_array": 1, "end_map": -1, "end_array": -1}


def skip(event: str, rest: Iterator[tuple[str, Any]]) -> int:
    """Pass over the value that starts with ``event``; how many items it has, if a list.

    The events are walked by C-level iterators alone (no Python code runs per event): the depth
    after each event is a running sum, and the value ends where it comes back to 0. An item of a
    list ends with the one event after which the depth is 1 (its own, or its closing one)."""
    if event not in STARTS:
        return 0
    steps = map(_DEPTH.get, map(itemgetter(0), rest), repeat(0))
    depths = takewhile(bool, accumulate(steps, initial=1))
    next(depths)  # the initial depth, before any event
    return sum(map((1).__eq__, depths))


@dataclass
class Member:
    """One key of an object as :func:`scan` saw it: what its value starts with (``start_array``,
    ``string``...), the value when it was asked for, and its number of items when a list."""

    key: str
    kind: str
    value: Any = None
    items: int = 0


@dataclass
class Fields:
    """An object in a top-level list, as :func:`scan` saw it: the members it noted."""

    members: list[Member]


@dataclass
class Top:
    """The top of a JSON document: what it starts with, and

    * for an object, the members :func:`scan` was asked to note, in order (a key given twice
      appears twice);
    * for a list (when asked), each item: :class:`Fields` if it is an object, else the item;
    * for a string or other scalar, the value.
    """

    kind: str
    members: list[Member] = field(default_factory=list)
    elements: list[Fields | Any] = field(default_factory=list)
    value: Any = None


Note = Callable[[str], bool]
Keep = Callable[[str, str], bool]


def scan(source: Source, note: Note, keep: Keep, *, elements: bool) -> Top:
    """Read the whole of ``source`` (so a syntax error anywhere raises :data:`JsonError`), noting
    the members of the top-level object for which ``note(key)`` (building the value when
    ``keep(key, kind)``, ``kind`` being the event the value starts with), or, with
    ``elements``, those of each object in a top-level list.

    A top-level list without ``elements`` raises :class:`NotStreamable` at once.
    """
    with open_json(source) as handle:
        stream = events(handle)
        kind, value = next(stream, ("", None))
        if kind == "":  # pragma: no cover - ijson raises for a document without a value
            raise NotStreamable("empty")
        top = Top(kind)
        if kind == "start_map":
            top.members = _members(stream, note, keep)
        elif kind == "start_array":
            if not elements:
                raise NotStreamable("a list")
            for kind, value in stream:
                if kind == "end_array":
                    break
                if kind == "start_map":
                    top.elements.append(Fields(_members(stream, note, keep)))
                else:
                    top.elements.append(build(kind, value, stream))
        else:
            top.value = value
        for _ in stream:  # the rest must be whitespace: ijson raises otherwise
            pass
    return top


def _members(stream: Iterator[tuple[str, Any]], note: Note, keep: Keep) -> list[Member]:
    found: list[Member] = []
    for event, key in stream:
        if event == "end_map":
            break
        kind, value = next(stream)
        if not note(key):
            skip(kind, stream)
        elif keep(key, kind):
            found.append(Member(key, kind, build(kind, value, stream)))
        else:
            found.append(Member(key, kind, None, skip(kind, stream)))
    return found


TYPE_NAMES = {
    "start_map": "an object",
    "start_array": "a list",
    "string": "a string",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}
""":func:`assay._internal.files.type_name` of a value, by the event it starts with."""


def syntax_problem(path: Path, error: Exception) -> Problem:
    """A Problem for the JSON syntax error ijson raised while reading ``path``: its reason and
    the line and column it was found at (found by reading the file again)."""
    message = error.args[0] if error.args else ""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    lines = str(message).strip().splitlines()
    reason = lines[0] if lines else "invalid JSON"
    for prefix in ("parse error: ", "lexical error: "):
        reason = reason.removeprefix(prefix)
    reason = reason.rstrip(".")
    line, column = _error_position(path)
    return Problem(str(path), "", f"malformed JSON: {reason} at line {line} column {column}")


def _error_position(path: Path) -> tuple[int, int]:
    """Line and column (1-based, in characters) of the byte where ijson's parser stops (the
    last character when the JSON stops short)."""
    offset, at_end = _error_offset(path)
    line, last_line = 1, b""
    with open_json(path) as handle:
        read = 0
        while read < offset:
            chunk = handle.read(min(_CHUNK, offset - read))
            if not chunk:
                break
            read += len(chunk)
            breaks = chunk.count(b"\n")
            if breaks:
                line += breaks
                last_line = chunk[chunk.rindex(b"\n") + 1 :]
            else:
                last_line += chunk
    return line, len(last_line.decode("utf-8", "replace")) + (0 if at_end else 1)


def _error_offset(path: Path) -> tuple[int, bool]:
    """How many bytes (after any byte-order mark) the parser takes before it fails, and whether
    that is the whole file: the failing chunk is found feeding 64 KiB at a time, then fed again
    a byte at a time."""
    good = 0
    with open_json(path) as handle:
        parser = backend().basic_parse_coro(ijson.sendable_list(), use_float=True)
        while True:
            chunk = handle.read(_CHUNK)
            try:
                if not chunk:
                    parser.close()
                    return good, True
                parser.send(chunk)
            except JsonError:
                break
            good += len(chunk)
    with open_json(path) as handle:
        parser = backend().basic_parse_coro(ijson.sendable_list(), use_float=True)
        done = 0
        while done < good:
            part = handle.read(min(_CHUNK, good - done))
            parser.send(part)
            done += len(part)
        for byte in handle.read(_CHUNK):
            try:
                parser.send(bytes([byte]))
            except JsonError:
                return done, False
            done += 1
    return done, True  # the JSON stops short
