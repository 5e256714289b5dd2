"""Benchmark: converting a large OTLP/JSON span file into ADK traces (``assay traces convert``).

    .venv/bin/python benchmarks/bench_otel.py [--spans 1000000] [--sessions 2000] [--keep DIR]

Writes an OTLP/JSON file as the collector's file exporter does (one ``{"resourceSpans": [...]}``
a line, 500 spans a line) of ``--spans`` spans in google-adk 2.13's default schema with message
content: each turn an ``invoke_workflow`` > ``invoke_agent`` > ``generate_content`` (a tool
call), ``execute_tool`` (a result of about 1 KB), ``generate_content`` (the answer): 5 spans.
The turns of ``--sessions`` sessions are interleaved through the file (each line holds spans of
many sessions; a turn's spans are spread over consecutive lines). Then it runs
``assay traces convert`` on it in a child process and reports its wall time and peak RSS
(the child's ``ru_maxrss``), and checks the output's session and invocation counts.

Target: 1,000,000 spans in under 60 s on 2 cores and under 500 MB RSS.

Measured (Python 3.11; 1,000,000 spans, 939 MB, 2,000 sessions, 200,000 invocations; convert
with 2 worker processes):

    2 idle cores (load average 1.5 before, from this benchmark alone): 44.6 s wall, 85.2 s CPU
        (parent and workers), largest process 250 MB; the file written in 23.8 s beforehand
    load average 4.5 (other sessions' test runs): 109.6 s wall, 101.4 s CPU, largest 239 MB
    load average 9-11: 282 s wall; the whole process tree at most 374 MB RSS (sampled /proc)
    one process (before worker processes), load 4.7: 182.9 s wall, 141 MB

Both targets are met on two idle cores: 44.6 s (< 60 s) and 250 MB (< 500 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SPANS_PER_TURN = 5
LINE = 500


def _a(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(
    trace: str, span: str, parent: str | None, name: str, t0: int, t1: int, attrs: dict[str, Any]
) -> dict[str, Any]:
    found = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(t0),
        "endTimeUnixNano": str(t1),
        "attributes": [_a(k, v) for k, v in attrs.items()],
        "status": {},
    }
    if parent:
        found["parentSpanId"] = parent
    return found


def turn_spans(session: int, turn: int, start: int) -> list[dict[str, Any]]:
    """One turn of one session: its 5 spans (the root last, as exporters emit it)."""
    trace = f"{session:016x}{turn:016x}"
    ids = [f"{session:08x}{turn:04x}{k:04x}" for k in range(5)]
    sid = f"session-{session}"
    common = {
        "gen_ai.conversation.id": sid,
        "gcp.vertex.agent.invocation_id": f"e-{session}-{turn}",
    }
    user = [
        {"role": "user", "parts": [{"type": "text", "content": f"question {turn} of {session}"}]}
    ]
    call = [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": f"c{turn}", "name": "lookup", "arguments": {"q": turn}}
            ],
        }
    ]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": f"answer {turn}"}]}]
    ms = 1_000_000
    llm = {
        "gen_ai.operation.name": "generate_content",
        "gen_ai.request.model": "gemini-2.5-flash",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        **common,
    }
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": f"c{turn}",
        "gen_ai.tool.call.arguments": json.dumps({"q": turn}),
        "gen_ai.tool.call.result": json.dumps({"rows": ["x" * 100] * 9}),
    }
    return [
        _span(
            trace,
            ids[2],
            ids[1],
            "generate_content gemini-2.5-flash",
            start + ms,
            start + 5 * ms,
            {
                **llm,
                "gen_ai.input.messages": json.dumps(user),
                "gen_ai.output.messages": json.dumps(call),
            },
        ),
        _span(trace, ids[3], ids[1], "execute_tool lookup", start + 6 * ms, start + 9 * ms, tool),
        _span(
            trace,
            ids[4],
            ids[1],
            "generate_content gemini-2.5-flash",
            start + 10 * ms,
            start + 14 * ms,
            {
                **llm,
                "gen_ai.input.messages": json.dumps(user + call),
                "gen_ai.output.messages": json.dumps(answer),
            },
        ),
        _span(
            trace,
            ids[1],
            ids[0],
            "invoke_agent helper",
            start,
            start + 15 * ms,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper", **common},
        ),
        _span(
            trace,
            ids[0],
            None,
            "invoke_workflow",
            start,
            start + 16 * ms,
            {"gen_ai.operation.name": "invoke_workflow", **common},
        ),
    ]


def _all_spans(total: int, sessions: int) -> Iterator[dict[str, Any]]:
    turns = total // SPANS_PER_TURN
    base = 1_790_000_000 * 10**9
    for k in range(turns):  # round robin over the sessions: interleaved
        session, turn = k % sessions, k // sessions
        yield from turn_spans(session, turn, base + k * 20_000_000)


def write_file(path: Path, total: int, sessions: int) -> int:
    resource_attrs = [_a("service.name", "agent-app")]
    written = 0
    with path.open("w", encoding="utf-8") as out:
        batch: list[dict[str, Any]] = []
        for span in _all_spans(total, sessions):
            batch.append(span)
            if len(batch) == LINE:
                written += _line(out, batch, resource_attrs)
        if batch:
            written += _line(out, batch, resource_attrs)
    return written


def _line(out: Any, batch: list[dict[str, Any]], resource_attrs: list[dict[str, Any]]) -> int:
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": resource_attrs},
                "scopeSpans": [{"scope": {"name": "gcp.vertex.agent"}, "spans": batch}],
            }
        ]
    }
    out.write(json.dumps(doc, separators=(",", ":")) + "\n")
    count = len(batch)
    batch.clear()
    return count


def convert(spans: Path, out: Path) -> tuple[float, float, float, int]:
    """``assay traces convert`` in a child: wall seconds, CPU seconds (the child and its
    workers), the peak RSS of the largest of those processes in MB, exit code."""
    code = "import sys; from assay.cli.main import main; main(sys.argv[1:])"
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, "traces", "convert", str(spans), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        print(done.stdout + done.stderr, file=sys.stderr)
    used = usage.ru_utime + usage.ru_stime - cpu
    return wall, used, max(usage.ru_maxrss, before) / 1024, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--keep", type=Path, default=None, help="write the files here")
    parser.add_argument(
        "--reuse", action="store_true", help="with --keep: convert the span file already there"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        spans, out = folder / "spans.jsonl", folder / "traces.json"
        started = time.perf_counter()
        if args.reuse and spans.exists():
            total = sum(1 for _ in _all_spans(args.spans, args.sessions))
        else:
            total = write_file(spans, args.spans, args.sessions)
        size = spans.stat().st_size / 1e6
        print(f"wrote {total:,} spans ({size:,.1f} MB) in {time.perf_counter() - started:.1f} s")
        wall, cpu, rss, code = convert(spans, out)
        if code:
            return 1
        with out.open(encoding="utf-8") as handle:
            converted = json.load(handle)
        turns = sum(len(v) for v in converted.values())
        print(
            f"converted in {wall:.1f} s wall, {cpu:.1f} s CPU; largest process peak RSS "
            f"{rss:,.0f} MB (cpus: {os.cpu_count()}; load average {os.getloadavg()[0]:.1f})"
        )
        print(f"{len(converted):,} sessions, {turns:,} invocations")
        expected_sessions = min(args.sessions, total // SPANS_PER_TURN)
        ok = len(converted) == expected_sessions and turns == total // SPANS_PER_TURN
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
