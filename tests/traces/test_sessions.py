"""Grouping spans into sessions and turns, and what a session's bad spans become."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.evalset.content import content_text
from assay.traces import Span, build_session, load_sessions
from tests.traces._scenes import adk_default_turn, openinference_turn
from tests.traces._spans import jsonl, otlp_json, recording

T = "0" * 31 + "1"


def sp(span_id: str, parent: str | None, name: str, start: int, end: int, **attrs: Any) -> Span:
    return Span(
        T, span_id, parent, name, start_ns=start * 10**9, end_ns=end * 10**9, attributes=attrs
    )


def _agent(span_id: str = "a1", start: int = 0, end: int = 10, **attrs: Any) -> Span:
    return sp(
        span_id,
        None,
        "invoke_agent helper",
        start,
        end,
        **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", **attrs},
    )


def _llm(
    span_id: str, parent: str, start: int, end: int, out: list[dict[str, Any]] | None = None
) -> Span:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
        ),
    }
    if out is not None:
        attrs["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": out}])
    return sp(span_id, parent, "chat m", start, end, **attrs)


def _tool(
    span_id: str,
    parent: str,
    start: int,
    end: int,
    name: str,
    call_id: str | None,
    result: Any = None,
    **more: Any,
) -> Span:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        **more,
    }
    if call_id:
        attrs["gen_ai.tool.call.id"] = call_id
    if result is not None:
        attrs["gen_ai.tool.call.result"] = json.dumps(result)
    return sp(span_id, parent, f"execute_tool {name}", start, end, **attrs)


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}


def test_interleaved_sessions_in_one_file_are_told_apart(tmp_path: Path) -> None:
    with recording() as (tracer, exporter):
        for turn in range(2):
            adk_default_turn(tracer, "alice", f"a{turn}", f"A{turn}", invocation=f"a-{turn}")
            adk_default_turn(tracer, "bob", f"b{turn}", f"B{turn}", invocation=f"b-{turn}")
        spans = list(exporter.get_finished_spans())
    path = tmp_path / "mixed.jsonl"
    path.write_text(jsonl(*(otlp_json([s]) for s in spans)))  # a span a line, interleaved
    sessions = {s.session_id: s for s in load_sessions([path])}
    assert set(sessions) == {"alice", "bob"}
    assert [content_text(i.user_content) for i in sessions["alice"].invocations] == ["a0", "a1"]
    assert [i.invocation_id for i in sessions["bob"].invocations] == ["b-0", "b-1"]


def test_without_session_id_each_trace_is_a_session(tmp_path: Path) -> None:
    with recording("openinference") as (tracer, exporter):
        openinference_turn(tracer, None, "one", "1")
        openinference_turn(tracer, None, "two", "2")
        path = tmp_path / "s.jsonl"
        path.write_text(jsonl(otlp_json(exporter.get_finished_spans())))
    sessions = list(load_sessions([path]))
    assert len(sessions) == 2
    assert all(len(s.session_id) == 32 and s.session_id == s.trace_ids[0] for s in sessions)


def test_parallel_tool_calls_answered_in_one_event_joined_by_id() -> None:
    session = build_session(
        [
            _agent(),
            _llm("l1", "a1", 1, 2, [_call("x", "add", a=1), _call("y", "add", a=2)]),
            _tool("t2", "a1", 3, 5, "add", "y", {"r": 2}),
            _tool("t1", "a1", 3, 4, "add", "x", {"r": 1}),
            _llm("l2", "a1", 6, 7, [{"type": "text", "content": "done"}]),
        ]
    )
    (turn,) = session.invocations
    assert [(c.id, c.args) for c in turn.tool_calls()] == [("x", {"a": 1}), ("y", {"a": 2})]
    assert {r.id: r.response for r in turn.tool_responses()} == {"x": {"r": 1}, "y": {"r": 2}}
    events = turn.intermediate_data.invocation_events  # type: ignore[union-attr]
    assert len(events) == 3  # the calls, both responses, the final answer
    assert turn.tool_duration == 2.0 and turn.model_duration == 2.0 and turn.duration == 10.0


def test_tool_ids_that_do_not_join_are_matched_by_name_in_order() -> None:
    session = build_session(
        [
            _agent(),
            _llm(
                "l1",
                "a1",
                1,
                2,
                [_call("call_A", "search", q="a"), _call("call_B", "search", q="b")],
            ),
            _tool("t1", "a1", 3, 4, "search", "fc_001", {"hits": 1}),
            _tool("t2", "a1", 4, 5, "search", "fc_002", {"hits": 2}),
        ]
    )
    (turn,) = session.invocations
    assert [(r.id, r.response) for r in turn.tool_responses()] == [
        ("fc_001", {"hits": 1}),
        ("fc_002", {"hits": 2}),
    ]
    assert [(c.id, c.args) for c in turn.tool_calls()] == [
        ("fc_001", {"q": "a"}),
        ("fc_002", {"q": "b"}),
    ]


def test_tool_error_becomes_an_error_response() -> None:
    failing = _tool("t1", "a1", 3, 4, "pay", "p", **{"error.type": "ValueError"})
    failing.status_code, failing.status_message = "ERROR", "card declined"
    session = build_session([_agent(), _llm("l1", "a1", 1, 2, [_call("p", "pay")]), failing])
    (response,) = session.invocations[0].tool_responses()
    assert response.response == {"error": "card declined"}
    assert session.problem is None


def test_missing_parent_is_noted_and_span_kept_in_the_turn_of_its_time() -> None:
    session = build_session(
        [_agent(), _llm("l1", "gone", 1, 2, [{"type": "text", "content": "hi"}])]
    )
    assert session.problem is None
    assert any("parent is missing" in note and "l1" in note for note in session.notes)
    (turn,) = session.invocations  # the lost span's time falls in the agent's turn
    assert content_text(turn.final_response) == "hi"


def test_session_that_never_ended_is_a_problem_with_what_was_kept() -> None:
    session = build_session(
        [_llm("l1", "root-never-exported", 1, 2, [{"type": "text", "content": "hi"}])]
    )
    assert session.problem is not None and "never ended" in session.problem
    assert "root-never-exported" in session.problem
    assert content_text(session.invocations[0].final_response) == "hi"


def test_cycle_of_parents_is_cut_and_reported() -> None:
    session = build_session([_agent(), sp("c1", "c2", "x", 1, 2), sp("c2", "c1", "y", 2, 3)])
    assert session.problem is not None and "cycle" in session.problem and "c1" in session.problem


def test_duplicate_span_ids_identical_resend_is_dropped_different_is_a_problem() -> None:
    llm = _llm("l1", "a1", 1, 2, [{"type": "text", "content": "hi"}])
    again = build_session(
        [_agent(), llm, _llm("l1", "a1", 1, 2, [{"type": "text", "content": "hi"}])]
    )
    assert again.problem is None
    assert len(again.invocations[0].intermediate_data.invocation_events) == 1  # type: ignore[union-attr]
    clash = build_session([_agent(), llm, _tool("l1", "a1", 3, 4, "t", None)])
    assert clash.problem is not None and "span id l1" in clash.problem


def test_clock_skew_never_gives_negative_durations() -> None:
    session = build_session(
        [_agent(end=0), _llm("l1", "a1", 5, 3, [{"type": "text", "content": "x"}])]
    )
    (turn,) = session.invocations
    assert turn.duration == 0.0 and turn.model_duration == 0.0
    assert any("clock skew" in note for note in session.notes)


def test_unknown_attributes_and_megabyte_results_are_kept() -> None:
    big = {"blob": "x" * 3_000_000}
    session = build_session(
        [
            _agent(**{"vendor.custom": [1, 2]}),
            _llm("l1", "a1", 1, 2, [_call("b", "fetch")]),
            _tool("t1", "a1", 3, 4, "fetch", "b", big),
        ]
    )
    assert session.invocations[0].tool_responses()[0].response == big
    assert session.attributes["vendor.custom"] == [1, 2]


def test_spans_of_no_agent_are_a_problem_not_an_error() -> None:
    session = build_session([sp("h1", None, "GET /health", 0, 1)])
    assert session.invocations == [] and session.problem is not None
