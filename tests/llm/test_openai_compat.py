"""The OpenAI-compatible backend over real HTTP: the body it sends, what it makes of each answer,
and the stub server it is tested against."""

from __future__ import annotations

import asyncio
import email.utils
import threading
import time
from typing import Any

import httpx
import pytest
from _judge_server import JudgeServer, Reply

from assay.llm.backends.openai_compat import (
    OLLAMA_BASE_URL,
    OPENAI_BASE_URL,
    OpenAICompatBackend,
    from_model_string,
)
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, LlmUnavailableError

KEY = "sk-test-SECRET123456"
SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}


def _backend(server: JudgeServer, **kwargs: Any) -> OpenAICompatBackend:
    kwargs.setdefault("base_url", server.base_url)
    return OpenAICompatBackend("openai:judge-model", **kwargs)


async def _generate(backend: OpenAICompatBackend, *requests: LlmRequest) -> list[LlmResponse]:
    try:
        return [await backend.generate(r) for r in requests]
    finally:
        await backend.aclose()


def _send(backend: OpenAICompatBackend, request: LlmRequest | None = None) -> LlmResponse:
    return asyncio.run(_generate(backend, request or LlmRequest.user("hello")))[0]


def _fail(backend: OpenAICompatBackend, request: LlmRequest | None = None) -> LlmCallError:
    with pytest.raises(LlmCallError) as caught:
        _send(backend, request)
    return caught.value


def test_the_body_carries_the_model_after_the_prefix_and_the_settings(
    judge_server: JudgeServer,
) -> None:
    request = LlmRequest.user(
        "Rate this.",
        system="You are a judge.",
        temperature=0.2,
        max_tokens=64,
        grammar="root ::= [0-9]",
        params={"top_p": 0.9, "seed": 3, "model": "not-this", "grammar": 'root ::= "x"'},
    )
    _send(_backend(judge_server), request)

    (sent,) = judge_server.completions
    assert sent.body == {
        "model": "judge-model",
        "messages": [
            {"role": "system", "content": "You are a judge."},
            {"role": "user", "content": "Rate this."},
        ],
        "temperature": 0.2,
        "max_tokens": 64,
        "top_p": 0.9,
        "seed": 3,
        "grammar": 'root ::= "x"',
    }


def test_the_response_text_usage_and_raw_body_are_read(judge_server: JudgeServer) -> None:
    judge_server.queue(Reply.ok("verdict: yes", prompt_tokens=12, completion_tokens=4, model="m1"))
    response = _send(_backend(judge_server))

    assert response.text == "verdict: yes"
    assert response.model == "m1"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 4)
    assert response.usage.calls == 1
    assert response.raw is not None
    assert response.raw["choices"][0]["message"]["content"] == "verdict: yes"


def test_the_key_is_sent_as_a_bearer_token_and_never_kept(judge_server: JudgeServer) -> None:
    judge_server.queue(Reply(body={"choices": [{"message": {"content": f"echo {KEY}"}}]}))
    response = _send(_backend(judge_server, api_key=KEY))

    assert judge_server.completions[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(response.raw)
    assert response.text == f"echo {KEY}"  # the text is the model's answer, left as it is


def test_no_authorization_header_without_a_key(judge_server: JudgeServer) -> None:
    _send(_backend(judge_server))
    assert "authorization" not in judge_server.completions[0].headers


def test_a_schema_asks_for_json_schema_output(judge_server: JudgeServer) -> None:
    request = LlmRequest.user("Rate.", response_schema=SCHEMA, schema_name="rating")
    _send(_backend(judge_server), request)

    assert judge_server.completions[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "rating", "schema": SCHEMA, "strict": True},
    }


def test_a_server_that_rejects_the_schema_is_asked_again_without_it(
    judge_server: JudgeServer,
) -> None:
    def reply(body: dict[str, Any]) -> Reply | str:
        if "response_format" in body:
            return Reply.error(400, "response_format of type json_schema is not supported")
        return '{"score": 1}'

    judge_server.reply = reply
    request = LlmRequest.user("Rate.", response_schema=SCHEMA)
    responses = asyncio.run(_generate(_backend(judge_server), request, request))

    assert [r.text for r in responses] == ['{"score": 1}', '{"score": 1}']
    sent = [("response_format" in r.body) for r in judge_server.completions]
    assert sent == [True, False, False]  # remembered: the second call does not offer it again


def test_an_unrelated_400_is_not_retried_without_the_schema(judge_server: JudgeServer) -> None:
    judge_server.default = Reply.error(400, "messages must not be empty")
    error = _fail(_backend(judge_server), LlmRequest.user("Rate.", response_schema=SCHEMA))

    assert judge_server.count() == 1
    assert error.status == 400
    assert "messages must not be empty" in str(error)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (408, True),
        (409, True),
        (422, False),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (504, True),
    ],
)
def test_an_http_error_says_whether_a_retry_can_help(
    judge_server: JudgeServer, status: int, retryable: bool
) -> None:
    judge_server.default = Reply.error(status)
    error = _fail(_backend(judge_server))

    assert error.status == status
    assert error.retryable is retryable
    assert str(error).startswith(f"HTTP {status} from {judge_server.base_url}")


def test_401_and_403_point_at_the_key_without_showing_it(judge_server: JudgeServer) -> None:
    judge_server.queue(
        Reply.error(401, f"Incorrect API key provided: {KEY}"), Reply.error(403, f"denied {KEY}")
    )
    for _ in range(2):
        error = _fail(_backend(judge_server, api_key=KEY))
        assert "the server rejected the API key; check OPENAI_API_KEY" in str(error)
        assert "SECRET" not in str(error)


def test_404_names_the_model_and_the_url(judge_server: JudgeServer) -> None:
    judge_server.default = Reply.error(404, "model 'judge-model' not found")
    error = _fail(_backend(judge_server))

    assert "model 'judge-model' or the URL was not found" in str(error)
    assert "check the model name and the base URL" in str(error)


def test_retry_after_in_seconds_and_as_a_date(judge_server: JudgeServer) -> None:
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    judge_server.queue(
        Reply.error(429, headers={"Retry-After": "7"}),
        Reply.error(503, headers={"Retry-After": later}),
        Reply.error(429, headers={"Retry-After": "soon"}),
    )
    waits = [_fail(_backend(judge_server)).retry_after for _ in range(3)]

    assert waits[0] == 7.0
    assert waits[1] is not None and 25 <= waits[1] <= 31
    assert waits[2] is None


@pytest.mark.parametrize(
    ("body", "what", "quoted"),
    [
        ("<html>Bad Gateway</html>", "not JSON", "'<html>Bad Gateway</html>'"),
        ({"id": "x"}, "no choices", """'{"id": "x"}'"""),
        ({"choices": []}, "no choices", """'{"choices": []}'"""),
        ({"choices": [{"message": {}}]}, "no message content", """'{"choices": [{"message"""),
        ([1, 2], "not a JSON object", "'[1, 2]'"),
    ],
)
def test_a_malformed_body_is_retryable_and_quoted(
    judge_server: JudgeServer, body: Any, what: str, quoted: str
) -> None:
    judge_server.default = Reply.malformed(body)
    error = _fail(_backend(judge_server))

    assert error.retryable
    assert str(error).startswith(f"malformed response from {judge_server.base_url} ({what}): ")
    assert quoted in str(error)


def test_a_long_malformed_body_is_quoted_short_and_redacted(judge_server: JudgeServer) -> None:
    judge_server.default = Reply.malformed(f"oops {KEY} " + "x" * 5000)
    error = _fail(_backend(judge_server, api_key=KEY))

    assert len(str(error)) < 400
    assert KEY not in str(error)
    assert "oops ***" in str(error)


def test_list_content_parts_are_joined(judge_server: JudgeServer) -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]
    judge_server.default = Reply(body={"choices": [{"message": {"content": parts}}]})

    assert _send(_backend(judge_server)).text == "ab"


def test_a_refused_connection_is_retryable_and_says_so(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    error = _fail(OpenAICompatBackend("openai:m", base_url=base_url))

    assert str(error) == f"could not connect to {base_url}: connection refused"
    assert error.retryable
    assert error.status is None


def test_a_slow_server_times_out_retryably(judge_server: JudgeServer) -> None:
    judge_server.default = Reply.hang(10)
    error = _fail(_backend(judge_server, timeout_s=0.2))

    assert str(error) == f"timed out after 0.2 s waiting for {judge_server.base_url}"
    assert error.retryable
    assert error.status is None


def test_a_dropped_connection_is_retryable(judge_server: JudgeServer) -> None:
    judge_server.default = Reply.dropped()
    error = _fail(_backend(judge_server))

    assert str(error).startswith(f"connection to {judge_server.base_url} failed: ")
    assert error.retryable


def test_the_cache_identity_is_the_base_url() -> None:
    backend = OpenAICompatBackend("ollama:llama3", kind="ollama")
    assert backend.cache_identity() == {"base_url": OLLAMA_BASE_URL}
    assert (backend.name, backend.model) == ("ollama", "ollama:llama3")
    trailing = OpenAICompatBackend("openai:m", base_url="http://h:1/v1/")
    assert trailing.cache_identity() == {"base_url": "http://h:1/v1"}


def test_from_model_string_reads_openai_settings() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1", "OPENAI_API_KEY": KEY}
    backend = from_model_string("openai:gpt-4o-mini", env)

    assert backend.base_url == "http://127.0.0.1:8080/v1"
    assert (backend.name, backend.model) == ("openai", "openai:gpt-4o-mini")
    assert from_model_string("openai:gpt-4o-mini", {"OPENAI_API_KEY": KEY}).base_url == (
        OPENAI_BASE_URL
    )


def test_openai_without_a_key_is_unavailable_but_a_local_server_needs_none() -> None:
    with pytest.raises(LlmUnavailableError, match="set OPENAI_API_KEY, or set OPENAI_BASE_URL"):
        from_model_string("openai:gpt-4o-mini", {})
    local = from_model_string("openai:qwen", {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"})
    assert local.base_url == "http://127.0.0.1:8080/v1"


def test_from_model_string_reads_ollama_settings() -> None:
    assert from_model_string("ollama:llama3", {}).base_url == OLLAMA_BASE_URL
    env = {"OLLAMA_BASE_URL": "http://gpu-box:11434/v1"}
    backend = from_model_string("ollama:llama3", env)
    assert (backend.base_url, backend.name) == ("http://gpu-box:11434/v1", "ollama")


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("openai:", "names no model; write openai:<model>"),
        ("ollama:", "names no model; write ollama:<model>"),
        ("gemini-2.5-flash", "is not for this backend"),
    ],
)
def test_a_bad_model_string_is_unavailable(model: str, message: str) -> None:
    with pytest.raises(LlmUnavailableError, match=message):
        from_model_string(model, {"OPENAI_API_KEY": KEY})


def test_the_stub_serves_requests_concurrently() -> None:
    async def burst(base_url: str) -> list[int]:
        async with httpx.AsyncClient(base_url=base_url + "/") as http:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            calls = [http.post("chat/completions", json=body) for _ in range(16)]
            return [r.status_code for r in await asyncio.gather(*calls)]

    with JudgeServer(latency_s=0.2) as server:
        statuses = asyncio.run(burst(server.base_url))

    assert statuses == [200] * 16
    assert server.max_in_flight >= 8  # serialized, it would be 1


def test_the_stub_lists_its_model_and_reports_unknown_routes() -> None:
    async def get(base_url: str) -> tuple[Any, int]:
        async with httpx.AsyncClient(base_url=base_url + "/") as http:
            models = await http.get("models")
            missing = await http.post("embeddings", json={})
            return models.json(), missing.status_code

    with JudgeServer(model="stub-x") as server:
        models, missing = asyncio.run(get(server.base_url))

    assert models["data"][0]["id"] == "stub-x"
    assert missing == 404
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/embeddings"]
    assert server.count() == 0


def test_the_stub_closes_with_a_request_still_hanging() -> None:
    async def abandon(base_url: str) -> None:
        async with httpx.AsyncClient(base_url=base_url + "/", timeout=0.1) as http:
            with pytest.raises(httpx.ReadTimeout):
                await http.post("chat/completions", json={"messages": []})

    before = set(threading.enumerate())
    server = JudgeServer(default=Reply.hang(3600)).start()
    asyncio.run(abandon(server.base_url))
    started = time.monotonic()
    server.close()

    # woken, not waited for: the hang is an hour, and no machine is slow enough to take a minute
    assert time.monotonic() - started < 60
    assert set(threading.enumerate()) <= before  # every server thread was joined
