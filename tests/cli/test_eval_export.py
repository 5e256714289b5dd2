"""``assay eval --export-verdicts URL``: each verdict out as an OpenTelemetry
``gen_ai.evaluation.result`` event (OTLP/HTTP logs), about the root span of the session its case
was scored from, received here by a tiny OTLP logs server on 127.0.0.1.

The spans are the committed real ADK ones (tests/fixtures/otel/adk_default_content.jsonl: two
sessions, ``adk-s1`` and ``adk-s2``, each two traces, one per user turn).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import CliRun, RunCli

from assay.report.otel_events import otlp_headers
from tests.receive._live import LogsServer

FIXTURES = Path(__file__).parents[1] / "fixtures" / "otel"
CONTENT = FIXTURES / "adk_default_content.jsonl"
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}
LABELS = {1: "pass", 2: "fail", 3: "not_evaluated", 4: "informational"}


@pytest.fixture
def logs() -> Iterator[LogsServer]:
    server = LogsServer()
    yield server
    server.close()


@pytest.fixture
def evalset(run_cli: RunCli, tmp_path: Path) -> Path:
    """The eval set drafted from the spans (expected = what happened)."""
    out = tmp_path / "draft.evalset.json"
    run = run_cli("traces", "to-evalset", CONTENT, "--out", out)
    assert run.code == 0, run.output
    return out


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    return path


def _eval(run_cli: RunCli, *args: str | Path) -> CliRun:
    return run_cli("eval", *args, "--no-history", "--no-progress")


def _metrics(output: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Each (eval id, metric) of --output's results: status label and score."""
    found = {}
    for case in json.loads(output.read_text(encoding="utf-8"))["eval_case_results"]:
        for row in case["overall_eval_metric_results"]:
            label = LABELS[row["eval_status"]]
            found[(case["eval_id"], row["metric_name"])] = {"label": label, "score": row["score"]}
    return found


def _first_roots(path: Path) -> dict[str, tuple[str, str]]:
    """Each conversation's first root span (trace id, span id), read from the OTLP/JSON lines."""
    roots: dict[str, tuple[int, str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: a["value"] for a in span.get("attributes", [])}
                    conversation = attrs.get("gen_ai.conversation.id", {}).get("stringValue")
                    if span.get("parentSpanId") or conversation is None:
                        continue
                    start = int(span["startTimeUnixNano"])
                    if conversation not in roots or start < roots[conversation][0]:
                        roots[conversation] = (start, span["traceId"], span["spanId"])
    return {key: (trace, span) for key, (_start, trace, span) in roots.items()}


def _free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_each_verdict_is_an_evaluation_event_about_the_root_span_of_its_cases_session(
    run_cli: RunCli, tmp_path: Path, logs: LogsServer, evalset: Path, config: Path
) -> None:
    out = tmp_path / "out.json"

    run = _eval(
        run_cli, evalset, "--traces", CONTENT, "--config", config, "--output", out,
        "--export-verdicts", logs.url,
    )  # fmt: skip

    assert run.code == 0, run.output
    expected = _metrics(out)
    assert {name for _case, name in expected} >= set(CRITERIA)
    records = logs.records()
    assert len(records) == len(expected)  # one per case x metric
    roots = _first_roots(CONTENT)
    for record in records:
        key = (record["assay.eval_id"], record["gen_ai.evaluation.name"])
        assert record["event_name"] == "gen_ai.evaluation.result"
        assert record["event.name"] == "gen_ai.evaluation.result"
        assert record["gen_ai.evaluation.score.label"] == expected[key]["label"]
        assert record.get("gen_ai.evaluation.score.value") == expected[key]["score"]
        assert (record["trace_id"], record["span_id"]) == roots[record["assay.eval_id"]]
    assert {(r["assay.eval_id"], r["gen_ai.evaluation.name"]) for r in records} == set(expected)
    assert f"{len(records)} verdict(s) exported to {logs.url}/v1/logs" in run.err


def test_a_not_evaluated_verdict_carries_its_reason_as_the_explanation(
    run_cli: RunCli, tmp_path: Path, logs: LogsServer, evalset: Path, config: Path
) -> None:
    draft = json.loads(evalset.read_text(encoding="utf-8"))
    draft["eval_cases"][1]["eval_id"] = "not-in-the-spans"
    mixed = tmp_path / "mixed.evalset.json"
    mixed.write_text(json.dumps(draft), encoding="utf-8")

    run = _eval(
        run_cli, mixed, "--traces", CONTENT, "--config", config, "--export-verdicts", logs.url
    )

    assert run.code == 1
    missing = [r for r in logs.records() if r["assay.eval_id"] == "not-in-the-spans"]
    assert {r["gen_ai.evaluation.name"] for r in missing} >= set(CRITERIA)
    for record in missing:
        if record["gen_ai.evaluation.name"] in CRITERIA:
            assert record["gen_ai.evaluation.score.label"] == "not_evaluated"
            assert record["error.type"] == "not_evaluated"
            assert "no trace for this case" in record["gen_ai.evaluation.explanation"]
        assert (record["trace_id"], record["span_id"]) == ("", "")  # no session, no span
    assert "without a span" in run.err


def test_verdicts_of_cases_scored_from_adk_traces_are_exported_without_a_parent_span(
    run_cli: RunCli, tmp_path: Path, logs: LogsServer, evalset: Path, config: Path
) -> None:
    converted = tmp_path / "traces.json"
    assert run_cli("traces", "convert", CONTENT, "--out", converted).code == 0

    run = _eval(
        run_cli, evalset, "--traces", converted, "--config", config, "--export-verdicts", logs.url
    )

    assert run.code == 0, run.output
    records = logs.records()
    assert {r["assay.eval_id"] for r in records} == {"adk-s1", "adk-s2"}
    assert {(r["trace_id"], r["span_id"]) for r in records} == {("", "")}
    assert "(2 case(s) without a span)" in run.err


def test_a_logs_server_that_is_down_is_one_warning_and_the_exit_code_is_unchanged(
    run_cli: RunCli, tmp_path: Path, evalset: Path, config: Path
) -> None:
    args = (evalset, "--traces", CONTENT, "--config", config)
    without, with_out = tmp_path / "without.json", tmp_path / "with.json"
    plain = _eval(run_cli, *args, "--output", without)
    down = f"http://127.0.0.1:{_free_port()}"

    run = _eval(run_cli, *args, "--output", with_out, "--export-verdicts", down)

    assert run.code == plain.code == 0
    assert run.err.count("warning:") == 1
    assert f"verdicts not exported to {down}/v1/logs" in run.err
    assert _metrics(with_out) == _metrics(without)
    assert "Traceback" not in run.output


def test_a_key_in_the_url_or_the_otlp_headers_is_never_printed(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, evalset: Path, config: Path
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20header-secret-1")
    down = f"http://user:url-secret-2@127.0.0.1:{_free_port()}/?key=query-secret-3"

    run = _eval(
        run_cli, evalset, "--traces", CONTENT, "--config", config, "--export-verdicts", down
    )

    assert run.code == 0
    assert "verdicts not exported to http://127.0.0.1:" in run.err
    for secret in ("header-secret-1", "url-secret-2", "query-secret-3"):
        assert secret not in run.output


def test_otlp_headers_come_from_the_logs_variable_else_the_general_one() -> None:
    general = {"OTEL_EXPORTER_OTLP_HEADERS": "X-Api-Key=k%3D1, tenant=acme,broken"}
    logs_too = {**general, "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "authorization=Bearer%20t"}

    assert otlp_headers(general) == {"x-api-key": "k=1", "tenant": "acme"}
    assert otlp_headers(logs_too) == {"authorization": "Bearer t"}
    assert otlp_headers({}) == {}


def test_a_url_with_its_key_in_the_query_is_sent_to_its_logs_path_and_shown_without_the_key(
    run_cli: RunCli, logs: LogsServer, evalset: Path, config: Path
) -> None:
    url = f"{logs.url}/?api_key=query-secret-4"

    run = _eval(run_cli, evalset, "--traces", CONTENT, "--config", config, "--export-verdicts", url)

    assert run.code == 0, run.output
    assert {r["assay.eval_id"] for r in logs.records()} == {"adk-s1", "adk-s2"}
    assert f"exported to {logs.url}/v1/logs" in run.err
    assert "query-secret-4" not in run.output
