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
  {model}:generateContent``, with a bearer token;
- an OAuth token endpoint, ``POST /token``, answering any refresh request with
  :attr:`GeminiServer.access_token`, so application default credentials (an ``authorized_user``
  file whose ``token_uri`` is :attr:`GeminiServer.token_uri`) work without the network.

Each ``generateContent`` answer comes from, in order: the replies queued with
:meth:`GeminiServer.queue`, else the ``reply`` callable (given the request's JSON body), else
``default``. A reply is a :class:`Reply` or a plain string (a 200 answer with that text). Errors
have Google's shape: ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

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
    r"/publishers/google/models/(?P<model>[^/:]+):generateContent$"
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


@dataclass(frozen=True)
class Received:
    """One request: method, path (query string removed), query string, headers (lower-case
    names) and the body parsed as JSON (None if it was not JSON)."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any

    @property
    def route(self) -> dict[str, str] | None:
        """The path's parts (``model``; ``project`` and ``location`` on Vertex), or None."""
        match = _GEMINI_API.match(self.path) or _VERTEX.match(self.path)
        return match.groupdict() if match else None

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


class GeminiServer:
    """A Gemini API server in a background thread; use as a context manager."""

    access_token = "ya29.stub-access-token"

    def __init__(self, reply: ReplyFn | None = None, *, default: Reply | str = "ok") -> None:
        self.reply = reply
        self.default = default
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._queued: deque[Reply | str] = deque()
        self._received: list[Received] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> GeminiServer:
        """Listen on a free port and serve in a background thread."""
        handler = type("Handler", (self.handler_class(),), {"stub": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def handler_class(self) -> type[_Handler]:
        """The request handler this server serves with (a subclass serves another API)."""
        return _Handler

    def close(self) -> None:
        """Stop serving and join the server thread."""
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None

    def __enter__(self) -> GeminiServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (google-genai adds the API version)."""
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def token_uri(self) -> str:
        """The OAuth token endpoint, for an ``authorized_user`` credentials file."""
        return f"{self.base_url}/token"

    def queue(self, *replies: Reply | str) -> None:
        """Answer the next ``generateContent`` requests with ``replies``, in order."""
        with self._lock:
            self._queued.extend(replies)

    @property
    def requests(self) -> list[Received]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._received)

    @property
    def calls(self) -> list[Received]:
        """The ``generateContent`` requests received so far."""
        return [r for r in self.requests if r.route is not None]

    def count(self) -> int:
        """How many ``generateContent`` requests arrived."""
        return len(self.calls)

    def _record(self, received: Received) -> None:
        with self._lock:
            self._received.append(received)

    def _choose(self, body: dict[str, Any]) -> Reply:
        chosen = self._queued_or_default(body)
        return Reply(text=chosen) if isinstance(chosen, str) else chosen

    def _queued_or_default(self, body: dict[str, Any]) -> Reply | str:
        """The next queued reply, else the ``reply`` function's, else ``default``."""
        with self._lock:
            queued = self._queued.popleft() if self._queued else None
        if queued is None and self.reply is not None:
            try:
                queued = self.reply(body)
            except Exception as exc:  # a broken reply function must show in the test
                with self._lock:
                    self.errors.append(repr(exc))
                return Reply.error(500, f"stub reply function raised {exc!r}")
        return self.default if queued is None else queued


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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub: GeminiServer  # set on the subclass GeminiServer.start makes
    timeout = 30
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _receive(self) -> Received | None:
        """Read and record the request; an OAuth refresh is answered here (then None)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        headers = {name.lower(): value for name, value in self.headers.items()}
        received = Received(self.command, path, query, headers, body)
        self.stub._record(received)
        if path == "/token":  # an OAuth refresh (form-encoded, so body is None)
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
            self._send(200, _answer(reply, route["model"], received.prompt), reply.headers)

    def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client went away
            self.close_connection = True
