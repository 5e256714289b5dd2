"""Real OpenAI Agents SDK spans: an agent of the SDK, talking to a scripted OpenAI-compatible server
on 127.0.0.1 (the Responses API, the SDK's default), traced by the SDK's own tracing and bridged to
OpenTelemetry by a real instrumentation: the GenAI-conventions one
(``opentelemetry-instrumentation-openai-agents-v2``) or OpenInference's
(``openinference-instrumentation-openai-agents``).

Each session has two user turns (two ``Runner.run`` calls, so two traces): turn one asks for two
tools at once (parallel calls, one of them with a result of many KB), turn two calls a tool that
raises. A session is given a ``group_id`` (the SDK's conversation/thread id) or none at all.

Run it as a script (``python tests/traces/_openai_producer.py ...``, see :func:`main`): under pytest
the ``tests/agents`` package is importable as ``agents`` and hides the SDK, so the tests run this in
a subprocess (``_producers.produce_openai_agents``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_trace_processors, trace
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI
from opentelemetry.sdk.trace import ReadableSpan

if __package__:
    from ._otlp import batches_by_end, environment, fresh_provider, otlp_lines, write_lines
else:  # run as a script: the only way under pytest, whose tests/agents shadows the SDK's `agents`
    from _otlp import batches_by_end, environment, fresh_provider, otlp_lines, write_lines

MODEL = "scripted-gpt-1"
TURNS = (
    "What is the weather in Paris, and what does report q3 say?",
    "And the weather in Atlantis?",
)
REPORT_KB = 24
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


# --- the scripted OpenAI-compatible server (Responses API) -------------------------------------


def _function_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_final",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def scripted_output(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's turn, from the shape of the request: tool calls for a question, text after."""
    items = body.get("input") or []
    items = [items] if isinstance(items, dict) else items
    last = items[-1] if items else {}
    if isinstance(last, dict) and last.get("type") == "function_call_output":
        outputs = [
            i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if any("Atlantis" in str(i.get("output")) for i in outputs[-1:]):
            return [_message("I could not get the weather in Atlantis: no station there.")]
        return [_message("Paris is sunny at 21°C; report q3 says revenue grew.")]
    text = json.dumps(last)
    if "Atlantis" in text:
        return [_function_call("call_atlantis", "get_weather", {"city": "Atlantis"})]
    return [
        _function_call("call_paris", "get_weather", {"city": "Paris"}),
        _function_call("call_q3", "fetch_report", {"report_id": "q3"}),
    ]


def _response(body: dict[str, Any], number: int) -> dict[str, Any]:
    output = scripted_output(body)
    input_tokens = 100 + 10 * len(body.get("input") or [])
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1_700_000_000 + number,
        "model": body.get("model", MODEL),
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools", []),
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 7 * len(output),
            "total_tokens": input_tokens + 7 * len(output),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ScriptedServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append((self.path, body))
        if self.path.rstrip("/").endswith("/responses"):
            payload = json.dumps(_response(body, len(self.server.requests))).encode()
            status = 200
        else:
            payload = json.dumps({"error": {"message": f"not scripted: {self.path}"}}).encode()
            status = 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, Any]]] = []


@contextmanager
def scripted_openai_server() -> Iterator[_ScriptedServer]:
    """The scripted Responses API on 127.0.0.1; its base URL is ``http://127.0.0.1:PORT/v1``."""
    server = _ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# --- the agent ----------------------------------------------------------------------------------


@function_tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city; raises for a city it does not know."""
    if city == "Atlantis":
        raise ValueError(f"no weather station in {city}")
    return {"city": city, "forecast": "sunny", "celsius": 21}


@function_tool
def fetch_report(report_id: str) -> dict[str, Any]:
    """A report of many KB."""
    line = f"report {report_id}: revenue grew in every region; details follow. "
    return {
        "report_id": report_id,
        "text": (line * (REPORT_KB * 1024 // len(line) + 1))[: REPORT_KB * 1024],
    }


def build_agent(base_url: str) -> Agent[Any]:
    """The agent: the scripted model behind ``base_url`` and the two tools."""
    client = AsyncOpenAI(base_url=base_url, api_key="sk-test-not-a-real-key-0000", max_retries=0)
    return Agent(
        name="weather_agent",
        instructions="You answer questions about the weather and reports, using the tools.",
        model=OpenAIResponsesModel(model=MODEL, openai_client=client),
        tools=[get_weather, fetch_report],
    )


async def _turns(agent: Agent[Any], config: RunConfig) -> list[str]:
    history: list[Any] = []
    finals: list[str] = []
    for text in TURNS:
        message = {"role": "user", "content": text}
        result = await Runner.run(agent, [*history, message], run_config=config)
        history = result.to_input_list()
        finals.append(str(result.final_output))
    return finals


async def _session(agent: Agent[Any], group_id: str | None, one_trace: bool) -> list[str]:
    """Two user turns; the final outputs. ``one_trace``: both turns inside one ``agents.trace``
    (the SDK's way to keep a conversation in one trace); otherwise each ``Runner.run`` starts a
    trace of its own."""
    config = RunConfig(workflow_name="weather workflow", group_id=group_id)
    if not one_trace:
        return await _turns(agent, config)
    with trace("weather conversation", group_id=group_id):
        return await _turns(agent, config)


@dataclass
class OpenAIAgentsRun:
    """What one run produced: the spans, the sessions' final outputs, the server's requests."""

    convention: str
    capture: str | None
    spans: list[ReadableSpan]
    finals: dict[str, list[str]] = field(default_factory=dict)
    requests: int = 0


def _instrumentor(convention: str) -> Any:
    if convention == "genai":
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        return OpenAIAgentsInstrumentor()
    if convention == "openinference":
        from openinference.instrumentation.openai_agents import (
            OpenAIAgentsInstrumentor as OpenInferenceInstrumentor,
        )

        return OpenInferenceInstrumentor()
    raise ValueError(f"unknown convention {convention!r}")


def run_openai_agents(
    convention: str,
    capture: str | None = None,
    group_ids: tuple[str | None, ...] = (None,),
    one_trace: bool = True,
) -> OpenAIAgentsRun:
    """Run one session per entry of ``group_ids`` (concurrently, so their spans interleave).

    ``convention``: ``"genai"`` or ``"openinference"``. ``capture``: the value of
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` while instrumenting (None: unset).
    """
    provider, exporter = fresh_provider(f"openai-agents-{convention}")
    set_trace_processors([])  # the SDK's own exporter would post to api.openai.com
    instrumentor = _instrumentor(convention)
    with environment({CAPTURE_ENV: capture}), scripted_openai_server() as server:
        instrumentor.instrument(tracer_provider=provider)
        try:
            base_url = f"http://127.0.0.1:{server.server_port}/v1"

            async def both() -> list[list[str]]:
                agent = build_agent(base_url)
                sessions = (_session(agent, g, one_trace) for g in group_ids)
                return list(await asyncio.gather(*sessions))

            finals = asyncio.run(both())
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
    keys = [g or f"session-{i}" for i, g in enumerate(group_ids)]
    return OpenAIAgentsRun(
        convention,
        capture,
        list(exporter.get_finished_spans()),
        dict(zip(keys, finals, strict=True)),
        len(server.requests),
    )


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One job: ``{"convention", "out", "capture"?, "group_ids"?, "one_trace"?, "batch"?}``
    (``group_ids``: a list, null for a session without one). Writes ``out``; returns a summary."""
    from pathlib import Path

    groups = tuple(job.get("group_ids") or [None])
    run = run_openai_agents(
        job["convention"], job.get("capture"), groups, bool(job.get("one_trace", True))
    )
    batches = batches_by_end(run.spans, int(job.get("batch", 4)))
    write_lines(Path(job["out"]), otlp_lines(batches))
    return {"finals": run.finals, "requests": run.requests, "spans": len(run.spans)}


def main(argv: list[str] | None = None) -> int:
    """Arguments: jobs as JSON objects (see :func:`run_job`), run in order in this one process
    (importing the SDK takes seconds); prints a JSON list of their summaries."""
    import sys

    jobs = [json.loads(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    print(json.dumps([run_job(job) for job in jobs]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
