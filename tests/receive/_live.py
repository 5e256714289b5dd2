"""Helpers of the receiver tests: spans made by the OpenTelemetry SDK with GenAI attributes,
sent by the real OTLP/HTTP exporter; a receiver in process on 127.0.0.1; a tiny OTLP logs server."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from assay.receive.buffer import Limits, SpanBuffer
from assay.receive.scoring import LiveRun
from assay.receive.server import Receiver
from assay.runner.jobs import given_config

METRICS = """
    from assay.custom import EvalStatus, EvaluationResult, PerInvocationResult


    def mentions_sunny(eval_metric, actual_invocations, expected_invocations, scenario):
        results = []
        for inv in actual_invocations:
            text = " ".join(p.text or "" for p in (inv.final_response.parts or []))
            score = 1.0 if "sunny" in text else 0.0
            status = EvalStatus.PASSED if score >= 0.5 else EvalStatus.FAILED
            results.append(PerInvocationResult(actual_invocation=inv, score=score, eval_status=status))
        overall = sum(r.score for r in results) / max(len(results), 1)
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=EvalStatus.PASSED if overall >= 0.5 else EvalStatus.FAILED,
            per_invocation_results=results,
        )
"""


def write_config(folder: Path, module: str) -> Path:
    """A config: a deterministic reference-free custom metric, and one that needs an eval set."""
    (folder / f"{module}.py").write_text(textwrap.dedent(METRICS), encoding="utf-8")
    config = {
        "criteria": {"sunny": 0.5, "tool_trajectory_avg_score": 1.0},
        "custom_metrics": {"sunny": {"code_config": {"name": f"{module}.mentions_sunny"}}},
    }
    path = folder / "cfg.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def start_receiver(
    history: Path, config: Path, *, key: str | None = None, export_to: str | None = None,
    limits: Limits | None = None, max_body: int = 8 * 1024 * 1024,
) -> Receiver:  # fmt: skip
    buffer = SpanBuffer(
        history.with_name(history.name + ".receive"), limits or Limits(settle_s=0.2)
    )
    run = LiveRun(history, given_config(str(config))[0], str(config), export_to=export_to)
    receiver = Receiver(buffer, run, "127.0.0.1", 0, key, max_body=max_body, tick_s=0.05)
    receiver.start()
    return receiver


def exporter_to(port: int, headers: dict[str, str] | None = None) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", headers=headers)


def send_conversation(
    exporter: OTLPSpanExporter, answer: str, conversation: str | None = None,
    keep: InMemorySpanExporter | None = None,
) -> tuple[str, str]:  # fmt: skip
    """One agent turn traced with GenAI attributes (invoke_agent > chat, execute_tool), exported
    by ``exporter`` as each span ends; the root span's (trace id, span id)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if keep is not None:
        provider.add_span_processor(SimpleSpanProcessor(keep))
    tracer = provider.get_tracer("weather-agent")
    user = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
    reply = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
    root_attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather",
        "gen_ai.input.messages": json.dumps(user), "gen_ai.output.messages": json.dumps(reply),
    }  # fmt: skip
    if conversation:
        root_attrs["gen_ai.conversation.id"] = conversation
    with tracer.start_as_current_span("invoke_agent weather", attributes=root_attrs) as root:
        with tracer.start_as_current_span("chat m", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
            "gen_ai.input.messages": json.dumps(user), "gen_ai.usage.input_tokens": 10,
            "gen_ai.usage.output_tokens": 5,
        }):  # fmt: skip
            pass
        with tracer.start_as_current_span("execute_tool get_weather", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": '{"city": "Paris"}',
            "gen_ai.tool.call.result": '{"forecast": "sunny"}',
        }):  # fmt: skip
            pass
        context = root.get_span_context()
    provider.shutdown()
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def wait_for(check: Callable[[], bool], what: str, tries: int = 400) -> None:
    """Poll ``check`` (every 25 ms) until it holds; fail naming ``what``."""
    for _ in range(tries):
        if check():
            return
        time.sleep(0.025)
    raise AssertionError(f"never happened: {what}")


class LogsServer:
    """A tiny OTLP/HTTP logs server: decodes each ExportLogsServiceRequest it is sent."""

    def __init__(self, fail_first: int = 0) -> None:
        self.requests: list[ExportLogsServiceRequest] = []
        self.fail_first = fail_first
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if outer.fail_first > 0:
                    outer.fail_first -= 1
                    self.send_response(503)
                else:
                    request = ExportLogsServiceRequest()
                    request.ParseFromString(body)
                    outer.requests.append(request)
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def records(self) -> list[dict[str, Any]]:
        found = []
        for request in self.requests:
            for resource in request.resource_logs:
                for scope in resource.scope_logs:
                    for record in scope.log_records:
                        attrs = {kv.key: _plain(kv.value) for kv in record.attributes}
                        found.append({**attrs, "trace_id": record.trace_id.hex(),
                                      "span_id": record.span_id.hex(),
                                      "event_name": record.event_name})  # fmt: skip
        return found

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _plain(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def forget_module(name: str) -> None:
    sys.modules.pop(name, None)
