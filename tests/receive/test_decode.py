"""The receiver's own protobuf decoding gives the very spans the file reader gives."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from assay.errors import TracesError
from assay.receive.decode import request_spans
from assay.traces import spans_from_otlp

PROTO = "application/x-protobuf"


def _sdk_request() -> ExportTraceServiceRequest:
    """Spans of every kind and status, with every attribute type the SDK sends, and events."""
    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "s", "deploy.n": 3}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("scope-a")
    with tracer.start_as_current_span("root", kind=SpanKind.SERVER, attributes={
        "s": "text", "i": -7, "f": 2.5, "b": True, "ss": ["a", "b"], "ii": [1, 2],
        "ff": [0.5], "bb": [False, True], "empty": "",
    }) as root:  # fmt: skip
        root.add_event("thought", {"gen_ai.content": "hmm", "n": 1})
        with tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as child:
            child.set_status(Status(StatusCode.ERROR, "boom"))
        for kind in (SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.INTERNAL):
            with tracer.start_as_current_span(f"k{kind.value}", kind=kind) as span:
                span.set_status(Status(StatusCode.OK))
    provider.shutdown()
    return encode_spans(kept.get_finished_spans())


def _odd_values(request: ExportTraceServiceRequest) -> None:
    """Values the SDK never sends but other exporters may: bytes, a kvlist, an empty key, an
    unset value, an unspecified kind and an unknown one."""
    span = request.resource_spans[0].scope_spans[0].spans[0]
    nested = AnyValue()
    nested.kvlist_value.values.append(KeyValue(key="inner", value=AnyValue(int_value=1)))
    nested.kvlist_value.values.append(KeyValue(key="", value=AnyValue(string_value="dropped")))
    span.attributes.extend([
        KeyValue(key="raw", value=AnyValue(bytes_value=b"\x00\xffid")),
        KeyValue(key="map", value=nested),
        KeyValue(key="unset", value=AnyValue()),
        KeyValue(key="novalue"),
        KeyValue(key="", value=AnyValue(string_value="no key")),
    ])  # fmt: skip
    request.resource_spans[0].scope_spans[0].spans[1].kind = 0
    request.resource_spans[0].scope_spans[0].spans[2].kind = 9


def test_protobuf_spans_decoded_by_the_receiver_equal_the_file_readers() -> None:
    request = _sdk_request()
    _odd_values(request)
    body = request.SerializeToString()

    ours = request_spans(body, PROTO, "request")
    theirs = spans_from_otlp(body, PROTO, "request")

    assert len(ours) == 5
    assert ours == theirs
    assert ours[0].attributes["map"] == {"inner": 1}
    assert {span.kind for span in ours} >= {"INTERNAL", "UNSPECIFIED", "CLIENT"}


@pytest.mark.parametrize(
    "body", [b"\xff\x00garbage", ExportTraceServiceRequest().SerializeToString() + b"\x0a"]
)
def test_a_malformed_protobuf_body_raises_the_readers_error(body: bytes) -> None:
    with pytest.raises(TracesError) as ours:
        request_spans(body, PROTO, "request from 127.0.0.1")
    with pytest.raises(TracesError) as theirs:
        spans_from_otlp(body, PROTO, "request from 127.0.0.1")

    assert str(ours.value) == str(theirs.value)
    assert "request from 127.0.0.1" in str(ours.value)


def test_an_empty_body_is_no_spans() -> None:
    assert request_spans(b"", PROTO, "request") == []
