"""Benchmark: a large deterministic run with its finished results frozen, and without.

    .venv/bin/python benchmarks/bench_collector.py [--cases 10000] [--seed 0] [--repeats 3]

Writes ``bench_history``'s inputs (an eval set of ``--cases`` cases of 1-5 invocations and a
traces file of their actual invocations), loads them as ``assay eval`` does, and times whole
runs of ``evaluate`` over them with the two deterministic criteria, alternating:

* as assay runs them: each finished case freezes what is alive (``assay._internal.collector``),
  so the garbage collector's later passes look only at the cases being scored, and
* with the collector left as Python has it (the freezing replaced by nothing), which is how
  every run went before.

Nothing is frozen or collected by hand before a run: the loaded inputs are in the heap as in
the CLI. Each run is timed on the wall clock and the process's CPU clock, with the time the
collector itself took (``gc.callbacks``); after each run the results are dropped and the heap
collected, and the unreachable objects that collection finds are counted (the cyclic garbage a
frozen run leaves for its end). Prints the best of ``--repeats`` for each and their ratio.

Measured (2 shared cores; Python 3.11; 10,000 cases, 29,996 invocations, seed 0; best of 3):

    10,000 cases, whole runs of evaluate, best of 3:
      frozen (assay)   wall   704.4 us/case  cpu   704.2 us/case  collector   0.02 s  garbage after 0 objects
      left alone       wall  1241.6 us/case  cpu  1241.3 us/case  collector   5.33 s  garbage after 0 objects
    frozen / left alone: wall 0.57x, cpu 0.57x

The collector's 5.3 s in a run left alone is the whole difference: its full collections walk
the loaded inputs and the results kept so far again and again. The ``assay`` command also loads
its inputs with the collector paused and keeps them frozen for the command (see
``assay._internal.collector``); with that and a shorter console output, ``assay eval --traces`` on
the same 10,000 cases went from 74-106 s to 17-23 s (docs/design.md).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_history

from assay._internal.aio import run_sync
from assay.config import EvalConfig
from assay.evalset.io import load_eval_set
from assay.results.traces import Traces, load_traces
from assay.runner.evaluate import EvalSetJob, evaluate


@dataclass
class Timing:
    """One run: wall and CPU seconds, the collector's own seconds, and the unreachable
    objects the collection after it found."""

    wall: float
    cpu: float
    collector: float
    garbage: int


@contextlib.contextmanager
def _left_alone() -> Iterator[Callable[[], None]]:
    yield lambda: None


class _CollectorClock:
    """The seconds the garbage collector spends, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0

    def __call__(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began


def run(jobs: Sequence[EvalSetJob], traces: Traces, frozen: bool, clock: _CollectorClock) -> Timing:
    """One whole run of ``evaluate``, frozen as assay runs it or with the collector left alone."""
    patch = (
        contextlib.nullcontext()
        if frozen
        else mock.patch("assay.runner.executors.local.results_kept_frozen", _left_alone)
    )
    with patch:
        clock.seconds = 0.0
        began, cpu = time.perf_counter(), time.process_time()
        results = run_sync(evaluate(jobs, traces))
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        spent = clock.seconds
    cases = sum(len(r.eval_case_results) for r in results)
    assert cases == len(jobs[0].loaded.eval_set.eval_cases), f"{cases} cases scored"
    del results
    return Timing(wall, cpu, spent, gc.collect())


def main(argv: Sequence[str] | None = None) -> int:
    args = bench_history.arguments(__doc__, argv, repeats=3)

    with tempfile.TemporaryDirectory() as tmp:
        evalset_path, traces_path = bench_history.write_inputs(args.cases, args.seed, Path(tmp))
        config = EvalConfig.model_validate({"criteria": bench_history.CRITERIA})
        jobs = [EvalSetJob(load_eval_set(evalset_path), config, "bench")]
        traces = load_traces([traces_path])
    clock = _CollectorClock()
    gc.callbacks.append(clock)
    try:
        run(jobs, traces, True, clock)  # warms caches
        timings: dict[str, list[Timing]] = {"frozen (assay)": [], "left alone": []}
        for repeat in range(args.repeats):
            order = list(timings) if repeat % 2 == 0 else list(reversed(timings))
            for name in order:
                timings[name].append(run(jobs, traces, name == "frozen (assay)", clock))
    finally:
        gc.callbacks.remove(clock)

    per_case = 1e6 / args.cases
    print(f"{args.cases:,} cases, whole runs of evaluate, best of {args.repeats}:")
    best = {name: min(found, key=lambda t: t.wall) for name, found in timings.items()}
    for name, timing in best.items():
        print(
            f"  {name:<16} wall {timing.wall * per_case:7.1f} us/case  "
            f"cpu {timing.cpu * per_case:7.1f} us/case  "
            f"collector {timing.collector:6.2f} s  garbage after {timing.garbage:,} objects"
        )
    frozen, alone = best["frozen (assay)"], best["left alone"]
    print(
        f"frozen / left alone: wall {frozen.wall / alone.wall:.2f}x, cpu {frozen.cpu / alone.cpu:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
