"""What every stub HTTP server of the tests shares: listening on 127.0.0.1 in a background
thread, closing down cleanly, scripted replies and a record of the requests received.

- :class:`Listener` is the lifecycle: :meth:`~Listener.start` binds a free port on 127.0.0.1 and
  serves :meth:`~Listener.handler_class` (given the server as its ``stub``) in a thread;
  :meth:`~Listener.close` wakes delayed replies, shuts open connections down and joins every
  thread (handler threads included), so no socket or thread outlives a test. It is a mixin with no
  ``__init__`` of its own, so dataclass servers use it too.
- :class:`Scripted` adds the replies (queued, else a ``reply`` function given the request's JSON
  body, else ``default``) and the record of every :class:`Received` request.
- :class:`StubHandler` is the request handler base: HTTP/1.1 keep-alive, quiet, reads the body as
  JSON, records it, and sends bytes.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar

R = TypeVar("R")


@dataclass(frozen=True)
class Received:
    """One request a server received: method, path (query string removed), headers (lower-case
    names), the body parsed as JSON (None if it was not JSON), the query string, and when it
    arrived (``time.monotonic()``)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    query: str = ""
    at: float = field(default_factory=time.monotonic)


class _Server(ThreadingHTTPServer):
    """Joins its handler threads on close, and can close the connections they hold open."""

    daemon_threads = False
    block_on_close = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Shut the open connections down so handler threads waiting on them return."""
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (timed out, cancelled) is not an error worth printing."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class Listener:
    """A server's lifecycle on 127.0.0.1 (a mixin: subclasses say what serves requests)."""

    poll_interval: ClassVar[float] = 0.02
    _httpd: _Server | None = None
    _thread: threading.Thread | None = None
    _stopping: threading.Event | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class; :meth:`start` serves a subclass whose ``stub`` is self."""
        raise NotImplementedError

    def start(self) -> Self:
        """Listen on a free port of 127.0.0.1 and serve in a background thread."""
        self._stopping = threading.Event()
        handler = type("Handler", (self.handler_class(),), {"stub": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self.poll_interval},
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving: wake delayed replies, close connections, join every thread."""
        if self._httpd is None:
            return
        if self._stopping is not None:
            self._stopping.set()
        self._httpd.shutdown()
        self._httpd.close_connections()
        self._httpd.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()
        self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The port it listens on."""
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return int(self._httpd.server_address[1])

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds``; False if the server began closing meanwhile."""
        stopping = self._stopping
        return seconds <= 0 or stopping is None or not stopping.wait(seconds)


class Scripted(Listener, Generic[R]):
    """A :class:`Listener` with scripted replies of type ``R`` and a record of requests.

    Each answer is, in order: the next reply queued with :meth:`queue`, else ``reply(body)``,
    else ``default``; a ``reply`` function that raises is recorded in :attr:`errors`.
    """

    def __init__(self, reply: Callable[[dict[str, Any]], R] | None, *, default: R) -> None:
        self.reply = reply
        self.default = default
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._queued: deque[R] = deque()
        self._received: list[Received] = []

    def queue(self, *replies: R) -> None:
        """Answer the next requests with ``replies``, in order."""
        with self._lock:
            self._queued.extend(replies)

    @property
    def requests(self) -> list[Received]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._received)

    def _record(self, received: Received) -> None:
        with self._lock:
            self._received.append(received)

    def _next_reply(self, body: Any, broken: Callable[[str], R]) -> R:
        """The next queued reply, else the ``reply`` function's (``broken(message)`` if it
        raised; only for a JSON object body), else ``default``."""
        with self._lock:
            queued = self._queued.popleft() if self._queued else None
        if queued is None and self.reply is not None and isinstance(body, dict):
            try:
                queued = self.reply(body)
            except Exception as exc:  # a broken reply function must show in the test
                with self._lock:
                    self.errors.append(repr(exc))
                return broken(f"stub reply function raised {exc!r}")
        return self.default if queued is None else queued


class StubHandler(BaseHTTPRequestHandler):
    """The request handler base: HTTP/1.1 keep-alive, quiet, JSON bodies."""

    protocol_version = "HTTP/1.1"
    timeout = 30  # a connection idle this long is closed
    disable_nagle_algorithm = True  # headers and body go out as separate writes; no 40 ms delay
    record_as: ClassVar[type[Received]] = Received
    """The :class:`Received` (sub)class requests are recorded as."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def read_body(self) -> bytes:
        """The request's body (``Content-Length`` bytes)."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def received(self, raw: bytes) -> Received:
        """This request, its body ``raw`` parsed as JSON (None if it is not JSON)."""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = self.path.partition("?")
        headers = {name.lower(): value for name, value in self.headers.items()}
        return self.record_as(self.command, path, headers, body, query)

    def send_bytes(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Answer ``status`` with ``data``; a client that went away closes the connection."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True
