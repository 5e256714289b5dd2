"""Gemini judges (``gemini-2.5-flash``, Vertex resource names), through google-genai.

The model names are ADK 2.13's: whatever its ``Gemini`` model class registers (see
:data:`GEMINI_PATTERNS`). Credentials come from the environment, as in ADK: an API key
(``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``), or Vertex AI (``GOOGLE_GENAI_USE_VERTEXAI=true``
with ``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION``, and application default
credentials). A Vertex resource name (``projects/P/locations/L/endpoints/ID``,
``projects/P/locations/L/publishers/google/models/NAME``) is called in its own location ``L``:
google-genai would send it to ``GOOGLE_CLOUD_LOCATION``'s regional host, where an endpoint of
another region does not exist, so the client is built for ``L``; with an API key instead of Vertex
AI such a name is refused in one line. ``request.params`` (a criterion's ``judge_model_config``:
ADK's ``GenerateContentConfig`` keys, snake or camel case) become the generation config; automatic
function calling is always off.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from assay.llm.base import (
    LlmCallError,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmUnavailableError,
    TokenUsage,
)
from assay.llm.redact import redact

if TYPE_CHECKING:
    from google.genai import types

GEMINI_PATTERNS = (
    re.compile(r"gemini-.*"),
    re.compile(r"gemma-4.*"),
    re.compile(r"model-optimizer-.*"),
    re.compile(r"projects/.+/locations/.+/endpoints/.+"),
    re.compile(r"projects/.+/locations/.+/publishers/google/models/gemini.+"),
)
"""The model names ADK 2.13's registry sends to its Gemini class (matched whole)."""

INSTALL_GEMINI = "pip install 'assay[gemini]'"
CREDENTIALS_HELP = (
    "set GOOGLE_API_KEY (or GEMINI_API_KEY), or for Vertex AI set GOOGLE_GENAI_USE_VERTEXAI=true "
    "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION; or choose a judge that needs no Google "
    "account: --judge-model local: (offline), or openai:<model> / ollama:<model>"
)
_RESOURCE = re.compile(r"projects/[^/]+/locations/(?P<location>[^/]+)/.+")
_RETRYABLE_CODES = frozenset({408, 429})
_DROPPED_RAW = {"sdk_http_response", "automatic_function_calling_history"}


def is_gemini_model(model: str) -> bool:
    """Whether ADK 2.13 would send ``model`` to Gemini."""
    return any(pattern.fullmatch(model) for pattern in GEMINI_PATTERNS)


def genai_available() -> bool:
    """Whether google-genai is installed (nothing is imported)."""
    try:
        return importlib.util.find_spec("google.genai") is not None
    except (ImportError, ValueError):
        return False


def _is_true(value: str | None) -> bool:
    return (value or "").strip().lower() in {"true", "1"}


@dataclass(frozen=True)
class GeminiCredentials:
    """Where Gemini calls go: the Gemini API with a key, or Vertex AI. The key is never shown."""

    vertexai: bool
    api_key: str | None = field(default=None, repr=False)
    project: str | None = None
    location: str | None = None


def gemini_credentials(env: Mapping[str, str]) -> GeminiCredentials | None:
    """The Gemini credentials ``env`` holds, or None."""
    if _is_true(env.get("GOOGLE_GENAI_USE_VERTEXAI")):
        project, location = env.get("GOOGLE_CLOUD_PROJECT"), env.get("GOOGLE_CLOUD_LOCATION")
        if project and location:
            return GeminiCredentials(vertexai=True, project=project, location=location)
        return None
    key = env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY")
    return GeminiCredentials(vertexai=False, api_key=key) if key else None


def resource_location(model: str) -> str | None:
    """The location a Vertex resource name (``projects/P/locations/L/...``) lives in, else None."""
    match = _RESOURCE.fullmatch(model)
    return match.group("location") if match else None


def credentials_for(model: str, credentials: GeminiCredentials) -> GeminiCredentials:
    """``credentials`` for calling ``model``: on Vertex AI, a resource name's own location
    replaces ``GOOGLE_CLOUD_LOCATION`` (its endpoint lives there). A resource name with an API
    key is an :class:`~assay.llm.base.LlmUnavailableError`: the Gemini API cannot call it."""
    location = resource_location(model)
    if location is None:
        return credentials
    if not credentials.vertexai:
        raise LlmUnavailableError(
            f"judge model {model} is a Vertex AI resource name, which the Gemini API key "
            "cannot call; set GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
            "GOOGLE_CLOUD_LOCATION (and application default credentials)"
        )
    return replace(credentials, location=location)


def _make_client(credentials: GeminiCredentials) -> Any:
    from google import genai

    if credentials.vertexai:
        return genai.Client(
            vertexai=True, project=credentials.project, location=credentials.location
        )
    return genai.Client(vertexai=False, api_key=credentials.api_key)


def _retry_delay(exc: Any) -> float | None:
    """The server's requested wait: a ``Retry-After`` header, or a ``RetryInfo`` detail."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        value = headers.get("retry-after")
        if value and str(value).strip().replace(".", "", 1).isdigit():
            return float(value)
    details = getattr(exc, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details", []) if isinstance(error, dict) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        match = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(delay or ""))
        if match:
            return float(match.group(1))
    return None


def map_error(exc: BaseException) -> LlmError:
    """A google-genai (or transport) exception as an :class:`~assay.llm.base.LlmError`:
    408, 429 and 5xx are retryable; other API errors are not; a timeout or lost connection is."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        code = int(exc.code or 0)
        retryable = code in _RETRYABLE_CODES or code >= 500
        status = f" {exc.status}" if exc.status else ""
        message = redact(f"Gemini API error {code}{status}: {exc.message or exc}")
        return LlmCallError(
            message,
            retryable=retryable,
            retry_after=_retry_delay(exc) if code == 429 else None,
            status=code or None,
        )
    import httpx

    if isinstance(exc, httpx.TimeoutException | httpx.TransportError | TimeoutError):
        return LlmCallError(
            f"Gemini call failed: {type(exc).__name__}: {redact(str(exc))}", retryable=True
        )
    return LlmCallError(
        f"Gemini call failed: {type(exc).__name__}: {redact(str(exc))}", retryable=False
    )


def build_config(request: LlmRequest) -> types.GenerateContentConfig:
    """The generation config for ``request``: its ``params`` first, then its own settings."""
    from google.genai import types

    try:
        config = types.GenerateContentConfig.model_validate(request.params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        raise LlmCallError(
            f"judge_model_config is not a valid Gemini GenerateContentConfig: {problems}",
            retryable=False,
        ) from None
    update: dict[str, Any] = {
        "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True)
    }
    if request.temperature is not None:
        update["temperature"] = request.temperature
    if request.max_tokens is not None:
        update["max_output_tokens"] = request.max_tokens
    if request.response_schema is not None:
        update["response_mime_type"] = "application/json"
        update["response_json_schema"] = request.response_schema
    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    if system:
        update["system_instruction"] = system
    return config.model_copy(update=update)


def _contents(request: LlmRequest) -> list[types.Content]:
    from google.genai import types

    return [
        types.Content(
            role="user" if message.role == "user" else "model",
            parts=[types.Part(text=message.content)],
        )
        for message in request.messages
        if message.role != "system"
    ]


def request_contents(request: LlmRequest) -> list[types.Content]:
    """The ``contents`` of ``request`` as :meth:`GeminiBackend.generate` sends them (the system
    message goes in the config)."""
    return _contents(request)


def _usage(response: Any) -> TokenUsage:
    metadata = getattr(response, "usage_metadata", None)
    prompt = getattr(metadata, "prompt_token_count", None) or 0
    answer = getattr(metadata, "candidates_token_count", None) or 0
    thoughts = getattr(metadata, "thoughts_token_count", None) or 0
    return TokenUsage(prompt_tokens=prompt, completion_tokens=answer + thoughts, calls=1)


def _raw(response: Any) -> dict[str, Any] | None:
    dump = getattr(response, "model_dump", None)
    if dump is None:
        return None
    data = dump(mode="json", exclude_none=True)
    return (
        {k: v for k, v in data.items() if k not in _DROPPED_RAW} if isinstance(data, dict) else None
    )


class GeminiBackend:
    """Calls Gemini (or Vertex AI) with ``client.aio.models.generate_content``.

    ``client`` replaces the google-genai client (tests pass a fake); without it, credentials are
    read from ``env`` (default ``os.environ``) and a missing one is an
    :class:`~assay.llm.base.LlmUnavailableError` naming the variables to set.
    """

    def __init__(
        self, model: str, *, env: Mapping[str, str] | None = None, client: Any = None
    ) -> None:
        self._model = model
        self._target = model.removeprefix("gemini:")
        self._vertexai = False
        if client is None:
            if not genai_available():
                raise LlmUnavailableError(
                    "Gemini judges need google-genai, which is not installed; "
                    f"install it with: {INSTALL_GEMINI}; or use --judge-model local: "
                    "(offline) or openai:<model> / ollama:<model>"
                )
            credentials = gemini_credentials(os.environ if env is None else env)
            if credentials is None:
                raise LlmUnavailableError(f"no Gemini credentials: {CREDENTIALS_HELP}")
            credentials = credentials_for(self._target, credentials)
            self._vertexai = credentials.vertexai
            try:
                client = _make_client(credentials)
            except Exception as exc:  # google-genai / google-auth refuse the settings
                raise LlmUnavailableError(
                    f"cannot create a Gemini client for {model}: {redact(str(exc))}; {CREDENTIALS_HELP}"
                ) from None
        self._client = client

    @property
    def name(self) -> str:
        """Always ``gemini``."""
        return "gemini"

    @property
    def model(self) -> str:
        """The model name as written (``gemini-2.5-flash``)."""
        return self._model

    def cache_identity(self) -> Mapping[str, Any]:
        """Whether calls go to Vertex AI (the same name may answer differently there)."""
        return {"vertexai": self._vertexai}

    @property
    def genai_client(self) -> Any:
        """The google-genai client calls go through (the batch API,
        :mod:`assay.llm.backends.gemini_batch`, shares it)."""
        return self._client

    @property
    def target(self) -> str:
        """The model name sent to Gemini (without a ``gemini:`` prefix)."""
        return self._target

    @property
    def vertexai(self) -> bool:
        """Whether calls go to Vertex AI rather than the Gemini API."""
        return self._vertexai

    def response(self, answer: Any) -> LlmResponse:
        """A google-genai ``GenerateContentResponse`` (a batch line's answer) as a response,
        read as :meth:`generate` reads its own."""
        return LlmResponse(
            text=getattr(answer, "text", None) or "",
            model=self._model,
            usage=_usage(answer),
            raw=_raw(answer),
        )

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """One ``generate_content`` call; google-genai's errors become :class:`LlmError`."""
        config = build_config(request)
        try:
            response = await self._client.aio.models.generate_content(
                model=self._target, contents=_contents(request), config=config
            )
        except LlmError:
            raise
        except Exception as exc:
            raise map_error(exc) from None
        return LlmResponse(
            text=getattr(response, "text", None) or "",
            model=self._model,
            usage=_usage(response),
            raw=_raw(response),
        )

    async def aclose(self) -> None:
        """Close the client's connections."""
        aio = getattr(self._client, "aio", None)
        close = getattr(aio, "aclose", None)
        if close is not None:
            await close()
