"""The span reader: each value's bytes as the file has them, in chunks, and malformed or doubtful
text left to the event reader (:class:`SpanFallback`)."""

from __future__ import annotations

import io
import json

import pytest

from assay._internal import json_stream
from assay._internal.json_stream import SpanFallback, Spans, built, yajl_unsure

TRICKY = (
    b'{ "a" : [1, "x]}\\"", {"b": [2.5e-3, -0, null]}] ,\n'
    b'"k\\u00e9y": "s,t}" , "n": 12345 , "t": true, "e": {}, "l": []\n}  \n'
)


def members(document: bytes) -> list[tuple[str, bytes]]:
    spans = Spans(io.BytesIO(document))
    found = [(key, spans.value()) for key in spans.members()]
    spans.end()
    return found


@pytest.mark.parametrize("chunk", [1, 3, 7, 1024 * 1024])
def test_each_member_is_its_exact_text_whatever_the_chunks(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_stream, "_SPAN_CHUNK", chunk)

    found = members(TRICKY)

    assert found == [
        ("a", b'[1, "x]}\\"", {"b": [2.5e-3, -0, null]}]'),
        ("kéy", b'"s,t}"'),
        ("n", b"12345"),
        ("t", b"true"),
        ("e", b"{}"),
        ("l", b"[]"),
    ]
    assert {key: json.loads(text) for key, text in found} == json.loads(TRICKY)


@pytest.mark.parametrize("chunk", [2, 1024 * 1024])
def test_the_items_of_a_list_come_one_at_a_time(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_stream, "_SPAN_CHUNK", chunk)
    spans = Spans(io.BytesIO(b'{"cases": [ {"id": "a,]"} ,7,[ ]], "after": 1}'))

    keys = []
    for key in spans.members():
        keys.append(key)
        if key == "cases":
            assert list(spans.items()) == [b'{"id": "a,]"}', b"7", b"[ ]"]
        else:
            assert spans.value() == b"1"
    spans.end()

    assert keys == ["cases", "after"]


@pytest.mark.parametrize(
    "document",
    [
        b'{"a": [1,]}',  # a trailing comma
        b'{"a": [NaN]}',  # JSON to pydantic, not to ijson
        b'{"a": [1] "b": 2}',  # no comma
        b'{"a": [1]} x',  # more after the document
        b'{"a": [1]',  # stops short
        b'{"a" [1]}',  # no colon
        b"{1: 2}",  # a key that is no string
        b'[{"a": 1}]',  # no object
        b"",
    ],
)
def test_malformed_text_is_left_to_the_event_reader(document: bytes) -> None:
    with pytest.raises(SpanFallback):
        members(document)


def test_numbers_yajl_may_refuse_are_flagged_and_refused_when_built() -> None:
    assert yajl_unsure(b'{"id": 1234567890123456789}')
    assert yajl_unsure(b"[1e308]") and yajl_unsure(b"[2.5E-400]") and yajl_unsure(b"[1e+400]")
    assert not yajl_unsure(b'[123456789012345678, 1e30, -2.5E-12, "abc"]')
    with pytest.raises(SpanFallback):
        built(b"[123456789012345678901234567890]")
    with pytest.raises(SpanFallback):
        built(b"[1e400]")
    assert built(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
