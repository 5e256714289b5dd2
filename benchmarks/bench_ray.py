"""Benchmark: the Ray executor (``assay eval --executor ray``) against the in-process runner, with
a CPU-bound agent and a remote-like judge, on 1 and 2 local Ray workers; and the executor's own
cost per case.

    .venv/bin/python benchmarks/bench_ray.py [--cases 40] [--turns 2] [--cpu-ms 50]
        [--latency-ms 100] [--workers 1 2] [--overhead-cases 100] [--task-cpus 1.0]
        [--cases-per-task 1] [--json FILE]

Workload: ``--cases`` cases of ``--turns`` static turns each. The agent (a Python file, shipped
to the workers as Ray ships it for ``--agent path/file.py:attr``) spins ``--cpu-ms`` of CPU per
turn, holding the GIL as real Python agent code does, then echoes the user. Every turn is judged
once by ``final_response_match_v2`` (one sample) against ``JudgeServer`` (tests/_judge_server.py),
a real OpenAI-compatible HTTP server on 127.0.0.1 that answers after ``--latency-ms``. The
response cache is off, so every run makes every call. Judge concurrency 8, inference
concurrency 4 (per process in one process; for the whole cluster on Ray).

Each line is one run through the Python API (:func:`assay.runner.evaluate.evaluate_sync`,
:func:`assay.runner.ray_executor.evaluate_on_ray`): ``in-process``, then ``ray, W worker(s)``
for each ``--workers`` W on a fresh local cluster of W CPUs (tasks of ``--cases-per-task``
cases, by default as the executor chooses, each taking ``--task-cpus``). Wall time excludes
starting the cluster and a warm-up run on 2 x W cases that starts the workers with the agent's
code (``start s``), and includes the first task, which checks the workers. ``ideal`` is the
agent's CPU divided by the workers, or the judge's latency times the calls divided by the judge
concurrency, whichever is more.

Overhead: ``--overhead-cases`` one-turn cases with an agent that does nothing and a metric
without a judge (``response_match_score``), in process and on Ray with ``--overhead-workers``
workers (on the cluster of that judged run, warmed up the same way): the difference in wall time
per case is what the executor costs per case (tasks, results as JSON both ways, a fresh event
loop and metrics per task, the driver's bookkeeping).

Every run must score every case PASSED; the script exits 1 otherwise.

Measured (2 cores, nothing else running, Python 3.11, ray 2.60.0; defaults):

    40 cases x 2 turns, agent 50 ms CPU per turn, judge 100 ms per call
    run                  wall s  cases/s  start s  ideal s  passed
    in-process             6.32      6.3     0.00     4.00  40/40
    ray, 1 worker          9.05      4.4    46.60     4.00  40/40
    ray, 2 workers         7.05      5.7    45.35     2.00  40/40
    overhead, 100 idle one-turn cases: in-process 18.8 ms/case, ray, 2 workers 30.7 ms/case:
    +11.9 ms per case

On two cores the driver, Ray's own processes and the workers share them, so two workers are
1.28x one and no faster than one process; the overhead per case is the figure that carries
over to a real cluster.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _judge_server import JudgeServer
from _judges import approve

from assay.agents.spec import resolve_agent
from assay.metrics.base import EvalStatus
from assay.results.model import EvalSetResult
from assay.runner.agent_run import AgentSettings
from assay.runner.evaluate import EvalSetJob, JudgeSettings, evaluate_sync
from assay.runner.inference import InferenceSettings
from assay.runner.jobs import jobs_for

AGENT = """
import time

def busy(message, session):
    deadline = time.process_time() + {cpu_s!r}
    spins = 0
    while time.process_time() < deadline:
        spins += 1
    return "echo " + message


def idle(message, session):
    return "echo " + message
"""

JUDGED = {
    "criteria": {
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}
    }
}
UNJUDGED = {"criteria": {"response_match_score": 1.0}}


@dataclass
class Run:
    name: str
    wall_s: float
    cases: int
    passed: int
    start_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "wall_s": round(self.wall_s, 3),
            "cases": self.cases,
            "passed": self.passed,
            "cluster_start_s": round(self.start_s, 3),
        }


def write_inputs(folder: Path, cases: int, turns: int, config: dict[str, Any]) -> Path:
    """An eval set of ``cases`` static conversations of ``turns`` turns, with ``config``."""
    folder.mkdir(parents=True, exist_ok=True)
    eval_cases = [
        {
            "eval_id": f"case_{n}",
            "conversation": [
                {
                    "invocation_id": f"inv-{n}-{t}",
                    "user_content": {"role": "user", "parts": [{"text": f"question {n}.{t}"}]},
                    "final_response": {
                        "role": "model",
                        "parts": [{"text": f"echo question {n}.{t}"}],
                    },
                }
                for t in range(turns)
            ],
        }
        for n in range(cases)
    ]
    path = folder / "bench.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "bench_ray", "eval_cases": eval_cases}))
    (folder / "test_config.json").write_text(json.dumps(config))
    return path


def write_agents(folder: Path, cpu_ms: float) -> tuple[str, str]:
    """The busy agent's spec and the idle one's (one file: the workers set it up once)."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "agents.py"
    source.write_text(AGENT.format(cpu_s=cpu_ms / 1000))
    return f"{source}:busy", f"{source}:idle"


def _passed(results: list[EvalSetResult]) -> tuple[int, int]:
    cases = [case for result in results for case in result.eval_case_results]
    return len(cases), sum(case.final_eval_status is EvalStatus.PASSED for case in cases)


def _timed(name: str, call: Callable[[], list[EvalSetResult]], start_s: float = 0.0) -> Run:
    started = time.perf_counter()
    results = call()
    wall = time.perf_counter() - started
    cases, passed = _passed(results)
    return Run(name, wall, cases, passed, start_s)


@dataclass(frozen=True)
class Workload:
    """One eval set, its agent and judges, as every side runs it."""

    jobs: list[EvalSetJob]
    spec: str
    judges: JudgeSettings


def _on_ray(
    workers: int,
    workloads: list[Workload],
    task_cpus: float,
    cases_per_task: int | None,
) -> list[Run]:
    """Each workload on a fresh local cluster of ``workers`` CPUs, each warmed up first."""
    import ray

    from assay.runner.ray_executor import evaluate_on_ray

    name = f"ray, {workers} worker{'s' if workers > 1 else ''}"
    started = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, logging_level="WARNING")
    runs = []
    try:
        for load in workloads:
            # warm-up: the workers start, and set up the agent's code, on a few cases
            warm = EvalSetJob(_first_cases(load.jobs[0], 2 * workers), load.jobs[0].config)
            evaluate_on_ray([warm], agent=_agent(load.spec), agent_spec=load.spec)
            start_s = time.perf_counter() - started

            def run(load: Workload = load) -> list[EvalSetResult]:
                return evaluate_on_ray(
                    load.jobs,
                    agent=_agent(load.spec),
                    agent_spec=load.spec,
                    judges=load.judges,
                    task_cpus=task_cpus,
                    cases_per_task=cases_per_task,
                )

            runs.append(_timed(name, run, start_s))
            started = time.perf_counter()
    finally:
        ray.shutdown()
    return runs


def _first_cases(job: EvalSetJob, count: int) -> Any:
    eval_set = job.loaded.eval_set
    cases = eval_set.eval_cases[:count]
    warm = eval_set.model_copy(update={"eval_cases": cases, "eval_set_id": "warm_up"})
    return dataclasses.replace(job.loaded, eval_set=warm)


def _agent(spec: str) -> AgentSettings:
    return AgentSettings(resolve_agent(spec), InferenceSettings(concurrency=4, attempts=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--cpu-ms", type=float, default=50.0)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--overhead-cases", type=int, default=100)
    parser.add_argument("--overhead-workers", type=int, default=2)
    parser.add_argument("--task-cpus", type=float, default=1.0)
    parser.add_argument("--cases-per-task", type=int, default=None, help="default: auto")
    parser.add_argument("--json", dest="json_path", type=Path)
    args = parser.parse_args(argv)

    runs: list[Run] = []
    overhead: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench_ray_") as temp:
        folder = Path(temp)
        with JudgeServer(reply=approve, latency_s=args.latency_ms / 1000) as server:
            env = {"ASSAY_JUDGE_MODEL": "openai:bench-judge", "OPENAI_BASE_URL": server.base_url}
            busy, idle_agent = write_agents(folder / "agents", args.cpu_ms)
            judged = Workload(
                jobs_for([str(write_inputs(folder / "judged", args.cases, args.turns, JUDGED))]),
                busy,
                JudgeSettings(concurrency=8, cache=False, env=env, profile=None),
            )
            idle = Workload(
                jobs_for([str(write_inputs(folder / "idle", args.overhead_cases, 1, UNJUDGED))]),
                idle_agent,
                JudgeSettings(cache=False),
            )
            for load, into in ((judged, runs), (idle, overhead)):

                def in_process(load: Workload = load) -> list[EvalSetResult]:
                    return evaluate_sync(load.jobs, agent=_agent(load.spec), judges=load.judges)

                into.append(_timed("in-process", in_process))
            for workers in args.workers:
                loads = [judged, idle] if workers == args.overhead_workers else [judged]
                found = _on_ray(workers, loads, args.task_cpus, args.cases_per_task)
                runs.append(found[0])
                overhead.extend(found[1:])
            calls = server.count()

    turns = args.cases * args.turns
    ideal = {
        w: max(turns * args.cpu_ms / 1000 / w, turns * args.latency_ms / 1000 / 8)
        for w in args.workers
    }
    print(
        f"{args.cases} cases x {args.turns} turns, agent {args.cpu_ms:g} ms CPU per turn, judge "
        f"{args.latency_ms:g} ms per call ({calls} calls in all runs), task CPUs "
        f"{args.task_cpus:g}, cases per task {args.cases_per_task}"
    )
    print(f"{'run':<18} {'wall s':>8} {'cases/s':>8} {'start s':>8} {'ideal s':>8}  passed")
    for run in runs:
        workers = int(run.name.split(", ")[1].split()[0]) if run.name.startswith("ray") else 1
        print(
            f"{run.name:<18} {run.wall_s:8.2f} {run.cases / run.wall_s:8.1f} "
            f"{run.start_s:8.2f} {ideal.get(workers, ideal[min(ideal)]):8.2f}  "
            f"{run.passed}/{run.cases}"
        )
    local, ray_run = overhead[0], overhead[-1]
    per_case_ms = (ray_run.wall_s - local.wall_s) / args.overhead_cases * 1000
    print(
        f"overhead, {args.overhead_cases} idle one-turn cases: in-process "
        f"{local.wall_s:.2f} s ({local.wall_s / args.overhead_cases * 1000:.1f} ms/case), "
        f"{ray_run.name} {ray_run.wall_s:.2f} s "
        f"({ray_run.wall_s / args.overhead_cases * 1000:.1f} ms/case): "
        f"{per_case_ms:+.1f} ms per case"
    )
    complete = all(run.passed == run.cases == args.cases for run in runs) and all(
        run.passed == run.cases == args.overhead_cases for run in overhead
    )
    if args.json_path is not None:
        args.json_path.write_text(
            json.dumps(
                {
                    "runs": [run.as_json() for run in runs],
                    "overhead": [run.as_json() for run in overhead],
                    "overhead_ms_per_case": round(per_case_ms, 2),
                    "complete": complete,
                },
                indent=2,
            )
        )
    if not complete:
        print("error: some run did not pass every case", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
