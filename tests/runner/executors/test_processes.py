"""``assay eval --workers N``: a deterministic run from traces scored in forked processes gives
what one process gives (results file, console, run history, resume), and a worker that dies
costs only the case it was scoring."""

from __future__ import annotations

import json
import multiprocessing
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from _support import RunCli

from assay.config import parse_config
from assay.evalset.io import load_eval_set
from assay.history.compact import CaseEncoder, Encoded, record_header
from assay.history.records import HistoryError
from assay.history.store import HistoryStore
from assay.history.stored import Decoder
from assay.metrics.base import EvalStatus
from assay.results.captured import StoredRecord
from assay.results.model import EvalCaseResult
from assay.results.traces import load_traces
from assay.runner import process_worker
from assay.runner.evaluate import EvalSetJob, evaluate_sync
from assay.runner.executors import pool, processes
from assay.runner.executors.base import RunPlan
from assay.runner.executors.processes import ProcessExecutor, can_fork

pytestmark = pytest.mark.skipif(not can_fork(), reason="worker processes are forked (Linux)")

CASES = 150  # several chunks for each of two workers


def _turn(n: int, turn: int, *, changed: bool = False) -> dict[str, Any]:
    call = {"name": "get_weather", "args": {"city": f"city {n}", "day": turn}}
    said = f"it is sunny in city {n} on day {turn}"
    return {
        "invocation_id": f"e{n}-{turn}",
        "user_content": {"role": "user", "parts": [{"text": f"weather {n}?"}]},
        "final_response": {"role": "model", "parts": [{"text": said.upper() if changed else said}]},
        "intermediate_data": {"tool_uses": [{**call, "name": "x"} if changed else call]},
    }


def _write_run(folder: Path, criteria: dict[str, Any] | None = None) -> list[str]:
    """An eval set (some ids spelt camelCase, one case without a trace, one whose trace has a
    turn too many, one recorded twice) and its traces; the ``assay eval`` arguments."""
    cases, traces = [], {}
    for n in range(CASES):
        eval_id = f"case_{n:04d}"
        turns = [_turn(n, t) for t in range(1 + n % 2)]
        key = "evalId" if n % 7 == 0 else "eval_id"
        cases.append({key: eval_id, "conversation": turns})
        if n == 3:
            continue  # no trace
        actual = [_turn(n, t, changed=n % 5 == 0) for t in range(1 + n % 2)]
        if n == 4:
            actual.append(_turn(n, 9))
        traces[eval_id] = actual
    traces["case_0010#run2"] = [_turn(10, 0, changed=True)]
    evalset = folder / "many.evalset.json"
    evalset.write_text(json.dumps({"eval_set_id": "many", "eval_cases": cases}))
    traces_file = folder / "many.traces.json"
    traces_file.write_text(json.dumps(traces))
    config = folder / "test_config.json"
    chosen = criteria or {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}
    config.write_text(json.dumps({"criteria": chosen}))
    return [str(evalset), "--traces", str(traces_file), "--config", str(config)]


def _without_times(data: Any) -> Any:
    """A results file (or part) without what differs between two runs of the same cases."""
    if isinstance(data, dict):
        drop = {"duration_s", "creation_timestamp", "eval_set_result_id", "eval_set_result_name"}
        return {k: _without_times(v) for k, v in data.items() if k not in drop}
    if isinstance(data, list):
        return [_without_times(v) for v in data]
    return data


def _results(path: Path) -> Any:
    return _without_times(json.loads(path.read_text()))


def run_id(history: Path) -> str:
    with HistoryStore(history) as store:
        [run] = store.runs()
        return run.id


def _stored(history: Path) -> list[Any]:
    with HistoryStore(history) as store:
        [run] = store.runs()
        return [
            _without_times(r.model_dump(mode="json", exclude_none=True))
            for r in store.results(run.id)
        ]


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "held"])
def test_workers_give_the_results_file_console_and_history_one_process_gives(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    if streamed:  # the inputs read into the spill file and results spilled, as large runs are
        monkeypatch.setenv("ASSAY_STREAM_MB", "0")
        monkeypatch.setenv("ASSAY_KEEP_CASES", "40")
    args = _write_run(tmp_path)
    runs = {}
    for workers in (1, 2):
        history = tmp_path / f"w{workers}.sqlite"
        output = tmp_path / f"w{workers}.json"
        runs[workers] = run_cli(
            "eval", *args, "--workers", workers, "--output", output, "--history-file", history
        )
        assert runs[workers].code == 1, runs[workers].output  # some cases fail

    assert _results(tmp_path / "w2.json") == _results(tmp_path / "w1.json")
    cases = json.loads((tmp_path / "w2.json").read_text())["eval_case_results"]
    assert len(cases) == CASES + 1  # case_0010 twice
    assert [c["eval_id"] for c in cases][:12] == [f"case_{n:04d}" for n in range(11)] + [
        "case_0010"
    ]
    statuses = {c["eval_id"]: c["final_eval_status"] for c in cases}
    assert statuses["case_0003"] == statuses["case_0004"] == EvalStatus.NOT_EVALUATED
    assert statuses["case_0005"] == EvalStatus.FAILED and statuses["case_0001"] == EvalStatus.PASSED
    console = [re.sub(r"\d{8}-\d{6}-[0-9a-f]{4}", "RUN", runs[w].out) for w in (1, 2)]
    assert "scored by 2 worker processes\n" in console[1]
    console[1] = console[1].replace("scored by 2 worker processes\n", "")
    assert console[1] == console[0].replace("w1.", "w2.")  # the table, summary and warnings
    assert _stored(tmp_path / "w2.sqlite") == _stored(tmp_path / "w1.sqlite")


def test_each_workers_metric_headers_are_numbered_as_the_runs_in_its_history(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    numbered: set[tuple[int | None, int]] = set()  # (the worker's number, the run's)
    adopt = CaseEncoder._adopted

    def adopted(self: CaseEncoder, stored: StoredRecord) -> Encoded:
        encoded = adopt(self, stored)
        numbered.add((stored.number, record_header(encoded.text) or 0))
        return encoded

    monkeypatch.setattr(CaseEncoder, "_adopted", adopted)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    small = _write_run(first, {"response_match_score": 0.5})  # one chunk: one worker sees it
    large = _write_run(second)  # another header, which the other worker meets first
    data = json.loads(Path(small[0]).read_text())
    data["eval_set_id"], data["eval_cases"] = "small", data["eval_cases"][:10]
    Path(small[0]).write_text(json.dumps(data))
    sets = [small[0], large[0], "--traces", large[2], "--traces", small[2]]
    for workers in (1, 2):
        history = tmp_path / f"w{workers}.sqlite"
        run = run_cli("eval", *sets, "--workers", workers, "--history-file", history)
        assert run.code == 1, run.output

    assert _stored(tmp_path / "w2.sqlite") == _stored(tmp_path / "w1.sqlite")
    with HistoryStore(tmp_path / "w2.sqlite") as store:
        [run_info] = store.runs()
        assert len(store.run_headers(run_info.id)) == 2
    assert (0, 1) in numbered  # a worker's first header was the run's second


def test_a_run_recorded_with_workers_resumes_with_workers_to_the_same_results(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    args = _write_run(tmp_path)
    history = tmp_path / "runs.sqlite"
    common = ["eval", *args, "--workers", "2", "--history-file", history, "--no-progress"]
    fresh = run_cli(*common, "--output", tmp_path / "fresh.json")
    assert fresh.code == 1, fresh.output
    with sqlite3.connect(history) as db:  # as if it had stopped two thirds of the way
        db.execute("DELETE FROM case_results WHERE eval_id > 'case_0100'")
        db.execute("UPDATE runs SET status = 'interrupted'")
    db.close()

    resumed = run_cli(*common, "--output", tmp_path / "resumed.json", "--resume", "latest")

    assert resumed.code == 1, resumed.output
    assert "102 case result(s) kept" in resumed.out  # case_0010 twice
    fresh_cases = _results(tmp_path / "fresh.json")["eval_case_results"]
    assert _results(tmp_path / "resumed.json")["eval_case_results"] == fresh_cases
    with HistoryStore(history) as store:
        [run] = store.runs()
        assert run.status == "finished" and run.cases == CASES + 1
        [stored] = store.results(run.id)
    assert (
        _without_times(stored.model_dump(mode="json", exclude_none=True))["eval_case_results"]
        == fresh_cases
    )


def test_a_kept_result_a_worker_cannot_decode_is_decoded_in_the_run_process(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = _write_run(tmp_path)
    history = tmp_path / "runs.sqlite"
    common = ["eval", *args, "--workers", "2", "--history-file", history, "--no-progress"]
    fresh = run_cli(*common, "--output", tmp_path / "fresh.json")
    with sqlite3.connect(history) as db:  # recorded without outputs: the records are decoded
        db.execute("UPDATE runs SET status = 'interrupted'")
        db.execute("UPDATE case_results SET output = NULL")
    db.close()
    decode = Decoder.__call__
    here: list[str] = []  # decoded in the run's process

    def only_here(self: Decoder, eval_id: str, *args: Any) -> EvalCaseResult:
        in_worker = multiprocessing.parent_process() is not None
        if eval_id == "case_0042" and in_worker:
            raise HistoryError("not in a worker")  # the workers are forked after this
        if not in_worker:
            here.append(eval_id)
        return decode(self, eval_id, *args)

    monkeypatch.setattr(Decoder, "__call__", only_here)
    resumed = run_cli(*common, "--output", tmp_path / "resumed.json", "--resume", "latest")

    assert resumed.code == fresh.code == 1, resumed.output
    assert f"{CASES + 1} case result(s) kept" in resumed.out
    fresh_cases = _results(tmp_path / "fresh.json")["eval_case_results"]
    assert _results(tmp_path / "resumed.json")["eval_case_results"] == fresh_cases
    assert "case_0042" in here and "case_0120" not in here  # its chunk only


@pytest.mark.parametrize("workers", ["2", "1"])
def test_a_resumed_run_adds_the_outputs_workers_made_back_without_decoding_their_records(
    run_cli: RunCli, tmp_path: Path, workers: str
) -> None:
    args = _write_run(tmp_path)
    history = tmp_path / "runs.sqlite"
    common = ["eval", *args, "--history-file", history, "--no-progress"]
    fresh = run_cli(*common, "--workers", "2", "--output", tmp_path / "fresh.json")
    assert fresh.code == 1, fresh.output
    with sqlite3.connect(history) as db:
        assert db.execute("SELECT COUNT(output) FROM case_results").fetchone() == (CASES + 1,)
        db.execute("UPDATE runs SET status = 'interrupted'")
        db.execute("UPDATE case_results SET result = 'not a record'")  # only outputs are read
    db.close()

    resumed = run_cli(
        *common, "--workers", workers, "--output", tmp_path / "resumed.json", "--resume", "latest"
    )

    assert resumed.code == 1, resumed.output
    assert _results(tmp_path / "resumed.json") == _results(tmp_path / "fresh.json")
    said = [line.replace("resumed.json", "fresh.json") for line in resumed.out.splitlines()]
    said.remove(f"resuming run {run_id(history)}: {CASES + 1} case result(s) kept")
    scored = "scored by 2 worker processes"  # said when workers start (none with --workers 1)
    assert [line for line in said if line != scored] == [
        line for line in fresh.out.splitlines() if line != scored
    ]  # the same table, the same cases listed


def test_outputs_a_different_version_of_assay_recorded_are_not_added_back_but_decoded(
    run_cli: RunCli, tmp_path: Path
) -> None:
    args = _write_run(tmp_path)
    history = tmp_path / "runs.sqlite"
    common = ["eval", *args, "--workers", "2", "--history-file", history, "--no-progress"]
    fresh = run_cli(*common, "--output", tmp_path / "fresh.json")
    with sqlite3.connect(history) as db:
        db.execute("UPDATE runs SET status = 'interrupted', assay_version = '0.0.1'")
        db.execute("UPDATE case_results SET output = x'00'")  # would not read
    db.close()

    resumed = run_cli(*common, "--output", tmp_path / "resumed.json", "--resume", "latest")

    assert resumed.code == fresh.code == 1, resumed.output
    assert _results(tmp_path / "resumed.json") == _results(tmp_path / "fresh.json")


def test_cases_scored_in_the_run_process_store_no_output(run_cli: RunCli, tmp_path: Path) -> None:
    args = _write_run(tmp_path)
    history = tmp_path / "runs.sqlite"
    run = run_cli("eval", *args, "--workers", "1", "--history-file", history, "--no-progress")
    assert run.code == 1, run.output
    with sqlite3.connect(history) as db:
        assert db.execute("SELECT COUNT(*), COUNT(output) FROM case_results").fetchone() == (
            CASES + 1,
            0,
        )
    db.close()


DEADLY = """
    import multiprocessing
    import os
    from pathlib import Path

    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


    def deadly(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        text = actual_invocations[0].user_content.parts[0].text
        if multiprocessing.parent_process() is not None:  # only ever in a worker
            if text == "weather 7?":
                os._exit(3)  # every time
            once = Path(__file__).with_name("died once")
            if text == "weather 20?" and not once.exists():
                once.write_text("")
                os._exit(4)  # the first time only
        rows = [
            PerInvocationResult(actual_invocation=inv, score=1.0, eval_status=EvalStatus.PASSED)
            for inv in actual_invocations
        ]
        return EvaluationResult(
            overall_score=1.0, overall_eval_status=EvalStatus.PASSED, per_invocation_results=rows
        )
"""


def test_a_case_that_kills_its_worker_twice_is_not_evaluated_and_the_rest_are_scored(
    run_cli: RunCli, tmp_path: Path
) -> None:
    (tmp_path / "deadly_metric.py").write_text(textwrap.dedent(DEADLY))
    args = _write_run(tmp_path, {"deadly": 0.5})
    config = json.loads((tmp_path / "test_config.json").read_text())
    config["custom_metrics"] = {"deadly": {"code_config": {"name": "deadly_metric.deadly"}}}
    (tmp_path / "test_config.json").write_text(json.dumps(config))

    run = run_cli(
        "eval", *args, "--workers", "2", "--output", tmp_path / "out.json", "--no-history"
    )

    assert run.code == 1, run.output
    [result] = [json.loads((tmp_path / "out.json").read_text())]
    by_id = {(c["eval_id"], c["assay"]["run"]): c for c in result["eval_case_results"]}
    assert len(by_id) == CASES + 1  # every case has its result
    killer = by_id[("case_0007", 1)]
    assert killer["final_eval_status"] == EvalStatus.NOT_EVALUATED
    assert "worker process scoring it died (exit code 3), twice" in killer["assay"]["reason"]
    assert by_id[("case_0020", 1)]["final_eval_status"] == EvalStatus.PASSED  # died once: again
    assert (tmp_path / "died once").exists()
    scored = [
        c for key, c in by_id.items() if key[0] not in ("case_0003", "case_0004", "case_0007")
    ]
    assert {c["final_eval_status"] for c in scored} == {EvalStatus.PASSED}
    assert "case_0007" in run.out  # shown among the cases not evaluated


def test_a_chunk_whose_scoring_raises_is_scored_in_the_run_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = _write_run(tmp_path)
    failing = process_worker._summary

    def summary(result: EvalCaseResult) -> bytes:
        if result.eval_id == "case_0033":
            raise RuntimeError("no summary for you")
        return failing(result)

    monkeypatch.setattr(process_worker, "_summary", summary)  # the workers are forked after
    jobs = [EvalSetJob(load_eval_set(args[0]), parse_config(json.loads(Path(args[4]).read_text())))]
    traces = load_traces([args[2]])
    told: list[EvalCaseResult] = []

    [with_workers] = evaluate_sync(
        jobs,
        traces,
        executor=ProcessExecutor(2),
        on_case=lambda _job, r: told.append(r),
        progress=False,
    )
    [alone] = evaluate_sync(jobs, traces, progress=False)

    dumped = [
        _without_times(c.model_dump(mode="json", exclude_none=True))
        for c in with_workers.eval_case_results
    ]
    assert dumped == [
        _without_times(c.model_dump(mode="json", exclude_none=True))
        for c in alone.eval_case_results
    ]
    assert [r.eval_id for r in told] == [c.eval_id for c in alone.eval_case_results]
    by_id = {r.eval_id: r for r in told}
    assert by_id["case_0033"].eval_metric_result_per_invocation  # its chunk scored here: whole
    assert by_id["case_0034"].eval_metric_result_per_invocation
    assert not by_id["case_0100"].eval_metric_result_per_invocation  # a worker's: its summary


def test_a_run_with_an_agent_or_a_judge_is_scored_in_this_process(tmp_path: Path) -> None:
    args = _write_run(tmp_path, {"final_response_match_v2": 0.5})
    jobs = [EvalSetJob(load_eval_set(args[0]), parse_config(json.loads(Path(args[4]).read_text())))]
    plan = RunPlan(traces=load_traces([args[2]]))

    assert "judged metrics" in str(ProcessExecutor(4).why_local(jobs, plan))
    assert ProcessExecutor(1).why_local(jobs, plan) == "one worker"
    assert ProcessExecutor(None).chosen(jobs) == 1  # auto: fewer cases than workers pay for
    with pytest.raises(ValueError, match="at least 1"):
        ProcessExecutor(0)


def test_workers_given_for_a_judged_run_say_it_is_scored_in_one_process(
    run_cli: RunCli, tmp_path: Path
) -> None:
    args = _write_run(tmp_path, {"final_response_match_v2": 0.5})

    run = run_cli("eval", *args, "--workers", "3", "--no-history", "--max-cases", "0")

    assert run.code in (0, 1), run.output
    expected = "--workers 3: scored in one process, as judged metrics are scored in one"
    assert expected in " ".join(run.out.split())


def test_workers_with_the_ray_executor_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    args = _write_run(tmp_path)

    run = run_cli("eval", *args, "--workers", "2", "--executor", "ray", "--no-history")

    assert run.code == 2
    assert "--workers" in run.err and "--executor ray" in run.err


@pytest.mark.parametrize("given", ["0", "many", "-3"])
def test_workers_must_be_auto_or_a_number_from_one(
    run_cli: RunCli, tmp_path: Path, given: str
) -> None:
    args = _write_run(tmp_path)

    run = run_cli("eval", *args, "--workers", given, "--no-history")

    assert run.code == 2
    assert f"expected auto or a number from 1 to 512; got '{given}'" in run.err


def test_auto_scores_a_large_deterministic_run_in_a_worker_a_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "AUTO_MIN_CASES", 100)
    monkeypatch.setattr(processes, "usable_cores", lambda: 3)
    forked: list[int] = []
    start = pool.Pool.start
    monkeypatch.setattr(pool.Pool, "start", lambda made: (forked.append(made.size), start(made)))
    args = _write_run(tmp_path)
    jobs = [EvalSetJob(load_eval_set(args[0]), parse_config(json.loads(Path(args[4]).read_text())))]

    [result] = evaluate_sync(
        jobs, load_traces([args[2]]), executor=ProcessExecutor(None), progress=False
    )

    assert forked == [3]
    assert len(result.eval_case_results) == CASES + 1


SLOW = """
    import time

    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


    def slow(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        time.sleep(0.05)
        rows = [
            PerInvocationResult(actual_invocation=inv, score=1.0, eval_status=EvalStatus.PASSED)
            for inv in actual_invocations
        ]
        return EvaluationResult(
            overall_score=1.0, overall_eval_status=EvalStatus.PASSED, per_invocation_results=rows
        )
"""


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_workers_end_when_the_run_they_work_for_is_killed(tmp_path: Path) -> None:
    (tmp_path / "slow_metric.py").write_text(textwrap.dedent(SLOW))
    args = _write_run(tmp_path, {"slow": 0.5})  # 150 cases of 50 ms on two workers: ~4 s
    config = json.loads((tmp_path / "test_config.json").read_text())
    config["custom_metrics"] = {"slow": {"code_config": {"name": "slow_metric.slow"}}}
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    assay = Path(sys.executable).parent / "assay"
    command = [str(assay), "eval", *args, "--workers", "2", "--no-history", "--no-progress"]
    run = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
            workers = _children(run.pid)
        assert len(workers) == 2, "no workers started"
        run.send_signal(signal.SIGKILL)
        run.wait(10)
        deadline = time.monotonic() + 10  # each ends at its next message: EOF, or a broken pipe
        while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [w for w in workers if Path(f"/proc/{w}").exists()]
        assert not left, f"workers {left} outlived the run"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if run.stderr is not None:
            run.stderr.close()
