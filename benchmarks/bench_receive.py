"""`assay receive` on loopback: spans/s sustained through the real OTLP/HTTP exporter, and peak RSS.

Run: .venv/bin/python benchmarks/bench_receive.py [SESSIONS] [SPANS_PER_SESSION]
Sessions (an invoke_agent root with chat/execute_tool children, GenAI attributes) are made with the
OpenTelemetry SDK and sent in batches of 512 spans by OTLPSpanExporter (protobuf); the receiver
buffers them in its SQLite file, closes each session on its root span, and scores it with a
deterministic criterion (tool_trajectory_avg_score: NOT_EVALUATED without an eval set; the informational counts), recording it in the history.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from assay.receive.buffer import Limits, SpanBuffer
from assay.receive.scoring import LiveRun
from assay.receive.server import Receiver
from assay.runner.jobs import given_config


def main(sessions: int = 400, per_session: int = 50) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-receive-"))
    history = folder / "runs.sqlite"
    config = given_config({"criteria": {"tool_trajectory_avg_score": 1.0}})[0]
    buffer = SpanBuffer(folder / "runs.sqlite.receive", Limits(settle_s=0.5))
    receiver = Receiver(buffer, LiveRun(history, config, "<bench>"), "127.0.0.1", 0, tick_s=0.2)
    receiver.start()
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{receiver.port}/v1/traces")
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=100_000, max_export_batch_size=512)
    )
    tracer = provider.get_tracer("bench")
    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
    started = time.perf_counter()
    for _ in range(sessions):
        with tracer.start_as_current_span(
            "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent",
                                          "gen_ai.input.messages": user}):  # fmt: skip
            for n in range(per_session - 1):
                name = "chat m" if n % 2 else "execute_tool t"
                op = "chat" if n % 2 else "execute_tool"
                with tracer.start_as_current_span(
                    name, attributes={"gen_ai.operation.name": op, "gen_ai.tool.name": "t"}
                ):
                    pass
    provider.force_flush()
    sent = time.perf_counter() - started
    total = sessions * per_session
    while receiver.run.cases < sessions and time.perf_counter() - started < 600:
        time.sleep(0.1)
    scored = time.perf_counter() - started
    receiver.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{total} spans, {sessions} sessions: received in {sent:.1f} s "
          f"({total / sent:,.0f} spans/s); all scored and recorded in {scored:.1f} s "
          f"({total / scored:,.0f} spans/s); {receiver.run.cases} cases; "
          f"peak RSS {rss:.0f} MB (sender and receiver in one process)")  # fmt: skip


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
