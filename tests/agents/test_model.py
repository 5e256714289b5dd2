"""``openai:MODEL`` / ``ollama:MODEL``: a tool-calling model as the agent, against a real
OpenAI-compatible server on 127.0.0.1 whose replies the tests script."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer, Reply
from _support import RunCli
from google.genai import types as genai_types

from assay.agents.base import AgentError, AgentTurn, CaseContext, Session
from assay.agents.declarations import json_schema, openai_tools
from assay.agents.model import (
    UNPARSED_ARGUMENTS,
    ModelAgent,
    ModelAgentOptions,
    brief_for,
    history_messages,
    model_agent_factory,
)
from assay.agents.python import AgentLoadError
from assay.agents.spec import resolve_agent
from assay.evalset.case import EvalCase
from assay.evalset.content import Content
from assay.evalset.invocation import Invocation
from assay.runner.inference import InferenceSettings, run_inference
from assay.simulation.static import StaticUserSimulator

KEY = "sk-agent-test-key-123456789"
FAST = ModelAgentOptions(backoff_s=0.001, max_backoff_s=0.01)

# A tool declaration as ADK writes it into an eval set's app_details (a genai Tool, dumped
# without nulls): genai's schema, upper-case types, nullable, property_ordering.
ADK_WEATHER_TOOL: dict[str, Any] = {
    "function_declarations": [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "OBJECT",
                "properties": {
                    "city": {"type": "STRING", "description": "City name"},
                    "days": {"type": "INTEGER", "nullable": True},
                    "units": {"type": "STRING", "enum": ["c", "f"]},
                    "stops": {"type": "ARRAY", "items": {"type": "STRING"}, "min_items": 1},
                },
                "required": ["city"],
                "property_ordering": ["city", "days", "units", "stops"],
            },
        }
    ]
}
OPENAI_WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "days": {"type": ["integer", "null"]},
                "units": {"type": "string", "enum": ["c", "f"]},
                "stops": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            },
            "required": ["city"],
        },
    },
}
APP = {
    "agent_details": {
        "weather_agent": {
            "name": "weather_agent",
            "instructions": "You report the weather.",
            "tool_declarations": [ADK_WEATHER_TOOL],
        }
    }
}


def _turn_record(city: str, temp: int, *, app: bool) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": f"Weather in {city}?"}]},
        "final_response": {"role": "model", "parts": [{"text": f"It is {temp} degrees."}]},
        "intermediate_data": {
            "tool_uses": [{"id": "r1", "name": "get_weather", "args": {"city": city}}],
            "tool_responses": [{"id": "r1", "name": "get_weather", "response": {"temp_c": temp}}],
        },
        **({"app_details": APP} if app else {}),
    }


def _case(eval_id: str = "weather", *, app: bool = True) -> EvalCase:
    conversation = [_turn_record("Paris", 21, app=app), _turn_record("Rome", 25, app=app)]
    return EvalCase.model_validate({"eval_id": eval_id, "conversation": conversation})


def _completion(
    text: str | None = None, calls: tuple[tuple[str, Any], ...] = (), *, call_id: str = "call"
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": f"{call_id}-{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    usage = {
        "prompt_tokens": 30,
        "completion_tokens": 7,
        "total_tokens": 37,
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "scripted-model-2024",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage,
    }
    return Reply(body=body)


def _weather_model(body: dict[str, Any]) -> Reply:
    """A scripted model: asks for the weather of the city the user named, then reports it."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user":
        city = "Paris" if "Paris" in last["content"] else "Rome"
        arguments = json.dumps({"city": city})
        return _completion(calls=(("get_weather", arguments),), call_id=f"c{len(messages)}")
    return _completion(f"It is {json.loads(last['content']).get('temp_c', '?')} degrees.")


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer(reply=_weather_model) as stub:
        yield stub


def _env(server: JudgeServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}


def _agent(server: JudgeServer, case: EvalCase | None = None, **options: Any) -> ModelAgent:
    factory = model_agent_factory(
        "openai:scripted-model", env=_env(server), options=ModelAgentOptions(**options)
    )
    agent = factory(CaseContext(case=case or _case()))
    assert isinstance(agent, ModelAgent)
    return agent


def _turn(agent: ModelAgent, text: str, session: Session | None = None) -> AgentTurn:
    async def go() -> AgentTurn:
        try:
            return await agent.turn(Content.from_text(text, role="user"), session or _session())
        finally:
            await agent.aclose()

    return asyncio.run(go())


def _session() -> Session:
    return Session(app_name="app", user_id="u", session_id="s")


def _parts(turn: AgentTurn) -> list[tuple[str, str | None, Any]]:
    out: list[tuple[str, str | None, Any]] = []
    for event in turn.events:
        for part in (event.content.parts or []) if event.content else []:
            if part.function_call is not None:
                out.append(("call", part.function_call.name, part.function_call.args))
            if part.function_response is not None:
                out.append(
                    ("response", part.function_response.name, part.function_response.response)
                )
    return out


def test_a_tool_call_then_text_is_recorded_as_call_response_and_final_answer(
    server: JudgeServer,
) -> None:
    turn = _turn(_agent(server), "Weather in Paris?")
    assert _parts(turn) == [
        ("call", "get_weather", {"city": "Paris"}),
        ("response", "get_weather", {"temp_c": 21}),  # the case's recorded response
    ]
    assert turn.final_response == Content.from_text("It is 21 degrees.")
    assert {e.author for e in turn.events} == {"weather_agent"}
    call, response, final = turn.events
    assert call.content and call.content.parts and call.content.parts[0].function_call
    assert response.content and response.content.parts and response.content.parts[0]
    assert call.content.parts[0].function_call.id == "c2-0"
    assert response.content.parts[0].function_response
    assert response.content.parts[0].function_response.id == "c2-0"
    # each model call is one event with ADK's usage fields; the final one without content
    assert final.content is None
    usage = {
        "prompt_token_count": 30,
        "candidates_token_count": 5,
        "thoughts_token_count": 2,
        "total_token_count": 37,
    }
    assert [e.usage_metadata for e in turn.events] == [usage, None, usage]
    assert call.model_version == final.model_version == "scripted-model-2024"
    second = server.completions[1].messages
    assert second[-2]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }
    assert second[-1] == {"role": "tool", "tool_call_id": "c2-0", "content": '{"temp_c": 21}'}


def test_adk_declarations_are_sent_as_openai_tools_with_the_instructions(
    server: JudgeServer,
) -> None:
    genai_types.Tool.model_validate(ADK_WEATHER_TOOL)  # the fixture is genai's real shape
    agent = _agent(server)
    _turn(agent, "Weather in Paris?")
    first = server.completions[0]
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.body["model"] == "scripted-model"
    assert first.body["temperature"] == 0.0
    assert first.body["tools"] == [OPENAI_WEATHER_TOOL]
    assert first.messages[:2] == [
        {"role": "system", "content": "You report the weather."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    details = agent.app_details().agent_details["weather_agent"]
    assert details.instructions == "You report the weather."
    assert details.tool_declarations == [ADK_WEATHER_TOOL]


@pytest.mark.parametrize(
    "declaration",
    [
        ADK_WEATHER_TOOL,
        OPENAI_WEATHER_TOOL,
        ADK_WEATHER_TOOL["function_declarations"][0],  # a bare function declaration
        # genai's camelCase JSON, and the parameters given as JSON Schema
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parametersJsonSchema": OPENAI_WEATHER_TOOL["function"]["parameters"],
                }
            ]
        },
        genai_types.Tool.model_validate(ADK_WEATHER_TOOL),  # a genai object given in Python
    ],
    ids=["adk", "openai", "bare", "camel-json-schema", "genai-object"],
)
def test_every_declaration_form_becomes_the_same_openai_tool(declaration: Any) -> None:
    google_search: dict[str, Any] = {
        "google_search": {}
    }  # a tool a chat model cannot call is left out
    assert openai_tools([declaration, google_search, declaration]) == [OPENAI_WEATHER_TOOL]


def test_genai_schemas_convert_at_every_depth_and_json_schema_is_kept() -> None:
    genai = {
        "type": "OBJECT",
        "properties": {
            "legs": {
                "type": "ARRAY",
                "items": {"type": "OBJECT", "properties": {"to": {"type": "STRING"}}},
            },
            "when": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]},
            "type": {"type": "TYPE_UNSPECIFIED", "description": "a property named type"},
        },
    }
    assert json_schema(genai) == {
        "type": "object",
        "properties": {
            "legs": {
                "type": "array",
                "items": {"type": "object", "properties": {"to": {"type": "string"}}},
            },
            "when": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "type": {"description": "a property named type"},
        },
    }
    schema = OPENAI_WEATHER_TOOL["function"]["parameters"] | {"additionalProperties": False}
    assert json_schema(schema) == schema


def test_a_case_without_declarations_takes_another_case_s_or_the_recorded_calls() -> None:
    scenario = EvalCase.model_validate(
        {
            "eval_id": "sim",
            "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"},
        }
    )
    brief = brief_for(CaseContext(scenario, [scenario, _case()]), fallback_name="m")
    assert (brief.name, brief.instructions) == ("weather_agent", "You report the weather.")
    assert brief.tools == [OPENAI_WEATHER_TOOL]
    # no app_details anywhere: tools declared from the calls recorded in the eval set
    bare = brief_for(CaseContext(scenario, [scenario, _case(app=False)]), fallback_name="m")
    assert (bare.name, bare.instructions) == ("m", "")
    assert bare.tools == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]


def test_arguments_are_json_strings_and_a_non_json_string_is_answered_with_an_error(
    server: JudgeServer,
) -> None:
    server.queue(
        _completion(calls=(("get_weather", '{"city": "Rome"}'), ("get_weather", "city=Rome"))),
        _completion("Rome is warm."),
    )
    turn = _turn(_agent(server), "Weather in Rome?")
    calls = _parts(turn)
    assert calls[0] == ("call", "get_weather", {"city": "Rome"})
    assert calls[1] == ("call", "get_weather", {UNPARSED_ARGUMENTS: "city=Rome"})
    assert calls[2] == ("response", "get_weather", {"temp_c": 25})
    assert calls[3][2]["error"].startswith("the arguments of get_weather are not a JSON object")
    sent = server.completions[1].messages
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "tool"]
    assert "not a JSON object" in sent[-1]["content"]


def test_with_mock_tools_the_session_s_tool_runner_answers(server: JudgeServer) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def runner(name: str, args: dict[str, Any], function: Any) -> Any:
        asked.append((name, args))
        return 30

    session = Session(app_name="a", user_id="u", session_id="s", tool_runner=runner)
    turn = _turn(_agent(server), "Weather in Paris?", session)
    assert asked == [("get_weather", {"city": "Paris"})]
    assert _parts(turn)[1] == ("response", "get_weather", {"result": 30})


def test_the_second_turn_sends_the_first_turn_s_calls_results_and_answer(
    server: JudgeServer,
) -> None:
    case = _case()
    factory = model_agent_factory("openai:scripted-model", env=_env(server))
    done = asyncio.run(
        run_inference(
            [case],
            factory,
            lambda context, agent: StaticUserSimulator(context.case.conversation or []),
            InferenceSettings(),
        )
    )
    assert done[0].error is None
    assert [inv.final_response for inv in done[0].invocations] == [
        Content.from_text("It is 21 degrees."),
        Content.from_text("It is 25 degrees."),
    ]
    third = server.completions[2].messages  # the second turn's first call
    assert [(m["role"], m.get("content")) for m in third] == [
        ("system", "You report the weather."),
        ("user", "Weather in Paris?"),
        ("assistant", None),
        ("tool", '{"temp_c": 21}'),
        ("assistant", "It is 21 degrees."),
        ("user", "Weather in Rome?"),
    ]
    assert third[2]["tool_calls"][0]["id"] == third[3]["tool_call_id"] == "c2-0"
    app = done[0].invocations[0].app_details
    assert app is not None and list(app.agent_details) == ["weather_agent"]


def test_recorded_steps_without_ids_are_paired_in_order_and_an_empty_answer_kept() -> None:
    invocation = Invocation.model_validate(
        {
            "user_content": {"parts": [{"text": "Two cities?"}]},
            "intermediate_data": {
                "tool_uses": [
                    {"name": "get_weather", "args": {"city": "Paris"}},
                    {"name": "get_weather", "args": {"city": "Rome"}},
                ],
                "tool_responses": [
                    {"name": "get_weather", "response": {"temp_c": 21}},
                    {"name": "get_weather", "response": {"temp_c": 25}},
                ],
            },
        }
    )
    messages = history_messages([invocation])
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    ids = [call["id"] for call in messages[1]["tool_calls"]]
    assert ids == ["call_0_0", "call_0_1"]
    assert [m["tool_call_id"] for m in messages[2:4]] == ids
    assert messages[3]["content"] == '{"temp_c": 25}'
    assert messages[4] == {"role": "assistant", "content": ""}  # user and assistant alternate


def test_a_model_that_never_stops_calling_tools_fails_the_turn_at_the_step_limit(
    server: JudgeServer,
) -> None:
    server.reply = lambda body: _completion(calls=(("get_weather", '{"city": "Paris"}'),))
    with pytest.raises(AgentError, match="each of its 3 model calls this turn"):
        _turn(_agent(server, max_steps=3), "Weather in Paris?")
    assert server.count() == 3


def test_a_server_error_is_retried_and_a_bad_request_is_not(server: JudgeServer) -> None:
    server.queue(Reply.error(500), Reply.dropped())
    turn = _turn(_agent(server, backoff_s=0.001), "Weather in Paris?")
    assert turn.final_response == Content.from_text("It is 21 degrees.")
    assert server.count() == 4  # 500, dropped, then the two calls of the turn
    server.queue(Reply.error(400, "tools[0] is invalid"))
    with pytest.raises(AgentError, match=r"HTTP 400 .*tools\[0\] is invalid") as failed:
        _turn(_agent(server, backoff_s=0.001), "Weather in Paris?")
    assert server.count() == 5
    server.queue(*[Reply.error(503)] * 2)
    with pytest.raises(AgentError, match=r"HTTP 503 .*gave up after 2 attempts"):
        _turn(_agent(server, backoff_s=0.001, attempts=2), "Weather in Paris?")
    assert "Traceback" not in str(failed.value)


def test_a_429_waits_at_least_its_retry_after(server: JudgeServer) -> None:
    server.queue(Reply.error(429, headers={"Retry-After": "0.3"}))
    started = time.monotonic()
    _turn(_agent(server, backoff_s=0.001), "Weather in Paris?")
    assert time.monotonic() - started >= 0.3
    assert server.count() == 3


def test_a_rejected_key_is_reported_without_the_key(server: JudgeServer) -> None:
    server.queue(Reply.error(401, f"bad key {KEY}"))
    with pytest.raises(AgentError, match="rejected the API key; check OPENAI_API_KEY") as failed:
        _turn(_agent(server), "Weather in Paris?")
    assert KEY not in str(failed.value)
    assert server.count() == 1  # the model call is not retried
    assert failed.value.retryable is False  # nor is the conversation


@pytest.mark.parametrize(
    ("spec", "env", "message"),
    [
        ("openai:gpt-4o-mini", {}, "OPENAI_API_KEY is not set; set OPENAI_API_KEY"),
        ("openai:", {"OPENAI_API_KEY": KEY}, "names no model; write openai:MODEL"),
        ("openai:m", {"OPENAI_BASE_URL": "localhost:8000"}, "is not an http(s) URL"),
        ("ollama:m", {"OLLAMA_HOST": "http://"}, "OLLAMA_HOST='http://' is not an http(s) URL"),
        (
            "openai:m",
            {"OPENAI_API_KEY": KEY, "ASSAY_AGENT_TEMPERATURE": "warm"},
            "ASSAY_AGENT_TEMPERATURE='warm' is not a number",
        ),
        ("ollama:m", {"ASSAY_AGENT_MAX_STEPS": "0"}, "ASSAY_AGENT_MAX_STEPS='0': expected"),
    ],
)
def test_an_unusable_spec_or_setting_is_a_load_error_saying_what_to_set(
    spec: str, env: Mapping[str, str], message: str
) -> None:
    with pytest.raises(AgentLoadError) as failed:
        resolve_agent(spec, env=env)
    assert message in str(failed.value)
    assert KEY not in str(failed.value)


def test_ollama_uses_ollama_host_and_sends_no_key(server: JudgeServer) -> None:
    env = {"OLLAMA_HOST": f"127.0.0.1:{server.port}", "OPENAI_API_KEY": KEY}
    factory = model_agent_factory(
        "ollama:llama3.2", env=env, options=ModelAgentOptions(temperature=None)
    )
    agent = factory(CaseContext(_case()))
    assert isinstance(agent, ModelAgent)
    _turn(agent, "Weather in Paris?")
    first = server.completions[0]
    assert first.path == "/v1/chat/completions"
    assert first.body["model"] == "llama3.2"
    assert "authorization" not in first.headers
    assert "temperature" not in first.body


def test_assay_eval_runs_the_model_over_an_eval_set_and_scores_its_trajectory(
    run_cli: RunCli, server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "weather"
    folder.mkdir()
    evalset = folder / "weather.evalset.json"
    cases = [_case().model_dump(mode="json", exclude_none=True)]
    evalset.write_text(json.dumps({"eval_set_id": "weather", "eval_cases": cases}))
    config = {"criteria": {"tool_trajectory_avg_score": 1.0}}
    (folder / "test_config.json").write_text(json.dumps(config))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "results.json"
    run = run_cli("eval", evalset, "--agent", "openai:scripted-model", "--output", out)
    assert run.code == 0, run.output
    assert "1 passed, 0 failed, 0 not evaluated" in run.out
    [result] = json.loads(out.read_text())["eval_case_results"]
    scores = {m["metric_name"]: m.get("score") for m in result["overall_eval_metric_results"]}
    assert scores["tool_trajectory_avg_score"] == 1.0
    assert server.count() == 4
    assert KEY not in run.output
