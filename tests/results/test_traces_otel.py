"""Span files read as traces (:func:`assay.results.traces.load_traces`): told from ADK's traces
files by their content, each session a case's run under its case key, sampled and filtered the
same way on every read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from assay.errors import TracesError
from assay.results.traces import SpanReading, is_span_file, load_traces
from assay.traces import load_sessions, session_key, traces_json
from tests.traces._scenes import adk_default_turn
from tests.traces._spans import jsonl, otlp_json, recording, to_jaeger, to_proto

FIXTURES = Path(__file__).parents[1] / "fixtures" / "otel"


@pytest.fixture
def request_doc() -> dict[str, object]:
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "s1", "hi", "hello", [("c1", "lookup", {"q": 1}, {"r": 2})])
        return otlp_json(exporter.get_finished_spans())


def test_every_span_format_is_told_from_adk_traces_files_by_content(
    tmp_path: Path, request_doc: dict[str, object]
) -> None:
    files = {
        "lines.txt": jsonl(request_doc).encode(),
        "document.json": json.dumps(request_doc, indent=2).encode(),
        "jaeger.json": json.dumps(to_jaeger(request_doc)).encode(),
        "spans.bin": to_proto(request_doc),
        "spans.gz": gzip.compress(jsonl(request_doc).encode()),
    }
    not_spans = {
        "traces.json": b'{"case-1": []}',
        "data.json": b'{"data": [{"invocation_id": "x"}]}',
        "results.json": b'[{"eval_set_id": "s", "eval_case_results": []}]',
        "traces.yaml": b"case-1: []\n",
    }
    for name, body in {**files, **not_spans}.items():
        (tmp_path / name).write_bytes(body)

    assert [n for n in files if is_span_file(tmp_path / n)] == list(files)
    assert [n for n in not_spans if is_span_file(tmp_path / n)] == []


def test_a_span_file_gives_each_session_under_its_case_key_as_convert_writes_it() -> None:
    path = FIXTURES / "openai_agents_genai.jsonl"
    expected = traces_json(load_sessions([path]))

    traces = load_traces([path])

    assert traces.sources == [str(path)]
    assert list(traces.sessions) == [(None, key) for key in expected]
    for key, invocations in expected.items():
        given = traces.get("any-set", key)
        assert given is not None
        assert [i.model_dump(mode="json", exclude_none=True) for i in given] == invocations


def test_the_case_key_names_the_root_attribute_that_keys_the_sessions() -> None:
    path = FIXTURES / "adk_default_content.jsonl"

    traces = load_traces([path], SpanReading(case_key="gen_ai.workflow.name"))
    sessions = list(load_sessions([path]))
    names = [session_key(s, "gen_ai.workflow.name") for s in sessions]

    assert names[0] != sessions[0].session_id
    assert [eval_id for _, eval_id in traces.sessions] == [names[0], f"{names[1]}~2"]


def test_sessions_without_content_carry_the_setting_to_turn_on() -> None:
    traces = load_traces([FIXTURES / "adk_default_nocontent.jsonl"])

    note = traces.content_note("set", "adk-s1")
    assert note is not None
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in note
    assert traces.content_note("set", "adk-s1") == traces.content_note("set", "adk-s2")
    assert load_traces([FIXTURES / "adk_default_content.jsonl"]).content_note("s", "adk-s1") is None


def test_a_sample_keeps_the_same_sessions_and_a_filter_those_whose_root_attribute_matches() -> None:
    path = FIXTURES / "adk_default_content.jsonl"
    keys = ["adk-s1", "adk-s2"]

    kept = [sorted(k for _, k in load_traces([path], SpanReading(sample=0.5)).sessions)]
    kept += [sorted(k for _, k in load_traces([path], SpanReading(sample=0.5)).sessions)]
    filtered = load_traces([path], SpanReading(filters=(("gen_ai.conversation.id", "adk-s2"),)))

    assert kept[0] == kept[1]
    assert set(kept[0]) <= set(keys)
    assert list(filtered.sessions) == [(None, "adk-s2")]
    assert filtered.left_out == 1


def test_a_malformed_span_file_raises_naming_the_file_line_and_last_span(tmp_path: Path) -> None:
    lines = (FIXTURES / "adk_default_content.jsonl").read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40] + "\n", encoding="utf-8")

    with pytest.raises(TracesError) as info:
        load_traces([broken])

    [problem] = info.value.problems
    assert (problem.file, problem.path) == (str(broken), "line 3")
    assert "(after span " in problem.message
