"""Gemini's batch mode (the Gemini API's ``batchGenerateContent``), through google-genai's
``client.aio.batches``: the :class:`~assay.llm.batch.BatchApi` of a
:class:`~assay.llm.backends.gemini.GeminiBackend` on the Gemini API.

A batch is a list of inline requests, each the request :class:`GeminiBackend` would send, with
the call's cache key in its ``metadata``; ``batches.get`` says its state, and once it is over
its inline responses come back in the order of the requests, each with its metadata and either
a response or an error. Vertex AI's batch prediction reads its input from Cloud Storage or
BigQuery instead, which assay does not write: a Vertex judge calls one request at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay.llm.backends.gemini import (
    GeminiBackend,
    build_config,
    map_error,
    request_contents,
)
from assay.llm.base import LlmBackend, LlmCallError, LlmError, LlmRequest, LlmResponse
from assay.llm.batch import BatchLine, BatchState, LineResult

OVER = frozenset(
    {
        "JOB_STATE_SUCCEEDED",
        "JOB_STATE_PARTIALLY_SUCCEEDED",
        "JOB_STATE_FAILED",
        "JOB_STATE_CANCELLED",
        "JOB_STATE_EXPIRED",
    }
)
"""The states of a batch that will change no more."""
KEY = "assay_key"
"""The metadata entry of each inline request that holds its cache key."""


class GeminiBatchApi:
    """The batch endpoints of ``backend``'s Gemini API, through its google-genai client."""

    def __init__(self, backend: GeminiBackend) -> None:
        self._backend = backend
        self._jobs: dict[str, Any] = {}
        self._keys: dict[str, list[str]] = {}

    @property
    def provider(self) -> str:
        """``gemini``: the Gemini API (its base URL is google-genai's to choose)."""
        return "gemini"

    async def submit(self, lines: Sequence[BatchLine]) -> str:
        """Create a batch of ``lines`` as inline requests; its name (``batches/...``)."""
        source = [
            {
                "contents": request_contents(line.request),
                "config": build_config(line.request),
                "metadata": {KEY: line.key},
            }
            for line in lines
        ]
        batches = self._backend.genai_client.aio.batches
        try:
            job = await batches.create(
                model=self._backend.target,
                src=source,
                config={"display_name": "assay judge batch"},
            )
        except LlmError:
            raise
        except Exception as exc:
            raise map_error(exc) from None
        name = getattr(job, "name", None)
        if not isinstance(name, str) or not name:
            raise LlmCallError("Gemini gave no name for the batch", retryable=True)
        self._keys[name] = [line.key for line in lines]
        return name

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's state; once it is over, its responses are kept for :meth:`results`."""
        try:
            job = await self._backend.genai_client.aio.batches.get(name=batch_id)
        except Exception as exc:
            raise map_error(exc) from None
        state = getattr(job, "state", None)
        status = str(getattr(state, "value", state) or "unknown")
        done = status in OVER
        if done:
            self._jobs[batch_id] = job
        error = getattr(job, "error", None)
        message = getattr(error, "message", None) if error is not None else None
        return BatchState(status, done, (batch_id,) if done else (), message or None)

    async def results(self, state: BatchState) -> dict[str, LineResult]:
        """Each inline response's body, else why it failed, by the cache key in its metadata
        (by its position when the metadata did not come back)."""
        found: dict[str, LineResult] = {}
        for batch_id in state.files:
            job = self._jobs.pop(batch_id, None)
            keys = self._keys.pop(batch_id, [])
            dest = getattr(job, "dest", None)
            answers = getattr(dest, "inlined_responses", None) or []
            for position, answer in enumerate(answers):
                key = _key(answer) or (keys[position] if position < len(keys) else None)
                if key is not None:
                    found[key] = _line_result(answer)
        return found

    def parse(self, body: Mapping[str, Any], request: LlmRequest | None) -> LlmResponse:
        """A line's ``GenerateContentResponse`` (as JSON) as a response."""
        from google.genai import types

        try:
            answer = types.GenerateContentResponse.model_validate(dict(body))
        except ValueError as exc:
            raise LlmCallError(f"malformed Gemini batch answer: {exc}", retryable=True) from None
        return self._backend.response(answer)

    async def aclose(self) -> None:
        """Nothing of its own: the client is the backend's."""


def _key(answer: Any) -> str | None:
    metadata = getattr(answer, "metadata", None)
    found = metadata.get(KEY) if isinstance(metadata, dict) else None
    return found if isinstance(found, str) else None


def _line_result(answer: Any) -> LineResult:
    response = getattr(answer, "response", None)
    if response is not None:
        data = response.model_dump(mode="json", exclude_none=True)
        if isinstance(data, dict):
            return data
    error = getattr(answer, "error", None)
    message = getattr(error, "message", None) if error is not None else None
    code = getattr(error, "code", None) if error is not None else None
    shown = f"{code}: {message}" if code and message else message or "no answer"
    return f"the batch failed this line ({shown})"


def batch_api(backend: LlmBackend) -> GeminiBatchApi | None:
    """Gemini's batch mode for a Gemini API judge; None for Vertex AI (whose batches read Cloud
    Storage or BigQuery) and any other backend."""
    if isinstance(backend, GeminiBackend) and not backend.vertexai:
        return GeminiBatchApi(backend)
    return None
