"""The committed real span files (tests/fixtures/otel, made by the frameworks' own tracing)
read into the sessions the frameworks recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.traces import Session, load_sessions

OTEL = Path(__file__).parents[1] / "fixtures" / "otel"
MEASURED = {"creation_timestamp", "duration", "model_duration", "tool_duration"}
"""What spans measure and ADK's session record does not hold (or holds another clock's)."""


def _sessions(name: str) -> dict[str, Session]:
    return {s.session_id: s for s in load_sessions([OTEL / name])}


def _dump(invocation: Invocation) -> dict[str, Any]:
    return invocation.model_dump(mode="json", exclude_none=True, exclude=MEASURED)


def _adk_record(name: str) -> dict[str, list[dict[str, Any]]]:
    data = json.loads((OTEL / name).read_text())
    return {
        key: [_dump(Invocation.model_validate(i)) for i in invocations]
        for key, invocations in data.items()
    }


@pytest.mark.parametrize("schema", ["adk_default_content", "adk_legacy"])
def test_adk_spans_convert_to_adks_own_record_of_the_sessions(schema: str) -> None:
    sessions = _sessions(f"{schema}.jsonl")
    record = _adk_record(f"{schema}.adk.json")
    assert {k: [_dump(i) for i in s.invocations] for k, s in sessions.items()} == record
    assert all(s.problem is None and not s.notes for s in sessions.values())


@pytest.mark.parametrize("schema", ["adk_default_nocontent", "adk_legacy_nocontent"])
def test_adk_spans_without_content_keep_the_trajectory_and_tokens(schema: str) -> None:
    sessions = _sessions(f"{schema}.jsonl")
    record = _adk_record(f"{schema}.adk.json")
    for key, session in sessions.items():
        assert session.content_missing and session.problem is None
        expected = [Invocation.model_validate(i) for i in record[key]]
        assert [[(c.id, c.name) for c in i.tool_calls()] for i in session.invocations] == [
            [(c.id, c.name) for c in i.tool_calls()] for i in expected
        ]
        assert [i.usage_metadata() for i in session.invocations] == [
            i.usage_metadata() for i in expected
        ]
        assert all(i.duration is not None for i in session.invocations)


@pytest.mark.parametrize(
    "name",
    [
        "openai_agents_genai.jsonl",
        "openai_agents_openinference.jsonl.gz",
        "openai_agents_genai_trace_per_turn.jsonl",
    ],
)
def test_openai_agents_spans_give_both_turns_with_calls_errors_and_answers(name: str) -> None:
    turns = [i for s in _sessions(name).values() for i in s.invocations]
    assert len(turns) in (2, 4)
    first = turns[0]
    second = next(t for t in turns if "Atlantis" in content_text(t.user_content))
    assert content_text(first.user_content).startswith("What is the weather in Paris")
    assert [(c.id, c.name, c.args) for c in first.tool_calls()] == [
        ("call_paris", "get_weather", {"city": "Paris"}),
        ("call_q3", "fetch_report", {"report_id": "q3"}),
    ]
    assert [r.id for r in first.tool_responses()] == ["call_paris", "call_q3"]
    assert content_text(first.final_response).startswith("Paris is sunny")
    (failed,) = second.tool_responses()
    assert "no weather station in Atlantis" in json.dumps(failed.response)
    assert content_text(second.final_response).startswith("I could not get the weather")


def test_openai_agents_spans_without_content_say_the_setting() -> None:
    (session,) = _sessions("openai_agents_genai_nocontent.jsonl").values()
    assert session.content_missing
    assert any("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in n for n in session.notes)
    assert [[c.name for c in i.tool_calls()] for i in session.invocations] == [
        ["get_weather", "fetch_report"],
        ["get_weather"],
    ]
