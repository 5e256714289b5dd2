"""``assay receive``: spans sent by the real OTLP/HTTP exporter are scored when their session
ends, recorded in one long-lived run, and exported back as ``gen_ai.evaluation.result`` events."""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support import RunCli
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from assay.history.store import HistoryStore
from assay.metrics.base import EvalStatus
from assay.receive.buffer import Limits

from ._live import (
    LogsServer,
    exporter_to,
    forget_module,
    send_conversation,
    start_receiver,
    wait_for,
    write_config,
)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    name = f"receive_metrics_{uuid.uuid4().hex[:8]}"
    monkeypatch.syspath_prepend(str(tmp_path))
    yield write_config(tmp_path, name)
    forget_module(name)


def _cases(history: Path) -> list[tuple[str, int, dict[str, int]]]:
    with HistoryStore(history) as store:
        [info] = store.runs()
        results = store.results(info.id)
    return [
        (case.eval_id, int(case.final_eval_status),
         {m.metric_name: int(m.eval_status) for m in case.overall_eval_metric_results})
        for result in results for case in result.eval_case_results
    ]  # fmt: skip


def test_a_session_sent_by_the_otlp_exporter_is_scored_and_recorded_when_its_root_ends(
    tmp_path: Path, config: Path, run_cli: RunCli
) -> None:
    history = tmp_path / "runs.sqlite"
    receiver = start_receiver(history, config)
    try:
        send_conversation(exporter_to(receiver.port), "It is sunny in Paris.")
        send_conversation(exporter_to(receiver.port), "No idea.")
        wait_for(lambda: receiver.run.cases == 2, "two sessions scored")
    finally:
        receiver.stop()

    passed, failed = int(EvalStatus.PASSED), int(EvalStatus.FAILED)
    needs = int(EvalStatus.NOT_EVALUATED)  # the trajectory needs expected invocations
    found = sorted(
        (metrics["sunny"], metrics["tool_trajectory_avg_score"], status)
        for _id, status, metrics in _cases(history)
    )
    # the trajectory is not applicable to a session (no eval set), as in `assay eval --traces
    # SPANS` without one: the case is decided by the criteria that apply
    assert found == [(passed, needs, passed), (failed, needs, failed)]
    shown = run_cli("show", "latest", "--history-file", history)
    assert shown.code in (0, 1), shown.output
    assert "1 passed, 1 failed" in shown.out


def test_a_restart_neither_loses_an_open_session_nor_scores_one_twice(
    tmp_path: Path, config: Path
) -> None:
    history = tmp_path / "runs.sqlite"
    sent = InMemorySpanExporter()
    receiver = start_receiver(history, config, limits=Limits(settle_s=0.2))
    send_conversation(exporter_to(receiver.port), "sunny", conversation="conv-1", keep=sent)
    wait_for(lambda: receiver.run.cases == 1, "the first session scored")
    receiver.stop()
    waiting = start_receiver(history, config, limits=Limits(settle_s=3600))
    send_conversation(exporter_to(waiting.port), "sunny", conversation="conv-2")
    wait_for(lambda: waiting.buffer.open_sessions == 1, "conv-2 received")
    waiting.stop()  # conv-2 still open: kept in the buffer's file

    again = start_receiver(history, config, limits=Limits(settle_s=0.2))
    try:
        exporter = exporter_to(again.port)
        assert exporter.export(sent.get_finished_spans()).name == "SUCCESS"
        exporter.shutdown()  # its HTTP session's socket closed here, not by a later test's GC
        wait_for(lambda: again.run.cases == 1, "conv-2 scored after the restart")
        wait_for(lambda: again.buffer.open_sessions == 0, "conv-1's re-sent spans dropped")
    finally:
        again.stop()

    with HistoryStore(history) as store:
        assert len(store.runs()) == 1
    assert sorted(case[0] for case in _cases(history)) == ["conv-1", "conv-2"]


def test_bad_requests_are_answered_401_400_413_and_the_receiver_goes_on(
    tmp_path: Path, config: Path
) -> None:
    history = tmp_path / "runs.sqlite"
    receiver = start_receiver(history, config, key="s3cret", max_body=64 * 1024)
    url = f"http://127.0.0.1:{receiver.port}/v1/traces"
    proto = {"Content-Type": "application/x-protobuf"}
    try:
        unauthenticated = httpx.post(url, content=b"", headers=proto)
        wrong = httpx.post(url, content=b"", headers={**proto, "Authorization": "Bearer nope"})
        malformed = httpx.post(
            url, content=b"\xff\x00garbage", headers={**proto, "x-api-key": "s3cret"}
        )
        oversized = httpx.post(
            url, content=b"\0" * (65 * 1024), headers={**proto, "x-api-key": "s3cret"}
        )
        bomb = httpx.post(url, content=gzip.compress(b"\0" * (10 * 1024 * 1024)),
                          headers={**proto, "x-api-key": "s3cret", "Content-Encoding": "gzip"})  # fmt: skip
        send_conversation(exporter_to(receiver.port, {"Authorization": "Bearer s3cret"}), "sunny")
        wait_for(lambda: receiver.run.cases == 1, "the good session scored after the bad ones")
    finally:
        receiver.stop()

    codes = [r.status_code for r in (unauthenticated, wrong, malformed, oversized, bomb)]
    assert codes == [401, 401, 400, 413, 413]
    assert "s3cret" not in malformed.text


def test_binding_a_non_loopback_address_without_a_key_is_refused_with_exit_2(
    run_cli: RunCli, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_RECEIVE_KEY", raising=False)

    refused = run_cli("receive", "--config", config, "--host", "0.0.0.0", "--port", "0")

    assert refused.code == 2
    assert "needs --key" in refused.output


def test_verdicts_go_out_as_evaluation_events_parented_to_the_sessions_root_span(
    tmp_path: Path, config: Path
) -> None:
    logs = LogsServer(fail_first=1)  # a 503 first: retried
    receiver = start_receiver(tmp_path / "runs.sqlite", config, export_to=logs.url)
    try:
        trace_id, span_id = send_conversation(exporter_to(receiver.port), "sunny")
        wait_for(lambda: len(logs.records()) >= 2, "the verdicts exported")
    finally:
        receiver.stop()
        logs.close()

    by_metric = {r["gen_ai.evaluation.name"]: r for r in logs.records()}
    sunny, trajectory = by_metric["sunny"], by_metric["tool_trajectory_avg_score"]
    assert (sunny["event_name"], sunny["trace_id"], sunny["span_id"]) == (
        "gen_ai.evaluation.result", trace_id, span_id,
    )  # fmt: skip
    assert (sunny["gen_ai.evaluation.score.value"], sunny["gen_ai.evaluation.score.label"]) == (
        1.0, "pass",
    )  # fmt: skip
    assert trajectory["gen_ai.evaluation.score.label"] == "not_evaluated"
    assert trajectory["error.type"] == "not_evaluated"
    assert "needs an eval set" in trajectory["gen_ai.evaluation.explanation"]


def test_a_crash_after_recording_but_before_forgetting_the_spans_scores_no_session_twice(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = tmp_path / "runs.sqlite"
    receiver = start_receiver(history, config, limits=Limits(settle_s=0.2))
    forgetting = receiver.buffer.done_many
    crashed: list[int] = []

    def crash_once(closed: Any, now: float) -> None:
        if closed and not crashed:  # the case is in the history; its spans are not forgotten
            crashed.append(len(closed))
            receiver._stopping.set()  # and the scorer goes no further, as in a crash
            return
        forgetting(closed, now)

    monkeypatch.setattr(receiver.buffer, "done_many", crash_once)
    send_conversation(exporter_to(receiver.port), "sunny", conversation="conv-1")
    wait_for(lambda: receiver.run.cases == 1 and bool(crashed), "conv-1 recorded", tries=1200)
    receiver.stop()  # what a crash leaves: the case recorded, the spans still buffered

    again = start_receiver(history, config, limits=Limits(settle_s=0.2))
    try:
        wait_for(lambda: again.buffer.open_sessions == 0, "conv-1's spans forgotten")
    finally:
        again.stop()

    assert again.run.cases == 0  # not scored again
    assert [case[0] for case in _cases(history)] == ["conv-1"]  # no conv-1#2
