"""Spans made by the real OpenTelemetry SDK, and written as each file format holds them."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer


@contextmanager
def recording(
    scope: str = "gcp.vertex.agent",
) -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    """A tracer of a fresh provider, and the exporter its ended spans go to."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer(scope), exporter
    provider.shutdown()


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attrs(attributes: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in dict(attributes or {}).items()]


def span_json(span: ReadableSpan) -> dict[str, Any]:
    context = span.context
    assert context is not None
    found: dict[str, Any] = {
        "traceId": f"{context.trace_id:032x}",
        "spanId": f"{context.span_id:016x}",
        "name": span.name,
        "kind": span.kind.value + 1,
        "startTimeUnixNano": str(span.start_time),
        "endTimeUnixNano": str(span.end_time),
        "attributes": _attrs(span.attributes),
        "status": {"code": span.status.status_code.value, "message": span.status.description or ""},
        "events": [
            {"name": e.name, "timeUnixNano": str(e.timestamp), "attributes": _attrs(e.attributes)}
            for e in span.events
        ],
    }
    if span.parent is not None:
        found["parentSpanId"] = f"{span.parent.span_id:016x}"
    return found


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """An OTLP/JSON ExportTraceServiceRequest (ids in hex, as the collector writes them)."""
    resource = spans[0].resource.attributes if spans else {}
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": spans[0].instrumentation_scope.name if spans else ""},
                        "spans": [span_json(s) for s in spans],
                    }
                ],
            }
        ]
    }


def jsonl(*docs: dict[str, Any]) -> str:
    return "".join(json.dumps(d) + "\n" for d in docs)


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def to_proto(doc: dict[str, Any]) -> bytes:
    """The same request as protobuf bytes (ids re-encoded as the protobuf JSON mapping wants)."""
    copy = json.loads(json.dumps(doc))
    for group in copy["resourceSpans"]:
        for scoped in group["scopeSpans"]:
            for span in scoped["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = _b64(span[key])
    return ParseDict(copy, ExportTraceServiceRequest()).SerializeToString()


def to_jaeger(doc: dict[str, Any]) -> dict[str, Any]:
    """The same spans as Jaeger's JSON export (one trace a ``data`` item)."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for group in doc["resourceSpans"]:
        for scoped in group["scopeSpans"]:
            for span in scoped["spans"]:
                tags = [
                    {"key": a["key"], "type": _jaeger_type(a["value"]), "value": _plain(a["value"])}
                    for a in span["attributes"]
                ]
                refs = (
                    [
                        {
                            "refType": "CHILD_OF",
                            "traceID": span["traceId"],
                            "spanID": span["parentSpanId"],
                        }
                    ]
                    if "parentSpanId" in span
                    else []
                )
                start = int(span["startTimeUnixNano"]) // 1000
                traces.setdefault(span["traceId"], []).append(
                    {
                        "traceID": span["traceId"],
                        "spanID": span["spanId"],
                        "operationName": span["name"],
                        "references": refs,
                        "startTime": start,
                        "duration": int(span["endTimeUnixNano"]) // 1000 - start,
                        "tags": tags,
                        "logs": [],
                        "processID": "p1",
                    }
                )
    process = {"p1": {"serviceName": "agent-app", "tags": []}}
    return {"data": [{"traceID": t, "spans": s, "processes": process} for t, s in traces.items()]}


def _jaeger_type(value: dict[str, Any]) -> str:
    return {"intValue": "int64", "doubleValue": "float64", "boolValue": "bool"}.get(
        next(iter(value)), "string"
    )


def _plain(value: dict[str, Any]) -> Any:
    kind, raw = next(iter(value.items()))
    if kind == "intValue":
        return int(raw)
    if kind == "arrayValue":
        return json.dumps([_plain(v) for v in raw["values"]])
    return raw
