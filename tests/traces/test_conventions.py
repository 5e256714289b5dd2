"""Each convention's spans, made through the real OpenTelemetry SDK, read into one turn."""

from __future__ import annotations

from pathlib import Path

from assay.evalset.content import content_text
from assay.traces import Session, load_sessions
from tests.traces._scenes import (
    adk_default_turn,
    adk_legacy_turn,
    old_genai_turn,
    openinference_turn,
)
from tests.traces._spans import jsonl, otlp_json, recording

WEATHER = [("c1", "get_weather", {"city": "Paris"}, {"temp": 20})]


def _sessions(tmp_path: Path, exporter: object) -> list[Session]:
    path = tmp_path / "spans.jsonl"
    path.write_text(jsonl(otlp_json(exporter.get_finished_spans())))  # type: ignore[attr-defined]
    return list(load_sessions([path]))


def _check_weather_turn(session: Session) -> None:
    (turn,) = session.invocations
    assert content_text(turn.user_content) == "weather in Paris?"
    assert content_text(turn.final_response) == "Sunny."
    calls = turn.tool_calls()
    assert [(c.name, c.args) for c in calls] == [("get_weather", {"city": "Paris"})]
    responses = turn.tool_responses()
    assert [(r.id, r.name) for r in responses] == [(calls[0].id, "get_weather")]
    assert turn.duration is not None and turn.model_duration is not None
    assert turn.usage_metadata()


def test_adk_default_schema_turn(tmp_path: Path) -> None:
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "s1", "weather in Paris?", "Sunny.", WEATHER)
        (session,) = _sessions(tmp_path, exporter)
    assert session.session_id == "s1" and session.framework == "adk"
    _check_weather_turn(session)
    assert session.invocations[0].invocation_id == "e-1"
    assert session.invocations[0].tool_responses()[0].response == {"temp": 20}


def test_adk_legacy_schema_turn(tmp_path: Path) -> None:
    with recording() as (tracer, exporter):
        adk_legacy_turn(tracer, "s2", "weather in Paris?", "Sunny.", WEATHER)
        (session,) = _sessions(tmp_path, exporter)
    assert session.framework == "adk-legacy"
    _check_weather_turn(session)
    assert session.invocations[0].usage_metadata()[0]["total_token_count"] == 13


def test_openinference_turn(tmp_path: Path) -> None:
    with recording("openinference.instrumentation.openai_agents") as (tracer, exporter):
        openinference_turn(tracer, "s3", "weather in Paris?", "Sunny.", WEATHER)
        (session,) = _sessions(tmp_path, exporter)
    assert session.framework == "openinference" and session.session_id == "s3"
    _check_weather_turn(session)
    assert session.invocations[0].usage_metadata()[0] == {
        "prompt_token_count": 11,
        "candidates_token_count": 3,
        "total_token_count": 14,
    }


def test_older_genai_indexed_prompt_and_completion(tmp_path: Path) -> None:
    with recording("opentelemetry.instrumentation.openai") as (tracer, exporter):
        old_genai_turn(tracer, "ping", "pong")
        (session,) = _sessions(tmp_path, exporter)
    assert session.framework == "genai"
    (turn,) = session.invocations
    assert content_text(turn.user_content) == "ping"
    assert content_text(turn.final_response) == "pong"
    assert turn.usage_metadata() == [
        {"prompt_token_count": 8, "candidates_token_count": 2, "total_token_count": 10}
    ]


def test_adk_spans_without_content_keep_trajectory_and_say_which_setting(tmp_path: Path) -> None:
    with recording() as (tracer, exporter):
        adk_default_turn(tracer, "s4", "q", "a", WEATHER, content=False)
        (session,) = _sessions(tmp_path, exporter)
    assert session.content_missing
    assert any(
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in note
        for note in session.notes
    )
    (turn,) = session.invocations
    assert [c.name for c in turn.tool_calls()] == ["get_weather"]
    assert turn.final_response is None and not turn.user_content.parts
    assert turn.tool_duration is not None and len(turn.usage_metadata()) == 2
