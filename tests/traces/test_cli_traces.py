"""``assay traces convert`` and ``assay traces to-evalset``."""

from __future__ import annotations

import json
from pathlib import Path

from assay.evalset.content import content_text
from assay.evalset.io import load_eval_set
from assay.results.traces import load_traces
from tests._support import RunCli
from tests.traces._scenes import adk_default_turn, adk_legacy_turn
from tests.traces._spans import jsonl, otlp_json, recording

WEATHER = [("c1", "get_weather", {"city": "Paris"}, {"temp": 20})]


def _spans(tmp_path: Path) -> Path:
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "s1", "weather in Paris?", "Sunny.", WEATHER)
        adk_default_turn(tracer, "s1", "and Rome?", "Rainy.", invocation="e-2")
        adk_legacy_turn(tracer, "s2", "hi", "hello")
        path = tmp_path / "spans.jsonl"
        path.write_text(jsonl(otlp_json(exporter.get_finished_spans())))
    return path


def test_convert_writes_adk_traces_that_eval_reads_back(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "traces.json"
    result = run_cli("traces", "convert", _spans(tmp_path), "--out", out)
    assert result.code == 0, result.output
    assert "wrote 2 session(s)" in result.out
    traces = load_traces([out])
    first = traces.get("any", "s1")
    assert first is not None
    assert [content_text(i.final_response) for i in first] == ["Sunny.", "Rainy."]
    assert [c.name for c in first[0].tool_calls()] == ["get_weather"]
    assert traces.get("any", "s2") is not None


def test_to_evalset_drafts_expected_from_what_happened(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "draft.evalset.json"
    result = run_cli("traces", "to-evalset", _spans(tmp_path), "--out", out)
    assert result.code == 0, result.output
    loaded = load_eval_set(out).eval_set
    cases = {c.eval_id: c for c in loaded.eval_cases}
    assert set(cases) == {"s1", "s2"} and loaded.eval_set_id == "draft"
    conversation = cases["s1"].conversation
    assert conversation is not None and conversation[0].duration is None
    assert content_text(conversation[1].user_content) == "and Rome?"


def test_malformed_span_file_exits_2_naming_file_and_span(run_cli: RunCli, tmp_path: Path) -> None:
    good = _spans(tmp_path)
    lines = good.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(lines + lines[: len(lines) // 2])
    last_span = json.loads(lines)["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]["spanId"]
    result = run_cli("traces", "convert", cut, "--out", tmp_path / "t.json")
    assert result.code == 2
    assert str(cut) in result.err and f"after span {last_span}" in result.err
    assert "Traceback" not in result.output
    assert not (tmp_path / "t.json").exists()


def test_missing_content_is_noted_with_the_setting(run_cli: RunCli, tmp_path: Path) -> None:
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "quiet", "q", "a", WEATHER, content=False)
        path = tmp_path / "spans.jsonl"
        path.write_text(jsonl(otlp_json(exporter.get_finished_spans())))
    result = run_cli("traces", "convert", path, "--out", tmp_path / "t.json")
    assert result.code == 0
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in result.err


def test_to_evalset_leaves_out_sessions_without_content_and_says_so(
    run_cli: RunCli, tmp_path: Path
) -> None:
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "quiet", "q", "a", WEATHER, content=False)
        adk_default_turn(tracer, "loud", "q", "a", WEATHER)
        path = tmp_path / "spans.jsonl"
        path.write_text(jsonl(otlp_json(exporter.get_finished_spans())))
    out = tmp_path / "d.evalset.json"
    result = run_cli("traces", "to-evalset", path, "--out", out)
    assert result.code == 0
    assert "1 session(s) left out" in result.out
    assert [c.eval_id for c in load_eval_set(out).eval_set.eval_cases] == ["loud"]
    alone = tmp_path / "quiet.jsonl"
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "quiet", "q", "a", WEATHER, content=False)
        alone.write_text(jsonl(otlp_json(exporter.get_finished_spans())))
    refused = run_cli("traces", "to-evalset", alone, "--out", tmp_path / "none.json")
    assert refused.code == 2 and "no session could be drafted" in refused.err
