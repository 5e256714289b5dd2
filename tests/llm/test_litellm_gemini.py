"""LiteLLM and Gemini backends against fakes: the call each makes, and how their errors map."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from google.genai import errors, types

from assay.llm.backends.gemini import GeminiBackend
from assay.llm.backends.litellm import LiteLLMBackend
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, Message

SCHEMA = {"type": "object", "properties": {"label": {"type": "string"}}}
REQUEST = LlmRequest(
    messages=(
        Message(role="system", content="You are a grader."),
        Message(role="user", content="Grade this."),
        Message(role="assistant", content="Which rubric?"),
        Message(role="user", content="The first."),
    ),
    temperature=0.3,
    max_tokens=50,
    response_schema=SCHEMA,
    params={"topP": 0.9, "maxOutputTokens": 999},
)

# ---------------------------------------------------------------------------------------- LiteLLM


class _LiteLLM:
    """A stand-in for ``litellm.acompletion``: records its arguments, returns or raises."""

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def _litellm_reply(text: str) -> dict[str, Any]:
    return {
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    }


def test_litellm_sends_the_messages_settings_and_schema_and_reads_text_and_usage() -> None:
    completion = _LiteLLM(_litellm_reply('{"label": "yes"}'))
    backend = LiteLLMBackend("litellm:anthropic/claude-3-5-haiku", completion=completion)
    response = asyncio.run(backend.generate(REQUEST))
    assert (response.text, response.model) == ('{"label": "yes"}', backend.model)
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 3)
    [call] = completion.calls
    assert call["model"] == "anthropic/claude-3-5-haiku"
    assert [m["role"] for m in call["messages"]] == ["system", "user", "assistant", "user"]
    assert (call["temperature"], call["max_tokens"], call["top_p"]) == (0.3, 50, 0.9)
    assert call["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": SCHEMA},
    }
    assert (call["num_retries"], call["drop_params"]) == (0, True)


def _named_error(name: str, status: int | None = None, **attrs: Any) -> BaseException:
    """An exception whose class has LiteLLM's name for the kind (as LiteLLM's and OpenAI's do)."""
    base = (
        type("BadRequestError", (Exception,), {})
        if name == "ContextWindowExceededError"
        else Exception
    )
    error = type(name, (base,), {})(f"{name} happened")
    if status is not None:
        error.status_code = status  # type: ignore[attr-defined]
    for key, value in attrs.items():
        setattr(error, key, value)
    return error


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (_named_error("Timeout", 408), True),
        (_named_error("APIConnectionError", 500), True),
        (_named_error("ServiceUnavailableError", 503), True),
        (_named_error("InternalServerError", 500), True),
        (_named_error("BadGatewayError", 502), True),
        (_named_error("AuthenticationError", 401), False),
        (_named_error("PermissionDeniedError", 403), False),
        (_named_error("BadRequestError", 400), False),
        (_named_error("NotFoundError", 404), False),
        (_named_error("ContextWindowExceededError", 400), False),
        (_named_error("SomethingNew", 504), True),
        (_named_error("SomethingNew", 409), False),
        (ValueError("no status at all"), False),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_litellm_errors_are_retryable_only_when_a_retry_can_help(
    error: BaseException, retryable: bool
) -> None:
    backend = LiteLLMBackend("litellm:openai/gpt-4o", completion=_LiteLLM(error))
    with pytest.raises(LlmCallError) as caught:
        asyncio.run(backend.generate(LlmRequest.user("q")))
    assert caught.value.retryable is retryable
    assert type(error).__name__ in str(caught.value)


def test_a_litellm_rate_limit_is_retryable_after_the_wait_the_server_asked_for() -> None:
    headers = httpx.Headers({"retry-after": "7"})
    error = _named_error("RateLimitError", 429, response=SimpleNamespace(headers=headers))
    backend = LiteLLMBackend("litellm:openai/gpt-4o", completion=_LiteLLM(error))
    with pytest.raises(LlmCallError) as caught:
        asyncio.run(backend.generate(LlmRequest.user("q")))
    assert (caught.value.retryable, caught.value.retry_after, caught.value.status) == (
        True,
        7.0,
        429,
    )


def test_litellm_error_messages_never_show_a_key() -> None:
    error = _named_error("AuthenticationError", 401)
    error.args = ("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx",)
    backend = LiteLLMBackend("litellm:openai/gpt-4o", completion=_LiteLLM(error))
    with pytest.raises(LlmCallError) as caught:
        asyncio.run(backend.generate(LlmRequest.user("q")))
    assert "abcdefghijklmnop" not in str(caught.value)


# ----------------------------------------------------------------------------------------- Gemini


class _Models:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome
        self.calls: list[dict[str, Any]] = []

    async def generate_content(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class _GenaiClient:
    """What GeminiBackend uses of ``google.genai.Client``: ``aio.models`` and ``aio.aclose``."""

    def __init__(self, outcome: Any) -> None:
        self.models = _Models(outcome)
        self.closed = False
        self.aio = SimpleNamespace(models=self.models, aclose=self._aclose)

    async def _aclose(self) -> None:
        self.closed = True


def _gemini_reply(text: str) -> types.GenerateContentResponse:
    return types.GenerateContentResponse.model_validate(
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}],
            "usageMetadata": {
                "promptTokenCount": 20,
                "candidatesTokenCount": 4,
                "thoughtsTokenCount": 6,
            },
        }
    )


def _gemini(outcome: Any, model: str = "gemini-2.5-flash") -> tuple[GeminiBackend, _GenaiClient]:
    client = _GenaiClient(outcome)
    return GeminiBackend(model, client=client), client


def _generate(backend: GeminiBackend, request: LlmRequest = REQUEST) -> LlmResponse:
    return asyncio.run(backend.generate(request))


def test_gemini_sends_a_config_built_from_params_and_the_request() -> None:
    backend, client = _gemini(_gemini_reply('{"label": "yes"}'))
    response = _generate(backend)
    assert response.text == '{"label": "yes"}'
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (20, 10)
    [call] = client.models.calls
    assert call["model"] == "gemini-2.5-flash"
    assert [c.role for c in call["contents"]] == ["user", "model", "user"]
    config: types.GenerateContentConfig = call["config"]
    assert config.system_instruction == "You are a grader."
    assert (config.temperature, config.max_output_tokens, config.top_p) == (0.3, 50, 0.9)
    assert config.response_mime_type == "application/json"
    assert config.response_json_schema == SCHEMA
    assert config.automatic_function_calling is not None
    assert config.automatic_function_calling.disable is True


def test_gemini_params_alone_set_the_config_when_the_request_does_not() -> None:
    backend, client = _gemini(_gemini_reply("ok"), model="gemini:gemini-2.5-pro")
    _generate(backend, LlmRequest.user("q", params={"temperature": 0.1, "max_output_tokens": 9}))
    [call] = client.models.calls
    assert call["model"] == "gemini-2.5-pro"
    assert (call["config"].temperature, call["config"].max_output_tokens) == (0.1, 9)
    assert call["config"].response_mime_type is None


def test_gemini_refuses_params_that_are_not_generate_content_config_keys() -> None:
    backend, client = _gemini(_gemini_reply("ok"))
    with pytest.raises(LlmCallError, match=r"judge_model_config.*temprature") as caught:
        _generate(backend, LlmRequest.user("q", params={"temprature": 0.1}))
    assert not caught.value.retryable
    assert client.models.calls == []


def _api_error(code: int, status: str, **extra: Any) -> errors.APIError:
    body = {"error": {"code": code, "message": "it failed", "status": status, **extra}}
    cls = errors.ClientError if code < 500 else errors.ServerError
    return cls(code, body)


@pytest.mark.parametrize(
    ("error", "retryable", "status"),
    [
        (_api_error(500, "INTERNAL"), True, 500),
        (_api_error(503, "UNAVAILABLE"), True, 503),
        (_api_error(400, "INVALID_ARGUMENT"), False, 400),
        (_api_error(401, "UNAUTHENTICATED"), False, 401),
        (_api_error(403, "PERMISSION_DENIED"), False, 403),
        (_api_error(404, "NOT_FOUND"), False, 404),
        (httpx.ConnectError("connection refused"), True, None),
        (httpx.ReadTimeout("read timed out"), True, None),
        (RuntimeError("unexpected"), False, None),
    ],
    ids=lambda value: (
        str(getattr(value, "code", "") or type(value).__name__)
        if isinstance(value, BaseException)
        else str(value)
    ),
)
def test_gemini_errors_are_retryable_for_429_5xx_and_lost_connections(
    error: BaseException, retryable: bool, status: int | None
) -> None:
    backend, _ = _gemini(error)
    with pytest.raises(LlmCallError) as caught:
        _generate(backend)
    assert (caught.value.retryable, caught.value.status) == (retryable, status)


def test_a_gemini_quota_error_waits_for_the_retry_delay_it_names() -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}
    backend, _ = _gemini(_api_error(429, "RESOURCE_EXHAUSTED", details=[retry_info]))
    with pytest.raises(LlmCallError, match="429 RESOURCE_EXHAUSTED: it failed") as caught:
        _generate(backend)
    assert (caught.value.retryable, caught.value.retry_after) == (True, 12.0)


def test_gemini_aclose_closes_the_client() -> None:
    backend, client = _gemini(_gemini_reply("ok"))
    asyncio.run(backend.aclose())
    assert client.closed
