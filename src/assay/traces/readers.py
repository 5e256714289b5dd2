"""Reading span files, streamed, whatever their format (detected from their content).

* OTLP/JSON as the collector's file exporter writes it: one ``{"resourceSpans": [...]}`` a line;
* a single OTLP/JSON document (read with ijson, a span at a time);
* Jaeger's JSON export (``{"data": [{"traceID", "spans", "processes"}]}``), a trace at a time;
* OTLP protobuf: one ``ExportTraceServiceRequest``, or the collector's length-prefixed messages;
* gzip of any of these (found by its magic bytes).

A problem with the file itself (not JSON, not OTLP, cut short) raises
:class:`~assay.errors.TracesError` naming the file, where in it, and the last span read; the
spans before it have been given already.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import ijson  # type: ignore[import-untyped]

from assay._internal.json_stream import backend
from assay.errors import Problem, TracesError
from assay.traces.spans import (
    Span,
    SpanEvent,
    attributes,
    hex_id,
    nanos,
    span_kind,
    status_code,
)

_GZIP = b"\x1f\x8b"
_ALIASES = {
    "resource_spans": "resourceSpans",
    "scope_spans": "scopeSpans",
    "instrumentationLibrarySpans": "scopeSpans",
    "instrumentation_library_spans": "scopeSpans",
    "instrumentationLibrary": "scope",
    "instrumentation_library": "scope",
}


class Tracker:
    """Where reading is, for messages: the file, a line, the last span id read."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.last_span = ""
        self.line = 0

    def error(self, message: str) -> TracesError:
        where = f"line {self.line}" if self.line else ""
        after = f" (after span {self.last_span})" if self.last_span else " (before any span)"
        return TracesError([Problem(self.file, where, message + after)])


@contextmanager
def open_spans(path: str | Path) -> Iterator[Any]:
    """A span file opened for reading bytes, un-gzipped when it is gzip (by magic bytes)."""
    file = str(path)
    try:
        raw = Path(path).open("rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise TracesError([Problem(file, "", f"cannot read: {exc.strerror or exc}")]) from None
    with raw:
        if raw.read(2) == _GZIP:
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw) as unzipped:
                yield unzipped
        else:
            raw.seek(0)
            yield raw


def read_spans(path: str | Path) -> Iterator[Span]:
    """Every span of a file, in file order; raises TracesError on a file-level problem."""
    tracker = Tracker(str(path))
    with open_spans(path) as handle:
        try:
            yield from _by_content(handle, tracker)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise tracker.error(f"cannot read: {exc}") from None


def _by_content(handle: Any, tracker: Tracker) -> Iterator[Span]:
    raw_head = handle.peek(64)[:64]
    head = raw_head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not raw_head:
        raise tracker.error("empty file: expected OTLP spans (JSON or protobuf) or a Jaeger export")
    if head[:1] in (b"{", b"["):
        yield from _json(handle, tracker)
    elif raw_head[:1] in (b"\x0a", b"\x00"):
        yield from _proto(handle, tracker)
    else:
        raise tracker.error(
            "not a span file: expected OTLP/JSON, OTLP protobuf or a Jaeger JSON export"
        )


# --------------------------------------------------------------------------- OTLP/JSON


def json_lines(handle: Any) -> bool:
    """Whether an open span file is OTLP/JSON lines: its first line a whole request."""
    first = handle.readline(1 << 20)
    handle.seek(0)
    try:
        top = json.loads(first.decode("utf-8", "replace")) if first.endswith(b"\n") else None
    except ValueError:
        top = None
    return isinstance(top, dict) and "data" not in top


def _json(handle: Any, tracker: Tracker) -> Iterator[Span]:
    """Lines of OTLP/JSON when the first line is a whole request, else one document."""
    if json_lines(handle):
        yield from _json_lines(handle, tracker)
    else:
        yield from _json_document(handle, tracker)


def _json_lines(handle: IO[bytes], tracker: Tracker) -> Iterator[Span]:
    for number, raw in enumerate(handle, start=1):
        tracker.line = number
        yield from line_spans(raw, tracker)


def line_spans(raw: bytes, tracker: Tracker) -> Iterator[Span]:
    """The spans of one line of OTLP/JSON lines (``tracker.line`` says which)."""
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        return
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise tracker.error(f"not JSON ({exc.msg}): the file is cut short or corrupt") from None
    if not isinstance(doc, dict):
        raise tracker.error("expected an object with 'resourceSpans'")
    yield from spans_from_request(doc, tracker)


def spans_from_request(doc: dict[str, Any], tracker: Tracker) -> Iterator[Span]:
    """The spans of one OTLP/JSON ``ExportTraceServiceRequest`` (or a Jaeger document)."""
    if "data" in doc and isinstance(doc["data"], list):
        for trace in doc["data"]:
            yield from _jaeger_trace(trace, tracker)
        return
    groups = doc.get("resourceSpans", doc.get("resource_spans"))
    if not isinstance(groups, list):
        raise tracker.error("expected an object with 'resourceSpans' (OTLP/JSON)")
    for group in groups:
        if not isinstance(group, dict):
            raise tracker.error("expected each of 'resourceSpans' to be an object")
        resource = attributes((group.get("resource") or {}).get("attributes"))
        scopes = group.get(
            "scopeSpans", group.get("scope_spans", group.get("instrumentationLibrarySpans"))
        )
        for scoped in scopes or []:
            scope = scoped.get("scope") or scoped.get("instrumentationLibrary") or {}
            for raw in scoped.get("spans") or []:
                yield _otlp_span(raw, resource, str(scope.get("name") or ""), tracker)


def _otlp_span(raw: Any, resource: dict[str, Any], scope: str, tracker: Tracker) -> Span:
    if not isinstance(raw, dict):
        raise tracker.error("expected a span object")
    span_id = hex_id(raw.get("spanId", raw.get("span_id")))
    trace_id = hex_id(raw.get("traceId", raw.get("trace_id")))
    if not span_id or not trace_id:
        tracker.last_span = span_id or tracker.last_span
        raise tracker.error("a span without a traceId or spanId")
    tracker.last_span = span_id
    parent = hex_id(raw.get("parentSpanId", raw.get("parent_span_id")))
    status = raw.get("status") or {}
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent or None,
        name=str(raw.get("name") or ""),
        kind=span_kind(raw.get("kind", 1)),
        start_ns=nanos(raw.get("startTimeUnixNano", raw.get("start_time_unix_nano"))),
        end_ns=nanos(raw.get("endTimeUnixNano", raw.get("end_time_unix_nano"))),
        status_code=status_code(status.get("code")),
        status_message=str(status.get("message") or ""),
        attributes=attributes(raw.get("attributes")),
        events=[
            SpanEvent(
                str(e.get("name") or ""),
                nanos(e.get("timeUnixNano", e.get("time_unix_nano"))),
                attributes(e.get("attributes")),
            )
            for e in raw.get("events") or []
            if isinstance(e, dict)
        ],
        resource=resource,
        scope=scope,
    )


def _json_document(handle: IO[bytes], tracker: Tracker) -> Iterator[Span]:
    """One JSON document, a span (OTLP) or a trace (Jaeger) at a time."""
    parser = backend().parse(handle, use_float=True, multiple_values=True)
    resource: dict[str, Any] = {}
    scope = ""
    try:
        for prefix, event, value in parser:
            if event != "start_map":
                continue
            path = ".".join(_ALIASES.get(p, p) for p in prefix.split("."))
            if path == "resourceSpans.item":
                resource, scope = {}, ""
            elif path == "resourceSpans.item.resource":
                resource = attributes(_build(parser, event, value).get("attributes"))
            elif path == "resourceSpans.item.scopeSpans.item.scope":
                scope = str(_build(parser, event, value).get("name") or "")
            elif path == "resourceSpans.item.scopeSpans.item.spans.item":
                yield _otlp_span(_build(parser, event, value), resource, scope, tracker)
            elif path == "data.item":
                yield from _jaeger_trace(_build(parser, event, value), tracker)
    except ijson.JSONError as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise tracker.error(f"not JSON ({why}): the file is cut short or corrupt") from None
    if not tracker.last_span:
        raise tracker.error("no spans: expected OTLP/JSON ('resourceSpans') or a Jaeger export")


def _build(parser: Iterator[tuple[str, str, Any]], event: str, value: Any) -> Any:
    builder = ijson.ObjectBuilder()
    builder.event(event, value)
    depth = 1
    for _prefix, event, value in parser:
        builder.event(event, value)
        if event in ("start_map", "start_array"):
            depth += 1
        elif event in ("end_map", "end_array"):
            depth -= 1
            if depth == 0:
                break
    return builder.value


# --------------------------------------------------------------------------- Jaeger


def _jaeger_value(tag: dict[str, Any]) -> Any:
    value = tag.get("value")
    kind = str(tag.get("type") or "string").lower()
    if kind in ("int64", "int") and not isinstance(value, bool):
        try:
            return int(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return value
    if kind in ("float64", "float"):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return value
    return value


def _tags(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {t["key"]: _jaeger_value(t) for t in items if isinstance(t, dict) and "key" in t}


def _jaeger_trace(trace: Any, tracker: Tracker) -> Iterator[Span]:
    if not isinstance(trace, dict):
        raise tracker.error("expected each of 'data' to be a Jaeger trace object")
    processes = trace.get("processes") or {}
    for raw in trace.get("spans") or []:
        yield _jaeger_span(raw, processes, tracker)


def _jaeger_span(raw: Any, processes: dict[str, Any], tracker: Tracker) -> Span:
    if not isinstance(raw, dict) or not raw.get("spanID") or not raw.get("traceID"):
        raise tracker.error("a Jaeger span without traceID or spanID")
    tracker.last_span = hex_id(raw["spanID"])
    parent = None
    for ref in raw.get("references") or []:
        if isinstance(ref, dict) and ref.get("refType", "CHILD_OF") == "CHILD_OF":
            parent = hex_id(ref.get("spanID"))
            break
    tags = _tags(raw.get("tags"))
    process = processes.get(str(raw.get("processID")), {}) if isinstance(processes, dict) else {}
    resource = _tags(process.get("tags")) if isinstance(process, dict) else {}
    if isinstance(process, dict) and process.get("serviceName"):
        resource["service.name"] = process["serviceName"]
    start_ns = int(raw.get("startTime") or 0) * 1000
    error = tags.pop("error", False) in (True, "true")
    code = str(tags.pop("otel.status_code", "ERROR" if error else "UNSET")).upper()
    return Span(
        trace_id=hex_id(raw["traceID"]).rjust(32, "0"),
        span_id=tracker.last_span,
        parent_id=parent,
        name=str(raw.get("operationName") or ""),
        kind=str(tags.pop("span.kind", "internal")).upper(),
        start_ns=start_ns,
        end_ns=start_ns + int(raw.get("duration") or 0) * 1000,
        status_code=code,
        status_message=str(tags.pop("otel.status_description", "")),
        attributes=tags,
        events=[
            SpanEvent(
                str(_tags(log.get("fields")).get("event", "")),
                int(log.get("timestamp") or 0) * 1000,
                _tags(log.get("fields")),
            )
            for log in raw.get("logs") or []
            if isinstance(log, dict)
        ],
        resource=resource,
        scope=str(tags.pop("otel.scope.name", tags.pop("otel.library.name", ""))),
    )


# --------------------------------------------------------------------------- OTLP protobuf


def _proto(handle: Any, tracker: Tracker) -> Iterator[Span]:
    """One ``ExportTraceServiceRequest`` (read whole: protobuf cannot be streamed), or the
    collector's messages each after its 4-byte big-endian length (read a message at a time)."""
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped,unused-ignore]

    framed = handle.peek(1)[:1] == b"\x00"
    while True:
        if framed:
            head = handle.read(4)
            if not head:
                return
            size = int.from_bytes(head, "big")
            body = handle.read(size)
            if len(head) < 4 or len(body) < size:
                raise tracker.error("cut short: a protobuf message is incomplete")
        else:
            body = handle.read()
        try:
            yield from spans_from_protobuf(body, tracker)
        except DecodeError as exc:
            raise tracker.error(f"not an OTLP ExportTraceServiceRequest ({exc})") from None
        if not framed:
            return


def spans_from_protobuf(body: bytes, tracker: Tracker) -> Iterator[Span]:
    """The spans of one protobuf ``ExportTraceServiceRequest``."""
    from google.protobuf.json_format import (  # type: ignore[import-untyped,unused-ignore]
        MessageToDict,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    if not request.resource_spans and body:
        raise tracker.error("not an OTLP ExportTraceServiceRequest (no resource spans)")
    for group in request.resource_spans:
        resource = attributes(MessageToDict(group.resource).get("attributes"))
        for scoped in group.scope_spans:
            for span in scoped.spans:
                raw = MessageToDict(span)
                raw["traceId"], raw["spanId"] = span.trace_id.hex(), span.span_id.hex()
                raw["parentSpanId"] = span.parent_span_id.hex()
                yield _otlp_span(raw, resource, scoped.scope.name, tracker)


def spans_from_otlp(body: bytes, content_type: str, source: str) -> list[Span]:
    """The spans of one OTLP/HTTP request body (protobuf, or JSON when ``content_type`` says
    so); already un-gzipped. Raises TracesError naming ``source``."""
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped,unused-ignore]

    tracker = Tracker(source)
    if "json" in content_type.lower():
        try:
            doc = json.loads(body.decode("utf-8", "replace"))
        except ValueError as exc:
            raise tracker.error(f"not JSON ({exc})") from None
        if not isinstance(doc, dict):
            raise tracker.error("expected an object with 'resourceSpans'")
        return list(spans_from_request(doc, tracker))
    try:
        return list(spans_from_protobuf(body, tracker))
    except DecodeError as exc:
        raise tracker.error(f"not an OTLP ExportTraceServiceRequest ({exc})") from None
