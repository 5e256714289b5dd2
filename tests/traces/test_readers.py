"""Span files in every format assay reads, told apart by their content."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from assay.errors import TracesError
from assay.traces import read_spans, spans_from_otlp
from assay.traces.spans import hex_id
from tests.traces._scenes import adk_default_turn
from tests.traces._spans import jsonl, otlp_json, recording, to_jaeger, to_proto


@pytest.fixture
def request_doc() -> dict[str, object]:
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "s1", "hi", "hello", [("c1", "lookup", {"q": 1}, {"r": 2})])
        return otlp_json(exporter.get_finished_spans())


def _ids(path: Path) -> list[str]:
    return [s.span_id for s in read_spans(path)]


def test_collector_jsonl_reads_every_line(tmp_path: Path, request_doc: dict[str, object]) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_text(jsonl(request_doc, request_doc))
    spans = list(read_spans(path))
    assert len(spans) == 2 * 5
    tool = next(s for s in spans if s.name == "execute_tool lookup")
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.resource["service.name"] == "agent-app"
    assert tool.scope == "gcp.vertex.agent"
    assert tool.parent_id is not None and len(tool.trace_id) == 32


def test_single_pretty_document_is_streamed_span_by_span(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(request_doc, indent=2))
    assert len(_ids(path)) == 5


def test_gzip_is_found_by_magic_bytes_not_extension(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    path = tmp_path / "spans.data"
    path.write_bytes(gzip.compress(jsonl(request_doc).encode()))
    plain = tmp_path / "plain.jsonl"
    plain.write_text(jsonl(request_doc))
    assert _ids(path) == _ids(plain)


def test_protobuf_request_and_collector_framed_messages(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    body = to_proto(request_doc)
    single = tmp_path / "spans.pb"
    single.write_bytes(body)
    framed = tmp_path / "spans.bin"
    framed.write_bytes(b"".join(len(body).to_bytes(4, "big") + body for _ in range(2)))
    plain = tmp_path / "plain.jsonl"
    plain.write_text(jsonl(request_doc))
    expected = [(s.span_id, s.parent_id, s.attributes) for s in read_spans(plain)]
    assert [(s.span_id, s.parent_id, s.attributes) for s in read_spans(single)] == expected
    assert len(_ids(framed)) == 10
    cut = tmp_path / "cut.bin"
    cut.write_bytes(framed.read_bytes()[:-7])
    with pytest.raises(TracesError, match="cut short"):
        list(read_spans(cut))


def test_jaeger_export_keeps_parents_and_typed_tags(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    path = tmp_path / "jaeger.json"
    path.write_text(json.dumps(to_jaeger(request_doc)))
    spans = list(read_spans(path))
    model = next(s for s in spans if s.name.startswith("generate_content"))
    assert model.attributes["gen_ai.usage.input_tokens"] in (10, 20)
    assert model.resource["service.name"] == "agent-app"
    assert sum(s.parent_id is None for s in spans) == 1


def test_otlp_http_bodies_in_json_and_protobuf(request_doc: dict[str, object]) -> None:
    from_json = spans_from_otlp(
        json.dumps(request_doc).encode(), "application/json", "POST /v1/traces"
    )
    from_proto = spans_from_otlp(to_proto(request_doc), "application/x-protobuf", "POST /v1/traces")
    assert [s.span_id for s in from_json] == [s.span_id for s in from_proto]
    with pytest.raises(TracesError, match="POST /v1/traces"):
        spans_from_otlp(b"\x0a\xff\xff", "application/x-protobuf", "POST /v1/traces")


def test_base64_ids_of_protobuf_json_mapping_read_as_hex() -> None:
    assert hex_id("AAECAwQFBgc=") == "0001020304050607"
    assert hex_id("0001020304050607") == "0001020304050607"


def test_truncated_file_names_file_line_and_last_span(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    path = tmp_path / "cut.jsonl"
    text = jsonl(request_doc, request_doc)
    path.write_text(text[: len(text) - 40])
    read: list[str] = []
    with pytest.raises(TracesError) as caught:
        read.extend(s.span_id for s in read_spans(path))
    message = str(caught.value)
    assert str(path) in message and "line 2" in message
    assert f"after span {read[-1]}" in message
    assert len(read) == 5  # the first line's spans were given


def test_file_that_is_not_spans_is_refused(tmp_path: Path) -> None:
    for content in (b"hello world", b"", b'{"eval_set_id": "x", "eval_cases": []}'):
        path = tmp_path / "x.txt"
        path.write_bytes(content)
        with pytest.raises(TracesError, match=str(path)):
            list(read_spans(path))


def test_non_utf8_bytes_are_replaced_not_fatal(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    path = tmp_path / "bytes.jsonl"
    text = jsonl(request_doc).replace('"hello"', '"hel\\u006co"').encode()
    path.write_bytes(text.replace(b"gemini-2.5-flash", b"gemini-\xff-flash", 1))
    spans = list(read_spans(path))
    assert any("\ufffd" in s.name for s in spans)
    assert len(spans) == 5


def test_span_without_ids_is_a_file_problem(tmp_path: Path) -> None:
    path = tmp_path / "noid.jsonl"
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}
    path.write_text(jsonl(doc))
    with pytest.raises(TracesError, match="without a traceId or spanId"):
        list(read_spans(path))


def test_lines_longer_than_a_megabyte_are_still_read_line_after_line(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    big = json.loads(json.dumps(request_doc))
    span = big["resourceSpans"][0]["scopeSpans"][0]["spans"][0]  # type: ignore[index]
    span["attributes"].append({"key": "blob", "value": {"stringValue": "x" * 2_000_000}})
    path = tmp_path / "big.jsonl"
    path.write_text(jsonl(big, request_doc))
    spans = list(read_spans(path))
    assert len(spans) == 10 and len(spans[0].attributes["blob"]) == 2_000_000
