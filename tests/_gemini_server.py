"""A real Gemini API server on 127.0.0.1 for tests: the ``generateContent`` call google-genai
makes, on both of its routes, with scripted replies, injected faults and a record of every request.

::

    with GeminiServer(default='{"label": "yes"}') as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        server.queue(Reply.error(429, headers={"Retry-After": "1"}), "fine")
        ...
        assert server.count() == 2

Routes (google-genai 2.x, pointed here with its own ``GOOGLE_GEMINI_BASE_URL`` /
``GOOGLE_VERTEX_BASE_URL`` variables or ``HttpOptions(base_url=...)``):

- the Gemini Developer API, ``POST /v1beta/models/{model}:generateContent``, key in the
  ``x-goog-api-key`` header;
- Vertex AI, ``POST /v1beta1/projects/{project}/locations/{location}/publishers/google/models/
  {model}:generateContent`` (or ``.../endpoints/{endpoint}:generateContent``), with a bearer
  token;
- an OAuth token endpoint, ``POST /token``, answering any refresh request with
  :attr:`GeminiServer.access_token`, so application default credentials (an ``authorized_user``
  file whose ``token_uri`` is :attr:`GeminiServer.token_uri`) work without the network.

Each ``generateContent`` answer comes from, in order: the replies queued with
:meth:`GeminiServer.queue`, else the ``reply`` callable (given the request's JSON body), else
``default``. A reply is a :class:`Reply` or a plain string (a 200 answer with that text). Errors
have Google's shape: ``{"error": {"code", "message", "status"}}``.

:class:`HostProxy` is an HTTPS proxy that records which host a client would have reached (and
refuses it), for what a base URL of the test's would hide: google-genai's regional Vertex host.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from _http_stub import Received as _Received
from _http_stub import Scripted, StubHandler

ReplyFn = Callable[[dict[str, Any]], "Reply | str"]

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_GEMINI_API = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")
_VERTEX = re.compile(
    r"^/v1beta1/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
    r"/(?:publishers/google/models/(?P<model>[^/:]+)|endpoints/(?P<endpoint>[^/:]+))"
    r":generateContent$"
)


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a 200 whose one candidate says ``text``, unless ``status`` is an error
    (then a Google-style error body saying ``text``) or ``body`` is set (sent as is)."""

    text: str = "ok"
    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def error(
        cls, status: int, message: str = "stub error", *, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """An HTTP error ``status`` with Google's error body."""
        return cls(text=message, status=status, headers=dict(headers or {}))


class Received(_Received):
    """One request (see :class:`_http_stub.Received`), with its route and prompt."""

    @property
    def route(self) -> dict[str, str] | None:
        """The path's parts (``model``; ``project``, ``location`` and ``model`` or ``endpoint``
        on Vertex), or None."""
        match = _GEMINI_API.match(self.path) or _VERTEX.match(self.path)
        if match is None:
            return None
        return {name: part for name, part in match.groupdict().items() if part is not None}

    @property
    def prompt(self) -> str:
        """Every text part of the request (system instruction and contents), joined."""
        body = self.body if isinstance(self.body, dict) else {}
        contents = list(body.get("contents") or [])
        if body.get("systemInstruction"):
            contents.insert(0, body["systemInstruction"])
        return "\n\n".join(
            str(part.get("text", ""))
            for content in contents
            if isinstance(content, dict)
            for part in content.get("parts") or []
            if isinstance(part, dict)
        )


class GeminiServer(Scripted["Reply | str"]):
    """A Gemini API server in a background thread; use as a context manager."""

    access_token = "ya29.stub-access-token"

    def __init__(self, reply: ReplyFn | None = None, *, default: Reply | str = "ok") -> None:
        super().__init__(reply, default=default)

    def handler_class(self) -> type[_Handler]:
        """The request handler this server serves with (a subclass serves another API)."""
        return _Handler

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (google-genai adds the API version)."""
        return self.origin

    @property
    def token_uri(self) -> str:
        """The OAuth token endpoint, for an ``authorized_user`` credentials file."""
        return f"{self.base_url}/token"

    @property
    def calls(self) -> list[Received]:
        """The ``generateContent`` requests received so far."""
        return [r for r in self.requests if r.route is not None]

    def count(self) -> int:
        """How many ``generateContent`` requests arrived."""
        return len(self.calls)

    def _choose(self, body: dict[str, Any]) -> Reply:
        chosen = self._queued_or_default(body)
        return Reply(text=chosen) if isinstance(chosen, str) else chosen

    def _queued_or_default(self, body: dict[str, Any]) -> Reply | str:
        """The next queued reply, else the ``reply`` function's, else ``default``."""
        return self._next_reply(body, lambda message: Reply.error(500, message))


def _answer(reply: Reply, model: str, prompt: str) -> dict[str, Any]:
    prompt_tokens, answer_tokens = len(prompt.split()), len(reply.text.split())
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": reply.text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": answer_tokens,
            "totalTokenCount": prompt_tokens + answer_tokens,
        },
        "modelVersion": model,
    }


def _error(status: int, message: str) -> dict[str, Any]:
    name = _STATUS_NAMES.get(status, "UNKNOWN")
    return {"error": {"code": status, "message": message, "status": name}}


class _Handler(StubHandler):
    stub: GeminiServer  # set on the subclass GeminiServer.start makes
    record_as = Received

    def _receive(self) -> Received | None:
        """Read and record the request; an OAuth refresh is answered here (then None)."""
        received = self.received(self.read_body())
        assert isinstance(received, Received)
        self.stub._record(received)
        if received.path == "/token":  # an OAuth refresh (form-encoded, so body is None)
            token = {"access_token": self.stub.access_token, "expires_in": 3600}
            self._send(200, {**token, "token_type": "Bearer"})
            return None
        return received

    def do_POST(self) -> None:
        received = self._receive()
        if received is None:
            return
        path, body, route = received.path, received.body, received.route
        if route is None:
            self._send(404, _error(404, f"no route {path}"))
            return
        if not isinstance(body, dict):
            self._send(400, _error(400, "the request body is not a JSON object"))
            return
        reply = self.stub._choose(body)
        if reply.body is not None:
            self._send(reply.status, reply.body, reply.headers)
        elif reply.status != 200:
            self._send(reply.status, _error(reply.status, reply.text), reply.headers)
        else:
            model = route.get("model") or route.get("endpoint", "")
            self._send(200, _answer(reply, model, received.prompt), reply.headers)

    def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        self.send_bytes(status, data, "application/json; charset=UTF-8", headers)


class HostProxy(Scripted[None]):
    """An HTTPS proxy on 127.0.0.1 that records the hosts clients ask it to reach and refuses
    every one (403), so nothing leaves the machine: pointed at with ``HTTPS_PROXY``, it shows which
    host google-genai would have called with no base URL of the test's (the real, regional one).
    """

    def __init__(self) -> None:
        super().__init__(None, default=None)

    def handler_class(self) -> type[_ProxyHandler]:
        """Answers ``CONNECT``."""
        return _ProxyHandler

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, for ``HTTPS_PROXY``."""
        return self.origin

    @property
    def hosts(self) -> list[str]:
        """The ``host:port`` of each ``CONNECT`` received, in order."""
        return [r.path for r in self.requests if r.method == "CONNECT"]


class _ProxyHandler(StubHandler):
    stub: HostProxy

    def do_CONNECT(self) -> None:
        self.stub._record(self.received(b""))
        self.close_connection = True
        self.send_bytes(403, b"no network in tests", "text/plain")
