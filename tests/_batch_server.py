"""A real stub of OpenAI's files and batches endpoints on 127.0.0.1, for the ``--judge-batch``
tests: ``POST /v1/files``, ``POST /v1/batches``, ``GET /v1/batches/{id}``,
``GET /v1/files/{id}/content``, and ``POST /v1/chat/completions`` for the calls that go one at a
time.

::

    with BatchServer() as server:
        server.plan(Plan(fail={1}), Plan(expire_after=2))
        backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
        ...
        assert server.batches_created == 2

Each batch created takes the next queued :class:`Plan` (else the default one): it answers
``in_progress`` to its first ``polls`` polls (and to every poll while ``held``), then is over:
``completed`` with every line answered except those whose position is in ``fail`` (put in the
error file), or ``expired`` after answering its first ``expire_after`` lines. Every answer is
``answer(body)`` for the line's request body (default ``"yes"``), with token usage.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from _http_stub import Listener, StubHandler

Answer = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Plan:
    """How one batch behaves (see the module docstring)."""

    polls: int = 1
    fail: frozenset[int] = frozenset()
    expire_after: int | None = None
    held: bool = False


@dataclass
class _Batch:
    id: str
    input_file: str
    plan: Plan
    polls: int = 0
    status: str = "validating"
    output_file: str | None = None
    error_file: str | None = None
    released: bool = False


@dataclass
class BatchServer(Listener):
    """The stub server (a context manager: started on enter, stopped and joined on exit)."""

    answer: Answer = field(default=lambda body: "yes")
    default: Plan = field(default_factory=Plan)
    files: dict[str, str] = field(default_factory=dict)
    batches: dict[str, _Batch] = field(default_factory=dict)
    completions: int = 0
    """Chat completions asked one at a time."""
    polls: int = 0
    no_batch_api: bool = False
    """Answer 404 to the files and batches routes, as a server with only chat completions does."""
    _plans: deque[Plan] = field(default_factory=deque)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handler_class(self) -> type[StubHandler]:
        """Serves the files, batches and chat-completions routes."""
        return _handler(self)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``."""
        return f"{self.origin}/v1"

    @property
    def batches_created(self) -> int:
        """How many batches were created."""
        return len(self.batches)

    def plan(self, *plans: Plan) -> None:
        """Queue how the next batches behave."""
        self._plans.extend(plans)

    def release(self, batch_id: str) -> None:
        """Let a held batch finish at its next poll."""
        with self._lock:
            self.batches[batch_id].released = True

    def lines(self, batch_id: str) -> list[dict[str, Any]]:
        """The request lines of a batch."""
        content = self.files[self.batches[batch_id].input_file]
        return [json.loads(line) for line in content.splitlines() if line.strip()]

    # -- what each route does -------------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    def upload(self, content: str) -> dict[str, Any]:
        with self._lock:
            file_id = self.new_id("file")
            self.files[file_id] = content
        return {"id": file_id, "object": "file", "purpose": "batch", "bytes": len(content)}

    def create(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        file_id = request.get("input_file_id")
        with self._lock:
            if file_id not in self.files:
                return 400, {"error": {"message": f"no file {file_id}"}}
            plan = self._plans.popleft() if self._plans else self.default
            batch = _Batch(self.new_id("batch"), str(file_id), plan)
            self.batches[batch.id] = batch
            return 200, self._view(batch)

    def poll(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.polls += 1
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, {"error": {"message": f"no batch {batch_id}"}}
            batch.polls += 1
            waiting = batch.polls <= batch.plan.polls or (batch.plan.held and not batch.released)
            if batch.output_file is None and batch.status != "expired" and not waiting:
                self._finish(batch)
            elif batch.output_file is None and waiting:
                batch.status = "in_progress"
            return 200, self._view(batch)

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.completions += 1
        return _completion(self.answer(body))

    def _finish(self, batch: _Batch) -> None:
        lines = [json.loads(x) for x in self.files[batch.input_file].splitlines() if x.strip()]
        out: list[str] = []
        errors: list[str] = []
        for position, line in enumerate(lines):
            key = line["custom_id"]
            if batch.plan.expire_after is not None and position >= batch.plan.expire_after:
                errors.append(
                    _error_line(
                        key,
                        "batch_expired",
                        "This request could not be executed before the completion window expired.",
                    )
                )
            elif position in batch.plan.fail:
                errors.append(_error_line(key, "server_error", "The model failed this request."))
            else:
                response = {
                    "status_code": 200,
                    "request_id": f"req-{position}",
                    "body": _completion(self.answer(line["body"])),
                }
                out.append(
                    json.dumps(
                        {
                            "id": f"line-{position}",
                            "custom_id": key,
                            "response": response,
                            "error": None,
                        }
                    )
                )
        batch.status = "expired" if batch.plan.expire_after is not None else "completed"
        batch.output_file = self.new_id("file")
        self.files[batch.output_file] = "\n".join(out) + ("\n" if out else "")
        if errors:
            batch.error_file = self.new_id("file")
            self.files[batch.error_file] = "\n".join(errors) + "\n"

    def _view(self, batch: _Batch) -> dict[str, Any]:
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": batch.input_file,
            "completion_window": "24h",
            "status": batch.status,
            "output_file_id": batch.output_file,
            "error_file_id": batch.error_file,
            "errors": None,
        }


def _error_line(key: str, code: str, message: str) -> str:
    return json.dumps(
        {
            "id": f"err-{key[:8]}",
            "custom_id": key,
            "response": None,
            "error": {"code": code, "message": message},
        }
    )


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "model": "judge",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


def _file_content(content_type: str, body: bytes) -> str:
    """The uploaded file of a ``multipart/form-data`` body."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    for part in message.iter_parts():  # type: ignore[attr-defined]
        if part.get_filename():
            payload = part.get_payload(decode=True)
            return payload.decode("utf-8") if isinstance(payload, bytes) else str(payload)
    return ""


def _handler(server: BatchServer) -> type[StubHandler]:
    class Handler(StubHandler):
        def _send(self, status: int, data: Any) -> None:
            raw = (data if isinstance(data, str) else json.dumps(data)).encode()
            self.send_bytes(status, raw, "application/json")

        def do_POST(self) -> None:
            body = self.read_body()
            if server.no_batch_api and self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
            elif self.path == "/v1/files":
                content = _file_content(self.headers.get("Content-Type", ""), body)
                self._send(200, server.upload(content))
            elif self.path == "/v1/batches":
                self._send(*server.create(json.loads(body)))
            elif self.path == "/v1/chat/completions":
                self._send(200, server.complete(json.loads(body)))
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if parts[:2] == ["v1", "batches"] and len(parts) == 3:
                self._send(*server.poll(parts[2]))
            elif parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
                content = server.files.get(parts[2])
                if content is None:
                    self._send(404, {"error": {"message": "no such file"}})
                else:
                    self._send(200, content)
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler


@dataclass
class GeminiBatchServer(Listener):
    """A stub of the Gemini API's batch mode on 127.0.0.1 (point google-genai at it with
    ``GOOGLE_GEMINI_BASE_URL``): ``POST /v1beta/models/{model}:batchGenerateContent`` and
    ``GET /v1beta/batches/{id}``, with the same :class:`Plan`s as :class:`BatchServer` (a
    failed line gets an error in place of its response), and ``:generateContent`` for the calls
    that go one at a time."""

    answer: Answer = field(default=lambda body: "yes")
    default: Plan = field(default_factory=Plan)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    completions: int = 0
    polls: int = 0
    _plans: deque[Plan] = field(default_factory=deque)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handler_class(self) -> type[StubHandler]:
        """Serves the batch and ``generateContent`` routes."""
        return _gemini_handler(self)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return self.origin

    def plan(self, *plans: Plan) -> None:
        """Queue how the next batches behave."""
        self._plans.extend(plans)

    def create(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        requests = body["batch"]["inputConfig"]["requests"]["requests"]
        with self._lock:
            name = f"batches/stub-{next(self._ids)}"
            plan = self._plans.popleft() if self._plans else self.default
            self.batches[name] = {"model": model, "requests": requests, "plan": plan, "polls": 0}
        return _operation(name, model, "BATCH_STATE_PENDING")

    def get(self, name: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.polls += 1
            batch = self.batches.get(name)
            if batch is None:
                return 404, {"error": {"code": 404, "message": f"no {name}", "status": "NOT_FOUND"}}
            batch["polls"] += 1
            plan: Plan = batch["plan"]
            if batch["polls"] <= plan.polls or plan.held:
                return 200, _operation(name, batch["model"], "BATCH_STATE_RUNNING")
            answers = []
            for position, line in enumerate(batch["requests"]):
                entry: dict[str, Any] = {"metadata": line.get("metadata", {})}
                if position in plan.fail:
                    entry["error"] = {"code": 13, "message": "The model failed this request."}
                else:
                    entry["response"] = _gemini_answer(self.answer(line["request"]))
                answers.append(entry)
            output = {"inlinedResponses": {"inlinedResponses": answers}}
            return 200, _operation(name, batch["model"], "BATCH_STATE_SUCCEEDED", output)

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.completions += 1
        return _gemini_answer(self.answer(body))


def _operation(
    name: str, model: str, state: str, output: dict[str, Any] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
        "name": name,
        "model": model,
        "displayName": "stub",
        "state": state,
    }
    if output is not None:
        metadata["output"] = output
    return {"name": name, "metadata": metadata, **({"done": True} if output else {})}


def _gemini_answer(text: str) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12},
        "modelVersion": "gemini-2.5-flash",
    }


def _gemini_handler(server: GeminiBatchServer) -> type[StubHandler]:
    class Handler(StubHandler):
        def _send(self, status: int, data: Any) -> None:
            self.send_bytes(status, json.dumps(data).encode(), "application/json")

        def do_POST(self) -> None:
            body = json.loads(self.read_body())
            path = self.path.split("?")[0]
            if path.endswith(":batchGenerateContent"):
                model = path.removeprefix("/v1beta/").removesuffix(":batchGenerateContent")
                self._send(200, server.create(model, body))
            elif path.endswith(":generateContent"):
                self._send(200, server.complete(body))
            else:
                self._send(404, {"error": {"code": 404, "message": f"no route {path}"}})

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path.startswith("/v1beta/batches/"):
                self._send(*server.get(path.removeprefix("/v1beta/")))
            else:
                self._send(404, {"error": {"code": 404, "message": f"no route {path}"}})

    return Handler
