"""HTTP agents (``--agent http://...``): the assay.agent/v1 protocol against real servers on
127.0.0.1 (the reference server in examples/http_agent, and a scripted stub for faults)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _judge_server import JudgeServer, Reply
from _support import RunCli

from assay.agents.base import Agent, CaseContext
from assay.agents.http import BACKOFF_ENV, HEADERS_ENV, TOKEN_ENV, http_agent_factory
from assay.agents.python import AgentLoadError
from assay.agents.spec import resolve_agent
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.runner.inference import CaseInference, InferenceSettings, run_inference
from assay.simulation.static import StaticUserSimulator

SERVER_FILE = Path(__file__).resolve().parents[2] / "examples" / "http_agent" / "server.py"
TOKEN = "agent-token-5f3a9c1e77"


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("assay_reference_agent_server", SERVER_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = _reference()


def _serve(delegate_tools: bool = False) -> Iterator[str]:
    server = REFERENCE.make_server("127.0.0.1", 0, delegate_tools=delegate_tools)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/agent"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def weather_agent() -> Iterator[str]:
    """The reference server's URL; it runs get_weather itself."""
    yield from _serve()


@pytest.fixture
def delegating_agent() -> Iterator[str]:
    """The reference server's URL, asking assay to run get_weather (tool_requests)."""
    yield from _serve(delegate_tools=True)


@pytest.fixture
def stub() -> Iterator[JudgeServer]:
    """A scripted server: each test queues the replies (or a reply function) it needs."""
    with JudgeServer() as server:
        yield server


def _url(server: JudgeServer) -> str:
    return f"{server.base_url}/chat/completions"  # the stub's one route; any path would do


def _case(eval_id: str, *messages: str, **extra: Any) -> EvalCase:
    conversation = [
        {"user_content": {"role": "user", "parts": [{"text": text}]}} for text in messages
    ]
    return EvalCase.model_validate(
        {
            "eval_id": eval_id,
            "session_input": {"app_name": "weather", "user_id": "u-1", "state": {"units": "C"}},
            "conversation": conversation,
            **extra,
        }
    )


def _replay(context: CaseContext, agent: Agent) -> StaticUserSimulator:
    assert context.case.conversation is not None
    return StaticUserSimulator(context.case.conversation)


def _infer(
    url: str, *cases: EvalCase, env: dict[str, str] | None = None, **settings: Any
) -> list[CaseInference]:
    factory = http_agent_factory(url, env={BACKOFF_ENV: "0", **(env or {})})
    chosen = InferenceSettings(**{"attempts": 1, "backoff_s": 0.0, **settings})
    return asyncio.run(run_inference(list(cases), factory, _replay, chosen))


def _one(url: str, *messages: str, **kwargs: Any) -> list[Invocation]:
    [done] = _infer(url, _case("c1", *messages), **kwargs)
    assert done.error is None, done.error
    return done.invocations


def _error(url: str, *messages: str, **kwargs: Any) -> str:
    [done] = _infer(url, _case("c1", *messages), **kwargs)
    assert done.error is not None, "the turn was expected to fail"
    return done.error


def _final(invocation: Invocation) -> str | None:
    content = invocation.final_response
    return content.parts[0].text if content is not None and content.parts else None


def _answer(text: str, **extra: Any) -> Reply:
    return Reply(body={"final_response": text, **extra})


# -- the protocol ---------------------------------------------------------------------------


def test_a_turn_with_tool_calls_records_each_call_its_response_and_the_answer(
    weather_agent: str,
) -> None:
    [turn] = _one(weather_agent, "What's the weather in Lisbon?")
    assert _final(turn) == "The weather in Lisbon is sunny and 24°C."
    [call] = turn.tool_calls()
    [response] = turn.tool_responses()
    assert (call.name, call.args) == ("get_weather", {"city": "Lisbon"})
    assert response.response == {"city": "Lisbon", "forecast": "sunny and 24°C"}
    assert response.id == call.id
    assert turn.app_details is not None
    details = turn.app_details.agent_details["weather_agent"]
    assert details.tool_declarations[0]["name"] == "get_weather"
    assert details.instructions.startswith("You tell the user the weather")


def test_the_event_form_gives_steps_and_the_last_text_only_event_as_final_response(
    stub: JudgeServer,
) -> None:
    call = {"functionCall": {"id": "c-7", "name": "get_weather", "args": {"city": "Oslo"}}}
    result = {"function_response": {"id": "c-7", "name": "get_weather", "response": {"t": -3}}}
    events = [
        {"author": "planner", "content": {"role": "model", "parts": [{"text": "Checking."}]}},
        {"author": "planner", "content": {"role": "model", "parts": [call]}},
        {"author": "planner", "content": {"role": "user", "parts": [result]}},
        {"author": "planner", "content": {"role": "model", "parts": [{"text": "Snow, -3°C."}]}},
    ]
    stub.queue(Reply(body={"protocol": "assay.agent/v1", "events": events}))
    [turn] = _one(_url(stub), "Weather in Oslo?")
    assert _final(turn) == "Snow, -3°C."
    assert [(c.id, c.name) for c in turn.tool_calls()] == [("c-7", "get_weather")]
    assert [r.response for r in turn.tool_responses()] == [{"t": -3}]
    assert turn.app_details is None  # the server sent none


def test_each_request_carries_the_session_the_message_and_the_turns_so_far(
    stub: JudgeServer,
) -> None:
    stub.queue(
        _answer("Hi Ana.", state={"units": "C", "user_name": "Ana"}),
        _answer("Still Ana."),
        _answer("Bye."),
    )
    _one(_url(stub), "I am Ana", "Who am I?", "Bye")
    first, second, third = (received.body for received in stub.requests)
    assert first["protocol"] == "assay.agent/v1"
    assert (first["app_name"], first["user_id"]) == ("weather", "u-1")
    assert first["session_id"] == second["session_id"] != ""
    assert [first["turn"], second["turn"], third["turn"]] == [1, 2, 3]
    assert first["message"] == "I am Ana"
    assert first["user_content"] == {"role": "user", "parts": [{"text": "I am Ana"}]}
    assert first["history"] == []
    assert first["state"] == {"units": "C"}  # the case's session_input.state
    assert second["state"] == {"units": "C", "user_name": "Ana"}  # as the agent left it
    assert third["state"] == second["state"]  # a reply without state leaves it as it is
    assert second["history"] == [{"user": "I am Ana", "agent": "Hi Ana."}]
    assert third["history"][1] == {"user": "Who am I?", "agent": "Still Ana."}
    assert "tool_results" not in first


def test_state_kept_by_the_agent_shapes_its_later_answers(weather_agent: str) -> None:
    turns = _one(weather_agent, "Hi, my name is Ana", "Hello again", "What did I say?")
    assert [_final(t) for t in turns] == [
        "Nice to meet you, Ana.",
        "Hello, Ana! Ask me about the weather in a city.",
        "You said: Hello again",
    ]


def test_app_details_sent_once_stay_on_every_later_invocation(stub: JudgeServer) -> None:
    details = {"agent_details": {"bot": {"name": "bot", "instructions": "Be brief."}}}
    stub.queue(_answer("one", app_details=details), _answer("two"))
    turns = _one(_url(stub), "a", "b")
    for turn in turns:
        assert turn.app_details is not None
        assert turn.app_details.agent_details["bot"].instructions == "Be brief."


# -- tools run by assay ---------------------------------------------------------------------


def _recorded_weather_case() -> EvalCase:
    recorded = {
        "user_content": {"role": "user", "parts": [{"text": "What's the weather in Lisbon?"}]},
        "intermediate_data": {
            "tool_uses": [{"name": "get_weather", "args": {"city": "Lisbon"}}],
            "tool_responses": [{"name": "get_weather", "response": {"forecast": "windy and 18°C"}}],
        },
    }
    return EvalCase.model_validate({"eval_id": "lisbon", "conversation": [recorded]})


def test_tool_requests_are_answered_from_recorded_responses_under_mock_tools(
    delegating_agent: str,
) -> None:
    [done] = _infer(delegating_agent, _recorded_weather_case(), mock_tools=True)
    assert done.error is None, done.error
    [turn] = done.invocations
    assert _final(turn) == "The weather in Lisbon is windy and 18°C."
    [call] = turn.tool_calls()
    [response] = turn.tool_responses()
    assert (call.id, call.name, call.args) == ("weather-1", "get_weather", {"city": "Lisbon"})
    assert (response.id, response.response) == ("weather-1", {"forecast": "windy and 18°C"})


def test_tool_requests_without_mock_tools_get_an_error_result_naming_the_flag(
    stub: JudgeServer,
) -> None:
    stub.queue(
        Reply(body={"tool_requests": [{"name": "lookup", "args": {"q": 1}}]}),
        _answer("I could not look it up."),
    )
    [turn] = _one(_url(stub), "look it up")
    follow_up = stub.requests[1].body
    [result] = follow_up["tool_results"]
    assert (result["id"], result["name"], result["args"]) == ("tool_request_0", "lookup", {"q": 1})
    assert "--mock-tools" in result["response"]["error"]
    assert follow_up["turn"] == 1 and follow_up["message"] == "look it up"
    assert _final(turn) == "I could not look it up."
    assert [c.name for c in turn.tool_calls()] == ["lookup"]


def test_an_agent_that_only_ever_asks_for_tools_fails_its_turn(stub: JudgeServer) -> None:
    stub.reply = lambda body: Reply(body={"tool_requests": [{"name": "again", "args": {}}]})
    assert "asked for tools more than 20 times in one turn" in _error(_url(stub), "go")
    assert stub.count() == 21


# -- transport: retries, failures, timeouts --------------------------------------------------


def test_a_server_error_is_retried_and_the_next_answer_used(stub: JudgeServer) -> None:
    stub.queue(Reply.error(500, "database locked"), Reply.error(503), _answer("fine"))
    [turn] = _one(_url(stub), "hello")
    assert _final(turn) == "fine"
    assert stub.count() == 3


def test_a_429_waits_at_least_its_retry_after(stub: JudgeServer) -> None:
    stub.queue(Reply.error(429, headers={"Retry-After": "0.3"}), _answer("fine"))
    started = time.perf_counter()
    [turn] = _one(_url(stub), "hello")
    assert time.perf_counter() - started >= 0.3
    assert _final(turn) == "fine" and stub.count() == 2


def test_server_errors_to_the_last_attempt_fail_the_turn_with_status_and_body(
    stub: JudgeServer,
) -> None:
    stub.reply = lambda body: Reply.error(502, "upstream model is down")
    error = _error(_url(stub), "hello", env={"ASSAY_AGENT_HTTP_ATTEMPTS": "2"})
    assert error.startswith(f"turn 1: {_url(stub)} answered HTTP 502 (bad gateway): ")
    assert "upstream model is down" in error and error.endswith("(tried 2 times)")
    assert stub.count() == 2


def test_a_404_is_not_retried(stub: JudgeServer) -> None:
    url = f"http://127.0.0.1:{stub.port}/no/such/agent"
    error = _error(url, "hello")
    assert "answered HTTP 404 (not found)" in error and "tried" not in error
    assert len(stub.requests) == 1


def test_a_refused_connection_is_retried_then_becomes_the_reason(unused_port: int) -> None:
    url = f"http://127.0.0.1:{unused_port}/agent"
    error = _error(url, "hello", env={"ASSAY_AGENT_HTTP_ATTEMPTS": "2"})
    assert error == f"turn 1: cannot connect to {url}: connection refused (tried 2 times)"


def test_a_hanging_agent_leaves_its_case_not_evaluated_and_the_others_go_on(
    stub: JudgeServer,
) -> None:
    stub.reply = lambda body: (
        Reply.hang(300) if body["message"] == "slow" else Reply(body={"final_response": "quick"})
    )
    started = time.perf_counter()
    slow, quick = _infer(
        _url(stub), _case("slow", "slow"), _case("quick", "fast"), turn_timeout_s=0.3
    )
    # the hang (300 s) was cut, not waited out: a bound no slow machine comes near
    assert time.perf_counter() - started < 60
    assert slow.error == "turn 1: the agent did not answer within 0.3 s"
    assert quick.error is None and _final(quick.invocations[0]) == "quick"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<html>oops</html>", "the agent's reply is not JSON (HTTP 200, text/plain"),
        (["hi"], "the agent's reply is a JSON list; expected an object"),
        ({"tool_calls": [{"args": {}}]}, "at tool_calls[0].name: Field required"),
        (
            {"events": [{"author": "a", "content": {"parts": [{"text": 3}]}}]},
            "at events[0].content.parts[0].text: Input should be a valid string",
        ),
        ({"final_response": "x", "mood": "good"}, "at mood: Extra inputs are not permitted"),
        ({"state": {"a": 1}}, "at the top level: expected final_response and/or tool_calls"),
        ({"events": None, "error": None}, "at the top level: expected final_response"),
        (
            {"final_response": "x", "events": []},
            "give either events or final_response/tool_calls, not both",
        ),
        (
            {"final_response": "x", "tool_requests": [{"name": "f"}]},
            "tool_requests is a reply of its own",
        ),
        ({"tool_requests": []}, "at tool_requests: List should have at least 1 item"),
        ({"protocol": "assay.agent/v9", "answer": "x"}, "the agent speaks 'assay.agent/v9'"),
        ({"error": "the planner crashed"}, "the agent reported an error: the planner crashed"),
    ],
)
def test_a_reply_outside_the_protocol_fails_the_turn_naming_where(
    stub: JudgeServer, body: Any, expected: str
) -> None:
    stub.queue(Reply(body=body))
    error = _error(_url(stub), "hello")
    assert expected in error
    assert stub.count() == 1  # a bad reply is not asked for again within the turn


# -- settings and secrets ---------------------------------------------------------------------


def test_the_token_and_extra_headers_are_sent_but_never_shown(
    stub: JudgeServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo = f"invalid credentials: Bearer {TOKEN}, key sesame-opens-{TOKEN}"
    stub.reply = lambda body: Reply.error(503, echo)
    env = {TOKEN_ENV: TOKEN, HEADERS_ENV: json.dumps({"X-Tenant": "acme-tenant-secret"})}
    with caplog.at_level(logging.DEBUG, logger="assay.agents.http"):
        error = _error(_url(stub), "hello", env=env)
    received = stub.requests[0].headers
    assert received["authorization"] == f"Bearer {TOKEN}"
    assert received["x-tenant"] == "acme-tenant-secret"
    assert received["content-type"] == "application/json"
    assert "HTTP 503" in error and "***" in error
    assert TOKEN not in error and TOKEN not in caplog.text
    assert "retrying" in caplog.text  # the retries were logged, without the token


@pytest.mark.parametrize(
    ("spec", "env", "expected"),
    [
        ("http://", {}, "the URL has no host"),
        ("http://example.com:99999/a", {}, "the port must be 1 to 65535"),
        ("http://exa mple.com/a", {}, "is not a host name"),
        ("http://h:abc/", {}, "not a usable URL"),
        ("http://bob:hunter2hunter2@host/a", {}, "the URL carries credentials"),
        ("http://h/a", {HEADERS_ENV: "{not json"}, "ASSAY_AGENT_HEADERS must be a JSON object"),
        ("http://h/a", {HEADERS_ENV: '{"X-Key": 5}'}, "ASSAY_AGENT_HEADERS must be a JSON object"),
        ("http://h/a", {"ASSAY_AGENT_HTTP_ATTEMPTS": "0"}, "must be a whole number of at least 1"),
        ("http://h/a", {BACKOFF_ENV: "soon"}, "ASSAY_AGENT_HTTP_BACKOFF must be a number"),
    ],
)
def test_a_bad_url_or_setting_is_refused_when_resolved(
    spec: str, env: dict[str, str], expected: str
) -> None:
    with pytest.raises(AgentLoadError) as raised:
        resolve_agent(spec, env=env)
    assert expected in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_resolving_does_not_contact_the_server(unused_port: int) -> None:
    factory = resolve_agent(f"https://127.0.0.1:{unused_port}/agent", env={})
    agent = factory(CaseContext(case=_case("c", "hi")))
    assert isinstance(agent, Agent) and agent.name == "http_agent"
    asyncio.run(agent.aclose())


@pytest.fixture
def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- end to end -------------------------------------------------------------------------------


def test_assay_eval_runs_an_http_agent_and_scores_it(
    run_cli: RunCli, weather_agent: str, tmp_path: Path
) -> None:
    def case(eval_id: str, question: str, city: str, answer: str) -> dict[str, Any]:
        return {
            "eval_id": eval_id,
            "conversation": [
                {
                    "user_content": {"role": "user", "parts": [{"text": question}]},
                    "final_response": {"role": "model", "parts": [{"text": answer}]},
                    "intermediate_data": {
                        "tool_uses": [{"name": "get_weather", "args": {"city": city}}]
                    },
                }
            ],
        }

    evalset = tmp_path / "weather.evalset.json"
    cases = [
        case("lisbon", "What's the weather in Lisbon?", "Lisbon", "The weather in Lisbon is sunny and 24°C."),
        case("paris", "And the weather in Paris?", "Paris", "The weather in Paris is light rain and 14°C."),
    ]  # fmt: skip
    evalset.write_text(json.dumps({"eval_set_id": "weather", "eval_cases": cases}))
    criteria = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.9}
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": criteria}))
    run = run_cli("eval", evalset, "--agent", weather_agent, "--save-traces", tmp_path / "t.json")
    assert run.code == 0, run.output
    assert "2 passed, 0 failed, 0 not evaluated" in run.out
    saved = json.loads((tmp_path / "t.json").read_text())
    assert saved["paris"][0]["app_details"]["agent_details"]["weather_agent"]["name"]
