"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks: scripted replies,
injected faults, and a record of every request it received.

::

    with JudgeServer(default="yes") as server:
        server.queue(Reply.error(503), Reply.error(429, headers={"Retry-After": "1"}), "fine")
        backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
        ...
        assert server.count() == 3

Each answer comes from, in order: the replies queued with :meth:`JudgeServer.queue`, else the
``reply`` callable (given the request's JSON body), else ``default``. A reply is a :class:`Reply`
or a plain string (a 200 completion with that text). Requests are served concurrently, one thread
per connection, with HTTP/1.1 keep-alive; ``latency_s`` delays every completion, so a test can
see how many requests were in flight at once (:attr:`JudgeServer.max_in_flight`).

``max_concurrent`` makes it a provider with a concurrency limit: a completion that arrives while
that many are being served is refused at once with 429 and ``Retry-After: retry_after``
(:attr:`JudgeServer.refused` counts them; :attr:`JudgeServer.served_at_once` records, per answered
request, how many were being served with it). A request stops counting as served when its answer
starts to be written, so a client that sends its next request on the answer is never refused for
the server's own bookkeeping. Without it (the default) every request is served.

Closing the server wakes every delayed reply, closes every open connection and joins every thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from _http_stub import Received as _Received
from _http_stub import Scripted, StubHandler

ReplyFn = Callable[[dict[str, Any]], "Reply | str"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    A 200 completion whose message content is ``text``, unless ``body`` is set: then ``body``
    (bytes, a string, or a JSON-able value) is sent as is, with ``status``. ``delay_s`` waits
    before answering; ``drop`` closes the connection without answering.
    """

    text: str = "ok"
    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None

    @classmethod
    def ok(cls, text: str, **kwargs: Any) -> Reply:
        """A 200 completion answering ``text``."""
        return cls(text=text, **kwargs)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "stub error",
        *,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        **kwargs: Any,
    ) -> Reply:
        """An HTTP error with an OpenAI-style ``{"error": {"message": ...}}`` body (or ``body``)."""
        payload = body if body is not None else {"error": {"message": message, "code": status}}
        return cls(status=status, body=payload, headers=dict(headers or {}), **kwargs)

    @classmethod
    def hang(cls, seconds: float = 30.0, text: str = "too late") -> Reply:
        """A completion sent only after ``seconds`` (woken early when the server closes)."""
        return cls(text=text, delay_s=seconds)

    @classmethod
    def malformed(cls, body: Any = "this is not json") -> Reply:
        """A 200 whose body is ``body`` instead of a completion (text, or JSON without choices)."""
        return cls(body=body)

    @classmethod
    def dropped(cls) -> Reply:
        """Close the connection without sending anything."""
        return cls(drop=True)


class Received(_Received):
    """One request the server received (see :class:`_http_stub.Received`), with its chat
    messages."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of a completion request."""
        body = self.body if isinstance(self.body, dict) else {}
        messages = body.get("messages")
        return messages if isinstance(messages, list) else []


class JudgeServer(Scripted["Reply | str"]):
    """An OpenAI-compatible server in a background thread; use as a context manager."""

    def __init__(
        self,
        reply: ReplyFn | None = None,
        *,
        default: Reply | str = "ok",
        latency_s: float = 0.0,
        model: str = "stub-judge",
        max_concurrent: int | None = None,
        retry_after: str = "1",
    ) -> None:
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        super().__init__(reply, default=default)
        self.max_concurrent = max_concurrent
        """Completions served at once before the rest are refused with 429 (None: no limit);
        may be changed while the server runs."""
        self.retry_after = retry_after
        self.latency_s = latency_s
        self.model = model
        self._in_flight = 0
        self._max_in_flight = 0
        self._serving = 0
        self._refused = 0
        self._served_at_once: list[int] = []

    def handler_class(self) -> type[_Handler]:
        """Serves the chat-completions API."""
        return _Handler

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"{self.origin}/v1"

    # -- scripting and inspection ---------------------------------------------------------

    @property
    def completions(self) -> list[Received]:
        """The chat-completion requests received so far."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def count(self) -> int:
        """How many chat-completion requests arrived."""
        return len(self.completions)

    @property
    def in_flight(self) -> int:
        """Completion requests being answered now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most completion requests that were being answered at once."""
        with self._lock:
            return self._max_in_flight

    @property
    def refused(self) -> int:
        """Completions refused with 429 because ``max_concurrent`` were being served."""
        with self._lock:
            return self._refused

    @property
    def served_at_once(self) -> list[int]:
        """For each completion served under ``max_concurrent``, in order, how many were being
        served with it (itself included)."""
        with self._lock:
            return list(self._served_at_once)

    # -- used by the handler threads ------------------------------------------------------

    def _admit(self) -> bool:
        """Whether a completion may be served now (``max_concurrent`` not reached); one that
        may counts as served until :meth:`_done_serving`."""
        with self._lock:
            if self.max_concurrent is None:
                return True
            if self._serving >= self.max_concurrent:
                self._refused += 1
                return False
            self._serving += 1
            self._served_at_once.append(self._serving)
            return True

    def _done_serving(self) -> None:
        with self._lock:
            if self.max_concurrent is not None:
                self._serving = max(0, self._serving - 1)

    def _begin(self, body: Any) -> Reply:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        chosen = self._next_reply(body, lambda message: Reply.error(500, message))
        return Reply.ok(chosen) if isinstance(chosen, str) else chosen

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _completion(self, reply: Reply, body: Any) -> dict[str, Any]:
        messages = body.get("messages") if isinstance(body, dict) else None
        prompt_words = sum(
            len(str(m.get("content", "")).split())
            for m in (messages if isinstance(messages, list) else [])
            if isinstance(m, dict)
        )
        prompt = prompt_words if reply.prompt_tokens is None else reply.prompt_tokens
        completion = (
            len(reply.text.split()) if reply.completion_tokens is None else reply.completion_tokens
        )
        requested = body.get("model") if isinstance(body, dict) else None
        with self._lock:
            number = len(self._received)
        return {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": reply.model or (requested if isinstance(requested, str) else self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


class _Handler(StubHandler):
    stub: JudgeServer  # set on the subclass JudgeServer.start makes
    record_as = Received
    _serving = False  # this connection's request counts against max_concurrent
    _flying = False  # this connection's request counts as in flight

    def do_GET(self) -> None:
        self.stub._record(self.received(b""))
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": self.stub.model, "object": "model", "owned_by": "assay-tests"}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        received = self.received(self.read_body())
        self.stub._record(received)
        body = received.body
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if body is None:
            self._send(400, {"error": {"message": "the request body is not JSON"}})
            return
        if not self.stub._admit():
            message = {"error": {"message": "too many requests at once", "code": 429}}
            self._send(429, message, {"Retry-After": self.stub.retry_after})
            return
        self._serving = True
        try:
            reply = self.stub._begin(body)
            self._flying = True
            try:
                self._answer(reply, body)
            finally:
                self._land()
        finally:
            self._stop_serving()

    def _land(self) -> None:
        """This request is no longer in flight (once): said before its answer is sent, since a
        client that has the answer may send its next request before this thread runs again
        (counted after, a limit of 3 was once seen as 4 in flight)."""
        if self._flying:
            self._flying = False
            self.stub._end()

    def _stop_serving(self) -> None:
        """This request no longer counts against ``max_concurrent`` (once)."""
        if self._serving:
            self._serving = False
            self.stub._done_serving()

    def _answer(self, reply: Reply, body: Any) -> None:
        waited = self.stub._wait(self.stub.latency_s + reply.delay_s)
        self._stop_serving()  # the answer starts now: the next request may take its place
        self._land()
        if not waited or reply.drop:
            self.close_connection = True
            return
        if reply.body is not None:
            self._send(reply.status, reply.body, reply.headers)
        elif reply.status != 200:
            self._send(reply.status, {"error": {"message": reply.text}}, reply.headers)
        else:
            self._send(200, self.stub._completion(reply, body), reply.headers)

    def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        if isinstance(payload, bytes):
            data, kind = payload, "application/octet-stream"
        elif isinstance(payload, str):
            data, kind = payload.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            data, kind = json.dumps(payload).encode("utf-8"), "application/json"
        self.send_bytes(status, data, kind, headers)
