"""Real OpenTelemetry plumbing for the span producers: capture spans in memory through the real SDK,
and write them as the collector's file exporter does (OTLP/JSON, one ``{"resourceSpans": [...]}``
per line), encoded by OpenTelemetry's own OTLP encoder.

Frameworks that take their tracer from the global provider (ADK) are captured by
:func:`global_capture`: the global provider is set once per process, with a processor that sends
each ended span to whichever exporter is capturing at the moment (none: the span is dropped).
Frameworks whose instrumentation takes a ``tracer_provider`` (the OpenAI Agents instrumentations)
get a fresh provider per run from :func:`fresh_provider`.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class _Switch(SpanProcessor):
    """Forwards ended spans to the exporter currently capturing, if any."""

    def __init__(self) -> None:
        self.target: SimpleSpanProcessor | None = None
        self.lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        target = self.target
        if target is not None:
            target.on_end(span)


_SWITCH = _Switch()
_INSTALLED = False


def _install_global() -> None:
    global _INSTALLED
    if _INSTALLED:
        return
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        current.add_span_processor(_SWITCH)
    else:
        provider = TracerProvider(resource=Resource.create({"service.name": "assay-fixtures"}))
        provider.add_span_processor(_SWITCH)
        trace.set_tracer_provider(provider)
    _INSTALLED = True


@contextlib.contextmanager
def global_capture() -> Iterator[InMemorySpanExporter]:
    """Capture every span the global tracer provider ends while inside, in an in-memory exporter."""
    _install_global()
    exporter = InMemorySpanExporter()
    with _SWITCH.lock:
        _SWITCH.target = SimpleSpanProcessor(exporter)
        try:
            yield exporter
        finally:
            _SWITCH.target = None


def fresh_provider(service_name: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider of its own, exporting synchronously to an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@contextlib.contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (a string) or unset (None) environment variables while inside; restore them after."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def _hex_ids(value: Any) -> Any:
    """OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping writes base64."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _ID_FIELDS and isinstance(item, str):
                out[key] = base64.b64decode(item).hex()
            else:
                out[key] = _hex_ids(item)
        return out
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value


def otlp_document(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """One ExportTraceServiceRequest as OTLP/JSON (hex ids, integer enums, camelCase fields)."""
    request = encode_spans(spans)
    as_dict = MessageToDict(request, use_integers_for_enums=True)
    return dict(_hex_ids(as_dict))


def otlp_lines(batches: Iterable[Sequence[ReadableSpan]]) -> list[str]:
    """The collector file exporter's lines: one compact JSON document per exported batch."""
    return [json.dumps(otlp_document(batch), separators=(",", ":")) for batch in batches if batch]


def batches_by_end(spans: Sequence[ReadableSpan], size: int) -> list[list[ReadableSpan]]:
    """Spans in the order they ended, cut into batches of ``size`` (as a batch processor would)."""
    ordered = sorted(spans, key=lambda span: span.end_time or 0)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    """Write OTLP/JSON lines to ``path`` (gzipped when it ends in ``.gz``)."""
    text = "".join(line + "\n" for line in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        path.write_text(text, encoding="utf-8")
    return path
