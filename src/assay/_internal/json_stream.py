"""Reading large JSON inputs a piece at a time, without holding the file.

An eval set or traces file larger than ``ASSAY_STREAM_MB`` megabytes (:func:`should_stream`;
4 by default, ``0`` streams every file) is read with ijson: checked in full as it is read, each
case's JSON put into the process's spill file (:mod:`assay._internal.spill`) and parsed again only when the
case is scored. This module holds what the eval-set and traces readers share: the threshold, the
JSON event stream, a first pass that describes the top of a document without building its big
values (:func:`scan`), and a position for a syntax error ijson finds (:func:`syntax_problem`).

The eval-set object and the traces mapping are read first as spans (:class:`Spans`): each case's
text as the file has it, checked by a typed decoder and stored without building it as Python
objects (the 5,000-case benchmark's 10 MB set and 26 MB traces: 0.7-1.0 s of CPU each before,
0.3-0.5 s after). Whatever that reader is unsure of goes to the event reader, whose verdicts
and errors are the ones given.

A file that ijson's parser rejects but that is not larger than :data:`EXACT_LIMIT` is read again
the eager way, so that its error (or its success: ``NaN`` is JSON to pydantic, not to ijson) is
exactly what a small file gives.
"""

from __future__ import annotations

import codecs
import io
import math
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate, repeat, takewhile
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

import ijson  # type: ignore[import-untyped]
import msgspec

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


class SpanFallback(Exception):
    """What :class:`Spans` met is for the event reader to judge (malformed JSON, or text msgspec
    passes that yajl may not): read the document again with ijson's events."""


_BLANK = re.compile(rb"[ \t\n\r]*")
_TRAILING = re.compile(r"trailing characters \(byte ([0-9]+)\)")
_SPAN_CHUNK = 256 * 1024
_KINDS = {ord("{"): "start_map", ord("["): "start_array", ord('"'): "string", ord("t"): "boolean"}
_KINDS |= {ord("f"): "boolean", ord("n"): "null"} | {byte: "number" for byte in b"-0123456789"}
_KEY = msgspec.json.Decoder(str)


class Spans:
    """A JSON document read as the bytes of its values, a chunk of the file at a time.

    ijson builds every value as Python objects, where most readers want a value's text (to
    store it as it is, or to check it with a typed decoder); this takes each value's bytes from
    msgspec, which skips a value in C and says where it ends ("trailing characters (byte N)").
    Between values it reads only whitespace and punctuation. A value is checked no further than
    msgspec's skip checks it (brackets, strings, escapes, number syntax; not UTF-8, nor numbers
    too large for yajl): callers decode each span in full, and anything unexpected raises
    :class:`SpanFallback`, so that the event reader, whose errors are the ones reported, judges
    it.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._buffer = b""
        self._at = 0
        self._done = False

    def _more(self) -> bool:
        """Read on (at least doubling what is left, so a value of any size is read in linear
        time); False at the end of the file."""
        if self._done:
            return False
        chunk = self._handle.read(max(_SPAN_CHUNK, len(self._buffer) - self._at))
        if not chunk:
            self._done = True
            return False
        self._buffer = self._buffer[self._at :] + chunk
        self._at = 0
        return True

    def peek(self) -> int | None:
        """The next byte past whitespace, or None at the end of the document."""
        while True:
            match = _BLANK.match(self._buffer, self._at)
            self._at = match.end() if match else self._at
            if self._at < len(self._buffer):
                return self._buffer[self._at]
            if not self._more():
                return None

    def kind(self) -> str:
        """The event the next value starts with (``start_map``, ``string``...)."""
        byte = self.peek()
        if byte is None or byte not in _KINDS:
            raise SpanFallback("no value")
        return _KINDS[byte]

    def _take(self, byte: int) -> bool:
        if self.peek() != byte:
            return False
        self._at += 1
        return True

    def value(self) -> bytes:
        """The bytes of the next value."""
        self.kind()
        while True:
            try:
                msgspec.json.decode(memoryview(self._buffer)[self._at :], type=msgspec.Raw)
            except RecursionError:
                raise SpanFallback("nested too deep for msgspec") from None
            except msgspec.DecodeError as exc:
                found = _TRAILING.search(str(exc))
                if found is None:  # cut short by the chunk, or malformed
                    if self._more():
                        continue
                    raise SpanFallback(str(exc)) from None
                end = self._at + int(found[1]) - 1
            else:  # a number may go on in the next chunk
                if self._more():
                    continue
                end = len(self._buffer)
            if end <= self._at or end > len(self._buffer):  # pragma: no cover - msgspec's say
                raise SpanFallback("a position msgspec did not give")
            span = self._buffer[self._at : end].rstrip(b" \t\n\r")
            self._at = end
            return span

    def members(self) -> Iterator[str]:
        """The keys of the object that comes next, each once the caller has read its value
        (with :meth:`value` or :meth:`items`) before asking for the next."""
        if not self._take(ord("{")):
            raise SpanFallback("not an object")
        if self._take(ord("}")):
            return
        while True:
            if self.kind() != "string":
                raise SpanFallback("a key that is no string")
            try:
                key = _KEY.decode(self.value())
            except (msgspec.DecodeError, UnicodeDecodeError):
                raise SpanFallback("a key msgspec refuses") from None
            if not self._take(ord(":")):
                raise SpanFallback("no colon")
            yield key
            if self._take(ord("}")):
                return
            if not self._take(ord(",")):
                raise SpanFallback("no comma")

    def items(self) -> Iterator[bytes]:
        """The bytes of each item of the list that comes next."""
        if not self._take(ord("[")):
            raise SpanFallback("not a list")
        if self._take(ord("]")):
            return
        while True:
            yield self.value()
            if self._take(ord("]")):
                return
            if not self._take(ord(",")):
                raise SpanFallback("no comma")

    def end(self) -> None:
        """Make sure only whitespace is left."""
        if self.peek() is not None:
            raise SpanFallback("more after the document")


_DIGITS = bytearray(b" " * 256)
for _byte in b"0123456789":
    _DIGITS[_byte] = ord("0")
_DIGITS[ord("e")] = _DIGITS[ord("E")] = ord("e")
_DIGITS[ord("+")] = _DIGITS[ord("-")] = ord("+")


def yajl_unsure(span: bytes) -> bool:
    """Whether ``span`` has digits that may make a number yajl (ijson's parser) refuses where
    pydantic's and msgspec's parsers read it: an integer past 64 bits (19 digits or more), an
    exponent past a double's range (3 digits). Such a span is built by ijson, whose error is the
    one reported; digits inside strings count too, and only cost that slower way. (A C-level
    translate and three searches: a regex takes ten times as long.)"""
    shape = span.translate(_DIGITS)
    return b"0000000000000000000" in shape or b"e000" in shape or b"e+000" in shape


def built(span: bytes) -> Any:
    """The value ``span`` holds, as ijson builds it from a whole file (raises
    :class:`SpanFallback` where ijson finds it malformed)."""
    try:
        return next(items(io.BytesIO(span), ""))
    except Exception:  # malformed JSON, bytes that are not UTF-8, nested too deep...
        raise SpanFallback("refused by ijson") from None


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
