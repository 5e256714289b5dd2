"""A real Vertex AI evaluation server on 127.0.0.1 for tests: the ``evaluateInstances`` call the
Gen AI evaluation SDK (``agentplatform.Client(...).evals.evaluate``) makes, on both of its routes,
with scripted replies, injected faults and a record of every request.

::

    with VertexEvalServer() as server:
        monkeypatch.setenv("GOOGLE_VERTEX_BASE_URL", server.base_url)
        server.queue(Reply.error(429), answer(0.5, verdicts=[verdict("Polite", True)]))
        ...
        assert server.count() == 2

Routes (google-cloud-aiplatform 2.x, pointed here through ``HttpOptions(base_url=...)``, which
assay sets from ``GOOGLE_VERTEX_BASE_URL``):

- by API key (Vertex AI express mode), ``POST /v1beta1/:evaluateInstances``, key in the
  ``x-goog-api-key`` header;
- by project and location, ``POST /v1beta1/projects/{project}/locations/{location}
  :evaluateInstances`` (the SDK puts a ``/`` before the colon; both spellings are served),
  with a bearer token;
- the OAuth token endpoint of :class:`~_gemini_server.GeminiServer`, ``POST /token``.

Each answer comes from, in order: the replies queued, else the ``reply`` callable (given the
request's JSON body), else ``default`` (a score of 1.0). A reply is a :class:`Reply`: one whose
``body`` is set is sent as is (:func:`answer` builds the real API's shape), an error status gets
Google's error body; a plain string is sent as a raw 200 body (a malformed answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from _gemini_server import GeminiServer, Received, Reply, ReplyFn, _error, _Handler

__all__ = ["Reply", "VertexEvalServer", "answer", "eval_route", "verdict"]

_EVALUATE = re.compile(
    r"^/v1beta1/(?:projects/(?P<project>[^/]+)/locations/(?P<location>[^/:]+)/?)?"
    r":evaluateInstances$"
)


def eval_route(path: str) -> dict[str, str | None] | None:
    """An ``evaluateInstances`` path's ``project`` and ``location`` (None on the API-key
    route), or None when ``path`` is not one."""
    match = _EVALUATE.match(path)
    return match.groupdict() if match else None


def verdict(description: str, met: bool, reasoning: str = "") -> dict[str, Any]:
    """One rubric verdict as the API answers it."""
    rubric = {"rubricId": description.lower().replace(" ", "_")}
    rubric["content"] = {"property": {"description": description}}  # type: ignore[assignment]
    return {"evaluatedRubric": rubric, "verdict": met, "reasoning": reasoning}


def answer(
    score: float | None,
    *,
    explanation: str | None = None,
    verdicts: Sequence[dict[str, Any]] = (),
    error: dict[str, Any] | None = None,
) -> Reply:
    """A 200 ``EvaluateInstancesResponse`` with one metric result."""
    result: dict[str, Any] = {}
    if score is not None:
        result["score"] = score
    if explanation is not None:
        result["explanation"] = explanation
    if verdicts:
        result["rubricVerdicts"] = list(verdicts)
    if error is not None:
        result["error"] = error
    return Reply(body={"metricResults": [result]})


class VertexEvalServer(GeminiServer):
    """A Vertex AI evaluation server in a background thread; use as a context manager."""

    def __init__(self, reply: ReplyFn | None = None, *, default: Reply | str | None = None) -> None:
        super().__init__(reply, default=answer(1.0) if default is None else default)

    def handler_class(self) -> type[_Handler]:
        """Serves ``evaluateInstances``."""
        return _EvalHandler

    @property
    def calls(self) -> list[Received]:
        """The ``evaluateInstances`` requests received so far."""
        return [r for r in self.requests if eval_route(r.path) is not None]

    def metric_names(self) -> list[str]:
        """The predefined metric each ``evaluateInstances`` request asked for, in order."""
        names = []
        for call in self.calls:
            for metric in (call.body or {}).get("metrics") or []:
                spec = metric.get("predefined_metric_spec") or metric.get("predefinedMetricSpec")
                names.append(str((spec or {}).get("metric_spec_name", "")))
        return names


class _EvalHandler(_Handler):
    def do_POST(self) -> None:
        received = self._receive()
        if received is None:
            return
        if eval_route(received.path) is None:
            self._send(404, _error(404, f"no route {received.path}"))
            return
        if not isinstance(received.body, dict):
            self._send(400, _error(400, "the request body is not a JSON object"))
            return
        queued = self.stub._queued_or_default(received.body)
        if isinstance(queued, str):
            self._send(200, queued.encode("utf-8"))
        elif queued.body is not None:
            self._send(queued.status, queued.body, queued.headers)
        else:
            self._send(queued.status, _error(queued.status, queued.text), queued.headers)
