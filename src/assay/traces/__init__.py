"""OpenTelemetry traces in: span files -> sessions -> assay invocations.

Three conventions are read, detected per span (OpenTelemetry GenAI, google-adk's own two
schemas, OpenInference: :mod:`assay.traces.conventions`), from OTLP/JSON (lines or one
document), OTLP protobuf, Jaeger JSON, gzipped or not (:mod:`assay.traces.readers`).
"""

from __future__ import annotations

from assay.traces.export import (
    DEFAULT_CASE_KEY,
    draft_case,
    draft_evalset,
    invocation_json,
    session_key,
    traces_json,
    write_traces_json,
)
from assay.traces.readers import read_spans, spans_from_otlp
from assay.traces.sessions import CONTENT_SETTINGS, Session, build_session
from assay.traces.spans import Span, SpanEvent
from assay.traces.store import SessionStream, load_sessions

__all__ = [
    "CONTENT_SETTINGS",
    "DEFAULT_CASE_KEY",
    "Session",
    "SessionStream",
    "Span",
    "SpanEvent",
    "build_session",
    "draft_case",
    "draft_evalset",
    "invocation_json",
    "load_sessions",
    "read_spans",
    "session_key",
    "spans_from_otlp",
    "traces_json",
    "write_traces_json",
]
