"""An ADK agent's real spans, converted by assay, equal ADK's own record of the same session (its
session-to-invocations conversion, as ``adk web`` and ADK's eval use), in both of ADK's telemetry
schemas with content on the spans; and the OpenAI Agents SDK's real spans convert in both
conventions (GenAI and OpenInference).

ADK's record is taken from the stored session, so it carries no timings (ADK sets ``duration`` only
when its eval runs the agent itself) and its timestamps are the events' creation times: those
fields are set aside; everything else must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.evalset.invocation import Invocation
from assay.traces import Session, load_sessions, traces_json

from ._producers import (
    AdkRun,
    OpenAIAgentsOutput,
    openai_agents_job,
    produce_openai_agents_many,
    run_adk,
    write_adk,
)

TWO = ("adk-s1", "adk-s2")
UNRECORDED = ("creation_timestamp", "duration", "model_duration", "tool_duration", "app_details")
FINALS = [
    "Paris is sunny at 21°C; report q3 says revenue grew.",
    "I could not get the weather in Atlantis: no station there.",
]


def _comparable(invocation: Invocation) -> dict[str, Any]:
    return invocation.model_dump(mode="json", exclude=set(UNRECORDED), exclude_none=True)


def _adk_record(run: AdkRun) -> dict[str, list[dict[str, Any]]]:
    return {
        session_id: [_comparable(Invocation.model_validate(inv)) for inv in invocations]
        for session_id, invocations in run.adk_record().items()
    }


def _converted(path: Path) -> dict[str, Session]:
    return {s.session_id: s for s in load_sessions([path])}


@pytest.mark.parametrize(
    ("schema", "capture"),
    [("default", "SPAN_ONLY"), ("default", "SPAN_AND_EVENT"), ("legacy", None)],
)
def test_adk_spans_convert_to_adks_own_record_of_the_session(
    schema: str, capture: str | None, tmp_path: Path
) -> None:
    run = run_adk(schema, capture, session_ids=TWO)
    sessions = _converted(write_adk(run, tmp_path / "spans.jsonl"))
    assert set(sessions) == set(TWO)
    converted = {
        session_id: [_comparable(inv) for inv in session.invocations]
        for session_id, session in sessions.items()
    }
    assert converted == _adk_record(run)
    assert all(s.problem is None and not s.content_missing for s in sessions.values())


def test_adk_spans_without_content_keep_the_trajectory_and_say_which_setting_adds_it(
    tmp_path: Path,
) -> None:
    run = run_adk("default", None, session_ids=TWO)
    sessions = _converted(write_adk(run, tmp_path / "spans.jsonl"))
    assert set(sessions) == set(TWO)
    for session in sessions.values():
        assert session.content_missing
        assert any("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in n for n in session.notes)
        names = [
            [p.function_call.name for e in _events(inv) for p in _parts(e) if p.function_call]
            for inv in session.invocations
        ]
        assert names == [["get_weather", "fetch_report"], ["get_weather"]]


def test_adk_converted_sessions_round_trip_through_traces_json(tmp_path: Path) -> None:
    run = run_adk("default", "SPAN_ONLY", session_ids=TWO)
    sessions = list(load_sessions([write_adk(run, tmp_path / "spans.jsonl")]))
    document = json.loads(json.dumps(traces_json(sessions)))
    again = {
        key: [_comparable(Invocation.model_validate(inv)) for inv in invocations]
        for key, invocations in document.items()
    }
    assert again == _adk_record(run)


def _events(invocation: Invocation) -> list[Any]:
    data = invocation.intermediate_data
    return list(getattr(data, "invocation_events", []) or [])


def _parts(event: Any) -> list[Any]:
    return list(event.content.parts or []) if event.content else []


def _tool_names(session: Session) -> list[list[str]]:
    out = []
    for inv in session.invocations:
        data = inv.intermediate_data
        if data is not None and hasattr(data, "tool_uses"):
            out.append([c.name for c in data.tool_uses])
        else:
            out.append(
                [p.function_call.name for e in _events(inv) for p in _parts(e) if p.function_call]
            )
    return out


def _final_texts(session: Session) -> list[str]:
    return [
        "".join(p.text or "" for p in (inv.final_response.parts if inv.final_response else []))
        for inv in session.invocations
    ]


@pytest.fixture(scope="module")
def openai_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, OpenAIAgentsOutput]:
    folder = tmp_path_factory.mktemp("openai-agents-equality")
    two = ("thread-a", None)
    jobs = {
        "genai": openai_agents_job("genai", folder / "genai.jsonl", group_ids=two),
        "openinference": openai_agents_job("openinference", folder / "oi.jsonl.gz", group_ids=two),
    }
    return dict(zip(jobs, produce_openai_agents_many(list(jobs.values())), strict=True))


@pytest.mark.parametrize("convention", ["genai", "openinference"])
def test_openai_agents_spans_convert_to_two_sessions_of_two_turns(
    convention: str, openai_runs: dict[str, OpenAIAgentsOutput]
) -> None:
    sessions = list(load_sessions([openai_runs[convention].path]))
    assert len(sessions) == 2  # interleaved in one file, no session id: one trace = one session
    for session in sessions:
        assert session.problem is None
        assert [
            "".join(p.text or "" for p in inv.user_content.parts or [])
            for inv in session.invocations
        ] == [
            "What is the weather in Paris, and what does report q3 say?",
            "And the weather in Atlantis?",
        ]
        assert _final_texts(session) == FINALS
        assert _tool_names(session) == [["get_weather", "fetch_report"], ["get_weather"]]
