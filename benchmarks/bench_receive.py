"""`assay receive` on loopback: spans/s received and scored, the sender in another process.

Run: .venv/bin/python benchmarks/bench_receive.py [SESSIONS] [SPANS_PER_SESSION]

The sender is a subprocess (this file with ``--send``): it makes the sessions with the
OpenTelemetry SDK (an ``invoke_agent`` root with ``chat`` / ``execute_tool`` children, GenAI
attributes with message content), and once they are made sends them with the real
``OTLPSpanExporter`` (protobuf) in batches of 512 spans, as its BatchSpanProcessor sends them;
what is timed is the sending, not the SDK making spans. The receiver runs in this process: it
buffers the spans in its SQLite file, closes each session on its root span and scores it with a
deterministic criterion (``tool_trajectory_avg_score``: NOT_EVALUATED without an eval set, so
the informational counts are what is computed), recording it in the history.

Printed: spans/s acknowledged (all export calls returned 200), spans/s scored and recorded (the
last session recorded), the receiver's CPU seconds over that time (all its threads; on a busy
machine the figure that moves least), its peak RSS (VmHWM of this process), and the load
average.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_BATCH = 512


def _send(port: int, sessions: int, per_session: int) -> None:
    """The sender: make every span first, then export them 512 at a time; print the seconds."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("bench")
    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}])
    reply = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}])
    for _ in range(sessions):
        with tracer.start_as_current_span("invoke_agent a", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
            "gen_ai.input.messages": user, "gen_ai.output.messages": reply,
        }):  # fmt: skip
            for n in range(per_session - 1):
                attrs: dict[str, str | int] = (
                    {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                     "gen_ai.input.messages": user, "gen_ai.output.messages": reply,
                     "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 12}
                    if n % 2 else
                    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather",
                     "gen_ai.tool.call.id": f"call-{n}",
                     "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                     "gen_ai.tool.call.result": '{"forecast": "sunny", "high": 21}'}
                )  # fmt: skip
                with tracer.start_as_current_span("chat m" if n % 2 else "execute_tool weather",
                                                  attributes=attrs):  # fmt: skip
                    pass
    spans = kept.get_finished_spans()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    for at in range(0, len(spans), _BATCH):
        result = exporter.export(spans[at : at + _BATCH])
        if result.name != "SUCCESS":
            raise SystemExit(f"export failed at span {at}: {result.name}")
    print(f"{time.perf_counter() - started:.3f}", flush=True)


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(sessions: int = 400, per_session: int = 50) -> None:
    from assay.receive.buffer import Limits, SpanBuffer
    from assay.receive.scoring import LiveRun
    from assay.receive.server import Receiver
    from assay.runner.jobs import given_config

    folder = Path(tempfile.mkdtemp(prefix="bench-receive-"))
    history = folder / "runs.sqlite"
    config = given_config({"criteria": {"tool_trajectory_avg_score": 1.0}})[0]
    buffer = SpanBuffer(folder / "runs.sqlite.receive", Limits(settle_s=0.5))
    receiver = Receiver(buffer, LiveRun(history, config, "<bench>"), "127.0.0.1", 0, tick_s=0.2)
    receiver.start()
    sender = subprocess.Popen(
        [sys.executable, __file__, "--send", str(receiver.port), str(sessions), str(per_session)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert sender.stdin is not None and sender.stdout is not None
    assert sender.stdout.readline().strip() == "ready"
    load = os.getloadavg()[0]
    started, cpu = time.perf_counter(), time.process_time()
    sender.stdin.write("go\n")
    sender.stdin.flush()
    sent = float(sender.stdout.readline())
    sender.wait()
    seen, quiet = -1, time.perf_counter()
    while receiver.run.cases < sessions and time.perf_counter() - quiet < 10:  # no progress: stop
        if receiver.run.cases != seen:
            seen, quiet = receiver.run.cases, time.perf_counter()
        time.sleep(0.05)
    scored, cpu = time.perf_counter() - started, time.process_time() - cpu
    serving_rss = _peak_rss_mb()
    receiver.stop()  # marks the run finished: reads every case back (the history's doing)
    total = sessions * per_session
    print(f"{total} spans, {sessions} sessions, sender in a subprocess: acknowledged in "
          f"{sent:.1f} s ({total / sent:,.0f} spans/s); all scored and recorded in {scored:.1f} s "
          f"({total / scored:,.0f} spans/s); {receiver.run.cases} cases; receiver CPU {cpu:.1f} s "
          f"({total / cpu:,.0f} spans per CPU second); receiver peak RSS "
          f"{serving_rss:.0f} MB while serving, {_peak_rss_mb():.0f} MB after stopping; "
          f"load average {load:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end, {os.cpu_count()} CPUs; answers "
          f"{receiver.requests}, spans refused {buffer.rejected}")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["--send"]:
        _send(*(int(a) for a in sys.argv[2:5]))  # type: ignore[call-arg]
    else:
        main(*(int(a) for a in sys.argv[1:3]))
