"""The ``assay`` command line: exit codes, tables, summary, config discovery and input errors."""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _support import CliRun, Example, RunCli

ASSAY = Path(sys.executable).with_name("assay")


def has_row(output: str, metric: str, score: str, threshold: str, status: str) -> bool:
    """Whether the results table has a row ``metric | score | threshold | status``."""
    cells = [re.escape(cell) for cell in (metric, score, threshold, status)]
    return re.search(r"│\s+" + r"\s*│\s*".join(cells) + r"\s*│", output) is not None


def flat(text: str) -> str:
    """Text with all runs of whitespace made one space (rich wraps long lines)."""
    return " ".join(text.split())


def assert_input_error(run: CliRun, *expected: str) -> None:
    """Exit 2, one problem per ``expected`` line (each naming file and JSON path), no traceback."""
    assert run.code == 2, run.output
    assert "Traceback" not in run.output
    assert run.out == ""
    err = flat(run.err)
    assert err.startswith(f"error: {len(expected)} problem(s) in the input")
    assert err.count("•") == len(expected)
    for line in expected:
        assert f"• {line}" in err


def write(path: Path, content: object) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


# --- runs -------------------------------------------------------------------------------------


def test_eval_on_the_example_exits_0_and_prints_the_table_and_summary(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.traces)

    assert run.code == 0, run.output
    assert "5 passed, 0 failed, 0 not evaluated" in run.out
    assert "Case" in run.out and "Threshold" in run.out
    for eval_id in (
        "forecast_paris",
        "book_flight_lisbon",
        "convert_currency",
        "greeting",
        "book_cheapest_and_convert",
    ):
        assert eval_id in run.out
    assert has_row(run.out, "response_match_score", "0.94", "0.60", "PASSED")
    assert f"criteria from {example.config}" in flat(run.out)
    assert "FAILED" not in run.out
    # stderr holds only the progress lines: no warning, no traceback
    assert all(line.startswith("[") for line in run.err.splitlines()), run.err
    assert len(run.err.splitlines()) == 5


def test_eval_on_the_regressed_traces_exits_1_with_failures_and_a_not_evaluated_case(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.regressed)

    assert run.code == 1, run.output
    assert "1 passed, 2 failed, 2 not evaluated" in run.out
    assert has_row(run.out, "tool_trajectory_avg_score", "0.50", "1.00", "FAILED")
    assert has_row(run.out, "response_match_score", "0.30", "0.60", "FAILED")
    assert f"no trace for this case in {example.regressed}" in flat(run.out)


def test_a_set_larger_than_max_cases_is_shown_per_metric_then_its_cases_that_did_not_pass(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.regressed, "--max-cases", "3")

    assert run.code == 1, run.output
    out = flat(run.out)
    assert f"travel_assistant ({example.evalset}): 5 cases" in out  # the table per metric
    assert all(header in run.out for header in ("Passed", "Not evaluated", "Mean score"))
    assert "3 of the 4 cases that did not pass, of 5 (--max-cases 0 lists every case)" in out
    assert "forecast_paris" not in run.out  # the one case that passed is not listed
    assert "1 passed, 2 failed, 2 not evaluated" in run.out


def test_inputs_are_loaded_with_the_collector_paused_and_scored_with_it_back_on(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_module = importlib.import_module("assay.runner.run")  # the eval command's run
    seen: dict[str, bool] = {}
    load_traces, run_jobs = run_module.load_traces, run_module.run_jobs

    def loading(*args: Any, **kwargs: Any) -> Any:
        seen["loading"] = gc.isenabled()
        return load_traces(*args, **kwargs)

    def scoring(*args: Any, **kwargs: Any) -> Any:
        seen["scoring"] = gc.isenabled()
        return run_jobs(*args, **kwargs)

    monkeypatch.setattr(run_module, "load_traces", loading)
    monkeypatch.setattr(run_module, "run_jobs", scoring)
    run = run_cli("eval", example.evalset, "--traces", example.traces)

    assert run.code == 0, run.output
    assert seen == {"loading": False, "scoring": True}
    assert gc.isenabled() and gc.get_freeze_count() == 0  # all unfrozen when the command ends


def test_an_explicit_config_overrides_the_test_config_beside_the_eval_set(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    config = write(tmp_path / "strict.json", {"criteria": {"response_match_score": 0.95}})

    run = run_cli("eval", example.evalset, "--config", config, "--traces", example.traces)

    assert run.code == 1, run.output
    assert f"criteria from {config}: response_match_score" in flat(run.out)
    assert has_row(run.out, "response_match_score", "0.94", "0.95", "FAILED")
    assert "tool_trajectory_avg_score" not in run.out
    # The scenario case has no expected invocations: response_match_score does not apply to it.
    assert "3 passed, 1 failed, 1 not evaluated" in run.out


def test_a_missing_explicit_config_is_an_input_error_not_the_defaults(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    # adk eval falls back to its default criteria when --config_file_path does not exist
    missing = tmp_path / "strict.json"

    run = run_cli("eval", example.evalset, "--config", missing, "--traces", example.traces)

    assert_input_error(run, f"{missing}: file not found")


def test_a_broken_test_config_shared_by_two_eval_sets_is_reported_once(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    first = Path(shutil.copy(example.evalset, tmp_path / "one.evalset.json"))
    second = Path(shutil.copy(example.evalset, tmp_path / "two.evalset.json"))
    config = write(tmp_path / "test_config.json", {"criteria": {"zzz": 1}})

    run = run_cli("eval", first, second, "--traces", example.traces)

    assert_input_error(run, f"{config}: criteria.zzz: unknown metric")


def test_without_a_config_beside_the_eval_set_adks_default_criteria_are_used(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    evalset = Path(shutil.copy(example.evalset, tmp_path / "travel.evalset.json"))

    run = run_cli("eval", evalset, "--traces", example.traces)

    assert "criteria from defaults: tool_trajectory_avg_score, response_match_score" in flat(
        run.out
    )
    assert has_row(run.out, "response_match_score", "1.00", "0.80", "PASSED")
    # EXACT matching (ADK's default) fails the case that IN_ORDER passed.
    assert has_row(run.out, "tool_trajectory_avg_score", "0.50", "1.00", "FAILED")
    # Neither default criterion applies to the scenario case (it has no expected invocations).
    assert "3 passed, 1 failed, 1 not evaluated" in run.out
    assert run.code == 1


def test_print_detailed_results_adds_a_per_invocation_table_for_each_case(
    run_cli: RunCli, example: Example
) -> None:
    plain = run_cli("eval", example.evalset, "--traces", example.traces)
    detailed = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--print-detailed-results"
    )

    assert detailed.code == 0
    titles = [f"travel_assistant / {eval_id}" for eval_id in ("forecast_paris", "greeting")]
    for title in titles:
        assert title in detailed.out
        assert title not in plain.out
    assert "prompt" in detailed.out and "prompt" not in plain.out
    assert "Hi! Who are you?" in flat(detailed.out)  # the greeting's prompt
    assert "get_forecast" in detailed.out  # its expected and actual tool calls
    assert "5 passed, 0 failed, 0 not evaluated" in detailed.out


def test_output_that_cannot_be_written_is_an_input_error_not_an_internal_one(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    (tmp_path / "results.json.tmp").mkdir()  # where the results are written first

    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--output", tmp_path / "results.json"
    )

    assert run.code == 2
    assert "internal error" not in run.output
    assert "Could not open file" in run.err
    assert str(tmp_path / "results.json") in flat(run.err)


def test_an_output_folder_that_does_not_exist_is_a_usage_error_before_scoring(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "missing" / "results.json"

    run = run_cli("eval", example.evalset, "--traces", example.traces, "--output", out)

    assert run.code == 2
    assert run.out == ""  # nothing was scored
    assert f"folder '{out.parent}' does not exist" in flat(run.err)


# --- bad input: exit 2, one clear message, no traceback ---------------------------------------


def test_a_malformed_eval_set_is_reported_with_file_and_position(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    evalset = write(tmp_path / "bad.evalset.json", '{"eval_set_id": "s", "eval_cases": [')

    run = run_cli("eval", evalset, "--traces", example.traces)

    assert_input_error(run, f"{evalset}: malformed JSON: EOF while parsing a list at line 1")


def test_a_wrongly_typed_value_in_the_eval_set_is_reported_with_its_json_path(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    evalset = write(
        tmp_path / "bad.evalset.json",
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "conversation": 5}]},
    )

    run = run_cli("eval", evalset, "--traces", example.traces)

    assert_input_error(run, f"{evalset}: eval_cases[0].conversation: expected a list; got 5")


def test_an_unknown_key_in_the_eval_set_is_reported_with_a_suggestion(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    evalset = write(
        tmp_path / "bad.evalset.json",
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "convesation": []}]},
    )

    run = run_cli("eval", evalset, "--traces", example.traces)

    assert_input_error(
        run,
        f"{evalset}: eval_cases[0]: unknown key 'convesation' (did you mean 'conversation'?)",
    )


def test_an_unknown_metric_in_the_config_is_reported_with_a_suggestion(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    config = write(tmp_path / "cfg.json", {"criteria": {"respons_match_score": 0.8}})

    run = run_cli("eval", example.evalset, "--config", config, "--traces", example.traces)

    assert_input_error(
        run,
        f"{config}: criteria.respons_match_score: unknown metric; "
        "did you mean 'response_match_score'?",
    )


def test_a_typo_in_a_test_config_beside_the_eval_set_is_reported(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    evalset = Path(shutil.copy(example.evalset, tmp_path / "travel.evalset.json"))
    config = write(
        tmp_path / "test_config.json",
        {
            "criteria": {
                "final_response_match_v2": {
                    "threshold": 1,
                    "judge_model_options": {"num_sample": 2},
                }
            }
        },
    )

    run = run_cli("eval", evalset, "--traces", example.traces)

    assert_input_error(
        run,
        f"{config}: criteria.final_response_match_v2.judge_model_options: "
        "unknown key 'num_sample' (did you mean 'num_samples'?)",
    )


def test_a_missing_eval_set_file_is_reported(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.evalset.json"

    run = run_cli("eval", missing, "--traces", example.traces)

    assert_input_error(run, f"{missing}: file not found")


def test_a_missing_traces_file_is_reported(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.json"

    run = run_cli("eval", example.evalset, "--traces", missing)

    assert_input_error(run, f"{missing}: file not found")


def test_malformed_traces_are_reported_with_file_and_position(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    traces = write(tmp_path / "traces.json", '{"greeting": [}')

    run = run_cli("eval", example.evalset, "--traces", traces)

    assert_input_error(run, f"{traces}: malformed JSON: expected value at line 1 column 15")


def test_an_invalid_invocation_in_the_traces_is_reported_with_its_json_path(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    data = json.loads(example.traces.read_text(encoding="utf-8"))
    del data["book_flight_lisbon"][1]["user_content"]
    traces = write(tmp_path / "traces.json", data)

    run = run_cli("eval", example.evalset, "--traces", traces)

    assert_input_error(run, f"{traces}: book_flight_lisbon[1]: missing required key 'user_content'")


def test_problems_in_the_config_eval_set_and_traces_are_reported_together(
    run_cli: RunCli, tmp_path: Path
) -> None:
    config = write(tmp_path / "cfg.json", {"criteria": {"zzz": 1}})
    evalset = write(tmp_path / "bad.evalset.json", "[")
    traces = tmp_path / "nope.json"

    run = run_cli("eval", evalset, "--config", config, "--traces", traces)

    assert_input_error(
        run,
        f"{config}: criteria.zzz: unknown metric",
        f"{evalset}: malformed JSON",
        f"{traces}: file not found",
    )


def test_eval_without_traces_or_agent_is_a_usage_error(run_cli: RunCli, example: Example) -> None:
    run = run_cli("eval", example.evalset)

    assert run.code == 2
    assert f"error: nothing to score {example.evalset} with: give --agent" in flat(run.err)
    assert "Traceback" not in run.output


def test_eval_without_an_eval_set_is_a_usage_error(run_cli: RunCli, example: Example) -> None:
    run = run_cli("eval", "--traces", example.traces)

    assert run.code == 2
    assert "Missing argument 'EVALSET...'" in run.err


# --- validate ---------------------------------------------------------------------------------


def test_validate_lists_each_good_file_and_exits_0(run_cli: RunCli, example: Example) -> None:
    run = run_cli("validate", example.evalset, example.config)

    assert run.code == 0, run.output
    out = flat(run.out)
    assert (
        f"ok {example.evalset}: eval set 'travel_assistant' (evalset), 5 case(s), 5 invocation(s)"
        in out
    )
    assert (
        f"ok {example.config}: config with 8 criteria "
        "(tool_trajectory_avg_score, response_match_score, final_response_match_v2, "
        "rubric_based_final_response_quality_v1, rubric_based_tool_use_quality_v1, "
        "hallucinations_v1, safety_v1, per_turn_user_simulator_quality_v1)" in out
    )


def test_validate_reports_every_problem_in_several_bad_files(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    malformed = write(tmp_path / "a.evalset.json", '{"eval_set_id": ')
    typo = write(
        tmp_path / "b.evalset.json",
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "convesation": []}]},
    )
    config = write(tmp_path / "test_config.json", {"criteria": {"respons_match_score": 0.8}})
    missing = tmp_path / "c.evalset.json"

    run = run_cli("validate", malformed, example.evalset, typo, config, missing)

    assert run.code == 2
    assert "Traceback" not in run.output
    assert f"ok {example.evalset}" in flat(run.out)
    err = flat(run.err)
    assert err.startswith("error: 4 problem(s) in the input")
    for expected in (
        f"{malformed}: malformed JSON",
        f"{typo}: eval_cases[0]: unknown key 'convesation'",
        f"{config}: criteria.respons_match_score: unknown metric",
        f"{missing}: file not found",
    ):
        assert expected in err


# --- the installed console script -------------------------------------------------------------


def test_the_installed_assay_script_scores_the_example_and_writes_results(
    example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("FORCE_COLOR", None)

    done = subprocess.run(
        [ASSAY, "eval", example.evalset, "--traces", example.traces, "--output", out],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed, 0 failed, 0 not evaluated" in done.stdout
    assert json.loads(out.read_text(encoding="utf-8"))["eval_set_id"] == "travel_assistant"


@pytest.mark.parametrize(
    ("flag", "expected"), [("--version", "assay, version "), ("-h", "Usage: assay [OPTIONS]")]
)
def test_version_and_help_name_the_program_assay_and_exit_0(
    run_cli: RunCli, flag: str, expected: str
) -> None:
    run = run_cli(flag)

    assert run.code == 0
    assert run.out.startswith(expected)


# --- start-up: the entry module and `assay --help` import no command ----------------------------

HEAVY = (
    "numpy",
    "rich",
    "pydantic",
    "pydantic_core",
    "httpx",
    "jinja2",
    "yaml",
    "importlib.metadata",
    "assay.config",
    "assay.compare",
    "assay.errors",
    "assay.evalset",
    "assay.history",
    "assay.llm",
    "assay.report",
    "assay.results",
    "assay.runner",
)
"""Modules (and their submodules) that only a command that runs may import."""

COMMAND_NAMES = [
    "compare", "eval", "import", "judge", "metrics", "receive", "report", "runs", "show", "traces",
    "validate", "view",
]  # fmt: skip

COMMAND_MODULES = {
    "assay.cli.compare",
    "assay.cli.eval",
    "assay.cli.eval_shown",
    "assay.cli.history",
    "assay.cli.judge",
    "assay.cli.metrics",
    "assay.cli.receive",
    "assay.runner.recording",
    "assay.cli.report",
    "assay.cli.traces",
    "assay.cli.validate",
    "assay.cli.view",
}
"""The modules of assay's commands (and what only they use)."""


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has imported once ``code`` has run."""
    script = f"{code}\nimport json, sys\nsys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stderr)
    assert isinstance(loaded, list)
    return set(loaded)


def heavy_in(modules: set[str], heavy: Sequence[str] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


def run_main(*args: str) -> str:
    """Code running ``assay ARGS`` in-process, expecting exit 0."""
    return (
        "from assay.cli.main import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
    )


def test_loading_the_entry_module_imports_no_heavy_module_and_no_command() -> None:
    loaded = modules_after("import assay.cli.main")

    assert heavy_in(loaded) == []
    assert sorted(loaded & COMMAND_MODULES) == []


def test_assay_help_imports_no_heavy_module_and_no_command() -> None:
    loaded = modules_after(run_main("--help"))

    assert heavy_in(loaded) == []
    assert sorted(loaded & COMMAND_MODULES) == []


def test_assay_version_reads_the_version_but_imports_no_command() -> None:
    loaded = modules_after(run_main("--version"))

    assert heavy_in(loaded, [h for h in HEAVY if h != "importlib.metadata"]) == []
    assert sorted(loaded & COMMAND_MODULES) == []


def test_a_commands_help_imports_that_command_only() -> None:
    loaded = modules_after(run_main("validate", "--help"))

    assert "assay.cli.validate" in loaded
    assert sorted(loaded & COMMAND_MODULES) == ["assay.cli.validate"]
    assert heavy_in(loaded, ["assay.compare", "numpy", "jinja2", "httpx"]) == []


def test_version_is_the_installed_packages(run_cli: RunCli) -> None:
    import assay

    run = run_cli("--version")

    assert run.code == 0
    assert run.out == f"assay, version {assay.__version__}\n"


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_every_commands_help_names_it_under_assay(run_cli: RunCli, name: str) -> None:
    run = run_cli(name, "--help")

    assert run.code == 0, run.output
    assert run.out.startswith(f"Usage: assay {name} [OPTIONS]")


def test_assay_help_lists_every_command_with_its_summary(run_cli: RunCli) -> None:
    run = run_cli("--help")

    assert run.code == 0
    commands = run.out.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in commands] == COMMAND_NAMES
    assert "  runs      List recorded runs, newest first." in commands
    assert all(len(line.split()) > 2 for line in commands)


def test_an_assay_bug_is_an_internal_error_with_exit_3(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    evalset_io = importlib.import_module("assay.evalset.io")  # validate imports it as it runs

    def broken(path: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(evalset_io, "load_eval_set", broken)
    run = run_cli("validate", example.evalset)

    assert run.code == 3
    assert "internal error: RuntimeError: boom (set ASSAY_DEBUG=1" in flat(run.err)
    assert "Traceback" not in run.err


def test_a_local_judge_that_cannot_load_leaves_judged_metrics_not_evaluated_and_scores_the_rest(
    run_cli: RunCli, example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("needs the embedded judge's runtime (xllamacpp)")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(4096))
    monkeypatch.setenv("ASSAY_MODEL_DIR", str(tmp_path / "models"))  # its sha256 stamp
    results = tmp_path / "results.json"
    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--judge-model", f"local:{broken}",
        "--no-history", "--no-cache", "--output", results,
    )  # fmt: skip

    assert run.code == 1, run.output
    assert "truncated or corrupt" in flat(run.output)
    statuses = {
        metric["metric_name"]: metric["eval_status"]
        for case in json.loads(results.read_text())["eval_case_results"]
        if case["eval_id"] == "forecast_paris"
        for metric in case["overall_eval_metric_results"]
    }
    assert statuses["tool_trajectory_avg_score"] == statuses["response_match_score"] == 1
    assert statuses["final_response_match_v2"] == statuses["safety_v1"] == 3  # NOT_EVALUATED


def test_a_run_logged_to_a_file_says_it_is_alive_while_no_case_finishes(
    run_cli: RunCli, example: Example, judge_env: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_HEARTBEAT_S", "0.2")
    judge_env.latency_s = 0.25  # every judge call: longer than the heartbeat interval
    try:
        run = run_cli("eval", example.evalset, "--traces", example.traces, "--no-cache")
    finally:
        judge_env.latency_s = 0.0

    assert run.code == 0, run.output
    beats = [line for line in run.err.splitlines() if " running: " in line]
    assert beats, run.err
    calls = r"calls \d+/(\d+ so far|~\d+)( · ETA (at least )?\d+[hms]( \d+[ms])?)?"
    for beat in beats:  # the calls once the first is made
        assert re.fullmatch(
            rf"\[\d/5\] running: \d+ LLM calls? in flight, \d+ waiting( · {calls})? · \d+s "
            "elapsed",
            beat,
        ), beat
    assert any(" · calls " in beat for beat in beats), beats
    finished = [line for line in run.err.splitlines() if re.match(r"\[\d/5\] travel", line)]
    assert len(finished) == 5
    assert all(re.search(rf" tokens · ({calls}|calls \d+/\d+)$", line) for line in finished)


def test_a_heartbeat_interval_that_is_not_a_number_is_a_usage_error(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_HEARTBEAT_S", "soon")
    run = run_cli("eval", example.evalset, "--traces", example.traces)
    assert run.code == 2
    assert "ASSAY_HEARTBEAT_S must be a number of seconds; got 'soon'" in run.err
    assert "Traceback" not in run.output


def test_a_run_without_html_says_the_one_command_that_makes_its_report(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.traces)
    [line] = [line for line in run.out.splitlines() if line.startswith("HTML report: ")]
    command = line.removeprefix("HTML report: assay ").split()
    report = tmp_path / "report.html"
    made = run_cli(*command[:-1], report)
    assert made.code == 0, made.output
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

    with_html = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--html", tmp_path / "r.html"
    )
    assert "HTML report: assay report" not in with_html.out


def test_the_report_command_is_printed_as_the_user_ran_assay(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [".venv/bin/assay", "eval"])
    run = run_cli("eval", example.evalset, "--traces", example.traces)
    assert "HTML report: .venv/bin/assay report " in run.out
