"""The pytest plugin: one test per eval case when an agent is named, nothing otherwise.

Each test runs pytest in this process (``pytester``) on a folder holding an eval set, its
``test_config.json``, a module of agents and one ordinary test. Plugin autoloading is off in
those runs and the plugin is loaded with ``-p``, so the tests hold whether or not the ``assay``
entry point is installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import RunCli

from assay.history.records import RunInfo
from assay.history.store import HistoryStore

from ._helpers import CASES, agent_source, write_eval_set

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "assay.testing.plugin")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An eval set with its config under ``evals/``, agents in ``agents.py``, one plain test."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    write_eval_set(pytester.path / "evals")
    (pytester.path / "agents.py").write_text(agent_source())
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    return pytester.path


def _spec(project: Path, name: str) -> str:
    return f"{project / 'agents.py'}:{name}"


def test_without_an_agent_the_plugin_collects_no_eval_set(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest_inprocess(*PLUGIN, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_plain.py::test_plain", "1 test collected*"])
    result.stdout.no_fnmatch_line("*evalset*")


def test_with_an_agent_each_eval_case_is_one_test_named_after_it(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest_inprocess(
        *PLUGIN, "--assay-agent", _spec(project, "good"), "--collect-only", "-q"
    )
    result.stdout.fnmatch_lines(
        [
            "evals/travel.evalset.json::weather",
            "evals/travel.evalset.json::flight",
            "test_plain.py::test_plain",
        ]
    )


def test_a_good_agent_passes_every_case(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest_inprocess(*PLUGIN, "--assay-agent", _spec(project, "good"))
    result.assert_outcomes(passed=3)


def test_a_failing_case_fails_its_test_with_the_readable_message_and_no_traceback(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest_inprocess(
        *PLUGIN, "--assay-agent", _spec(project, "bad"), "--assay-num-runs", "1"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*1 of 1 case run(s) did not pass: 1 failed, 0 not evaluated*",
            "*flight: FAILED*",
            "*FAILED*tool_trajectory_avg_score  0 (threshold 1)*",
            "*actual:         Sorry, there are no trains today.*",
            "FAILED evals/travel.evalset.json::flight*",
        ]
    )
    assert "run 1 of" not in result.stdout.str()  # one run, as asked
    assert "Traceback" not in result.stdout.str()


def test_the_ini_file_can_name_the_agent(pytester: pytest.Pytester, project: Path) -> None:
    pytester.makeini(f"[pytest]\nassay_agent = {_spec(project, 'good')}\nassay_num_runs = 1\n")
    result = pytester.runpytest_inprocess(*PLUGIN)
    result.assert_outcomes(passed=3)


def test_a_conftest_hook_names_the_agent_for_its_folder_and_the_option_overrides_it(
    pytester: pytest.Pytester, project: Path
) -> None:
    (project / "evals" / "conftest.py").write_text(
        f"def pytest_assay_agent(path, config):\n    return {_spec(project, 'bad')!r}\n"
    )
    by_hook = pytester.runpytest_inprocess(*PLUGIN, "--assay-num-runs", "1")
    by_hook.assert_outcomes(passed=2, failed=1)
    by_option = pytester.runpytest_inprocess(
        *PLUGIN, "--assay-num-runs", "1", "--assay-agent", _spec(project, "good")
    )
    by_option.assert_outcomes(passed=3)


def test_an_eval_set_that_does_not_load_is_one_failing_test_saying_why(
    pytester: pytest.Pytester, project: Path
) -> None:
    broken = project / "evals" / "broken.evalset.json"
    broken.write_text(json.dumps({"eval_set_id": "b", "eval_cases": [{"eval_id": "x"}]}))
    result = pytester.runpytest_inprocess(
        *PLUGIN, "--assay-agent", _spec(project, "good"), "--assay-num-runs", "1"
    )
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*cannot load {broken}:*",
            "*eval_cases[[]0[]]*",
            "FAILED evals/broken.evalset.json::load*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_an_agent_spec_that_cannot_be_loaded_fails_each_case_with_the_reason(
    pytester: pytest.Pytester, project: Path
) -> None:
    result = pytester.runpytest_inprocess(*PLUGIN, "--assay-agent", "agents.py:nope")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*has no attribute 'nope'*"])
    assert "Traceback" not in result.stdout.str()


def test_a_bad_number_of_runs_is_a_usage_error(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest_inprocess(*PLUGIN, "--assay-num-runs", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*num_runs must be at least 1, got 0*"])


def _count_calls(project: Path) -> Path:
    """Add ``counted`` to the agents: ``bad``, writing a line to the file returned per call."""
    calls = project / "calls.txt"
    calls.write_text("")
    with (project / "agents.py").open("a") as module:
        module.write(
            "\ndef counted(message, session):\n"
            f"    with open({str(calls)!r}, 'a') as calls:\n"
            "        calls.write(message + '\\n')\n"
            "    return bad(message, session)\n"
        )
    return calls


def _runs(history: Path) -> list[RunInfo]:
    with HistoryStore(history) as store:
        return store.runs()


def _calls(calls: Path) -> int:
    return len(calls.read_text().splitlines())


def test_a_session_with_a_history_records_one_run_with_every_case_that_show_reads(
    pytester: pytest.Pytester, project: Path, run_cli: RunCli
) -> None:
    history = project / "runs.sqlite"
    result = pytester.runpytest_inprocess(
        *PLUGIN, "--assay-agent", _spec(project, "bad"), "--assay-history", str(history)
    )

    result.assert_outcomes(passed=2, failed=1)
    [run] = _runs(history)
    assert (run.status, run.passed, run.failed) == ("finished", 2, 2)  # 2 cases x 2 runs
    assert run.eval_sets == [str(project / "evals" / "travel.evalset.json")]
    shown = run_cli("show", run.id, "--history-file", history)
    assert shown.code == 0, shown.output
    assert shown.out.startswith(f"run {run.id} (finished)")
    assert "weather (run 2)" in shown.out and "flight (run 2)" in shown.out
    assert "2 passed, 2 failed, 0 not evaluated; failed: flight" in shown.out


def test_a_resumed_session_takes_the_recorded_cases_as_they_passed_or_failed_without_the_agent(
    pytester: pytest.Pytester, project: Path
) -> None:
    calls, history = _count_calls(project), project / "runs.sqlite"
    args = (*PLUGIN, "--assay-agent", _spec(project, "counted"), "--assay-num-runs", "1")
    first = pytester.runpytest_inprocess(*args, "--assay-history", str(history))
    first.assert_outcomes(passed=2, failed=1)
    assert _calls(calls) == 2

    resumed = pytester.runpytest_inprocess(
        *args, "--assay-history", str(history), "--assay-resume", "latest"
    )

    resumed.assert_outcomes(passed=2, failed=1)
    resumed.stdout.fnmatch_lines(["*resuming run * 2 case result(s) kept*", "*flight: FAILED*"])
    assert _calls(calls) == 2  # neither case run again
    [run] = _runs(history)
    assert (run.status, run.passed, run.failed) == ("finished", 1, 1)


def test_a_resumed_session_runs_only_the_cases_its_run_lacks(
    pytester: pytest.Pytester, project: Path
) -> None:
    calls, history = _count_calls(project), project / "runs.sqlite"
    pytester.makeini(
        f"[pytest]\nassay_agent = {_spec(project, 'counted')}\nassay_num_runs = 1\n"
        f"assay_history = {history}\n"
    )
    pytester.runpytest_inprocess(*PLUGIN, "-k", "weather").assert_outcomes(passed=1)
    [first] = _runs(history)

    resumed = pytester.runpytest_inprocess(*PLUGIN, "--assay-resume", first.id)

    resumed.assert_outcomes(passed=2, failed=1)
    assert calls.read_text().splitlines() == [
        CASES["weather"][0],
        CASES["flight"][0],  # the weather case was kept
    ]
    [run] = _runs(history)
    assert (run.id, run.status, run.passed, run.failed) == (first.id, "finished", 1, 1)


def test_a_session_stopped_early_leaves_its_run_interrupted_and_resumable(
    pytester: pytest.Pytester, project: Path
) -> None:
    write_eval_set(project / "evals", ids=("flight", "weather"))
    calls, history = _count_calls(project), project / "runs.sqlite"
    args = (*PLUGIN, "--assay-agent", _spec(project, "counted"), "--assay-num-runs", "1")
    args = (*args, "--assay-history", str(history))
    pytester.runpytest_inprocess(*args, "-x").assert_outcomes(failed=1)
    [stopped] = _runs(history)
    assert (stopped.status, stopped.failed, _calls(calls)) == ("interrupted", 1, 1)

    resumed = pytester.runpytest_inprocess(*args, "--assay-resume", "latest")

    resumed.assert_outcomes(passed=2, failed=1)
    assert calls.read_text().splitlines() == [CASES["flight"][0], CASES["weather"][0]]
    [run] = _runs(history)
    assert (run.status, run.passed, run.failed) == ("finished", 1, 1)


@pytest.mark.parametrize("where", ["option", "ini"])
def test_resume_without_a_history_is_a_usage_error(
    pytester: pytest.Pytester, project: Path, where: str
) -> None:
    agent = ("--assay-agent", _spec(project, "good"))
    if where == "ini":
        pytester.makeini("[pytest]\nassay_resume = latest\n")
        result = pytester.runpytest_inprocess(*PLUGIN, *agent)
    else:
        result = pytester.runpytest_inprocess(*PLUGIN, *agent, "--assay-resume", "latest")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--assay-resume needs the run history*--assay-history*"])


def test_resuming_a_run_the_history_lacks_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, project: Path
) -> None:
    history = project / "runs.sqlite"
    result = pytester.runpytest_inprocess(
        *PLUGIN,
        "--assay-agent",
        _spec(project, "good"),
        "--assay-history",
        str(history),
        "--assay-resume",
        "nosuchrun",
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no run 'nosuchrun'*"])
