"""Runs record themselves: ``evaluate(history=...)``, ``evaluate_agent(history=...)`` and the
CLI write the same run history, which ``assay show`` and ``--resume`` read either way."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from _judge_server import JudgeServer
from _support import Example, RunCli

from assay.agents.base import Session
from assay.errors import InputError
from assay.history import compact
from assay.history.store import HistoryStore
from assay.history.stored import BATCH, Decoder
from assay.results.model import EvalCaseResult
from assay.results.traces import Traces, load_traces
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


def _write_deterministic_run(folder: Path, cases: int) -> tuple[Path, Path, Path]:
    """An eval set of ``cases`` one- or two-turn conversations with tool calls, traces of their
    actual turns (some calls and answers changed), and a config of the two deterministic
    criteria."""
    eval_cases, traces = [], {}
    for n in range(cases):
        turns = []
        actual = []
        for turn in range(1 + n % 2):
            call = {"name": "get_weather", "args": {"city": f"city {n}", "day": turn}}
            said = f"it is sunny in city {n} on day {turn}"
            expected = {
                "invocation_id": f"e{n}-{turn}",
                "user_content": {"role": "user", "parts": [{"text": f"weather {n}?"}]},
                "final_response": {"role": "model", "parts": [{"text": said}]},
                "intermediate_data": {"tool_uses": [call]},
            }
            turns.append(expected)
            changed = n % 5 == 0
            actual.append(
                {
                    **expected,
                    "final_response": {"role": "model", "parts": [{"text": said.upper()}]},
                    "intermediate_data": {
                        "tool_uses": [{**call, "name": "x"}] if changed else [call]
                    },
                }
            )
        eval_cases.append({"eval_id": f"case_{n:05d}", "conversation": turns})
        traces[f"case_{n:05d}"] = actual
    evalset = folder / "many.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "many", "eval_cases": eval_cases}))
    traces_file = folder / "many.traces.json"
    traces_file.write_text(json.dumps(traces))
    config = folder / "test_config.json"
    criteria = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}
    config.write_text(json.dumps({"criteria": criteria}))
    return evalset, traces_file, config


def _results_file(path: Path) -> dict[str, Any]:
    """A results file without what differs between two runs of the same cases: the set
    result's id, name and time, and how long the set took."""
    found = json.loads(path.read_text())
    for key in ("eval_set_result_id", "eval_set_result_name", "creation_timestamp"):
        found.pop(key)
    found["assay"].pop("duration_s")
    return cast(dict[str, Any], found)


def test_resuming_a_run_that_has_every_case_reads_each_once_and_writes_the_same_results(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_KEEP_CASES", "300")  # spilled past 300, as large runs are
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")  # the eval set streamed, as large ones are
    evalset, traces, config = _write_deterministic_run(tmp_path, 1_200)
    history = tmp_path / "runs.sqlite"
    common = ["eval", evalset, "--traces", traces, "--config", config, "--history-file", history]
    fresh = run_cli(*common, "--output", tmp_path / "fresh.json", "--no-progress")
    assert fresh.code in (0, 1), fresh.output
    with HistoryStore(history) as store:
        [(rows, last)] = store.query("SELECT COUNT(*), MAX(rowid) FROM case_results")
    assert rows == 1_200

    queries: list[str] = []
    read = HistoryStore._read

    def counted(self: HistoryStore, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        queries.append(sql)
        return read(self, sql, params)

    decoded = Counter[str]()
    decode = Decoder.__call__

    def counted_decode(self: Decoder, eval_id: str, *args: Any) -> EvalCaseResult:
        decoded[eval_id] += 1
        return decode(self, eval_id, *args)

    looked_up: list[str] = []
    lookup = Traces.raw  # what every reading of a traces entry goes through

    def counted_lookup(self: Traces, set_id: str | None, eval_id: str, run: int) -> Any:
        looked_up.append(eval_id)
        return lookup(self, set_id, eval_id, run)

    looked_up_cases: list[object] = []
    monkeypatch.setattr(compact, "_expected", lambda *a: looked_up_cases.append(a))
    monkeypatch.setattr(HistoryStore, "_read", counted)
    monkeypatch.setattr(Decoder, "__call__", counted_decode)
    monkeypatch.setattr(Traces, "raw", counted_lookup)
    resumed = run_cli(*common, "--output", tmp_path / "resumed.json", "--resume", "latest")

    assert resumed.code == fresh.code, resumed.output
    assert "1200 case result(s) kept" in resumed.out
    assert _results_file(tmp_path / "resumed.json") == _results_file(tmp_path / "fresh.json")
    # each kept case decoded once, with the invocations scoring read from the traces (once)
    # and the conversation it read from the eval set (not looked up in it again)
    assert len(decoded) == 1_200 and set(decoded.values()) == {1}
    assert len(looked_up) == 1_200 and looked_up_cases == []
    # the kept results read a batch at a time, never one query per case
    assert sum("case_results" in sql for sql in queries) < 1_200 // BATCH + 20
    with HistoryStore(history) as store:  # nothing written again
        assert store.query("SELECT COUNT(*), MAX(rowid) FROM case_results") == [(rows, last)]
        [info] = store.runs()
    assert info.status == "finished" and info.cases == 1_200
