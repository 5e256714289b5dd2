"""The receiver: OTLP/HTTP ``POST /v1/traces`` in, sessions scored as they close.

The HTTP side is the standard library's threading HTTP server (HTTP/1.1, keep-alive): an OTLP
exporter sends a batch of spans every few seconds, so a request's cost is decoding its spans,
not the server; no dependency is added. At most ``max_connections`` are served at once (more are
answered 503 and closed), so a flood of connections cannot grow the threads without bound.

Each request: a key when one is set (``Authorization: Bearer KEY`` or ``x-api-key``; else 401),
a body of at most ``max_body`` bytes after gzip is undone (``Content-Encoding: gzip``; else 413,
read a chunk at a time so a decompression bomb stops at the limit), OTLP protobuf or JSON (by
Content-Type; else 400 naming the problem). Spans go to the :class:`SpanBuffer`; a thread of
its own closes sessions and scores them (:class:`~assay.receive.scoring.LiveRun`).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from assay.errors import TracesError
from assay.receive.buffer import SpanBuffer
from assay.receive.decode import request_spans
from assay.receive.scoring import LiveRun, now
from assay.traces import build_session

_PROTO = "application/x-protobuf"

MAX_BODY = 8 * 1024 * 1024
"""The largest request body, after gzip is undone (8 MiB; the OTLP exporter sends far less)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _TooLarge(Exception):
    pass


def _inflated(body: bytes, limit: int) -> bytes:
    """``body`` un-gzipped, refusing past ``limit`` bytes (a bomb stops there)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = inflater.decompress(body, limit + 1)
    if len(out) > limit or inflater.unconsumed_tail:
        raise _TooLarge
    return out + inflater.flush()


@dataclass
class Receiver:
    """A running receiver; :meth:`start` binds and starts it, :meth:`stop` stops it."""

    buffer: SpanBuffer
    run: LiveRun
    host: str = "127.0.0.1"
    port: int = 4318
    key: str | None = None
    max_body: int = MAX_BODY
    max_connections: int = 64
    tick_s: float = 0.1
    batch: int = 128
    """The most sessions scored together (one runner call, one history write, one buffer
    transaction a batch): as many as are due, so a backlog is scored in large batches."""
    batch_spans: int = 2_000
    """The most spans taken into memory for one batch (a larger session is taken alone)."""
    say: Callable[[str], None] = print
    requests: dict[int, int] = field(default_factory=dict)
    """Answers given, by status code."""

    def start(self) -> None:
        self.run.open(self.buffer.meta("run_id"))
        self.buffer.set_meta("run_id", self.run.run_id)
        self.buffer.settle(self.run.recorded, now())  # a crash while recording: not twice
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._server = _Server((self.host, self.port), _handler(self))
        self._server.receiver = self
        self.port = int(self._server.server_address[1])
        self._stopping = threading.Event()
        self._serving = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._scoring = threading.Thread(target=self._score_loop, daemon=True)
        self._serving.start()
        self._scoring.start()

    def stop(self) -> None:
        """Stop serving; the sessions still open stay in the buffer for the next start."""
        self._server.shutdown()
        self._server.server_close()
        self._stopping.set()
        self._scoring.join()
        self.run.close()
        self.buffer.close()

    def _score_loop(self) -> None:
        """Score what is due every ``tick_s``; straight again after a pass that scored some
        (more came due meanwhile when there is a backlog: no tick is idled away then)."""
        loop = asyncio.new_event_loop()
        busy = False
        try:
            while not (self._stopping.is_set() if busy else self._stopping.wait(self.tick_s)):
                try:
                    busy = loop.run_until_complete(self.score_due()) > 0
                except Exception as exc:  # never stops the receiver
                    busy = False
                    self.say(f"warning: scoring failed: {type(exc).__name__}: {exc}")
        finally:
            loop.close()

    async def score_due(self) -> int:
        """Close and score the sessions due now, in batches of at most ``batch`` sessions and
        ``batch_spans`` spans (so the spans in memory stay bounded however far behind scoring
        is); how many were scored."""
        scored = 0
        for keys in self._batches(self.buffer.due(now())):
            scored += await self._score(keys)
        return scored

    def _batches(self, due: list[str]) -> Iterator[list[str]]:
        """``due`` cut into batches, each sized when it is taken (spans may still come)."""
        batch: list[str] = []
        spans = 0
        for key in due:
            size = self.buffer.spans_of(key)
            if batch and (len(batch) >= self.batch or spans + size > self.batch_spans):
                yield batch
                batch, spans = [], 0
            batch.append(key)
            spans += size
        if batch:
            yield batch

    async def _score(self, keys: list[str]) -> int:
        closed = self.buffer.take_many(keys)
        seen = self.buffer.scored_among([item.digest for item in closed])
        self.buffer.done_many([item for item in closed if item.digest in seen], now())
        fresh = []
        for item in closed:
            if item.digest in seen:
                continue
            session = build_session(item.spans, source="assay receive")
            if item.problem is not None:
                session.problem = "; ".join(p for p in (session.problem, item.problem) if p)
            fresh.append((item, session))
        await self.run.score(
            [(session, item.digest) for item, session in fresh], noting=self.buffer.recording
        )
        self.buffer.done_many([item for item, _session in fresh], now())
        return len(fresh)

    def accept(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, bytes]:
        """The answer to one request: status and body."""
        headers = handler.headers
        if self.key is not None and not self._authorized(headers):
            return 401, b"a key is needed: Authorization: Bearer KEY (or x-api-key)\n"
        if (headers.get("Content-Encoding") or "").lower() == "gzip":
            try:
                body = _inflated(body, self.max_body)
            except _TooLarge:
                return 413, f"the body is over {self.max_body} bytes unzipped\n".encode()
            except zlib.error as exc:
                return 400, f"the gzip body cannot be read: {exc}\n".encode()
        content_type = headers.get("Content-Type") or "application/x-protobuf"
        if self.buffer.full:
            return 503, b"scoring is behind: as many sessions wait as may be open; retry later\n"
        source = f"request from {handler.client_address[0]}"
        try:
            spans = request_spans(body, content_type, source)
        except TracesError as exc:
            return 400, f"{exc}\n".encode(errors="replace")
        refused = self.buffer.add(spans, now())
        return 200, _success(refused, self.buffer.limits.max_sessions, "json" in content_type)

    def _authorized(self, headers: Any) -> bool:
        assert self.key is not None
        given = headers.get("x-api-key") or ""
        bearer = headers.get("Authorization") or ""
        if bearer[:7].lower() == "bearer ":
            given = given or bearer[7:].strip()
        return hmac.compare_digest(given.encode(), self.key.encode())


def _success(refused: int, sessions: int, json_body: bool) -> bytes:
    """The OTLP answer to a request taken: a partial success when spans of new sessions were
    refused (the exporter does not resend them; the sender is told how many and why)."""
    if not refused:
        return b"{}" if json_body else b""
    why = f"{2 * sessions} sessions wait to be scored: spans of new sessions refused; send later"
    if json_body:
        partial = {"rejectedSpans": str(refused), "errorMessage": why}
        return json.dumps({"partialSuccess": partial}).encode()
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    answer = ExportTraceServiceResponse()
    answer.partial_success.rejected_spans = refused
    answer.partial_success.error_message = why
    return bytes(answer.SerializeToString())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: Receiver

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.receiver._slots.acquire(blocking=False):
            try:
                request.sendall(
                    b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            finally:
                self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.receiver._slots.release()


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "assay-receive"

        def do_POST(self) -> None:
            if self.path.split("?")[0].rstrip("/") != "/v1/traces":
                self._answer(404, b"only POST /v1/traces is served\n")
                return
            try:
                length = int(self.headers.get("Content-Length") or "")
            except ValueError:
                self.close_connection = True
                self._answer(400, b"a Content-Length is needed\n")  # (chunked is not read)
                return
            if length < 0 or length > receiver.max_body:
                self.close_connection = True
                self._answer(413, f"the body is over {receiver.max_body} bytes\n".encode())
                return
            body = self.rfile.read(length)
            status, answer = receiver.accept(self, body)
            json_body = "json" in (self.headers.get("Content-Type") or "")
            self._answer(status, answer, "application/json" if json_body else _PROTO)

        def _answer(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
            receiver.requests[status] = receiver.requests.get(status, 0) + 1
            self.send_response(status)
            self.send_header("Content-Type", content_type if status == 200 else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            if status == 503:
                self.send_header("Retry-After", "1")
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """No line per request."""

    return Handler
