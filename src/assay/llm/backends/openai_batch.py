"""OpenAI's batch API, as any OpenAI-compatible server that has it offers it: the
:class:`~assay.llm.batch.BatchApi` of an :class:`~assay.llm.backends.openai_compat.OpenAICompatBackend`.

A batch is a JSONL file of chat-completion requests, one per line, each named by its
``custom_id`` (the call's cache key), uploaded with ``POST {base_url}/files`` (purpose
``batch``) and started with ``POST {base_url}/batches`` (``completion_window`` 24 h).
``GET {base_url}/batches/{id}`` says how far it got; once it is ``completed``, ``expired``,
``cancelled`` or ``failed``, ``GET {base_url}/files/{id}/content`` gives its output file (one
answer per line that succeeded) and its error file (one per line that failed; an expired batch
lists there the lines it did not reach).

The requests are the backend's own (:meth:`OpenAICompatBackend.request_body`, structured output
asked for), and go through the backend's connections with its key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from assay.llm.backends.gemini_batch import batch_api as gemini_batch_api
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.base import LlmBackend, LlmCallError, LlmRequest, LlmResponse
from assay.llm.batch import BatchApi, BatchLine, BatchState, LineResult
from assay.llm.connection import connect_reason

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
OVER = frozenset({"completed", "expired", "cancelled", "failed"})
"""The statuses of a batch that will change no more."""


class OpenAIBatchApi:
    """The ``/files`` and ``/batches`` endpoints of ``backend``'s server."""

    def __init__(self, backend: OpenAICompatBackend) -> None:
        self._backend = backend

    @property
    def provider(self) -> str:
        """The backend kind and its base URL."""
        return f"{self._backend.name} {self._backend.base_url}"

    async def submit(self, lines: Sequence[BatchLine]) -> str:
        """Upload ``lines`` as a JSONL file and start a batch of it; the batch's id."""
        body = "".join(json.dumps(self._line(line), separators=(",", ":")) + "\n" for line in lines)
        upload = await self._send(
            "POST",
            "files",
            data={"purpose": "batch"},
            files={"file": ("assay-judge-batch.jsonl", body.encode(), "application/jsonl")},
        )
        file_id = _text(upload, "id")
        if file_id is None:
            raise self._backend.failure(
                f"{self._backend.base_url} gave no file id for the batch", retryable=True
            )
        created = await self._send(
            "POST",
            "batches",
            json={
                "input_file_id": file_id,
                "endpoint": ENDPOINT,
                "completion_window": COMPLETION_WINDOW,
                "metadata": {"created_by": "assay"},
            },
        )
        batch_id = _text(created, "id")
        if batch_id is None:
            raise self._backend.failure(
                f"{self._backend.base_url} gave no batch id", retryable=True
            )
        return batch_id

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's status, its output and error files, and its errors."""
        data = await self._send("GET", f"batches/{batch_id}")
        status = _text(data, "status") or "unknown"
        files = tuple(f for f in (_text(data, "output_file_id"), _text(data, "error_file_id")) if f)
        return BatchState(status, status in OVER, files, _batch_error(data))

    async def results(self, state: BatchState) -> dict[str, LineResult]:
        """Each line's completion body (status 200), else why it failed, by ``custom_id``."""
        found: dict[str, LineResult] = {}
        for file_id in state.files:
            for raw in (await self._content(file_id)).splitlines():
                entry = _json_line(raw)
                key = entry.get("custom_id") if entry else None
                if entry is None or not isinstance(key, str):
                    continue
                found[key] = _line_result(entry)
        return found

    def parse(self, body: Mapping[str, Any], request: LlmRequest | None) -> LlmResponse:
        """A line's completion body as a response (as the backend reads its own)."""
        return self._backend.completion(dict(body), request)

    async def aclose(self) -> None:
        """Nothing of its own: the connections are the backend's."""

    def _line(self, line: BatchLine) -> dict[str, Any]:
        structured = line.request.response_schema is not None
        return {
            "custom_id": line.key,
            "method": "POST",
            "url": ENDPOINT,
            "body": self._backend.request_body(line.request, with_schema=structured),
        }

    async def _content(self, file_id: str) -> str:
        response = await self._request("GET", f"files/{file_id}/content")
        return response.text

    async def _send(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = await self._request(method, path, **kwargs)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self._backend.failure(
                f"malformed response from {self._backend.base_url}/{path}: not a JSON object",
                retryable=True,
            )
        return data

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        where = f"{self._backend.base_url}/{path}"
        try:
            response = await self._backend.http().request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise self._backend.failure(f"timed out waiting for {where}", retryable=True) from None
        except httpx.ConnectError as exc:
            raise self._backend.failure(
                f"could not connect to {where}: {connect_reason(exc)}", retryable=True
            ) from None
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise self._backend.failure(f"{where} failed: {reason}", retryable=True) from None
        if response.status_code >= 400:
            error = self._backend.status_error(response)
            raise LlmCallError(
                f"{error} ({method} {path})",
                retryable=error.retryable,
                retry_after=error.retry_after,
                status=error.status,
            )
        return response


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) and value else None


def _json_line(raw: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _line_result(entry: Mapping[str, Any]) -> LineResult:
    """A line of an output or error file: the completion body, or why it has none."""
    response = entry.get("response")
    response = response if isinstance(response, dict) else {}
    body = response.get("body")
    status = response.get("status_code")
    if status == 200 and isinstance(body, dict) and not entry.get("error"):
        return body
    error = entry.get("error")
    if isinstance(error, dict) and error.get("message"):
        code = f"{error.get('code')}: " if error.get("code") else ""
        return f"the batch failed this line ({code}{error['message']})"
    detail = body.get("error") if isinstance(body, dict) else None
    message = detail.get("message") if isinstance(detail, dict) else None
    shown = f"HTTP {status}" if status else "no answer"
    return f"the batch failed this line ({shown}{f': {message}' if message else ''})"


def _batch_error(data: Mapping[str, Any]) -> str | None:
    """Why a batch failed as a whole (``errors.data[].message``), if it says."""
    errors = data.get("errors")
    entries = errors.get("data") if isinstance(errors, dict) else None
    if not isinstance(entries, list):
        return None
    messages = [str(e.get("message")) for e in entries if isinstance(e, dict) and e.get("message")]
    return "; ".join(messages) or None


def batch_api(backend: LlmBackend) -> BatchApi | None:
    """The batch API of ``backend``'s server: OpenAI's for an ``openai:`` judge (OpenAI itself,
    or a server at ``OPENAI_BASE_URL`` that has ``/files`` and ``/batches``), Gemini's batch
    mode for a Gemini API judge (:mod:`assay.llm.backends.gemini_batch`); None for any other
    backend (Ollama, the embedded judge, LiteLLM, Vertex AI), whose calls then go one at a time."""
    if isinstance(backend, OpenAICompatBackend) and backend.name == "openai":
        return OpenAIBatchApi(backend)
    return gemini_batch_api(backend)
