"""Real framework spans into ``assay receive``: an ADK agent's spans, made by ADK's own tracing
code through the OpenTelemetry SDK, sent by the real OTLP/HTTP exporter (protobuf, gzip) and as
OTLP/JSON (gzip), are scored and recorded as one session of two invocations."""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from assay.history.store import HistoryStore
from assay.metrics.base import EvalStatus
from assay.results.model import EvalCaseResult
from tests.traces._producers import AdkRun, batches_by_end, otlp_lines, run_adk

from ._live import forget_module, start_receiver, wait_for, write_config

SESSION = "adk-live-1"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    name = f"real_metrics_{uuid.uuid4().hex[:8]}"
    monkeypatch.syspath_prepend(str(tmp_path))
    yield write_config(tmp_path, name)
    forget_module(name)


@pytest.fixture(scope="module")
def adk_runs() -> dict[str, AdkRun]:
    """The two-turn ADK session, in each telemetry schema, message content on the spans."""
    return {
        "default": run_adk("default", capture="SPAN_ONLY", session_ids=(SESSION,)),
        "legacy": run_adk("legacy", session_ids=(SESSION,)),
    }


def _recorded(history: Path) -> list[EvalCaseResult]:
    with HistoryStore(history) as store:
        [info] = store.runs()
        return [case for result in store.results(info.id) for case in result.eval_case_results]


def _assert_scored_session(history: Path) -> None:
    """One case, the ADK session: two invocations; 'sunny' scored on each (turn one's answer
    says sunny, turn two's does not), the trajectory NOT_EVALUATED for want of an eval set."""
    [case] = _recorded(history)
    assert case.eval_id == SESSION
    metrics = {m.metric_name: m for m in case.overall_eval_metric_results}
    assert metrics["sunny"].score == 0.5
    assert metrics["sunny"].eval_status == EvalStatus.PASSED
    assert metrics["tool_trajectory_avg_score"].eval_status == EvalStatus.NOT_EVALUATED
    per_invocation = [
        [m.score for m in inv.eval_metric_results if m.metric_name == "sunny"]
        for inv in case.eval_metric_result_per_invocation
    ]
    assert per_invocation == [[1.0], [0.0]]
    assert case.final_eval_status == EvalStatus.PASSED


@pytest.mark.parametrize("schema", ["default", "legacy"])
def test_adk_spans_sent_by_the_otlp_exporter_with_gzip_are_scored_and_recorded(
    tmp_path: Path, config: Path, adk_runs: dict[str, AdkRun], schema: str
) -> None:
    history = tmp_path / "runs.sqlite"
    receiver = start_receiver(history, config)
    exporter = OTLPSpanExporter(
        endpoint=f"http://127.0.0.1:{receiver.port}/v1/traces", compression=Compression.Gzip
    )
    try:  # in the batches a BatchSpanProcessor makes: as the spans ended, a few at a time
        for batch in batches_by_end(adk_runs[schema].spans, 4):
            assert exporter.export(batch).name == "SUCCESS"
        wait_for(lambda: receiver.run.cases == 1, "the ADK session scored")
    finally:
        exporter.shutdown()
        receiver.stop()

    _assert_scored_session(history)
    assert receiver.requests == {200: len(batches_by_end(adk_runs[schema].spans, 4))}


def test_adk_spans_sent_as_gzipped_otlp_json_are_scored_and_recorded(
    tmp_path: Path, config: Path, adk_runs: dict[str, AdkRun]
) -> None:
    history = tmp_path / "runs.sqlite"
    receiver = start_receiver(history, config)
    url = f"http://127.0.0.1:{receiver.port}/v1/traces"
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    try:
        answers = [
            httpx.post(url, content=gzip.compress(line.encode()), headers=headers)
            for line in otlp_lines(batches_by_end(adk_runs["default"].spans, 4))
        ]
        wait_for(lambda: receiver.run.cases == 1, "the ADK session scored")
    finally:
        receiver.stop()

    assert {(a.status_code, a.headers["Content-Type"], a.text) for a in answers} == {
        (200, "application/json", "{}")
    }
    _assert_scored_session(history)
