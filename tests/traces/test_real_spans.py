"""What real frameworks put on their spans: the properties assay's trace reader relies on, checked
on spans produced at test time by ADK's and the OpenAI Agents SDK's own tracing code through the
real OpenTelemetry SDK and OTLP encoder (``_producers``). The committed samples in
tests/fixtures/otel/ come from the same producers; their README lists these quirks.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._producers import (
    AdkRun,
    OpenAIAgentsOutput,
    openai_agents_job,
    otlp_lines,
    produce_openai_agents_many,
    run_adk,
    spans_of,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "otel"
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.result")
TWO = ("adk-s1", "adk-s2")


def _spans(run: AdkRun) -> list[dict[str, Any]]:
    """The run's spans as the file exporter writes them (one document per 4 spans), read back."""
    from ._producers import batches_by_end

    return spans_of([json.loads(line) for line in otlp_lines(batches_by_end(run.spans, 4))])


def _named(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"] == name]


@pytest.fixture(scope="module")
def adk_content() -> AdkRun:
    return run_adk("default", "SPAN_ONLY", session_ids=TWO)


@pytest.fixture(scope="module")
def adk_nocontent() -> AdkRun:
    return run_adk("default", None)


@pytest.fixture(scope="module")
def adk_legacy() -> AdkRun:
    return run_adk("legacy", None)


@pytest.fixture(scope="module")
def openai_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("openai-agents")


@pytest.fixture(scope="module")
def openai_runs(openai_dir: Path) -> dict[str, OpenAIAgentsOutput]:
    """Every OpenAI Agents variant, produced by one subprocess (the SDK takes seconds to import)."""
    two = ("thread-a", None)
    jobs = {
        "genai": openai_agents_job("genai", openai_dir / "genai.jsonl", group_ids=two),
        "off": openai_agents_job("genai", openai_dir / "off.jsonl", capture="false"),
        "per-turn": openai_agents_job("genai", openai_dir / "turns.jsonl", one_trace=False),
        "openinference": openai_agents_job(
            "openinference", openai_dir / "openinference.jsonl.gz", group_ids=two
        ),
    }
    outputs = produce_openai_agents_many(list(jobs.values()))
    return dict(zip(jobs, outputs, strict=True))


@pytest.fixture(scope="module")
def genai(openai_runs: dict[str, OpenAIAgentsOutput]) -> OpenAIAgentsOutput:
    return openai_runs["genai"]


@pytest.fixture(scope="module")
def openinference(openai_runs: dict[str, OpenAIAgentsOutput]) -> OpenAIAgentsOutput:
    return openai_runs["openinference"]


# --- the file format ----------------------------------------------------------------------------


def test_spans_are_written_as_the_collector_file_exporter_writes_otlp_json(
    adk_content: AdkRun,
) -> None:
    lines = otlp_lines([adk_content.spans[:4], adk_content.spans[4:]])
    documents = [json.loads(line) for line in lines]
    assert all(set(d) == {"resourceSpans"} for d in documents)
    span = documents[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and int(span["traceId"], 16) > 0  # hex, not base64
    assert len(span["spanId"]) == 16 and int(span["spanId"], 16) > 0
    assert isinstance(span["kind"], int)
    assert span["startTimeUnixNano"].isdigit()  # int64 as a JSON string
    assert sum(len(spans_of([d])) for d in documents) == len(adk_content.spans)


# --- ADK ------------------------------------------------------------------------------------------


def test_adk_default_schema_names_spans_by_genai_operation(adk_nocontent: AdkRun) -> None:
    names = {s["name"] for s in _spans(adk_nocontent)}
    assert names == {
        "invoke_workflow weather_agent",
        "invoke_agent weather_agent",
        "generate_content scripted-weather-1",
        "execute_tool get_weather",
        "execute_tool fetch_report",
        "execute_tool (merged)",
    }


def test_adk_default_schema_puts_content_on_spans_only_when_capture_is_span_bearing(
    adk_content: AdkRun, adk_nocontent: AdkRun
) -> None:
    with_content = _spans(adk_content)
    without = _spans(adk_nocontent)
    assert all(
        k in s["attrs"]
        for s in _named(with_content, "generate_content scripted-weather-1")
        for k in CONTENT_KEYS[:2]
    )
    assert all(not any(k in s["attrs"] for k in CONTENT_KEYS) for s in without)
    # what stays without content: tool names and call ids, tokens, error status
    tools = [s for s in without if s["name"].startswith("execute_tool get_weather")]
    assert all(s["attrs"]["gen_ai.tool.call.id"] for s in tools)
    assert sum(s["attrs"].get("gen_ai.usage.input_tokens", 0) for s in without) > 0
    assert any(s.get("status", {}).get("code") == 2 for s in tools)


def test_adk_true_capture_value_means_logs_not_spans() -> None:
    run = run_adk("default", "true")
    assert all(not any(k in s["attrs"] for k in CONTENT_KEYS) for s in _spans(run))


def test_adk_sessions_are_one_trace_per_turn_joined_by_conversation_id(
    adk_content: AdkRun,
) -> None:
    spans = _spans(adk_content)
    roots = _named(spans, "invoke_workflow weather_agent")
    assert len(roots) == 4 and len({s["traceId"] for s in roots}) == 4
    assert sorted(s["attrs"]["gen_ai.conversation.id"] for s in roots) == sorted(TWO * 2)
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    assert all("gen_ai.conversation.id" not in s["attrs"] for s in tools)
    models = _named(spans, "generate_content scripted-weather-1")
    assert all(s["attrs"]["gcp.vertex.agent.invocation_id"].startswith("e-") for s in models)
    assert all("gcp.vertex.agent.invocation_id" not in s["attrs"] for s in roots + tools)


def test_adk_parallel_calls_add_a_merged_tool_span_whose_call_id_joins_no_call(
    adk_content: AdkRun,
) -> None:
    spans = _spans(adk_content)
    call_ids = {
        part["id"]
        for s in _named(spans, "generate_content scripted-weather-1")
        for message in json.loads(s["attrs"]["gen_ai.output.messages"])
        for part in message["parts"]
        if part["type"] == "tool_call"
    }
    merged = _named(spans, "execute_tool (merged)")
    assert len(merged) == 2  # one per session's parallel turn
    assert all(s["attrs"]["gen_ai.tool.name"] == "(merged tools)" for s in merged)
    assert not {s["attrs"]["gen_ai.tool.call.id"] for s in merged} & call_ids
    real = [
        s for s in spans if s["name"] in ("execute_tool get_weather", "execute_tool fetch_report")
    ]
    span_ids = {s["attrs"]["gen_ai.tool.call.id"] for s in real}
    # ids the model sent join; an id-less call (as Gemini sends them) does not: ADK runs it as
    # `adk-<uuid>` (tool span, ADK's events) but strips that id before the next request, so the
    # message parts carry a made-up `{name}_{index}` instead
    assert {"call-paris", "call-q3"} <= span_ids & call_ids  # and the same in both sessions
    assert {i for i in span_ids - call_ids if not i.startswith("adk-")} == set()
    assert call_ids - span_ids == {"get_weather_0"}


def test_adk_tool_error_is_an_error_span_with_the_callbacks_result(adk_content: AdkRun) -> None:
    errors = [s for s in _spans(adk_content) if s.get("status", {}).get("code") == 2]
    assert {s["name"] for s in errors} == {"execute_tool get_weather"}
    for span in errors:
        assert span["status"]["message"] == "TOOL_ERROR"
        assert span["attrs"]["error.type"] == "TOOL_ERROR"
        assert json.loads(span["attrs"]["gen_ai.tool.call.result"]) == {
            "error": "ValueError: no weather station in Atlantis"
        }


def test_adk_keeps_a_tool_result_of_many_kb_whole(adk_content: AdkRun) -> None:
    reports = _named(_spans(adk_content), "execute_tool fetch_report")
    results = [json.loads(s["attrs"]["gen_ai.tool.call.result"]) for s in reports]
    assert all(len(r["text"]) == 10 * 1024 for r in results)


def test_adk_legacy_schema_nests_generate_content_under_call_llm_with_tokens_twice(
    adk_legacy: AdkRun,
) -> None:
    spans = _spans(adk_legacy)
    by_id = {s["spanId"]: s for s in spans}
    assert len(_named(spans, "invocation")) == 2
    assert all(s["attrs"] == {} for s in _named(spans, "invocation"))
    calls = _named(spans, "call_llm")
    children = _named(spans, "generate_content scripted-weather-1")
    assert len(calls) == len(children) == 4
    assert all(by_id[c["parentSpanId"]]["name"] == "call_llm" for c in children)
    assert sum(c["attrs"]["gen_ai.usage.input_tokens"] for c in calls) == sum(
        c["attrs"]["gen_ai.usage.input_tokens"] for c in children
    )
    assert all(c["attrs"]["gcp.vertex.agent.session_id"] == "adk-s1" for c in calls)
    requests = [json.loads(c["attrs"]["gcp.vertex.agent.llm_request"]) for c in calls]
    last_parts = [r["contents"][-1]["parts"][0] for r in requests]  # the whole history each time
    assert {"text": "And the weather in Atlantis?"} in last_parts
    tool = _named(spans, "execute_tool fetch_report")[0]["attrs"]
    assert json.loads(tool["gcp.vertex.agent.tool_call_args"]) == {"report_id": "q3"}


def test_adk_legacy_content_switch_off_leaves_empty_objects() -> None:
    spans = _spans(run_adk("legacy", None, legacy_content=False))
    calls = _named(spans, "call_llm")
    assert {c["attrs"]["gcp.vertex.agent.llm_request"] for c in calls} == {"{}"}
    tools = _named(spans, "execute_tool get_weather")
    assert {t["attrs"]["gcp.vertex.agent.tool_call_args"] for t in tools} == {"{}"}


def test_adk_own_record_has_two_invocations_with_parallel_calls_and_the_error(
    adk_content: AdkRun,
) -> None:
    record = adk_content.adk_record()
    assert set(record) == set(TWO)
    first, second = record["adk-s1"]
    calls = [
        p["functionCall"]["name"]
        for e in first["intermediateData"]["invocationEvents"]
        for p in e.get("content", {}).get("parts", [])
        if "functionCall" in p
    ]
    assert calls == ["get_weather", "fetch_report"]
    assert second["finalResponse"]["parts"][0]["text"].startswith("I could not get the weather")


# --- OpenAI Agents SDK ----------------------------------------------------------------------------


def test_openai_agents_genai_spans_have_no_session_id_and_no_tool_call_ids(
    genai: OpenAIAgentsOutput,
) -> None:
    spans = genai.spans
    assert len({s["traceId"] for s in spans}) == 2  # one trace per session (agents.trace)
    assert all("gen_ai.conversation.id" not in s["attrs"] for s in spans)
    assert all("thread-a" not in json.dumps(s["attrs"]) for s in spans)
    tools = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    assert len(tools) == 6
    assert all("gen_ai.tool.call.id" not in s["attrs"] for s in tools)
    by_id = {s["spanId"]: s for s in spans}
    assert {by_id[t["parentSpanId"]]["name"] for t in tools} == {"unknown"}


def test_openai_agents_genai_writes_tool_calls_as_python_reprs(genai: OpenAIAgentsOutput) -> None:
    chats = [s for s in genai.spans if s["name"] == "chat scripted-gpt-1"]
    parts = [
        p
        for s in chats
        for m in json.loads(s["attrs"]["gen_ai.output.messages"])
        for p in m["parts"]
    ]
    assert all(p["type"] == "text" for p in parts)
    assert any(p["content"].startswith("ResponseFunctionToolCall(") for p in parts)
    assert sum(s["attrs"]["gen_ai.usage.input_tokens"] for s in chats) > 0


def test_openai_agents_genai_tool_error_and_large_result(genai: OpenAIAgentsOutput) -> None:
    tools = [s for s in genai.spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    errors = [s for s in tools if s["status"].get("code") == 2]
    assert len(errors) == 2
    assert all("no weather station in Atlantis" in s["status"]["message"] for s in errors)
    reports = [s for s in tools if s["attrs"]["gen_ai.tool.name"] == "fetch_report"]
    assert all(
        len(json.loads(s["attrs"]["gen_ai.tool.call.result"])["text"]) == 24 * 1024 for s in reports
    )


def test_openai_agents_genai_captures_content_unless_told_false(
    openai_runs: dict[str, OpenAIAgentsOutput],
) -> None:
    assert any("gen_ai.input.messages" in s["attrs"] for s in openai_runs["genai"].spans)
    off = openai_runs["off"]
    assert all(not any(k in s["attrs"] for k in CONTENT_KEYS) for s in off.spans)
    assert all("gen_ai.tool.call.arguments" not in s["attrs"] for s in off.spans)


def test_openai_agents_without_a_trace_around_the_turns_gives_unlinked_traces(
    openai_runs: dict[str, OpenAIAgentsOutput],
) -> None:
    out = openai_runs["per-turn"]
    roots = [s for s in out.spans if not s.get("parentSpanId")]
    assert [r["name"] for r in roots] == ["weather workflow", "weather workflow"]
    assert len({r["traceId"] for r in roots}) == 2
    assert out.finals == {
        "session-0": [
            "Paris is sunny at 21°C; report q3 says revenue grew.",
            "I could not get the weather in Atlantis: no station there.",
        ]
    }


def test_two_sessions_interleave_in_one_file(genai: OpenAIAgentsOutput) -> None:
    order = [s["traceId"] for s in genai.spans]
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert switches > 2  # not one session's spans then the other's


def test_openinference_spans_kinds_messages_and_tools(openinference: OpenAIAgentsOutput) -> None:
    spans = openinference.spans
    kinds = {s["name"]: s["attrs"]["openinference.span.kind"] for s in spans}
    assert kinds == {
        "weather conversation": "AGENT",
        "weather workflow": "CHAIN",
        "weather_agent": "AGENT",
        "turn": "CHAIN",
        "response": "LLM",
        "get_weather": "TOOL",
        "fetch_report": "TOOL",
    }
    assert all("session.id" not in s["attrs"] for s in spans)
    llm = [s["attrs"] for s in spans if s["name"] == "response"]
    assert all("llm.input_messages.0.message.role" not in a for a in llm)
    assert all(a["llm.input_messages.1.message.role"] == "user" for a in llm)
    later = [a for a in llm if "llm.input_messages.4.message.tool_call_id" in a]
    assert later and all(a["llm.input_messages.4.message.content"].startswith("{'") for a in later)
    tools = [s for s in spans if s["attrs"]["openinference.span.kind"] == "TOOL"]
    assert all(not any("call" in k and "id" in k for k in s["attrs"]) for s in tools)
    assert all(json.loads(s["attrs"]["input.value"]) for s in tools)


def test_openinference_file_is_gzip(openinference: OpenAIAgentsOutput) -> None:
    assert openinference.path.read_bytes()[:2] == b"\x1f\x8b"


# --- the committed samples ------------------------------------------------------------------------


def _committed() -> Iterator[Path]:
    return (p for p in sorted(FIXTURES.iterdir()) if p.name != "README.md")


def test_committed_samples_are_small_and_described_in_the_readme() -> None:
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    files = list(_committed())
    assert len(files) >= 9
    for path in files:
        assert path.stat().st_size < 200_000, path
        described = path.name if not path.name.endswith(".adk.json") else "adk_*.adk.json"
        assert f"`{described}`" in readme, path
