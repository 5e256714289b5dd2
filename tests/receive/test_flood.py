"""A flood of sessions and spans: the receiver stays up, the sessions over a cap are
NOT_EVALUATED saying so, and its buffer file never holds more than its bound."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from assay.history.store import HistoryStore
from assay.metrics.base import EvalStatus
from assay.receive.buffer import Limits, SpanBuffer
from assay.receive.decode import request_spans
from assay.receive.server import Receiver

from ._live import (
    exporter_to,
    forget_module,
    send_conversation,
    start_receiver,
    wait_for,
    write_config,
)

SESSIONS, SPANS = 3, 5
"""The caps of these tests: 3 sessions open, 5 spans a session."""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    name = f"flood_metrics_{uuid.uuid4().hex[:8]}"
    monkeypatch.syspath_prepend(str(tmp_path))
    yield write_config(tmp_path, name)
    forget_module(name)


def _request(sessions: dict[str, int]) -> bytes:
    """One OTLP request: for each conversation, a trace of that many child spans (no root span
    yet, so the session stays open)."""
    request = ExportTraceServiceRequest()
    scoped = request.resource_spans.add().scope_spans.add()
    for conversation, count in sessions.items():
        trace_id = uuid.uuid5(uuid.NAMESPACE_URL, conversation).bytes
        for n in range(count):
            span = scoped.spans.add(
                trace_id=trace_id, span_id=(n + 1).to_bytes(8, "big"), parent_span_id=b"\0" * 7 + b"\xff",
                name="chat m", start_time_unix_nano=1_000 + n, end_time_unix_nano=2_000 + n,
            )  # fmt: skip
            span.attributes.extend([
                KeyValue(key="gen_ai.conversation.id", value=AnyValue(string_value=conversation)),
                KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="chat")),
            ])  # fmt: skip
    return request.SerializeToString()


def _post(receiver: Receiver, sessions: dict[str, int]) -> ExportTraceServiceResponse:
    answer = httpx.post(
        f"http://127.0.0.1:{receiver.port}/v1/traces",
        content=_request(sessions),
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert answer.status_code == 200, answer.text
    parsed = ExportTraceServiceResponse()
    parsed.ParseFromString(answer.content)
    return parsed


def _held(buffer_file: Path) -> tuple[int, int]:
    """Sessions and spans in the buffer file, counted from its rows."""
    with sqlite3.connect(buffer_file) as db:
        sessions, spans = db.execute(
            "SELECT COUNT(DISTINCT COALESCE(session, trace_id)), COALESCE(SUM(spans), 0) FROM traces"
        ).fetchone()
    return int(sessions), int(spans)


def _reasons(history: Path) -> dict[str, tuple[int, str]]:
    with HistoryStore(history) as store:
        [info] = store.runs()
        results = store.results(info.id)
    return {
        case.eval_id: (int(case.final_eval_status), case.assay.reason or "")
        for result in results
        for case in result.eval_case_results
    }


def test_a_flood_of_sessions_and_spans_is_capped_and_the_capped_sessions_say_why(
    tmp_path: Path, config: Path
) -> None:
    history = tmp_path / "runs.sqlite"
    limits = Limits(idle_timeout_s=3600, settle_s=3600, max_spans=SPANS, max_sessions=SESSIONS)
    receiver = start_receiver(history, config, limits=limits)
    buffer_file = history.with_name(history.name + ".receive")
    bound = (2 * SESSIONS, 2 * SESSIONS * SPANS)
    held = []
    try:
        big = _post(receiver, {"big": 3 * SPANS})
        held.append(_held(buffer_file))
        # one request opening ten sessions: big and the two first are closed early to make room;
        # as many waiting to be scored as may be open, the spans of the rest are refused
        flood = _post(receiver, {f"s{n}": 2 for n in range(1, 11)})
        held.append(_held(buffer_file))
        wait_for(lambda: receiver.run.cases == 3, "the sessions closed early scored")
        wait_for(lambda: receiver.buffer.open_sessions == 3, "their spans forgotten")
        again = _post(receiver, {f"s{n}": 2 for n in range(6, 11)})  # sent again, later
        held.append(_held(buffer_file))
        wait_for(lambda: receiver.run.cases == 6, "three more closed early and scored")
        wait_for(lambda: receiver.buffer.open_sessions == 3, "s6, s7, s8 open")
        # still up and scoring: an ordinary session (which closes s6 early to make room)
        send_conversation(exporter_to(receiver.port), "It is sunny.")
        wait_for(lambda: receiver.run.cases == 8, "an ordinary session scored after the flood")
        held.append(_held(buffer_file))
    finally:
        receiver.stop()

    assert big.partial_success.rejected_spans == 0
    assert flood.partial_success.rejected_spans == 5 * 2  # s6..s10
    assert "6 sessions wait to be scored" in flood.partial_success.error_message
    assert again.partial_success.rejected_spans == 2 * 2  # s9, s10: s3..s5 wait again
    assert all(s <= bound[0] and n <= bound[1] for s, n in held), held
    assert held[0] == (1, SPANS)  # the 15 spans of big cut to 5
    reasons = _reasons(history)
    not_evaluated = int(EvalStatus.NOT_EVALUATED)
    early = "closed early: more than 3 sessions were open at once"
    capped = {"big", "s1", "s2", "s3", "s4", "s5", "s6"}
    for key in capped:
        assert reasons[key][0] == not_evaluated and early in reasons[key][1], (key, reasons[key])
    assert "more than 5 spans in the session: the rest were dropped" in reasons["big"][1]
    [ordinary] = set(reasons) - capped
    assert reasons[ordinary][0] == int(EvalStatus.PASSED)
    assert receiver.buffer.dropped == 2 * SPANS
    assert receiver.buffer.rejected == 14


def test_ended_sessions_waiting_to_be_scored_are_not_closed_early_and_fill_the_buffer(
    tmp_path: Path,
) -> None:
    """Sessions whose root has come wait for the scorer without a problem; when the buffer holds
    twice the open cap it is full (the server answers 503) and refuses new sessions."""
    buffer = SpanBuffer(tmp_path / "b.receive", Limits(max_sessions=2, max_spans=SPANS))
    ended = ExportTraceServiceRequest()
    ended.ParseFromString(_request({f"e{n}": 1 for n in range(4)}))
    for span in ended.resource_spans[0].scope_spans[0].spans:
        span.parent_span_id = b""  # each a root: four whole sessions

    refused = buffer.add(request_spans(ended.SerializeToString(), "proto", "test"), now=1.0)
    more = buffer.add(request_spans(_request({"late": 2}), "proto", "test"), now=2.0)

    assert (refused, more, buffer.full) == (0, 2, True)
    assert sorted(buffer.due(now=10.0)) == ["e0", "e1", "e2", "e3"]
    assert all(buffer.take(key).problem is None for key in buffer.due(now=10.0))
    buffer.close()
