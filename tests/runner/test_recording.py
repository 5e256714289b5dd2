"""Runs record themselves: ``evaluate(history=...)``, ``evaluate_agent(history=...)`` and the
CLI write the same run history, which ``assay show`` and ``--resume`` read either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from _judge_server import JudgeServer
from _support import Example, RunCli

from assay.agents.base import Session
from assay.errors import InputError
from assay.history.store import HistoryStore
from assay.results.model import EvalCaseResult
from assay.results.traces import load_traces
from assay.runner.evaluate import EvalSetJob, evaluate_sync
from assay.runner.jobs import jobs_for
from assay.runner.options import RunOptions
from assay.runner.recording import RecordingWarning
from assay.testing import evaluate_agent


def _jobs(example: Example) -> list[EvalSetJob]:
    return jobs_for([str(example.evalset)])


def test_evaluate_with_a_history_file_records_a_run_that_assay_show_reads(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    history = tmp_path / "runs.sqlite"
    traces = load_traces([str(example.traces)])

    results = evaluate_sync(_jobs(example), traces, history=history, progress=False)

    with HistoryStore(history) as store:
        [info] = store.runs()
    assert (info.status, info.cases, info.passed) == ("finished", 5, 5)
    shown = run_cli("show", info.id, "--history-file", history)
    assert shown.code == 0, shown.output
    assert results[0].eval_set_id in shown.out
    assert "5 passed" in shown.out


def test_the_cli_resumes_a_run_that_evaluate_recorded_without_judging_again(
    run_cli: RunCli, example: Example, tmp_path: Path, judge_env: JudgeServer
) -> None:
    history = tmp_path / "runs.sqlite"
    traces = load_traces([str(example.traces)])
    evaluate_sync(_jobs(example), traces, history=history, progress=False)
    calls = judge_env.count()

    resumed = run_cli(
        "eval", example.evalset, "--traces", example.traces,
        "--history-file", history, "--resume", "latest",
    )  # fmt: skip

    assert resumed.code == 0, resumed.output
    assert "5 case result(s) kept" in resumed.out
    assert judge_env.count() == calls
    with HistoryStore(history) as store:
        assert len(store.runs()) == 1


def test_evaluate_resumes_a_run_the_cli_recorded_and_takes_its_cases_as_they_are(
    run_cli: RunCli, example: Example, tmp_path: Path, judge_env: JudgeServer
) -> None:
    history = tmp_path / "runs.sqlite"
    first = run_cli("eval", example.evalset, "--traces", example.traces, "--history-file", history)
    assert first.code == 0, first.output
    calls = judge_env.count()
    seen: list[EvalCaseResult] = []

    results = evaluate_sync(
        _jobs(example),
        load_traces([str(example.traces)]),
        history=history,
        resume="latest",
        progress=False,
        on_case=lambda _job, result: seen.append(result),
    )

    assert judge_env.count() == calls and seen == []  # every case kept, none scored again
    assert [case.eval_id for case in results[0].eval_case_results] == [
        case.eval_id for case in _jobs(example)[0].loaded.eval_set.eval_cases
    ]
    with HistoryStore(history) as store:
        [info] = store.runs()
    assert (info.status, info.cases) == ("finished", 5)


def test_evaluate_records_nothing_unless_asked(example: Example, tmp_path: Path) -> None:
    history = tmp_path / "runs.sqlite"

    evaluate_sync(_jobs(example), load_traces([str(example.traces)]), progress=False)

    assert not history.exists()


def test_a_run_whose_cases_would_collide_in_the_history_is_refused_before_it_runs(
    example: Example, tmp_path: Path
) -> None:
    twice = _jobs(example) * 2  # the same eval set id twice: its cases would be stored as one

    with pytest.raises(InputError, match="eval set id 'travel_assistant' is also that of"):
        evaluate_sync(
            twice, load_traces([str(example.traces)]), history=tmp_path / "h", progress=False
        )


def test_a_history_that_cannot_be_written_is_a_warning_and_the_run_goes_on(
    example: Example, tmp_path: Path
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the history's folder would be\n")

    with pytest.warns(RecordingWarning, match="this run is not recorded"):
        results = evaluate_sync(
            _jobs(example),
            load_traces([str(example.traces)]),
            history=blocked / "runs.sqlite",
            progress=False,
        )

    assert len(results[0].eval_case_results) == 5


def test_evaluate_agent_records_its_run_under_the_agents_name(
    example: Example, tmp_path: Path
) -> None:
    history = tmp_path / "runs.sqlite"

    def agent(message: str, session: Session) -> str:
        return "I cannot help with that."

    evaluate_agent(agent, example.evalset, num_runs=1, check=False, progress=False, history=history)

    with HistoryStore(history) as store:
        [info] = store.runs()
    assert info.status == "finished" and info.cases == 5
    assert info.config["inputs"]["agent"] == f"{__name__}:{agent.__qualname__}"


def test_options_carry_the_history_and_resume_and_are_not_given_twice(
    example: Example, tmp_path: Path
) -> None:
    options = RunOptions(history=tmp_path / "runs.sqlite", progress=False)
    traces = load_traces([str(example.traces)])

    evaluate_sync(_jobs(example), traces, options=options)

    with HistoryStore(tmp_path / "runs.sqlite") as store:
        assert len(store.runs()) == 1
    with pytest.raises(ValueError, match="in options, not beside it"):
        evaluate_sync(_jobs(example), traces, options=options, concurrency=2)
    with pytest.raises(ValueError, match="resume needs the run history"):
        RunOptions(resume="latest")
