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

from ._helpers import agent_source, write_eval_set

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


def test_assay_history_records_each_eval_cases_run_in_the_history_named(
    pytester: pytest.Pytester, project: Path
) -> None:
    from assay.history.store import HistoryStore

    history = project / "runs.sqlite"
    result = pytester.runpytest_inprocess(
        *PLUGIN, "--assay-agent", _spec(project, "good"), "--assay-history", str(history)
    )

    result.assert_outcomes(passed=3)
    with HistoryStore(history) as store:
        runs = store.runs()
    assert len(runs) == 2  # one run per eval case
    assert all(run.status == "finished" and run.cases == run.passed for run in runs)
