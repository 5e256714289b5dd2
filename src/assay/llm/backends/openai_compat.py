"""Any server that speaks OpenAI's chat-completions API: OpenAI itself, Ollama, llama.cpp's
server, vLLM, LM Studio, a corporate gateway.

``openai:<model>`` and ``ollama:<model>`` name this backend; the server is sent ``<model>``. One
request is one ``POST {base_url}/chat/completions``. A structured-output request carries
``response_format`` with the JSON schema; a server that answers 400 to it is asked again at once
without it, and is not offered it again (the judges parse free text too).

Every failure becomes an :class:`~assay.llm.base.LlmCallError` whose ``retryable`` says whether
the client should try again: timeouts, dropped connections, 408, 409, 429 (with its
``Retry-After``), 5xx and malformed bodies are; other 4xx are not. Messages name the base URL and
never the API key.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC
from http import HTTPStatus
from typing import Any, TypeVar

import httpx

from assay._version import __version__
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, LlmUnavailableError, TokenUsage
from assay.llm.choices import choices_from_logprobs, tokens_from_openai
from assay.llm.connection import ServerUrlError, connect_reason, ollama_base_url, server_url
from assay.llm.redact import MIN_SECRET_LENGTH, redact

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
_BODY_PREFIX = 200
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_SCHEMA_WORDS = ("response_format", "json_schema")
_LOGPROBS_WORDS = ("logprobs",)
TOP_LOGPROBS = 10
CHECK_TIMEOUT_S = 10.0
"""Seconds the check before a run waits for the server's list of models."""
"""Alternatives asked for at each answer token (OpenAI allows up to 20)."""


class OpenAICompatBackend:
    """Sends chat completions to an OpenAI-compatible server over one ``httpx.AsyncClient``.

    ``model`` is the model string as written (``openai:gpt-4o-mini``); ``kind`` is the backend
    name reported in results and cache keys (``openai``, ``ollama``).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        kind: str = "openai",
        timeout_s: float = 120.0,
    ) -> None:
        default_url = OLLAMA_BASE_URL if kind == "ollama" else OPENAI_BASE_URL
        self._model = model
        self._server_model = model.split(":", 1)[1] if ":" in model else model
        self._kind = kind
        self._base_url = (base_url or default_url).rstrip("/")
        self._api_key = api_key or None
        self._timeout_s = timeout_s
        self._http: httpx.AsyncClient | None = None
        self._schema_supported = True
        self._logprobs_supported = True

    @property
    def name(self) -> str:
        """The backend kind (``openai``, ``ollama``)."""
        return self._kind

    @property
    def model(self) -> str:
        """The model string as the user wrote it."""
        return self._model

    @property
    def base_url(self) -> str:
        """The server's base URL, without a trailing slash."""
        return self._base_url

    def cache_identity(self) -> Mapping[str, Any]:
        """The base URL: the same model name on two servers may be two models."""
        return {"base_url": self._base_url}

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """One chat completion; raises :class:`LlmCallError` on any failure.

        A structured request also asks for the log-probabilities of the answer's tokens
        (``logprobs``, ``top_logprobs``: :data:`TOP_LOGPROBS`), from which the response's
        :attr:`~assay.llm.base.LlmResponse.choices` are read; a server that refuses them is
        asked again at once without, and not offered them again."""
        with_schema = request.response_schema is not None and self._schema_supported
        response = await self._post(self.request_body(request, with_schema=with_schema))
        if with_schema and _rejects(response, _SCHEMA_WORDS):
            self._schema_supported = False
            with_schema = False
            response = await self._post(self.request_body(request, with_schema=False))
        if _rejects(response, _LOGPROBS_WORDS) and self._wants_logprobs(request):
            self._logprobs_supported = False
            response = await self._post(self.request_body(request, with_schema=with_schema))
        if response.status_code >= 400:
            raise self._status_error(response)
        return self._parse(response, request)

    async def check(self, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        """Ask the server for its models (``GET {base_url}/models``), a request that costs no
        tokens; raise :class:`LlmUnavailableError` saying what to do when it cannot be reached
        in ``timeout_s``, rejects the key, or (Ollama, OpenAI's API: servers that list exactly
        the models they serve) does not list the model. Any other answer counts as reachable:
        some OpenAI-compatible servers have no such route."""
        try:
            response = await self._client().get("models", timeout=timeout_s)
        except httpx.TimeoutException:
            raise LlmUnavailableError(
                f"no answer from {self._base_url} within {timeout_s:g} s; {self._start_hint()}"
            ) from None
        except httpx.HTTPError as exc:
            raise LlmUnavailableError(
                redact(
                    f"could not connect to {self._base_url}: {connect_reason(exc)}; "
                    f"{self._start_hint()}",
                    self._secrets(),
                )
            ) from None
        if response.status_code in (401, 403):
            raise LlmUnavailableError(str(self._status_error(response)))
        listed = _listed_models(response) if response.status_code == 200 else None
        strict = self._kind == "ollama" or _host(self._base_url) == "api.openai.com"
        if strict and listed is not None and not _served(self._server_model, listed):
            shown = ", ".join(sorted(listed)[:8]) or "none"
            fix = f"ollama pull {self._server_model}" if self._kind == "ollama" else "check it"
            raise LlmUnavailableError(
                f"{self._base_url} does not serve the model '{self._server_model}' ({fix}); "
                f"it lists: {shown}"
            )

    def _start_hint(self) -> str:
        if self._kind == "ollama":
            return (
                "start Ollama (ollama serve), or set OLLAMA_HOST to where it runs "
                "(e.g. OLLAMA_HOST=127.0.0.1:11434)"
            )
        return "start the server, or set OPENAI_BASE_URL to one that runs"

    def _wants_logprobs(self, request: LlmRequest) -> bool:
        return (
            self._logprobs_supported
            and request.response_schema is not None
            and "logprobs" not in request.params
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def http(self) -> httpx.AsyncClient:
        """The connection pool this backend sends through, based at its base URL (the batch
        API, :mod:`assay.llm.backends.openai_batch`, shares it and its key)."""
        return self._client()

    def completion(self, data: Any, request: LlmRequest | None = None) -> LlmResponse:
        """A chat completion's JSON body (a batch line's answer) as a response; the same
        malformed-response errors as :meth:`generate`."""
        return self._parse(httpx.Response(200, json=data), request)

    def status_error(self, response: httpx.Response) -> LlmCallError:
        """The error for an HTTP error ``response`` (redacted, retryable where a retry can help)."""
        return self._status_error(response)

    def failure(self, message: str, *, retryable: bool = False) -> LlmCallError:
        """An error with ``message``, the API key masked."""
        return self._error(message, retryable=retryable)

    def request_body(self, request: LlmRequest, *, with_schema: bool) -> dict[str, Any]:
        """The JSON body for ``request``; ``request.params`` are merged in last (they cannot
        replace the model or the messages)."""
        body: dict[str, Any] = {
            "model": self._server_model,
            "messages": [m.model_dump() for m in request.messages],
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if with_schema and request.response_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "schema": request.response_schema,
                    "strict": True,
                },
            }
        if self._wants_logprobs(request):
            body["logprobs"] = True
            body["top_logprobs"] = TOP_LOGPROBS
        body.update({k: v for k, v in request.params.items() if k not in ("model", "messages")})
        return body

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            headers = {"User-Agent": f"assay/{__version__}"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._http = httpx.AsyncClient(
                base_url=self._base_url + "/",
                headers=headers,
                timeout=httpx.Timeout(self._timeout_s),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            )
        return self._http

    async def _post(self, body: dict[str, Any]) -> httpx.Response:
        try:
            return await self._client().post("chat/completions", json=body)
        except httpx.TimeoutException:
            raise self._error(
                f"timed out after {self._timeout_s:g} s waiting for {self._base_url}",
                retryable=True,
            ) from None
        except httpx.ConnectError as exc:
            raise self._error(
                f"could not connect to {self._base_url}: {connect_reason(exc)}", retryable=True
            ) from None
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise self._error(
                f"connection to {self._base_url} failed: {reason}", retryable=True
            ) from None

    def _parse(self, response: httpx.Response, request: LlmRequest | None = None) -> LlmResponse:
        try:
            data = response.json()
        except ValueError:
            raise self._malformed("not JSON", response) from None
        if not isinstance(data, dict):
            raise self._malformed("not a JSON object", response)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._malformed("no choices", response)
        message = choices[0].get("message")
        text = message_text(message.get("content") if isinstance(message, dict) else None)
        if text is None:
            raise self._malformed("no message content", response)
        if self._api_key and self._api_key in response.text:  # never keep an echoed key
            data = json.loads(redact(response.text, self._secrets()))
        model = data.get("model")
        tokens = tokens_from_openai(choices[0].get("logprobs"))
        schema = request.response_schema if request is not None else None
        return LlmResponse(
            text=text,
            model=model if isinstance(model, str) and model else self._server_model,
            usage=_usage(data.get("usage")),
            raw=data,
            choices=choices_from_logprobs(text, schema, tokens) if tokens else (),
        )

    async def post_chat(self, body: dict[str, Any], read: Callable[[Any], T | None]) -> T:
        """Send ``body`` to ``/chat/completions`` as it is (for callers that build their own
        request, such as a model run as the agent) and ``read`` the reply's JSON; the same
        errors as :meth:`generate` (redacted, retryable where a retry can help), and a
        malformed-response error when the reply is not JSON or ``read`` gives None."""
        response = await self._post(body)
        if response.status_code >= 400:
            raise self._status_error(response)
        try:
            data = response.json()
        except ValueError:
            raise self._malformed("not JSON", response) from None
        found = read(data)
        if found is None:
            raise self._malformed("not a chat completion", response)
        return found

    def _status_error(self, response: httpx.Response) -> LlmCallError:
        status = response.status_code
        where = f"HTTP {status} from {self._base_url}"
        detail = _error_detail(response)
        if status in (401, 403):
            key_hint = "check OPENAI_API_KEY" if self._kind == "openai" else "check its API key"
            return self._error(
                f"{where}: the server rejected the API key; {key_hint}", status=status
            )
        if status == 404:
            return self._error(
                f"{where}: model '{self._server_model}' or the URL was not found;"
                f" check the model name and the base URL{_suffix(detail)}",
                status=status,
            )
        retryable = status in _RETRYABLE_STATUS or status >= 500
        reason = _reason(status)
        message = f"{where} ({reason})" if reason else where
        if detail:
            message += f": {detail}"
        retry_after = _retry_after(response.headers.get("retry-after"))
        return self._error(message, retryable=retryable, status=status, retry_after=retry_after)

    def _malformed(self, what: str, response: httpx.Response) -> LlmCallError:
        prefix = response.text[:_BODY_PREFIX]
        return self._error(
            f"malformed response from {self._base_url} ({what}): {prefix!r}",
            retryable=True,
            status=response.status_code,
        )

    def _error(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> LlmCallError:
        return LlmCallError(
            redact(message, self._secrets()),
            retryable=retryable,
            status=status,
            retry_after=retry_after,
        )

    def _secrets(self) -> tuple[str, ...]:
        key = self._api_key
        return (key,) if key and len(key) >= MIN_SECRET_LENGTH else ()


def from_model_string(model: str, env: Mapping[str, str]) -> OpenAICompatBackend:
    """The backend for ``openai:<model>`` or ``ollama:<model>``, configured from ``env``.

    ``openai:`` reads ``OPENAI_BASE_URL`` (default OpenAI's API) and ``OPENAI_API_KEY``; a key is
    required only by OpenAI's own API. ``ollama:`` reads ``OLLAMA_BASE_URL``, else
    ``OLLAMA_HOST`` (default ``localhost:11434``), as ``--agent ollama:`` does
    (:func:`~assay.llm.connection.ollama_base_url`), and needs no key. A URL written where the
    model name belongs is refused with how to point at a server instead.
    """
    kind, _, name = model.partition(":")
    name = name.strip()
    if kind not in ("openai", "ollama"):
        raise LlmUnavailableError(
            f"model string '{model}' is not for this backend; write openai:<model> or"
            " ollama:<model>"
        )
    if not name:
        example = "gpt-4o-mini" if kind == "openai" else "llama3"
        raise LlmUnavailableError(
            f"model string '{model}' names no model; write {kind}:<model>, e.g. {kind}:{example}"
        )
    if "://" in name:
        raise LlmUnavailableError(url_as_model(kind, name))
    if kind == "ollama":
        try:
            base_url = ollama_base_url(env)
        except ServerUrlError as exc:
            raise LlmUnavailableError(f"judge model '{model}': {exc}") from None
        return OpenAICompatBackend(model, base_url=base_url, kind="ollama")
    given = (env.get("OPENAI_BASE_URL") or "").strip()
    try:
        if given:
            server_url(given, "OPENAI_BASE_URL")
    except ServerUrlError as exc:
        raise LlmUnavailableError(f"judge model '{model}': {exc}") from None
    base_url = given or OPENAI_BASE_URL
    api_key = env.get("OPENAI_API_KEY") or None
    if api_key is None and _host(base_url) == "api.openai.com":
        raise LlmUnavailableError(
            f"judge model '{model}' needs OpenAI's API, and OPENAI_API_KEY is not set; set"
            " OPENAI_API_KEY, or set OPENAI_BASE_URL to an OpenAI-compatible server"
            " (llama.cpp, vLLM, LM Studio) that needs no key"
        )
    return OpenAICompatBackend(model, base_url=base_url, api_key=api_key, kind="openai")


def url_as_model(kind: str, url: str) -> str:
    """What to write instead of ``<kind>:<url>``: the server goes in a variable, the model
    string names a model."""
    shown = redact(url)
    variable = "OLLAMA_HOST" if kind == "ollama" else "OPENAI_BASE_URL"
    example = "llama3.2" if kind == "ollama" else "gpt-4o-mini"
    return (
        f"'{kind}:{shown}' gives a URL where a model name belongs; point at the server with "
        f"{variable} and name a model it serves: {variable}={shown} ... --judge-model "
        f"{kind}:<model> (e.g. {kind}:{example}; GET /v1/models on the server lists them)"
    )


def _host(url: str) -> str:
    try:
        return httpx.URL(url).host
    except httpx.InvalidURL:
        return ""


def _listed_models(response: httpx.Response) -> set[str] | None:
    """The model ids of an OpenAI-style list (``{"data": [{"id": ...}]}``); None when the body
    is no such list."""
    try:
        data = response.json()
    except ValueError:
        return None
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    return {e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)}


def _served(model: str, listed: set[str]) -> bool:
    """Whether ``model`` is among ``listed`` (Ollama lists ``llama3.2:latest`` for
    ``llama3.2``)."""
    return model in listed or f"{model}:latest" in listed


def _rejects(response: httpx.Response, words: tuple[str, ...]) -> bool:
    """A 400/422 whose body complains about one of ``words`` (a feature the server lacks)."""
    if response.status_code not in (400, 422):
        return False
    text = response.text.lower()
    return any(word in text for word in words)


T = TypeVar("T")


def message_text(content: object) -> str | None:
    """The message text: a string, or the text parts of a list of parts; None if neither."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        texts = [p for p in parts if isinstance(p, str)]
        return "".join(texts) if texts else None
    return None


def _usage(value: object) -> TokenUsage:
    usage = value if isinstance(value, dict) else {}

    def count(name: str) -> int:
        number = usage.get(name)
        return number if isinstance(number, int) and number >= 0 else 0

    return TokenUsage(
        prompt_tokens=count("prompt_tokens"),
        completion_tokens=count("completion_tokens"),
        calls=1,
    )


def _error_detail(response: httpx.Response) -> str:
    """The server's own error message (OpenAI's ``{"error": {"message": ...}}`` or a short text
    body), cut to a readable length; empty when there is none."""
    try:
        data = response.json()
    except ValueError:
        text = " ".join(response.text.split())
    else:
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            text = str(error.get("message") or "")
        elif isinstance(error, str):
            text = error
        else:
            text = " ".join(response.text.split())
    return text if len(text) <= _BODY_PREFIX else text[: _BODY_PREFIX - 3] + "..."


def _suffix(detail: str) -> str:
    return f" (server said: {detail})" if detail else ""


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return ""


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds: a number of seconds or an HTTP date; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # HTTP dates are in GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - time.time())
