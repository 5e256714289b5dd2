"""``assay eval --traces`` with OpenTelemetry span files: sessions matched to eval cases by their
case key and scored like any recorded trace; with no eval set, each session a case of its own.

The span files are the committed real ones (tests/fixtures/otel, made by the frameworks' own
tracing code) and spans made here by ADK itself (tests/traces/_producers.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _support import CliRun, RunCli

from tests.traces._producers import run_adk, write_adk

FIXTURES = Path(__file__).parents[1] / "fixtures" / "otel"
CONTENT = FIXTURES / "adk_default_content.jsonl"
NO_CONTENT = FIXTURES / "adk_default_nocontent.jsonl"
CONTENT_SETTING = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"
RUBRIC = {
    "threshold": 0.5,
    "rubrics": [
        {
            "rubric_id": "r1",
            "rubric_content": {"text_property": "The answer states the weather."},
            "type": "FINAL_RESPONSE_QUALITY",
        }
    ],
}
APPROVING_JUDGE = {
    "rules": [
        {
            "match": ".",
            "reply": {
                "verdicts": [{"id": "r1", "property": "", "rationale": "ok", "verdict": "yes"}]
            },
        }
    ]
}


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _config(tmp_path: Path, criteria: dict[str, Any]) -> Path:
    return _write(tmp_path / "cfg.json", {"criteria": criteria})


def _draft(run_cli: RunCli, spans: Path, out: Path) -> Path:
    run = run_cli("traces", "to-evalset", spans, "--out", out)
    assert run.code == 0, run.output
    return out


def _eval(run_cli: RunCli, *args: str | Path) -> CliRun:
    return run_cli("eval", *args, "--no-history", "--no-progress")


def _results(path: Path) -> dict[str, dict[str, Any]]:
    """Each case's final status and its metrics' (status, score), from --output."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sets = data if isinstance(data, list) else [data]
    found: dict[str, dict[str, Any]] = {}
    for result in sets:
        for case in result["eval_case_results"]:
            metrics = {
                row["metric_name"]: (row["eval_status"], row.get("score"))
                for row in case["overall_eval_metric_results"]
            }
            found[case["eval_id"]] = {"status": case["final_eval_status"], "metrics": metrics}
    return found


def _reasons(path: Path) -> dict[str, dict[str, str]]:
    """Each case's reasons by metric ("" for the case's own), from --output."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sets = data if isinstance(data, list) else [data]
    found: dict[str, dict[str, str]] = {}
    for result in sets:
        for case in result["eval_case_results"]:
            notes = case.get("assay") or {}
            reasons = dict(notes.get("metric_reasons") or {})
            reasons[""] = notes.get("reason") or ""
            found[case["eval_id"]] = reasons
    return found


PASSED, NOT_EVALUATED = 1, 3


def test_adk_spans_scored_against_the_draft_made_from_them_pass_the_trajectory_criterion(
    run_cli: RunCli, tmp_path: Path
) -> None:
    spans = write_adk(
        run_adk(capture="SPAN_ONLY", session_ids=("s1", "s2")), tmp_path / "spans.jsonl"
    )
    evalset = _draft(run_cli, spans, tmp_path / "draft.evalset.json")
    config = _config(tmp_path, {"tool_trajectory_avg_score": 1.0})
    out = tmp_path / "out.json"

    run = _eval(run_cli, evalset, "--traces", spans, "--config", config, "--output", out)

    assert run.code == 0, run.output
    found = _results(out)
    assert set(found) == {"s1", "s2"}
    for case in found.values():
        assert case["metrics"]["tool_trajectory_avg_score"] == (PASSED, 1.0)


def test_a_span_file_scores_the_same_as_the_adk_json_convert_makes_of_it(
    run_cli: RunCli, tmp_path: Path
) -> None:
    evalset = _draft(run_cli, CONTENT, tmp_path / "draft.evalset.json")
    converted = tmp_path / "traces.json"
    assert run_cli("traces", "convert", CONTENT, "--out", converted).code == 0
    config = _config(tmp_path, {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5})
    from_spans, from_json = tmp_path / "spans.out.json", tmp_path / "json.out.json"

    first = _eval(run_cli, evalset, "--traces", CONTENT, "--config", config, "--output", from_spans)
    second = _eval(
        run_cli, evalset, "--traces", converted, "--config", config, "--output", from_json
    )

    assert (first.code, second.code) == (0, 0), first.output + second.output
    assert _results(from_spans) == _results(from_json)
    assert set(_results(from_spans)) == {"adk-s1", "adk-s2"}


def test_a_case_without_a_session_is_not_evaluated_and_a_session_without_a_case_is_listed(
    run_cli: RunCli, tmp_path: Path
) -> None:
    draft = json.loads(_draft(run_cli, CONTENT, tmp_path / "d.json").read_text(encoding="utf-8"))
    draft["eval_cases"][1]["eval_id"] = "not-in-the-spans"
    evalset = _write(tmp_path / "mixed.evalset.json", draft)
    config = _config(tmp_path, {"tool_trajectory_avg_score": 1.0})
    out = tmp_path / "out.json"

    run = _eval(run_cli, evalset, "--traces", CONTENT, "--config", config, "--output", out)

    assert run.code == 1
    assert _results(out)["adk-s1"]["status"] == PASSED
    assert _results(out)["not-in-the-spans"]["status"] == NOT_EVALUATED
    assert _reasons(out)["not-in-the-spans"][""] == f"no trace for this case in {CONTENT}"
    assert "1 session(s) in the span files match no eval case (not scored): adk-s2" in run.out
    assert "--trace-case-key" in run.out


def test_spans_without_content_leave_content_criteria_not_evaluated_naming_the_setting(
    run_cli: RunCli, tmp_path: Path
) -> None:
    # the eval set drafted from spans with content; the spans scored carry none (no tool
    # arguments either: the trajectory compares the tool names)
    evalset = _draft(run_cli, CONTENT, tmp_path / "draft.evalset.json")
    trajectory = {"threshold": 1.0, "ignore_args": True}
    config = _config(
        tmp_path, {"tool_trajectory_avg_score": trajectory, "response_match_score": 0.5}
    )
    out = tmp_path / "out.json"

    run = _eval(run_cli, evalset, "--traces", NO_CONTENT, "--config", config, "--output", out)

    assert run.code == 1  # a metric not evaluated: the run does not count as passed
    for eval_id, case in _results(out).items():
        assert case["metrics"]["tool_trajectory_avg_score"] == (PASSED, 1.0), eval_id
        assert case["metrics"]["response_match_score"][0] == NOT_EVALUATED
        assert CONTENT_SETTING in _reasons(out)[eval_id]["response_match_score"]


def test_a_trajectory_comparing_arguments_is_not_failed_on_spans_that_carry_none(
    run_cli: RunCli, tmp_path: Path
) -> None:
    # the calls were made, but the spans (no content) do not say with which arguments: a
    # FAILED would say they were not made
    evalset = _draft(run_cli, CONTENT, tmp_path / "draft.evalset.json")
    config = _config(tmp_path, {"tool_trajectory_avg_score": 1.0})
    out = tmp_path / "out.json"

    run = _eval(run_cli, evalset, "--traces", NO_CONTENT, "--config", config, "--output", out)

    assert run.code == 1
    for eval_id, case in _results(out).items():
        assert case["metrics"]["tool_trajectory_avg_score"][0] == NOT_EVALUATED, eval_id
        reason = _reasons(out)[eval_id]["tool_trajectory_avg_score"]
        assert CONTENT_SETTING in reason
        assert "set ignore_args in this criterion to compare the tool names alone" in reason


def test_a_session_whose_spans_never_ended_makes_its_case_not_evaluated_with_the_problem(
    run_cli: RunCli, tmp_path: Path
) -> None:
    evalset = _draft(run_cli, CONTENT, tmp_path / "draft.evalset.json")
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(_without_roots_of(CONTENT, "adk-s2")), encoding="utf-8")
    config = _config(tmp_path, {"tool_trajectory_avg_score": 1.0})
    out = tmp_path / "out.json"

    run = _eval(run_cli, evalset, "--traces", cut, "--config", config, "--output", out)

    assert run.code == 1, run.output
    assert _results(out)["adk-s1"]["status"] == PASSED
    assert _results(out)["adk-s2"]["status"] == NOT_EVALUATED
    reason = _reasons(out)["adk-s2"][""]
    assert reason.startswith("the session's spans cannot be scored: trace ")
    assert "never ended" in reason


def _without_roots_of(path: Path, conversation: str) -> list[str]:
    """The OTLP/JSON lines of ``path`` without the root spans of one conversation."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        document = json.loads(line)
        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                scope["spans"] = [s for s in scope["spans"] if not _root_of(s, conversation)]
        lines.append(json.dumps(document) + "\n")
    return lines


def _root_of(span: dict[str, Any], conversation: str) -> bool:
    values = {a["key"]: a["value"].get("stringValue") for a in span.get("attributes", [])}
    return not span.get("parentSpanId") and values.get("gen_ai.conversation.id") == conversation


def test_without_an_eval_set_each_session_is_a_case_judged_on_reference_free_criteria(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = _config(
        tmp_path,
        {"rubric_based_final_response_quality_v1": RUBRIC, "tool_trajectory_avg_score": 1.0},
    )
    judge = _write(tmp_path / "judge.json", APPROVING_JUDGE)
    out = tmp_path / "out.json"

    run = _eval(
        run_cli,
        "--traces",
        CONTENT,
        "--config",
        config,
        "--judge-model",
        f"scripted:{judge}",
        "--no-cache",
        "--output",
        out,
    )

    assert run.code == 0, run.output
    found = _results(out)
    assert set(found) == {"adk-s1", "adk-s2"}
    for eval_id, case in found.items():
        assert case["metrics"]["rubric_based_final_response_quality_v1"] == (PASSED, 1.0)
        assert case["metrics"]["tool_trajectory_avg_score"][0] == NOT_EVALUATED
        why = _reasons(out)[eval_id]["tool_trajectory_avg_score"]
        assert why.startswith("needs an eval set: expected invocations")


def test_without_an_eval_set_a_config_of_criteria_that_need_one_is_refused(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = _config(tmp_path, {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5})

    run = _eval(run_cli, "--traces", CONTENT, "--config", config)

    assert run.code == 2
    assert "every criterion needs an eval set (expected invocations): " in run.err
    assert "tool_trajectory_avg_score, response_match_score" in run.err
    assert "Traceback" not in run.output


def _scored_sessions(run_cli: RunCli, tmp_path: Path, spans: Path, *options: str) -> list[str]:
    config = _config(tmp_path, {"rubric_based_final_response_quality_v1": RUBRIC})
    judge = _write(tmp_path / "judge.json", APPROVING_JUDGE)
    out = tmp_path / "out.json"
    run = _eval(
        run_cli,
        "--traces",
        spans,
        "--config",
        config,
        "--judge-model",
        f"scripted:{judge}",
        "--output",
        out,
        *options,
    )
    assert run.code == 0, run.output
    return sorted(_results(out))


@pytest.fixture(scope="module")
def many_sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real ADK spans of twelve sessions."""
    ids = tuple(f"session-{n:02d}" for n in range(12))
    folder = tmp_path_factory.mktemp("many")
    return write_adk(run_adk(capture="SPAN_ONLY", session_ids=ids), folder / "spans.jsonl")


def test_sample_scores_the_same_share_of_sessions_on_every_run(
    run_cli: RunCli, tmp_path: Path, many_sessions: Path
) -> None:
    first = _scored_sessions(run_cli, tmp_path, many_sessions, "--sample", "0.5")
    again = _scored_sessions(run_cli, tmp_path, many_sessions, "--sample", "0.5")
    every = _scored_sessions(run_cli, tmp_path, many_sessions, "--sample", "1")

    assert first == again
    assert 0 < len(first) < 12
    assert len(every) == 12
    assert set(first) < set(every)


def test_trace_filter_scores_only_the_sessions_whose_root_attributes_match(
    run_cli: RunCli, tmp_path: Path, many_sessions: Path
) -> None:
    filters = (
        "--trace-filter",
        "gen_ai.conversation.id=session-03",
        "--trace-filter",
        "gen_ai.operation.name=invoke_workflow",
    )
    first = _scored_sessions(run_cli, tmp_path, many_sessions, *filters)
    again = _scored_sessions(run_cli, tmp_path, many_sessions, *filters)

    assert first == again == ["session-03"]


def test_a_trace_filter_without_equals_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    run = _eval(run_cli, "--traces", CONTENT, "--trace-filter", "gen_ai.conversation.id")

    assert run.code == 2
    assert "expected ATTR=VALUE" in run.err


def test_a_malformed_span_file_is_exit_2_naming_the_file_and_the_span(
    run_cli: RunCli, tmp_path: Path
) -> None:
    evalset = _draft(run_cli, CONTENT, tmp_path / "draft.evalset.json")
    lines = CONTENT.read_text(encoding="utf-8").splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2], encoding="utf-8")
    last = json.loads(lines[2])["resourceSpans"][-1]["scopeSpans"][-1]["spans"][-1]["spanId"]

    run = _eval(run_cli, evalset, "--traces", broken)

    assert run.code == 2
    assert f"{broken}: line 4: " in run.err
    assert f"(after span {last})" in run.err
    assert "Traceback" not in run.output


def test_span_files_scored_on_ray_keep_the_sessions_notes_and_problems(
    run_cli: RunCli, tmp_path: Path
) -> None:
    evalset = _draft(run_cli, CONTENT, tmp_path / "draft.evalset.json")
    spans = tmp_path / "cut.jsonl"  # adk-s2 never ended; no content on the spans
    spans.write_text("".join(_without_roots_of(NO_CONTENT, "adk-s2")), encoding="utf-8")
    trajectory = {"threshold": 1.0, "ignore_args": True}
    config = _config(
        tmp_path, {"tool_trajectory_avg_score": trajectory, "response_match_score": 0.5}
    )
    local, on_ray = tmp_path / "local.json", tmp_path / "ray.json"
    args = (evalset, "--traces", spans, "--config", config)

    first = _eval(run_cli, *args, "--output", local)
    second = _eval(run_cli, *args, "--output", on_ray, "--executor", "ray")

    assert first.code == second.code == 1, second.output
    assert _results(on_ray) == _results(local)
    assert _reasons(on_ray) == _reasons(local)
    assert "never ended" in _reasons(on_ray)["adk-s2"][""]
    assert CONTENT_SETTING in _reasons(on_ray)["adk-s1"]["response_match_score"]


def test_a_run_of_sessions_without_an_eval_set_is_recorded_and_resumed_without_judging_again(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = _config(tmp_path, {"rubric_based_final_response_quality_v1": RUBRIC})
    judge = _write(tmp_path / "judge.json", APPROVING_JUDGE)
    history = tmp_path / "runs.sqlite"
    given = ("eval", "--traces", CONTENT, "--config", config, "--judge-model",
             f"scripted:{judge}", "--no-cache", "--no-progress", "--history-file", history)  # fmt: skip

    first = run_cli(*given)
    disapproving = json.dumps(APPROVING_JUDGE).replace('"verdict": "yes"', '"verdict": "no"')
    judge.write_text(disapproving, encoding="utf-8")  # a judge asked again would fail them
    resumed = run_cli(*given, "--resume", "latest", "--output", tmp_path / "out.json")

    assert first.code == 0, first.output
    assert resumed.code == 0, resumed.output
    found = _results(tmp_path / "out.json")
    assert set(found) == {"adk-s1", "adk-s2"}
    kept = [case["metrics"]["rubric_based_final_response_quality_v1"] for case in found.values()]
    assert kept == [(1, 1.0), (1, 1.0)]  # PASSED as first judged: the judge was not asked again
