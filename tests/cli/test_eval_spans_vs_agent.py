"""An ADK agent's real spans score as the same conversations run with ``--agent ... --save-traces``.

The agent is ADK's own ``LlmAgent`` with the scripted weather model and tools of
tests/traces/_adk_producer.py (parallel tool calls, a tool that raises, a ~10 KB result), run by
``assay eval EVALSET --agent FILE.py:root_agent --save-traces saved.json`` while ADK's own
telemetry code sends its spans through the real OpenTelemetry SDK (the global tracer provider,
captured in memory, written as the collector's file exporter writes OTLP/JSON). Then
``assay eval EVALSET --traces spans.jsonl`` and ``assay eval EVALSET --traces saved.json`` must
give each case the same scores on the deterministic criteria: ``tool_trajectory_avg_score``,
``response_match_score``, and ADK's efficiency counts ``tool_call_count_v1``,
``inference_call_count_v1`` and ``token_usage_v1``. Each case's session id is its eval id
(``session_input.session_id``), so the spans' ``gen_ai.conversation.id`` names the case. Both
of ADK's telemetry schemas: the default one (content on spans with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``) and the legacy one
(``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``).

Excluded: ``invocation_duration_v1``. The spans time a turn by its root span's wall clock and
split it into model / tool / framework seconds from the span tree, while ``--agent`` times the turn
around ADK's runner from assay's side and splits it from the events; the two clocks never give
the same seconds, only close ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _support import CliRun, RunCli

from tests.traces._adk_producer import APP_NAME, CAPTURE_ENV, SCHEMA_ENV, TURNS, USER_ID
from tests.traces._otlp import batches_by_end, environment, global_capture, otlp_lines, write_lines

CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}
DETERMINISTIC = (
    *CRITERIA,
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
)
PARIS = "Paris is sunny at 21°C; report q3 says revenue grew."
AGENT_MODULE = "from tests.traces._adk_producer import build_agent\n\nroot_agent = build_agent()\n"


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _turn(
    user: str, answer: str, tools: list[tuple[str, dict[str, Any]]], turn: str
) -> dict[str, Any]:
    return {
        "invocation_id": turn,
        "user_content": _text("user", user),
        "final_response": _text("model", answer),
        "intermediate_data": {
            "tool_uses": [{"name": name, "args": args} for name, args in tools],
        },
    }


def _evalset(path: Path) -> Path:
    """Two cases: the two-turn weather conversation (as expected), and the Atlantis question
    alone, expected to go otherwise (another tool argument, another answer): scores below 1."""
    weather = [
        _turn(TURNS[0], PARIS, [("get_weather", {"city": "Paris"}),
                                ("fetch_report", {"report_id": "q3"})], "w1"),
        _turn(TURNS[1], "I could not get the weather in Atlantis: no station there.",
              [("get_weather", {"city": "Atlantis"})], "w2"),
    ]  # fmt: skip
    atlantis = [_turn(TURNS[1], "Atlantis has no weather station, sorry.",
                      [("get_weather", {"city": "Lost Atlantis"})], "a1")]  # fmt: skip
    cases = [
        {
            "eval_id": eval_id,
            "conversation": conversation,
            "session_input": {"app_name": APP_NAME, "user_id": USER_ID, "session_id": eval_id},
        }
        for eval_id, conversation in (("weather", weather), ("atlantis", atlantis))
    ]
    path.write_text(json.dumps({"eval_set_id": "spans-vs-agent", "eval_cases": cases}), "utf-8")
    return path


def _eval(run_cli: RunCli, *args: str | Path) -> CliRun:
    return run_cli("eval", *args, "--no-history", "--no-progress")


def _scores(path: Path) -> dict[str, dict[str, tuple[int, Any]]]:
    """Each case's deterministic metrics as (status, score), and token_usage_v1's details."""
    found: dict[str, dict[str, tuple[int, Any]]] = {}
    for case in json.loads(path.read_text(encoding="utf-8"))["eval_case_results"]:
        rows = {row["metric_name"]: row for row in case["overall_eval_metric_results"]}
        found[case["eval_id"]] = {
            name: (rows[name]["eval_status"], rows[name].get("score")) for name in DETERMINISTIC
        }
        details = (rows["token_usage_v1"].get("details") or {}).get("token_usage_details")
        found[case["eval_id"]]["token_usage_details"] = (0, details)
    return found


@pytest.mark.parametrize("schema", ["default", "legacy"])
def test_adk_spans_of_an_agent_run_score_as_the_traces_the_run_saved(
    run_cli: RunCli, tmp_path: Path, schema: str
) -> None:
    evalset = _evalset(tmp_path / "weather.evalset.json")
    agent = tmp_path / "weather_agent.py"
    agent.write_text(AGENT_MODULE, encoding="utf-8")
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    saved, spans = tmp_path / "saved.json", tmp_path / "spans.jsonl"
    common = ("--config", config)
    outs = {name: tmp_path / f"{name}.out.json" for name in ("agent", "spans", "saved")}

    settings = {SCHEMA_ENV: "1" if schema == "legacy" else None, CAPTURE_ENV: "SPAN_ONLY"}
    with environment(settings), global_capture() as exporter:
        ran = _eval(run_cli, evalset, *common, "--agent", f"{agent}:root_agent",
                    "--save-traces", saved, "--output", outs["agent"])  # fmt: skip
        captured = list(exporter.get_finished_spans())
    write_lines(spans, otlp_lines(batches_by_end(captured, 4)))
    from_spans = _eval(run_cli, evalset, *common, "--traces", spans, "--output", outs["spans"])
    from_saved = _eval(run_cli, evalset, *common, "--traces", saved, "--output", outs["saved"])

    assert ran.code == from_spans.code == from_saved.code == 1, from_spans.output
    by_spans, by_saved = _scores(outs["spans"]), _scores(outs["saved"])
    assert set(by_spans) == {"weather", "atlantis"}
    assert by_spans == by_saved
    assert by_saved == _scores(outs["agent"])
    assert by_spans["weather"]["tool_trajectory_avg_score"] == (1, 1.0)
    assert by_spans["atlantis"]["tool_trajectory_avg_score"] == (2, 0.0)
    assert by_spans["weather"]["tool_call_count_v1"][1] == 1.5  # 2 + 1 calls over 2 turns
    assert 0 < by_spans["atlantis"]["response_match_score"][1] < 1
