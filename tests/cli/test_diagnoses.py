"""Inputs that do not fit together, each said in one line with what to do, through the real CLI:
traces of another eval set, an eval set passed as traces (and back), ADK's session file, an eval
set with neither an agent nor traces, a misspelt agent. Exit 2, no traceback, before any judge
call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _judge_server import JudgeServer
from _support import Example, RunCli

ADK_SESSION = (
    Path(__file__).resolve().parent.parent
    / "fixtures/adk/tests/integration/fixture/trip_planner_agent/initial.session.json"
)


def flat(text: str) -> str:
    """Text with all runs of whitespace made one space (rich wraps long lines)."""
    return " ".join(text.split())


def one_error(run_err: str, code: int) -> str:
    """The one error line (flattened); checks the exit code and that no traceback shows."""
    assert code == 2, run_err
    assert "Traceback" not in run_err
    said = flat(run_err)
    assert said.startswith("error: ") and said.count("error:") == 1, said
    return said


def one_problem(run_err: str, code: int) -> str:
    """The one problem of an input error, without its header."""
    said = one_error(run_err, code)
    header = "error: 1 problem(s) in the input • "
    assert said.startswith(header), said
    return said.removeprefix(header)


def renamed_traces(example: Example, folder: Path) -> Path:
    """The example's traces with every eval id changed: the traces of another eval set."""
    data = json.loads(example.traces.read_text(encoding="utf-8"))
    path = folder / "other.traces.json"
    path.write_text(json.dumps({f"{k}_x": v for k, v in data.items()}), encoding="utf-8")
    return path


# --- traces that do not match the eval set ---------------------------------------------------


def test_traces_of_another_eval_set_are_one_line_naming_their_ids_before_any_judge_call(
    run_cli: RunCli, example: Example, tmp_path: Path, judge_env: JudgeServer
) -> None:
    traces = renamed_traces(example, tmp_path)
    calls = judge_env.count()

    run = run_cli("eval", example.evalset, "--traces", traces)

    assert one_error(run.err, run.code) == (
        f"error: 0 of 5 eval ids found in {traces}; it has forecast_paris_x, "
        "book_flight_lisbon_x, convert_currency_x, greeting_x, book_cheapest_and_convert_x "
        "(did you pass the traces of another eval set?)"
    )
    assert run.out == "" and judge_env.count() == calls


def test_traces_lacking_some_cases_say_how_many_matched_and_the_run_goes_on(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.regressed)

    assert run.code == 1
    assert flat(run.out).startswith(
        f"warning: 3 of 5 eval ids found in {example.regressed}; no trace for greeting, "
        "book_cheapest_and_convert (those cases are not evaluated)"
    )
    assert "no trace for this case in" in flat(run.out)  # the rows stay


# --- a file passed where another kind belongs -----------------------------------------------


@pytest.mark.parametrize("stream", ["100000", "0"])  # read whole, and streamed
def test_an_eval_set_passed_as_traces_is_named_for_what_it_is(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, stream: str
) -> None:
    monkeypatch.setenv("ASSAY_STREAM_MB", stream)

    run = run_cli("eval", example.evalset, "--traces", example.evalset)

    assert one_problem(run.err, run.code) == (
        f"{example.evalset}: an eval set, not a traces file: pass it as EVALSET, and traces "
        "from `assay eval EVALSET --agent SPEC --save-traces FILE`"
    )


def test_a_traces_file_or_a_config_passed_as_the_eval_set_is_named_for_what_it_is(
    run_cli: RunCli, example: Example
) -> None:
    traces = run_cli("eval", example.traces, "--traces", example.traces)
    config = run_cli("eval", example.config, "--traces", example.traces)

    assert one_problem(traces.err, traces.code) == (
        f"{example.traces}: a traces file (recorded invocations by eval_id), not an eval set: "
        "pass it as --traces FILE, with the eval set it records as EVALSET"
    )
    assert one_problem(config.err, config.code) == (
        f"{example.config}: an EvalConfig (criteria), not an eval set: pass it as --config FILE"
    )


def test_adks_initial_session_passed_as_the_eval_set_says_what_it_is(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", ADK_SESSION, "--traces", example.traces)

    assert one_problem(run.err, run.code) == (
        f"{ADK_SESSION}: ADK's initial session (app_name, user_id, state), read automatically "
        "with the legacy .test.json files in its folder, not an eval set: pass the .test.json "
        "file beside it as EVALSET"
    )


def test_validate_says_what_adks_session_file_and_a_traces_file_are(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("validate", ADK_SESSION, example.traces)

    assert run.code == 0, run.output
    assert flat(run.out) == (
        f"ok {ADK_SESSION}: ADK's initial session (app_name, user_id, 4 state key(s)), not an "
        "eval set: it is read automatically with the legacy .test.json files in its folder "
        f"ok {example.traces}: traces of 5 case(s), not an eval set: pass it as --traces FILE "
        "with the eval set it records"
    )


def test_validate_reports_a_broken_session_file_as_a_session(
    run_cli: RunCli, tmp_path: Path
) -> None:
    session = tmp_path / "initial.session.json"
    session.write_text(json.dumps({"app_name": "a", "user_id": "u", "state": [1]}))

    run = run_cli("validate", session)

    assert one_problem(run.err, run.code).startswith(f"{session}: state: expected")


# --- neither an agent nor traces, both, a misspelt agent -------------------------------------


def test_an_eval_set_alone_says_it_needs_an_agent_or_traces_with_a_command_line(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    agent_folder = tmp_path / "home_agent"
    (agent_folder / "evals").mkdir(parents=True)
    (agent_folder / "agent.py").write_text("root_agent = None\n")
    evalset = agent_folder / "evals" / "home.evalset.json"
    shutil.copy(example.evalset, evalset)

    run = run_cli("eval", evalset)

    assert one_error(run.err, run.code) == (
        f"error: nothing to score {evalset} with: give --agent with your agent (its ADK folder "
        "or module exposing root_agent, as `adk eval AGENT_DIR` takes it, or file.py:function, "
        "http(s)://URL, openai:MODEL) to run it over the cases, or --traces FILE with recorded "
        f"runs (written by --save-traces); e.g. assay eval {evalset} --agent {agent_folder}"
    )
    # the example's agent.py has no root_agent: not an ADK folder, so a placeholder
    elsewhere = run_cli("eval", example.evalset)
    assert flat(elsewhere.err).endswith(
        f"e.g. assay eval {example.evalset} --agent path/to/your_agent"
    )


def test_an_agent_and_traces_together_say_which_does_what(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--agent", "x:y")

    assert one_error(run.err, run.code) == (
        "error: give --agent or --traces, not both: --agent runs the agent and scores its "
        "answers, --traces scores answers recorded before"
    )


def test_a_misspelt_agent_suggests_the_files_own_agent_not_its_imports(
    run_cli: RunCli, example: Example
) -> None:
    spec = f"{example.dir / 'agent.py'}:travel_agnt"

    run = run_cli("eval", example.evalset, "--agent", spec)

    assert one_error(run.err, run.code) == (
        f"error: --agent '{spec}': {example.dir / 'agent.py'} has no attribute 'travel_agnt'; "
        "the one agent it defines is travel_agent"
    )
