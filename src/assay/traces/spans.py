"""The span model every reader gives: one OpenTelemetry span with plain Python attributes.

OTLP ``AnyValue``s become Python values (``intValue`` strings become ints, arrays lists,
``kvlistValue`` dicts, bytes base64 text); ids are lowercase hex whatever the file spelled.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


@dataclass(slots=True)
class SpanEvent:
    """An event recorded on a span (an exception, a GenAI message event...)."""

    name: str
    time_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    """One span, whichever file format it came from."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str = "INTERNAL"
    start_ns: int = 0
    end_ns: int = 0
    status_code: str = "UNSET"
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""

    def as_tuple(self) -> tuple[Any, ...]:
        """The span as plain data (what the span store keeps)."""
        events = [(e.name, e.time_ns, e.attributes) for e in self.events]
        return (
            self.trace_id,
            self.span_id,
            self.parent_id,
            self.name,
            self.kind,
            self.start_ns,
            self.end_ns,
            self.status_code,
            self.status_message,
            self.attributes,
            events,
            self.resource,
            self.scope,
        )

    @classmethod
    def from_tuple(cls, data: tuple[Any, ...]) -> Span:
        events = [SpanEvent(name, time, attrs) for name, time, attrs in data[10]]
        trace_id, span_id, parent_id, name, kind, start, end, code, message, attrs = data[:10]
        return cls(
            trace_id,
            span_id,
            parent_id,
            name,
            kind,
            start,
            end,
            code,
            message,
            attrs,
            events,
            data[11],
            data[12],
        )


def hex_id(value: Any) -> str:
    """A trace or span id as lowercase hex: hex text, base64 text (some JSON writers) or bytes."""
    if isinstance(value, bytes):
        return value.hex()
    if not isinstance(value, str):
        return ""
    if len(value) in (16, 32):
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    text = value.strip()
    try:
        return base64.b64decode(text, validate=True).hex()
    except (binascii.Error, ValueError):
        return text.lower()


def any_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a Python value."""
    if not isinstance(value, dict):
        return value
    for key, converted in _SCALARS:
        if key in value:
            return converted(value[key])
    array = value.get("arrayValue", value.get("array_value"))
    if array is not None:
        return [any_value(v) for v in (array.get("values") or [])]
    kvlist = value.get("kvlistValue", value.get("kvlist_value"))
    if kvlist is not None:
        return attributes(kvlist.get("values"))
    return None


def _int(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def _float(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


_SCALARS: tuple[tuple[str, Any], ...] = (
    ("stringValue", lambda v: v),
    ("string_value", lambda v: v),
    ("intValue", _int),
    ("int_value", _int),
    ("doubleValue", _float),
    ("double_value", _float),
    ("boolValue", bool),
    ("bool_value", bool),
    ("bytesValue", lambda v: v),
    ("bytes_value", lambda v: v),
)


def attributes(items: Any) -> dict[str, Any]:
    """OTLP/JSON ``[{"key": k, "value": AnyValue}]`` as a dict."""
    found: dict[str, Any] = {}
    if not isinstance(items, list):
        return found
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            found[item["key"]] = any_value(item.get("value"))
    return found


def span_kind(value: Any) -> str:
    """``2``, ``"SPAN_KIND_SERVER"`` or ``"server"`` -> ``"SERVER"``."""
    if isinstance(value, int):
        return _KINDS.get(value, "UNSPECIFIED")
    if isinstance(value, str):
        return value.upper().removeprefix("SPAN_KIND_") or "UNSPECIFIED"
    return "INTERNAL"


def status_code(value: Any) -> str:
    """``2``, ``"STATUS_CODE_ERROR"`` or ``"error"`` -> ``"ERROR"``."""
    if isinstance(value, int):
        return _STATUS.get(value, "UNSET")
    if isinstance(value, str):
        return value.upper().removeprefix("STATUS_CODE_") or "UNSET"
    return "UNSET"


def nanos(value: Any) -> int:
    """A ``...UnixNano`` field (a string in OTLP/JSON) as an int; 0 when unreadable."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
