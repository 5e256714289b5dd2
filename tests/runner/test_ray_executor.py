"""``assay eval --executor ray``: cases run as tasks on a real local Ray cluster (two CPUs, started
once for this module) give the in-process run's results, survive killed workers, share the
judge limits and the response cache, and say what is wrong before any agent call."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _judges import approve
from _support import Example, RunCli

from assay.agents.spec import resolve_agent
from assay.metrics.base import EvalStatus
from assay.results.model import EvalCaseResult
from assay.results.traces import Traces
from assay.runner.agent_run import AgentSettings
from assay.runner.evaluate import EvalSetJob, JudgeSettings
from assay.runner.inference import InferenceSettings
from assay.runner.jobs import jobs_for
from assay.runner.ray_executor import RayExecutorError, evaluate_on_ray

ray = pytest.importorskip("ray")  # the [ray] extra; CI installs it, so this never skips there

TIMING = {
    "duration_s",
    "duration",
    "creation_timestamp",
    "eval_set_result_id",
    "eval_set_result_name",
}


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    """One local Ray cluster of two CPUs for the module (starting one takes seconds)."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        yield
    finally:
        ray.shutdown()


def _without_timing(value: Any) -> Any:
    """A results document without what differs between two runs of the same inputs: times,
    durations, ids made of the time, and the duration metric's scores."""
    if isinstance(value, dict):
        if value.get("metric_name") == "invocation_duration_v1":
            return {k: v for k, v in value.items() if k not in ("score", "eval_status", "details")}
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def _results(path: Path) -> Any:
    return _without_timing(json.loads(path.read_text(encoding="utf-8")))


# --- the same results as in one process --------------------------------------------------------

REPLAYING_AGENT = """
import json
from pathlib import Path

_TRACES = json.loads(Path({traces!r}).read_text())
_BY_TEXT = {{
    inv["user_content"]["parts"][0]["text"]: inv
    for invocations in _TRACES.values() for inv in invocations
}}

def agent(message, session):
    recorded = _BY_TEXT[message]
    events = recorded.get("intermediate_data", {{}}).get("invocation_events", [])
    return events + [{{"author": "travel_agent", "content": recorded["final_response"]}}]
"""


@pytest.mark.parametrize("keep", ["2000", "2"])  # 2: results spilled to disk on the driver
def test_recorded_traces_scored_on_ray_give_the_in_process_results(
    run_cli: RunCli, example: Example, tmp_path: Path, keep: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_KEEP_CASES", keep)
    local, on_ray = tmp_path / "local.json", tmp_path / "ray.json"
    args = ("eval", example.evalset, "--traces", example.traces, "--no-cache", "--no-history")

    first = run_cli(*args, "--output", local)
    second = run_cli(*args, "--output", on_ray, "--executor", "ray")

    assert first.code == second.code == 0, second.output
    assert "5 passed, 0 failed, 0 not evaluated" in second.out
    assert _results(on_ray) == _results(local)
    assert json.loads(on_ray.read_text())["assay"]["judges"]  # judged on the workers, and named


def test_an_agent_file_run_on_ray_gives_the_in_process_results_and_traces(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    agent = tmp_path / "agents" / "replaying_agent.py"
    agent.parent.mkdir()
    agent.write_text(REPLAYING_AGENT.format(traces=str(example.traces)))
    outputs = {name: (tmp_path / f"{name}.json", tmp_path / f"{name}.traces.json") for name in "ab"}
    for name, extra in (("a", ()), ("b", ("--executor", "ray"))):
        out, traces = outputs[name]
        run = run_cli(
            "eval", example.evalset, "--agent", f"{agent}:agent", "--no-cache", "--no-history",
            "--output", out, "--save-traces", traces, *extra,
        )  # fmt: skip
        assert run.code == 0, run.output
        assert "5 passed, 0 failed, 0 not evaluated" in run.out

    assert _results(outputs["b"][0]) == _results(outputs["a"][0])
    assert _results(outputs["b"][1]) == _results(outputs["a"][1])


# --- workers that die --------------------------------------------------------------------------

DYING_AGENT = """
import os, signal
from pathlib import Path

def agent(message, session):
    if message.startswith("dies always"):
        os.kill(os.getpid(), signal.SIGKILL)
    if message.startswith("dies once"):
        marker = Path({markers!r}) / message.split()[-1]
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
    return "echo " + message
"""


@pytest.fixture(scope="module")
def dying_agent(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An agent file (one for the module, so its workers serve every test) that echoes the
    user, and kills its own worker for "dies always ...", and for "dies once TAG" the first
    time (it leaves a marker file named TAG)."""
    folder = tmp_path_factory.mktemp("dying")
    (folder / "markers").mkdir()
    source = folder / "agent" / "dying_agent.py"
    source.parent.mkdir()
    source.write_text(DYING_AGENT.format(markers=str(folder / "markers")))
    return f"{source}:agent"


def _echo_set(folder: Path, texts: list[str]) -> Path:
    """An eval set of one-turn cases, one per user text, answered by echoing it; its config."""
    cases = [
        {
            "eval_id": f"case_{n}",
            "conversation": [
                {
                    "invocation_id": f"inv-{n}",
                    "user_content": {"role": "user", "parts": [{"text": text}]},
                    "final_response": {"role": "model", "parts": [{"text": f"echo {text}"}]},
                }
            ],
        }
        for n, text in enumerate(texts, 1)
    ]
    path = folder / "echo.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "echo", "eval_cases": cases}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 1}}))
    return path


def _agent(spec: str) -> AgentSettings:
    return AgentSettings(resolve_agent(spec), InferenceSettings(attempts=1))


def test_a_case_whose_worker_is_killed_runs_again_and_is_recorded_once(
    run_cli: RunCli, tmp_path: Path, dying_agent: str
) -> None:
    evalset = _echo_set(tmp_path, ["hello", "dies once killed_once", "hi", "hey"])
    history = tmp_path / "history.sqlite"

    run = run_cli(
        "eval", evalset, "--agent", dying_agent, "--executor", "ray", "--history-file", history
    )  # fmt: skip

    assert run.code == 0, run.output
    assert "4 passed, 0 failed, 0 not evaluated" in run.out
    assert (Path(dying_agent).parents[1] / "markers" / "killed_once").exists()  # it did die
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT eval_id FROM case_results ORDER BY eval_id").fetchall()
    assert [row[0] for row in rows] == ["case_1", "case_2", "case_3", "case_4"]
    shown = run_cli("show", "latest", "--history-file", history)
    assert shown.code == 0, shown.output
    assert shown.out.count("case_2") == 1


def test_a_case_whose_worker_always_dies_is_not_evaluated_and_the_rest_go_on(
    tmp_path: Path, dying_agent: str
) -> None:
    jobs = jobs_for([str(_echo_set(tmp_path, ["a", "b", "dies always", "d"]))], None)
    handed: list[tuple[str, int]] = []

    def on_case(_job: EvalSetJob, result: EvalCaseResult) -> None:
        handed.append((result.eval_id, result.assay.run))

    (result,) = evaluate_on_ray(
        jobs, agent=_agent(dying_agent), agent_spec=dying_agent, on_case=on_case, task_attempts=2
    )

    assert handed == [("case_1", 1), ("case_2", 1), ("case_3", 1), ("case_4", 1)]
    statuses = {case.eval_id: case.final_eval_status for case in result.eval_case_results}
    assert statuses == {
        "case_1": EvalStatus.PASSED,
        "case_2": EvalStatus.PASSED,
        "case_3": EvalStatus.NOT_EVALUATED,
        "case_4": EvalStatus.PASSED,
    }
    reason = result.eval_case_results[2].assay.reason or ""
    assert "failed 2 time(s)" in reason and "WorkerCrashedError" in reason
    assert result.assay is not None and result.assay.summary.not_evaluated == 1


def test_cases_a_resumed_run_has_are_neither_run_nor_handed_on_again(
    tmp_path: Path, dying_agent: str
) -> None:
    jobs = jobs_for([str(_echo_set(tmp_path, ["a", "dies always", "c"]))], None)
    kept = EvalCaseResult(
        eval_set_id="echo", eval_id="case_2", final_eval_status=EvalStatus.PASSED
    )  # as a resumed run reads it back from the history
    handed: list[str] = []

    (again,) = evaluate_on_ray(
        jobs,
        agent=_agent(dying_agent),
        agent_spec=dying_agent,
        done={("echo", "case_2", 1): kept},  # had it run, its worker would have died
        on_case=lambda _job, result: handed.append(result.eval_id),
    )

    assert handed == ["case_1", "case_3"]
    assert again.eval_case_results[1] is kept
    assert [c.final_eval_status for c in again.eval_case_results] == [EvalStatus.PASSED] * 3


# --- limits and cache shared by the cluster ----------------------------------------------------

JUDGED = {
    "criteria": {
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}
    }
}


def _judged_set(folder: Path, count: int) -> list[EvalSetJob]:
    evalset = _echo_set(folder, [f"hello {n}" for n in range(count)])
    (folder / "test_config.json").write_text(json.dumps(JUDGED))
    return jobs_for([str(evalset)], None)


def _traces_of(jobs: list[EvalSetJob]) -> Any:
    from assay.results.traces import Traces

    traces = Traces()
    for case in jobs[0].loaded.eval_set.eval_cases:
        traces.add(("echo", case.eval_id), list(case.conversation or []))
    return traces


@pytest.mark.parametrize("limit", [1, 2])
def test_the_judge_limit_holds_for_the_whole_cluster(tmp_path: Path, limit: int) -> None:
    jobs = _judged_set(tmp_path, 4)
    with JudgeServer(reply=approve, latency_s=0.3) as server:
        env = {"ASSAY_JUDGE_MODEL": "openai:stub-judge", "OPENAI_BASE_URL": server.base_url}
        judges = JudgeSettings(concurrency=limit, cache=False, env=env, profile=None)
        (result,) = evaluate_on_ray(jobs, _traces_of(jobs), judges=judges, window=4)
        assert server.count() == 4
        assert server.max_in_flight == limit  # two workers, each free to send its own call
    assert [c.final_eval_status for c in result.eval_case_results] == [EvalStatus.PASSED] * 4


def test_an_unchanged_rerun_on_the_cluster_asks_the_judge_nothing(tmp_path: Path) -> None:
    jobs = _judged_set(tmp_path, 3)
    with JudgeServer(reply=approve) as server:
        env = {"ASSAY_JUDGE_MODEL": "openai:stub-judge", "OPENAI_BASE_URL": server.base_url}
        judges = JudgeSettings(cache_path=tmp_path / "cache.sqlite", env=env, profile=None)
        (first,) = evaluate_on_ray(jobs, _traces_of(jobs), judges=judges)
        asked = server.count()
        (second,) = evaluate_on_ray(jobs, _traces_of(jobs), judges=judges)
        assert asked == 3 and server.count() == asked
    usage = second.assay.usage["final_response_match_v2"] if second.assay else None
    assert usage is not None and usage.cache_hits == 3 and usage.calls == 0
    statuses = [[c.final_eval_status for c in r.eval_case_results] for r in (first, second)]
    assert statuses == [[EvalStatus.PASSED] * 3] * 2


# --- what cannot run says so before any agent call ---------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_cluster_is_a_usage_error_before_anything_runs(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--no-history",
        "--executor", "ray", "--ray-address", address,
    )  # fmt: skip
    assert run.code == 2, run.output
    assert f"cannot reach the Ray cluster at {address}" in run.err
    assert "Traceback" not in run.output


def test_an_agent_the_workers_cannot_import_is_an_error_before_any_agent_call(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "only_here"
    folder.mkdir()
    (folder / "driver_only_agent.py").write_text(
        "from pathlib import Path\n"
        f"def agent(message, session):\n    Path({str(tmp_path / 'called')!r}).touch()\n"
        "    return message\n"
    )
    monkeypatch.syspath_prepend(str(folder))  # importable here, installed nowhere else
    evalset = _echo_set(tmp_path, ["hello", "hi"])

    run = run_cli(
        "eval", evalset, "--agent", "driver_only_agent:agent", "--no-history",
        "--executor", "ray",
    )  # fmt: skip

    assert run.code == 2, run.output
    assert "the workers cannot load the agent 'driver_only_agent:agent'" in run.err
    assert "driver_only_agent" in run.err and "Traceback" not in run.output
    assert not (tmp_path / "called").exists()


BLOCK_ASSAY = """
import sys

class _NoAssay:
    def find_spec(self, name, path=None, target=None):
        if name == "assay" or name.startswith("assay."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoAssay())
"""


def test_a_cluster_whose_workers_lack_assay_is_an_error_before_any_agent_call(
    tmp_path: Path, example: Example
) -> None:
    """A driver already connected to a cluster whose workers cannot import assay (their Python
    path starts with a sitecustomize that refuses it, as a node without assay would)."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCK_ASSAY)
    script = textwrap.dedent(
        f"""
        import ray
        from assay.cli.main import main
        ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR",
                 runtime_env={{"env_vars": {{"PYTHONPATH": {str(blocker)!r}}}}})
        main(["eval", {str(example.evalset)!r}, "--traces", {str(example.traces)!r},
              "--no-history", "--no-progress", "--no-cache", "--executor", "ray"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=False
    )

    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "the cluster's workers cannot import assay: install it on every node" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_address_that_is_no_address_is_said_to_be_one() -> None:
    from assay.runner.ray_executor import check_reachable

    with pytest.raises(RayExecutorError, match="is not HOST:PORT"):
        check_reachable("nowhere")


def test_a_run_joins_a_running_cluster_and_ships_the_agent_file_with_the_job(
    tmp_path: Path, dying_agent: str
) -> None:
    evalset = _echo_set(tmp_path, ["hello", "hi"])
    address = ray.get_runtime_context().gcs_address
    command = [
        sys.executable, "-c", "from assay.cli.main import main; main()", "eval", str(evalset), "--agent", dying_agent,
        "--executor", "ray", "--ray-address", address, "--no-history", "--no-progress",
    ]  # fmt: skip

    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed, 0 not evaluated" in done.stdout


def test_eval_without_the_ray_executor_does_not_import_ray(
    example: Example, tmp_path: Path
) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from assay.cli.main import main
        try:
            main(["eval", {str(example.evalset)!r}, "--traces", {str(example.traces)!r},
                  "--config", {str(tmp_path / "c.json")!r}, "--no-history", "--no-progress"])
        except SystemExit:
            pass
        print("ray imported:", "ray" in sys.modules)
        """
    )
    (tmp_path / "c.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert "ray imported: False" in done.stdout, done.stdout + done.stderr


# --- the judge limit adapts for the whole cluster --------------------------------------------
# Two workers judging against a provider that serves 4 requests at once share one limit (the
# Limiter actor), which falls to what the provider serves after the first burst.

ADAPTIVE_VALID = '{"reasoning": "same", "is_the_agent_response_valid": "valid"}'
CASES, TURNS, SAMPLES = 8, 10, 5  # the shared adaptive limit test's judge calls


def _eval_set(folder: Path) -> Path:
    """CASES cases of TURNS turns each, judged by final_response_match_v2 with SAMPLES samples a
    turn: CASES * TURNS * SAMPLES judge calls."""
    cases = [
        {
            "eval_id": f"case_{case}",
            "conversation": [
                {
                    "invocation_id": f"inv-{case}-{turn}",
                    "user_content": {"role": "user", "parts": [{"text": f"question {turn}"}]},
                    "final_response": {"role": "model", "parts": [{"text": f"answer {turn}"}]},
                }
                for turn in range(TURNS)
            ],
        }
        for case in range(CASES)
    ]
    path = folder / "limited.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "limited", "eval_cases": cases}))
    options = {"num_samples": SAMPLES}
    criteria = {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": options}}
    (folder / "test_config.json").write_text(json.dumps({"criteria": criteria}))
    return path


def test_two_workers_share_one_adaptive_limit_so_few_calls_are_refused_and_none_fails(
    tmp_path: Path,
) -> None:
    jobs = jobs_for([str(_eval_set(tmp_path))], None)
    traces = Traces()
    for case in jobs[0].loaded.eval_set.eval_cases:
        traces.add(("limited", case.eval_id), list(case.conversation or []))
    with JudgeServer(
        default=ADAPTIVE_VALID, latency_s=0.02, max_concurrent=4, retry_after="0.2"
    ) as server:
        env = {"ASSAY_JUDGE_MODEL": "openai:stub-judge", "OPENAI_BASE_URL": server.base_url}
        # 8 calls at once allowed: the ceiling, for the cluster as a whole
        judges = JudgeSettings(concurrency=8, cache=False, env=env, profile=None)
        (result,) = evaluate_on_ray(jobs, traces, judges=judges, cases_per_task=1)
        refused, answered = server.refused, server.count() - server.refused

    assert answered == CASES * TURNS * SAMPLES
    assert refused < 0.05 * (answered + refused)  # about 10 of 410 when run alone
    statuses = [c.final_eval_status for c in result.eval_case_results]
    assert statuses == [EvalStatus.PASSED] * CASES
    turns = [
        metric.eval_status
        for scored in result.eval_case_results
        for invocation in scored.eval_metric_result_per_invocation
        for metric in invocation.eval_metric_results
        if metric.metric_name == "final_response_match_v2"
    ]
    assert turns == [EvalStatus.PASSED] * (CASES * TURNS)  # every turn judged, none given up
