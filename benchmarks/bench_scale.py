"""Benchmark: whole-process time and peak memory of scoring recorded runs at scale, assay
against google-adk 2.13.0, on the same generated data in the same run.

    .venv/bin/python benchmarks/bench_scale.py [--n 5000 [50000 ...]] [--seed 0] [--repeat 3]
        [--json FILE] [--timeout 600] [--main-only | --sides SIDE ...] [--keep DIR [--reuse]]
        [--workers N]
    .venv/bin/python benchmarks/bench_scale.py --profile [--profile-n 5000 20000]

For each ``--n`` it writes, streaming to disk (so 1,000,000 cases fit), from
``bench_deterministic``'s generator (cases of 1-5 invocations, 0-6 tool calls with small
nested arguments, some of the actual calls mutated; responses of 5-60 words near the
references):

* ``bench.evalset.json``: an ADK eval set, each case a static ``conversation``;
* ``bench.evalset.jsonl``: the same cases, a header line then one case per line;
* ``bench.traces.json``: ``{eval_id: [Invocation, ...]}``, the actual invocations;
* ``test_config.json``: ``tool_trajectory_avg_score`` 1.0, ``response_match_score`` 0.8.

Then it runs, each as its own process, ``--repeat`` times in turn (the median is reported):

``assay``
    ``assay eval bench.evalset.json --traces ... --config ... --output results.json
    --no-history --no-progress``: the figure the ratios are for;
``assay, history``
    the same recording the run in a fresh history file (the default, ``--history``);
``assay, jsonl``
    the same as ``assay`` reading the JSONL eval set;
``assay, workers``, ``assay, jsonl, w`` (not run unless named)
    ``assay`` and ``assay, jsonl`` with ``--workers N`` (``--workers``, default: the cores);
``assay, 1 proc`` (not run unless named)
    ``assay`` with ``--workers 1``: scored in one process (``assay`` itself takes the CLI's
    default, ``auto``, which forks a worker a core from 2,000 cases);
``ADK``
    a driver (written into the folder) doing what ``adk eval`` does once it has the
    inferences, without an agent: the eval set loaded with ``load_eval_set_from_file``, the
    config with ``get_evaluation_criteria_or_default`` / ``get_eval_metrics_from_config`` (the
    two criteria and ADK's four informational efficiency metrics, as assay scores them), the
    traces validated into ADK ``Invocation``s, each case scored by each metric's evaluator
    (``TrajectoryEvaluator``, ``RougeEvaluator``, the efficiency evaluators)
    ``evaluate_invocations`` and aggregated as ``LocalEvalService`` does into
    ``EvalCaseResult``s, and written as ``LocalEvalSetResultsManager`` writes an
    ``EvalSetResult`` (``model_dump_json(indent=2)``). ``LocalEvalService`` itself cannot be
    imported here: it needs pandas (ADK's ``[eval]`` extra), which ``adk eval`` reports as a
    missing dependency.

Wall seconds, CPU seconds (user + sys, workers included) and max RSS (of the largest process)
come from the operating system's accounting of each finished child (``os.wait4``); "all MB"
is the largest sum of the RSS of the run's processes, sampled every 0.25 s from /proc. With
``--keep DIR --reuse`` inputs already written there for the same ``--n`` and ``--seed`` are
used as they are (a million cases take 13 minutes to write). Each run's results must hold every case,
and both sides must count the same passed and failed cases; the script exits 1 otherwise.

``--profile`` runs ``assay eval --no-history`` in a child process under
``tracemalloc`` at each ``--profile-n``, snapshots the heap whenever it grows past the last
snapshot (so the last one is taken near the peak), and prints the 15 biggest allocation sites
at that point: by the innermost frame, and by the innermost frame in assay's own code.
Tracing is slow here (about 8 minutes for 5,000 cases at 8 frames), so keep ``--profile-n``
small.

Measured (2 shared cores; Python 3.11; seed 0; commit 67c2421 for 5,000, fe939c3 for 50,000):

    N = 5,000 (15,037 invocations, inputs 34.5 MB), median of 3
    side               wall s   max RSS MB   time/ADK  RSS/ADK
    assay                9.36        834.3      0.208    0.446
    assay, history       9.15        877.0      0.203    0.469
    assay, jsonl         8.90        852.7      0.198    0.456
    ADK                 45.03       1871.0
    N = 50,000 (150,061 invocations, inputs 345.3 MB), one run
    assay              111.77       7427.5      0.216    0.422
    ADK                517.72      17614.3

Both sides counted the same passed cases (115 and 1,087). Before fe939c3 (the results file
built as one dict and one string) assay took 20.9 s and 1,911 MB at 5,000 cases.

Issue 33's lean core, 5,000 cases, CPU seconds (user + sys, the column to compare on a shared
machine), median of 3, load 3-4: ``assay`` 12.48 → 9.92 s and 541 → 396 MB, ``assay, history``
16.03 → 10.78 s; ADK (one run) 34.7 s and 1,987 MB. CPU seconds grow with the load too (ADK
took 44.7 s at load 5), so compare sides of one run, or interleave the runs of two trees.

Issue 33's second pass (spans for streamed inputs, compact results indented by msgspec, ROUGE
by pieces; idle machine, seed 0):

    N = 5,000, median of 3      wall s   CPU s   max RSS MB   time/ADK  RSS/ADK
    assay                         7.45    7.38        160.1      0.225    0.081
    ADK                          33.15   33.31       1987.4
    N = 50,000, one run: assay 75.64 s / 166.1 MB, assay (jsonl) 81.06 s / 166.2 MB
    N = 200,000, one run: assay (jsonl) 321.11 s / 194.6 MB (1.6 ms a case); again after the
    coverage check and the duplicate-id check stopped holding every case's key: 283.93 s /
    197.5 MB (1.42 ms a case)

Issue 33's third pass: worker processes (``--workers``, ``auto`` by default; same machine, 2
shared cores, seed 0):

    N = 5,000, median of 3      wall s   CPU s   max RSS MB  all MB  time/ADK  RSS/ADK
    assay (auto: 2 workers)       4.76    7.56         64.1   177.3     0.139    0.032
    assay, workers (2)            4.26    6.55         63.7   176.0     0.124    0.032
    ADK                          34.32   34.33       1987.3  1987.3
    assay, 1 proc (another run)   7.76    7.69        159.0   159.1     0.226
    N = 200,000, one run: assay, jsonl, w 173.39 s, CPU 268.9 s, 193.1 MB in all
    N = 1,000,000 (6.9 GB of inputs, 27.6 GB of results), one run: assay, jsonl, w 848.36 s
    (14 min 8 s), CPU 1,346.7 s, 194.4 MB in all
    after resume's fourth pass (results written from a thread), same inputs, one run:
    713.5 s (11 min 54 s), CPU 1,219.2 s, 193.5 MB in all (787.3 s in a run just before)
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_deterministic

Json = Any

CONFIG: Json = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
EVAL_SET_ID = "bench_scale"
BLOCK_PAIRS = 3000  # invocation pairs generated at a time (about 1,000 cases)
ASSAY = "assay"
ASSAY_HISTORY = "assay, history"
ASSAY_JSONL = "assay, jsonl"
ASSAY_WORKERS = "assay, workers"
ASSAY_ONE = "assay, 1 proc"
ASSAY_JSONL_WORKERS = "assay, jsonl, w"
ADK = "ADK"
SIDE_NAMES = (
    ASSAY,
    ASSAY_HISTORY,
    ASSAY_JSONL,
    ASSAY_WORKERS,
    ASSAY_JSONL_WORKERS,
    ASSAY_ONE,
    ADK,
)
TOP = 15
FRAMES = 8  # frames kept per traced allocation

# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Inputs:
    """The files one ``--n`` is scored from."""

    folder: Path
    evalset: Path
    jsonl: Path
    traces: Path
    config: Path
    cases: int
    invocations: int


def generate_cases(n: int, seed: int) -> Iterator[tuple[list[Json], list[Json]]]:
    """``n`` cases of (actual, expected) invocations, a block of ``bench_deterministic``'s
    generator at a time (never all in memory)."""
    made = 0
    block = 0
    while made < n:
        for case in bench_deterministic.generate(BLOCK_PAIRS, seed * 1_000_000 + block):
            yield case
            made += 1
            if made == n:
                return
        block += 1


def _eval_id(index: int) -> str:
    return f"case_{index:07d}"


def write_inputs(n: int, seed: int, folder: Path, reuse: bool = False) -> Inputs:
    """Write the eval set (JSON and JSONL), the traces and the config for ``n`` cases (with
    ``reuse``, not when ``folder`` has those of the same ``n`` and ``seed`` already)."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / "inputs.json"
    if reuse and marker.is_file():
        written = json.loads(marker.read_text(encoding="utf-8"))
        if (written["n"], written["seed"]) == (n, seed):
            return Inputs(**{**written["inputs"], "folder": folder, **_paths(folder)})
    inputs = Inputs(
        folder,
        folder / "bench.evalset.json",
        folder / "bench.evalset.jsonl",
        folder / "bench.traces.json",
        folder / "test_config.json",
        n,
        0,
    )
    invocations = 0
    with (
        inputs.evalset.open("w", encoding="utf-8") as evalset,
        inputs.jsonl.open("w", encoding="utf-8") as jsonl,
        inputs.traces.open("w", encoding="utf-8") as traces,
    ):
        evalset.write(f'{{"eval_set_id": "{EVAL_SET_ID}", "name": "{EVAL_SET_ID}", "eval_cases": [')
        jsonl.write(json.dumps({"eval_set_id": EVAL_SET_ID, "name": EVAL_SET_ID}) + "\n")
        traces.write("{")
        for index, (actual, expected) in enumerate(generate_cases(n, seed)):
            eval_id = _eval_id(index)
            case = json.dumps({"eval_id": eval_id, "conversation": expected}, ensure_ascii=False)
            separator = ",\n" if index else "\n"
            evalset.write(separator + case)
            jsonl.write(case + "\n")
            traces.write(f"{separator}{json.dumps(eval_id)}: ")
            traces.write(json.dumps(actual, ensure_ascii=False))
            invocations += len(expected)
        evalset.write("\n]}\n")
        traces.write("\n}\n")
    inputs.config.write_text(json.dumps(CONFIG, indent=2) + "\n", encoding="utf-8")
    found = {"cases": n, "invocations": invocations}
    marker.write_text(json.dumps({"n": n, "seed": seed, "inputs": found}), encoding="utf-8")
    return Inputs(**{**asdict(inputs), "invocations": invocations})


def _paths(folder: Path) -> dict[str, Path]:
    names = ("evalset", "jsonl", "traces", "config")
    files = ("bench.evalset.json", "bench.evalset.jsonl", "bench.traces.json", "test_config.json")
    return {name: folder / file for name, file in zip(names, files, strict=True)}


# --------------------------------------------------------------------------- the ADK side

ADK_DRIVER = '''"""What `adk eval` does once it has the inferences, without an agent (written by
benchmarks/bench_scale.py). Usage: python adk_driver.py EVALSET TRACES CONFIG OUT_DIR"""

import json
import sys

from google.adk.evaluation._efficiency_evaluators import (
    _InferenceCallCountV1Evaluator,
    _InvocationDurationV1Evaluator,
    _TokenUsageV1Evaluator,
    _ToolCallCountV1Evaluator,
)
from google.adk.evaluation.eval_case import Invocation
from google.adk.evaluation.eval_config import (
    get_eval_metrics_from_config,
    get_evaluation_criteria_or_default,
)
from google.adk.evaluation.eval_metrics import (
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    EvalStatus,
)
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager
from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

# DEFAULT_METRIC_EVALUATOR_REGISTRY's entries for these metrics (the registry module imports
# pandas): a new evaluator per case and metric, as the registry's get_evaluator gives.
EVALUATORS = {
    "tool_trajectory_avg_score": TrajectoryEvaluator,
    "response_match_score": RougeEvaluator,
    "tool_call_count_v1": _ToolCallCountV1Evaluator,
    "inference_call_count_v1": _InferenceCallCountV1Evaluator,
    "token_usage_v1": _TokenUsageV1Evaluator,
    "invocation_duration_v1": _InvocationDurationV1Evaluator,
}
SKIP = (EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL)


def score_metric(metric, actual, expected, per_invocation, overall):
    # LocalEvalService._evaluate_metric_for_eval_case
    try:
        result = EVALUATORS[metric.metric_name](eval_metric=metric).evaluate_invocations(
            actual_invocations=actual, expected_invocations=expected
        )
    except Exception:
        result = EvaluationResult(overall_eval_status=EvalStatus.NOT_EVALUATED)
    overall.append(
        EvalMetricResult(
            score=result.overall_score,
            eval_status=result.overall_eval_status,
            details=EvalMetricResultDetails(
                rubric_scores=result.overall_rubric_scores,
                token_usage_details=result.overall_token_usage_details,
                duration_details=result.overall_duration_details,
            ),
            **metric.model_dump(),
        )
    )
    aligned = len(result.per_invocation_results) == len(per_invocation)
    if result.overall_eval_status not in SKIP and not aligned:
        raise ValueError("Eval metric should return results for each invocation.")
    for index, invocation in enumerate(per_invocation):
        one = (
            result.per_invocation_results[index]
            if aligned
            else PerInvocationResult(actual_invocation=invocation.actual_invocation)
        )
        invocation.eval_metric_results.append(
            EvalMetricResult(
                score=one.score,
                eval_status=one.eval_status,
                details=EvalMetricResultDetails(
                    rubric_scores=one.rubric_scores,
                    token_usage_details=one.token_usage_details,
                    duration_details=one.duration_details,
                ),
                **metric.model_dump(),
            )
        )


def final_status(overall):
    # LocalEvalService._generate_final_eval_status
    status = EvalStatus.NOT_EVALUATED
    for result in overall:
        if result.eval_status == EvalStatus.PASSED:
            status = EvalStatus.PASSED
        elif result.eval_status in SKIP:
            continue
        elif result.eval_status == EvalStatus.FAILED:
            return EvalStatus.FAILED
    return status


def score_case(eval_set_id, case, actual, metrics):
    # LocalEvalService._evaluate_single_inference_result
    expected = case.conversation
    if len(actual) != len(expected):
        raise ValueError("Inferences should match conversations in eval case.")
    per_invocation = [
        EvalMetricResultPerInvocation(
            actual_invocation=a, expected_invocation=e, eval_metric_results=[]
        )
        for a, e in zip(actual, expected)
    ]
    overall = []
    for metric in metrics:
        score_metric(metric, actual, expected, per_invocation, overall)
    return EvalCaseResult(
        eval_set_file=eval_set_id,
        eval_set_id=eval_set_id,
        eval_id=case.eval_id,
        final_eval_status=final_status(overall),
        overall_eval_metric_results=overall,
        eval_metric_result_per_invocation=per_invocation,
        session_id="",
        user_id="test_user_id",
    )


def main(evalset_path, traces_path, config_path, out_dir):
    eval_set = load_eval_set_from_file(evalset_path, evalset_path)
    metrics = get_eval_metrics_from_config(get_evaluation_criteria_or_default(config_path))
    with open(traces_path, encoding="utf-8") as f:
        traces = {
            eval_id: [Invocation.model_validate(x) for x in invocations]
            for eval_id, invocations in json.load(f).items()
        }
    results = [
        score_case(eval_set.eval_set_id, case, traces[case.eval_id], metrics)
        for case in eval_set.eval_cases
    ]
    LocalEvalSetResultsManager(agents_dir=out_dir).save_eval_set_result(
        app_name="bench_app", eval_set_id=eval_set.eval_set_id, eval_case_results=results
    )
    passed = sum(r.final_eval_status == EvalStatus.PASSED for r in results)
    print(json.dumps({"cases": len(results), "passed": passed, "failed": len(results) - passed}))
    return 1 if passed < len(results) or not results else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
'''


# --------------------------------------------------------------------------- measuring


@dataclass
class Measure:
    """One finished child: wall and CPU seconds, max RSS, exit code, and its cases."""

    wall_s: float
    cpu_s: float
    max_rss_mb: float
    code: int
    cases: int = 0
    passed: int = 0
    failed: int = 0
    tree_rss_mb: float = 0.0
    """The most its processes held together (sampled every 0.25 s): with ``--workers``, the
    run's process and its workers; ``max_rss_mb`` is the largest one alone."""


@dataclass
class Side:
    """A command measured ``--repeat`` times."""

    name: str
    runs: list[Measure] = field(default_factory=list)

    def median(self, figure: str) -> float:
        return statistics.median(getattr(run, figure) for run in self.runs)

    @property
    def counts(self) -> tuple[int, int, int]:
        last = self.runs[-1]
        return last.cases, last.passed, last.failed


TIME = Path("/usr/bin/time")

# Without /usr/bin/time: a small process that runs the command and reports the operating
# system's figures for it (a child's max RSS starts at its parent's when it was forked, so
# the parent must be small: not this process, which has imported ADK).
_WRAPPER = """import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
proc.returncode = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as f:
    json.dump({"cpu": usage.ru_utime + usage.ru_stime, "kb": usage.ru_maxrss,
               "code": proc.returncode}, f)
"""


def _timed(command: Sequence[str], stats: Path) -> list[str]:
    if TIME.is_file():
        return [str(TIME), "-v", "-o", str(stats), *command]
    return [sys.executable, "-S", "-c", _WRAPPER, str(stats), *command]


def _read_stats(stats: Path) -> tuple[float, float, int]:
    """CPU seconds, max RSS in kilobytes and exit code of the timed command."""
    text = stats.read_text(encoding="utf-8", errors="replace")
    if not TIME.is_file():
        data = json.loads(text)
        return float(data["cpu"]), float(data["kb"]), int(data["code"])
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.strip().rpartition(": ")
        found[key] = value
    cpu = float(found["User time (seconds)"]) + float(found["System time (seconds)"])
    code = int(found.get("Exit status", "-1"))
    return cpu, float(found["Maximum resident set size (kbytes)"]), code


def measure(command: Sequence[str], cwd: Path, log: Path, timeout: float) -> Measure:
    """Run ``command`` as a child (through ``/usr/bin/time -v``) and take the operating
    system's figures for it alone; wall seconds are this process's clock around it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["COLUMNS"] = "120"
    stats = log.with_suffix(".stats")
    stats.unlink(missing_ok=True)
    with log.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(
            _timed(command, stats),
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        tree = 0
        while proc.poll() is None:
            if time.perf_counter() - started > timeout:
                os.killpg(proc.pid, signal.SIGKILL)  # the group this call started, timer and all
                proc.wait()
                break
            tree = max(tree, _tree_rss(proc.pid))
            time.sleep(0.25)
        wall = time.perf_counter() - started
    try:
        cpu, kb, code = _read_stats(stats)
    except (OSError, KeyError, ValueError):
        return Measure(wall_s=wall, cpu_s=0.0, max_rss_mb=0.0, code=proc.returncode)
    return Measure(
        wall_s=wall, cpu_s=cpu, max_rss_mb=kb / 1024, code=code, tree_rss_mb=tree / 2**20
    )


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _tree_rss(pid: int) -> int:
    """Bytes resident in ``pid``'s descendants (not itself: the timer), read from /proc; 0
    where there is no /proc."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
            if current != pid:
                total += int(Path(f"/proc/{current}/statm").read_text().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            continue
        todo += [int(child) for child in children]
    return total


_STATUS = re.compile(rb'"final_eval_status":\s*(\d)')


def count_statuses(results: Path) -> tuple[int, int, int]:
    """Cases, passed and failed in an EvalSetResult JSON file, read without parsing it."""
    if not results.is_file() or results.stat().st_size == 0:
        return 0, 0, 0
    with results.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        statuses = Counter(m.group(1) for m in _STATUS.finditer(data))  # type: ignore[call-overload]
    return sum(statuses.values()), statuses[b"1"], sum(statuses.values()) - statuses[b"1"]


def _assay_command() -> list[str]:
    script = Path(sys.executable).parent / "assay"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "assay.cli.main"]


def _commands(
    inputs: Inputs, names: Sequence[str], workers: int = 2
) -> dict[str, tuple[list[str], Path]]:
    folder = inputs.folder

    def assay(evalset: Path, output: str, *extra: str) -> tuple[list[str], Path]:
        command = [*_assay_command(), "eval", str(evalset), "--traces", str(inputs.traces)]
        command += ["--config", str(inputs.config), "--no-progress"]
        return [*command, "--output", str(folder / output), *extra], folder / output

    history = str(folder / "history.sqlite")
    adk_out = folder / "adk_results"
    adk = [sys.executable, str(folder / "adk_driver.py"), str(inputs.evalset)]
    everything = {
        ASSAY: assay(inputs.evalset, "assay.results.json", "--no-history"),
        ASSAY_HISTORY: assay(inputs.evalset, "history.results.json", "--history-file", history),
        ASSAY_JSONL: assay(inputs.jsonl, "jsonl.results.json", "--no-history"),
        ASSAY_WORKERS: assay(
            inputs.evalset, "workers.results.json", "--no-history", "--workers", str(workers)
        ),
        ASSAY_ONE: assay(inputs.evalset, "one.results.json", "--no-history", "--workers", "1"),
        ASSAY_JSONL_WORKERS: assay(
            inputs.jsonl, "jsonl_w.results.json", "--no-history", "--workers", str(workers)
        ),
        ADK: ([*adk, str(inputs.traces), str(inputs.config), str(adk_out)], adk_out),
    }
    return {name: everything[name] for name in names}


def _fresh(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _adk_results(folder: Path) -> Path:
    found = sorted(folder.rglob("*.evalset_result.json"))
    return found[-1] if found else folder / "missing.evalset_result.json"


def run_one(name: str, command: list[str], output: Path, inputs: Inputs, timeout: float) -> Measure:
    """One measured run of side ``name``, its outputs cleared first and counted after."""
    _fresh(output)
    _fresh(inputs.folder / "history.sqlite")
    log = inputs.folder / f"{name.replace(', ', '_')}.log"
    result = measure(command, inputs.folder, log, timeout)
    if name == ADK:
        result.cases, result.passed, result.failed = count_statuses(_adk_results(output))
    else:
        result.cases, result.passed, result.failed = count_statuses(output)
    return result


@dataclass
class Report:
    """One ``--n``: its sizes and every side's runs."""

    cases: int
    invocations: int
    input_mb: float
    sides: dict[str, Side]

    @property
    def complete(self) -> bool:
        return all(side.counts[0] == self.cases for side in self.sides.values())

    @property
    def agree(self) -> bool:
        return len({side.counts for side in self.sides.values()}) == 1 and self.complete

    def ratio(self, figure: str, name: str = ASSAY) -> float:
        theirs = self.sides[ADK].median(figure)
        return self.sides[name].median(figure) / theirs if theirs else float("inf")


def run(
    n: int,
    seed: int,
    repeat: int,
    folder: Path,
    names: Sequence[str] = (ASSAY, ASSAY_HISTORY, ASSAY_JSONL, ADK),
    timeout: float = 600.0,
    say: TextIO | None = None,
    workers: int = 2,
    reuse: bool = False,
) -> Report:
    """Write the inputs for ``n`` cases into ``folder`` (``reuse``: unless they are there) and
    measure each side ``repeat`` times, in turn (``workers``: the workers sides' ``--workers``)."""
    started = time.perf_counter()
    inputs = write_inputs(n, seed, folder, reuse)
    (folder / "adk_driver.py").write_text(ADK_DRIVER, encoding="utf-8")
    size = sum(p.stat().st_size for p in (inputs.evalset, inputs.traces)) / 2**20
    if say:
        print(
            f"  wrote {n} cases ({inputs.invocations} invocations, eval set + traces "
            f"{size:.1f} MB) in {time.perf_counter() - started:.1f} s",
            file=say,
            flush=True,
        )
    commands = _commands(inputs, names, workers)
    sides = {name: Side(name) for name in commands}
    for attempt in range(repeat):
        for name, (command, output) in commands.items():
            result = run_one(name, command, output, inputs, timeout)
            sides[name].runs.append(result)
            if say:
                print(
                    f"  [{attempt + 1}/{repeat}] {name:<15} {result.wall_s:8.2f} s "
                    f"{result.max_rss_mb:9.1f} MB  exit {result.code}  "
                    f"{result.cases} cases ({result.passed} passed, {result.failed} failed)",
                    file=say,
                    flush=True,
                )
    return Report(n, inputs.invocations, size, sides)


def print_report(report: Report, seed: int, repeat: int) -> None:
    print(
        f"\nN = {report.cases} cases, {report.invocations} invocations, seed {seed}, "
        f"inputs {report.input_mb:.1f} MB; median of {repeat}"
    )
    print(
        f"{'side':<16}{'wall s':>9}{'CPU s':>9}{'max RSS MB':>12}{'all MB':>8}{'exit':>6}"
        f"{'cases':>9}{'passed':>8}{'failed':>8}{'time/ADK':>10}{'RSS/ADK':>9}"
    )
    for name, side in report.sides.items():
        cases, passed, failed = side.counts
        ratios = (
            f"{report.ratio('wall_s', name):>10.3f}{report.ratio('max_rss_mb', name):>9.3f}"
            if ADK in report.sides
            else ""
        )
        print(
            f"{name:<16}{side.median('wall_s'):>9.2f}{side.median('cpu_s'):>9.2f}"
            f"{side.median('max_rss_mb'):>12.1f}{side.median('tree_rss_mb'):>8.1f}"
            f"{side.runs[-1].code:>6}"
            f"{cases:>9}{passed:>8}{failed:>8}{ratios}"
        )
    if not report.complete:
        print("INCOMPLETE: a side's results do not hold every case (see its .log)")
    elif report.agree:
        passed = next(iter(report.sides.values())).counts[1]
        print(f"agreement: every side counts {passed} passed cases")
    else:
        print("DISAGREEMENT: the sides count different passed/failed cases")


def _report_json(report: Report) -> Json:
    return {
        "cases": report.cases,
        "invocations": report.invocations,
        "input_mb": report.input_mb,
        "agree": report.agree,
        "complete": report.complete,
        "sides": {
            name: {
                "median_wall_s": side.median("wall_s"),
                "median_cpu_s": side.median("cpu_s"),
                "median_max_rss_mb": side.median("max_rss_mb"),
                "cases": side.counts[0],
                "passed": side.counts[1],
                "failed": side.counts[2],
                "runs": [asdict(r) for r in side.runs],
            }
            for name, side in report.sides.items()
        },
        "ratios": {
            name: {
                "wall": report.ratio("wall_s", name),
                "max_rss": report.ratio("max_rss_mb", name),
            }
            for name in report.sides
            if name != ADK and ADK in report.sides
        },
    }


# --------------------------------------------------------------------------- profiling


def _profile_child(folder: Path) -> int:
    """In this process: ``assay eval`` under tracemalloc, the heap snapshotted near its peak;
    prints a JSON report of the biggest allocation sites."""
    import tracemalloc

    import assay
    from assay.cli.main import main as assay_main

    package = str(Path(assay.__file__).resolve().parent)

    def argv(inputs: Path) -> list[str]:
        return [
            "eval",
            str(inputs / "bench.evalset.json"),
            "--traces",
            str(inputs / "bench.traces.json"),
            "--config",
            str(inputs / "test_config.json"),
            "--output",
            str(inputs / "profile.results.json"),
            "--no-progress",
            "--no-history",
        ]

    def eval_once(inputs: Path) -> int:
        try:
            assay_main(argv(inputs))
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 0
        return 0

    # A first run on a few cases, untraced: every module imported and every schema built, so
    # what is traced is the data (and tracing deep stacks through imports would take minutes).
    write_inputs(5, 1, folder / "warm")
    eval_once(folder / "warm")
    # The heap is largest when the results are written: every case's results, their JSON
    # payload and its text are all alive then. The snapshot is taken there, as the writing
    # starts (the watcher, which samples the traced size, says how near that is to the peak).
    import assay.cli.eval as eval_module

    write = eval_module.write_atomically
    state: dict[str, Any] = {"snapshot": None, "at": 0, "done": False, "high": 0}

    def write_with_snapshot(path: Any, text: str) -> None:
        state["at"] = tracemalloc.get_traced_memory()[0]
        state["snapshot"] = tracemalloc.take_snapshot()
        write(path, text)

    def watch() -> None:
        while not state["done"]:
            state["high"] = max(state["high"], tracemalloc.get_traced_memory()[0])
            time.sleep(0.05)

    eval_module.write_atomically = write_with_snapshot  # type: ignore[assignment]
    tracemalloc.start(FRAMES)
    watcher = threading.Thread(target=watch, daemon=True)
    started = time.perf_counter()
    watcher.start()
    code = eval_once(folder)
    state["done"] = True
    watcher.join()
    wall = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    snapshot: tracemalloc.Snapshot = state["snapshot"].filter_traces(ignore)

    innermost: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    ours_files: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    total = 0
    # grouped by whole traceback first (far fewer than the blocks), then by frame
    for stat in snapshot.statistics("traceback"):
        frames = list(stat.traceback)  # oldest first
        size = stat.size
        total += size
        inner = frames[-1]
        innermost[f"{_short(inner.filename, package)}:{inner.lineno}"] += size
        counts[f"{_short(inner.filename, package)}:{inner.lineno}"] += stat.count
        mine = next((f for f in reversed(frames) if f.filename.startswith(package)), None)
        where = f"{_short(mine.filename, package)}:{mine.lineno}" if mine else "(outside assay)"
        ours[where] += size
        ours_files[_short(mine.filename, package) if mine else "(outside assay)"] += size
    report = {
        "exit": code,
        "wall_s": wall,
        "peak_traced_mb": peak / 2**20,
        "snapshot_mb": total / 2**20,
        "at_write_mb": state["at"] / 2**20,
        "innermost": [(k, v / 2**20, counts[k]) for k, v in innermost.most_common(TOP)],
        "assay_frame": [(k, v / 2**20) for k, v in ours.most_common(TOP)],
        "assay_file": [(k, v / 2**20) for k, v in ours_files.most_common(TOP)],
    }
    print("PROFILE " + json.dumps(report))
    return 0


def _short(filename: str, package: str) -> str:
    if filename.startswith(package):
        return "assay" + filename[len(package) :]
    marker = "site-packages/"
    if marker in filename:
        return filename.split(marker, 1)[1]
    return re.sub(r"^.*/python3\.\d+/", "", filename)


def profile(sizes: Sequence[int], seed: int, base: Path, timeout: float) -> int:
    for n in sizes:
        folder = base / f"profile_{n}"
        inputs = write_inputs(n, seed, folder)
        log = folder / "profile.log"
        command = [sys.executable, str(Path(__file__).resolve()), "--profile-child", str(folder)]
        result = measure(command, folder, log, timeout)
        text = log.read_text(encoding="utf-8", errors="replace")
        line = next((x for x in text.splitlines() if x.startswith("PROFILE ")), None)
        print(f"\nPROFILE N = {n} cases ({inputs.invocations} invocations), --no-history")
        if line is None:
            print(f"  the profiled run failed (exit {result.code}); its log: {log}")
            print(text[-2000:])
            return 1
        data = json.loads(line[len("PROFILE ") :])
        print(
            f"  under tracemalloc: {data['wall_s']:.1f} s, exit {data['exit']}, max RSS "
            f"{result.max_rss_mb:.0f} MB; peak traced {data['peak_traced_mb']:.1f} MB; "
            f"at the write (the snapshot) {data['at_write_mb']:.1f} MB"
        )
        print(f"  top {TOP} allocation sites at the snapshot, by innermost frame:")
        for where, mb, blocks in data["innermost"]:
            print(f"    {mb:9.1f} MB {blocks:>10} blocks  {where}")
        print(f"  top {TOP} by the innermost frame in assay's code:")
        for where, mb in data["assay_frame"]:
            print(f"    {mb:9.1f} MB  {where}")
        print("  by assay file:")
        for where, mb in data["assay_file"]:
            print(f"    {mb:9.1f} MB  {where}")
    return 0


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5000], help="cases (several: each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side; median")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument(
        "--main-only", action="store_true", help="only assay (--no-history) and ADK"
    )
    parser.add_argument(
        "--sides",
        nargs="+",
        choices=SIDE_NAMES,
        help="the sides to run (default: all but the workers' two; ADK's 50,000-case run takes 17 GB)",
    )
    parser.add_argument("--keep", type=Path, help="write the inputs here and keep them")
    parser.add_argument(
        "--reuse", action="store_true", help="with --keep: use the inputs there, if written"
    )
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 2, help="the workers sides' --workers"
    )
    parser.add_argument("--profile", action="store_true", help="profile assay's memory instead")
    parser.add_argument("--profile-n", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--profile-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.profile_child is not None:
        return _profile_child(args.profile_child)
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_scale_"))
    try:
        if args.profile:
            return profile(args.profile_n, args.seed, base, args.timeout)
        names = (ASSAY, ADK) if args.main_only else (ASSAY, ASSAY_HISTORY, ASSAY_JSONL, ADK)
        names = tuple(args.sides) if args.sides else names
        repeat = max(args.repeat, 1)
        reports = []
        for n in args.n:
            print(f"N = {n}:", flush=True)
            folder = base / f"n{n}"
            report = run(
                n,
                args.seed,
                repeat,
                folder,
                names,
                args.timeout,
                sys.stdout,
                args.workers,
                args.reuse and args.keep is not None,
            )
            print_report(report, args.seed, repeat)
            reports.append(report)
        if args.json:
            payload = {
                "seed": args.seed,
                "repeat": repeat,
                "runs": [_report_json(r) for r in reports],
            }
            args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        return 0 if all(r.agree for r in reports) else 1
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
