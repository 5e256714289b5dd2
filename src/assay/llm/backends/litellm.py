"""``litellm:<provider>/<model>``: any provider LiteLLM supports (Anthropic, Bedrock, Azure, ...).

LiteLLM reads each provider's credentials from the process environment itself
(``ANTHROPIC_API_KEY``, ``AZURE_API_KEY``, ...). Its price map is read from the copy it ships,
never downloaded (``LITELLM_LOCAL_MODEL_COST_MAP``), its own retries are off (the client retries),
and parameters a provider does not take are dropped rather than refused. Its exceptions are
mapped by kind: rate limits, timeouts, lost connections and 5xx are retryable; authentication,
bad requests and unknown models are not.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from assay.llm.base import (
    LlmCallError,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmUnavailableError,
    TokenUsage,
)
from assay.llm.redact import redact

INSTALL_LITELLM = "pip install 'assay[litellm]'"

Completion = Callable[..., Awaitable[Any]]

_RETRYABLE = {
    "RateLimitError",
    "Timeout",
    "APITimeoutError",
    "APIConnectionError",
    "ServiceUnavailableError",
    "InternalServerError",
    "BadGatewayError",
}
_FINAL = {
    "AuthenticationError",
    "PermissionDeniedError",
    "BadRequestError",
    "NotFoundError",
    "UnprocessableEntityError",
    "ContentPolicyViolationError",
    "ContextWindowExceededError",
    "BudgetExceededError",
}
_PARAM_ALIASES = {"max_output_tokens": "max_tokens", "stop_sequences": "stop"}


def litellm_available() -> bool:
    """Whether LiteLLM is installed (nothing is imported)."""
    return importlib.util.find_spec("litellm") is not None


def _import_litellm() -> Any:
    if not litellm_available():
        raise LlmUnavailableError(
            f"litellm: judges need LiteLLM, which is not installed; install it with: "
            f"{INSTALL_LITELLM}"
        )
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before the import
    module = _litellm_module()
    module.suppress_debug_info = True
    return module


def _litellm_module() -> Any:
    return importlib.import_module("litellm")


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header (a number or an HTTP date), if the error has one.

    LiteLLM keeps the provider's own headers in ``litellm_response_headers``; its ``response``
    is one it made up, without them."""
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if not headers:
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value is None:
            continue
        text = str(value).strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            return float(text)
        try:
            wait = parsedate_to_datetime(text) - datetime.now(UTC)
        except (TypeError, ValueError):
            return None
        return max(0.0, wait.total_seconds())
    return None


def map_error(exc: BaseException) -> LlmError:
    """A LiteLLM exception as an :class:`~assay.llm.base.LlmError`, by the kind of exception
    (LiteLLM's classes share their names with OpenAI's), else by HTTP status."""
    kinds = {cls.__name__ for cls in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if kinds & _FINAL:
        retryable = False
    elif kinds & _RETRYABLE:
        retryable = True
    else:
        retryable = status is not None and (status in (408, 429) or status >= 500)
    text = str(exc) if type(exc).__name__ in str(exc) else f"{type(exc).__name__}: {exc}"
    message = redact(f"LiteLLM call failed: {text}")
    after = _retry_after(exc) if "RateLimitError" in kinds or status == 429 else None
    return LlmCallError(message, retryable=retryable, retry_after=after, status=status)


def completion_args(request: LlmRequest, target: str) -> dict[str, Any]:
    """The keyword arguments of ``litellm.acompletion`` for ``request``."""
    args: dict[str, Any] = {}
    for key, value in request.params.items():
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
        args[_PARAM_ALIASES.get(name, name)] = value
    args.update(
        model=target,
        messages=[{"role": m.role, "content": m.content} for m in request.messages],
        num_retries=0,
        drop_params=True,
    )
    if request.temperature is not None:
        args["temperature"] = request.temperature
    if request.max_tokens is not None:
        args["max_tokens"] = request.max_tokens
    if request.response_schema is not None:
        args["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": request.response_schema},
        }
    return args


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _response(raw: Any, model: str) -> LlmResponse:
    choices = _field(raw, "choices") or []
    message = _field(choices[0], "message") if choices else None
    usage = _field(raw, "usage")
    return LlmResponse(
        text=_field(message, "content") or "",
        model=model,
        usage=TokenUsage(
            prompt_tokens=_field(usage, "prompt_tokens") or 0,
            completion_tokens=_field(usage, "completion_tokens") or 0,
            calls=1,
        ),
        raw=_body(raw),
    )


def _body(raw: Any) -> dict[str, Any] | None:
    """The response as plain JSON data, for the notes and the cache (None if it will not go)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        body = raw.model_dump(mode="json", exclude_none=True)
    except Exception:  # not a pydantic model, or one that will not serialise
        return None
    return body if isinstance(body, dict) else None


class LiteLLMBackend:
    """Calls ``litellm.acompletion``. ``completion`` replaces it (tests pass a fake; LiteLLM is
    then not imported)."""

    def __init__(self, model: str, *, completion: Completion | None = None) -> None:
        self._model = model
        self._target = model.removeprefix("litellm:")
        if not self._target.strip():
            raise LlmUnavailableError(
                "litellm: needs a model, as LiteLLM names it: litellm:<provider>/<model> "
                "(for example litellm:anthropic/claude-3-5-haiku-latest)"
            )
        self._completion = completion or _import_litellm().acompletion

    @property
    def name(self) -> str:
        """Always ``litellm``."""
        return "litellm"

    @property
    def model(self) -> str:
        """The model string as written (``litellm:anthropic/claude-3-5-haiku-latest``)."""
        return self._model

    def cache_identity(self) -> Mapping[str, Any]:
        """LiteLLM routes by model name alone; a custom ``api_base`` goes in ``params``."""
        return {}

    async def generate(self, request: LlmRequest) -> LlmResponse:
        """One ``acompletion`` call; LiteLLM's exceptions become :class:`LlmError`."""
        try:
            raw = await self._completion(**completion_args(request, self._target))
        except LlmError:
            raise
        except Exception as exc:
            raise map_error(exc) from None
        return _response(raw, self._model)

    async def aclose(self) -> None:
        """Nothing to release: LiteLLM keeps its own shared HTTP clients."""
