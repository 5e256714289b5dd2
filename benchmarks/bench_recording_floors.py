"""Benchmark: how cheap could recording a case be? assay's recording against four floors.

    .venv/bin/python benchmarks/bench_recording_floors.py [--cases 10000] [--seed 0]

``bench_history.py`` shows recording a case costs more than the 5% of deterministic scoring
issue 5 asks for. This script measures whether any way of recording from the same scored
cases could get under it, on the same inputs (``bench_history``'s), paired: each case is scored
once alone and once with each way of recording, the order rotating from case to case, timed on
the run thread's CPU clock (a shared machine's stolen time is not counted), with the cyclic
garbage collector off and every result kept until the end, as ``evaluate`` keeps them (so no
way pays for freeing results a real run keeps). The ways:

``assay``
    what ``assay eval`` does (``Recording.on_case``: the case encoded against the run's inputs
    and written in 50 ms batches).
``minimal record``
    a floor for any per-case record written in this process: per metric the scores, statuses
    and details from what scoring captured, details left out when equal to the last case's,
    the case's ids, notes and references to its inputs, as JSON, written in 50 ms batches. It
    cannot be read back in full (details are not tracked per row); it is the least work such a
    record can take.
``hand-off``
    a floor for writing from another process: the same values pickled in 50 ms batches to a
    child process over a pipe (which discards them); all this process does.
``captured only``
    a floor for anything that reads what scoring captured: each case's capture taken and let
    go with the next 50 ms batch, nothing encoded or written.
``columnar batch``
    a floor for a record of a batch instead of a case: each 50 ms, the batch's scores,
    statuses, ids, notes, row counts and input references gathered as columns by C-level
    ``map``/``chain``, one JSON text, one row (details, headers and the checks that make
    references safe left out).

It also times whole runs (``evaluate``, as ``assay eval --traces`` scores) with the collector
on and off, to show how much of a real run's scoring time is the collector's.

Measured (2 shared cores; Python 3.11; 10,000 cases, 29,996 invocations, seed 0; 2026-11-22,
a busier day for the machine than the figures of earlier runs):

    paired, case by case, collector off:
      scoring alone                        596.1 us/case
      recording: assay                     126.0 us/case   21.1% of scoring
      recording: minimal record             89.0 us/case   14.9% of scoring
      recording: hand-off                   54.7 us/case    9.2% of scoring
      recording: captured only              25.1 us/case    4.2% of scoring
      recording: columnar batch             50.6 us/case    8.5% of scoring
    whole runs (evaluate, nothing recorded), best of 2:
      scoring, collector on               1258.8 us/case
      scoring, collector off               588.3 us/case

(4,000 cases gave 21.2%, 14.9%, 8.9%, 3.9% and 8.0%. An earlier version of this script, on
wall time, freeing each result as it went, and on a quieter day, gave 18.0%, 12.9% and 7.1%
for the first three.) So no way of recording these cases gets under 5% of the scoring work
itself: not the least per-case record this process could write, not handing the values to
another process, and not a record of a whole batch gathered in C, which costs 8.5%. Merely
taking what scoring captured and letting it go costs 4.2%: what costs is Python touching each
case's results at all, after scoring made them, more than any encoding or SQL. Getting under
5% would take scoring that makes its results in the form they are stored in, and even that
would be borderline by these figures (see docs/design.md).
"""

from __future__ import annotations

import gc
import operator
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_history
import pydantic_core

from assay._internal.aio import run_sync
from assay.config import EvalConfig
from assay.evalset.io import load_eval_set
from assay.history.compact import _notes
from assay.history.records import CaseRow, case_tokens
from assay.history.writer import HistoryWriter
from assay.metrics.registry import default_registry
from assay.results.captured import CapturedRows
from assay.results.model import EvalCaseResult
from assay.results.traces import Traces, load_traces
from assay.runner.evaluate import EvalSetJob, configured_metrics, evaluate
from assay.runner.recording import Recording, run_spec, start_recording
from assay.runner.scoring import score_case

Record = Callable[[EvalCaseResult], None]
"""One way of recording a scored case (its rows captured under ``id(result)``)."""

_SINK = "import os, shutil, sys; shutil.copyfileobj(sys.stdin.buffer, open(os.devnull, 'wb'))"


class Refs:
    """The run's inputs by the identity of their first invocation: a case's references,
    found in one lookup (without checking the other invocations, as assay does)."""

    def __init__(self, job: EvalSetJob, traces: Traces) -> None:
        cases = job.loaded.eval_set.eval_cases
        self.expected = {
            id(c.conversation[0]): [0, i] for i, c in enumerate(cases) if c.conversation
        }
        self.actual = {id(v[0]): ["t", k[0], k[1], 1] for k, v in traces.by_case.items() if v}


def minimal_record(captures: dict[int, CapturedRows], writer: HistoryWriter, refs: Refs) -> Record:
    """The least work an in-process record of a case takes (see the module's docstring)."""
    last: dict[int, Any] = {}

    def record(result: EvalCaseResult) -> None:
        captured = captures.pop(id(result))
        scores: list[Any] = []
        statuses: list[int] = []
        details: list[Any] = []
        for metric, values in enumerate(captured.values):
            made_scores, made_statuses, rubrics, extra = zip(*values, strict=True)
            scores += made_scores
            statuses += made_statuses
            first = extra[0]
            if extra.count(first) != len(extra) or rubrics.count(None) != len(rubrics):
                details.append([metric, list(extra)])
            elif first != last.get(metric):
                last[metric] = first
                details.append([metric, first])
        rows = result.eval_metric_result_per_invocation
        text = pydantic_core.to_json(
            {
                "c": [result.eval_set_id, result.eval_id, int(result.final_eval_status)],
                "s": scores,
                "t": bytes(statuses).hex(),
                "D": details,
                "n": _notes(result.assay),
                "a": refs.actual.get(id(rows[0].actual_invocation)) if rows else None,
                "e": refs.expected.get(id(rows[0].expected_invocation)) if rows else None,
            }
        ).decode()
        status = int(result.final_eval_status)
        row = CaseRow(result.eval_set_id, result.eval_id, 1, status, 0, time.time(), text)
        writer.write(row)

    return record


class CapturedOnly:
    """Each case's capture taken and kept until the next 50 ms batch, then let go: the least
    any recording that reads scoring's capture does, before encoding or writing anything."""

    def __init__(self, captures: dict[int, CapturedRows]) -> None:
        self.captures = captures
        self.batch: list[CapturedRows] = []
        self.due = time.monotonic() + 0.05

    def __call__(self, result: EvalCaseResult) -> None:
        self.batch.append(self.captures.pop(id(result)))
        if time.monotonic() >= self.due:
            self.batch = []
            self.due = time.monotonic() + 0.05


_VALUES = operator.attrgetter("values")
_CASE = operator.attrgetter("eval_id", "final_eval_status", "assay")
_NOTES = operator.attrgetter("run", "duration_s")
_PER_INVOCATION = operator.attrgetter("eval_metric_result_per_invocation")
_ACTUAL = operator.attrgetter("actual_invocation")
_EXPECTED = operator.attrgetter("expected_invocation")
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


class ColumnarBatch:
    """A floor for a record of a batch of cases rather than of a case: each 50 ms, the batch's
    scores, statuses, ids, final statuses, notes, row counts and input references as columns,
    gathered by C-level ``map`` and ``chain`` over the batch, as one JSON text in one row of a
    table of its own (WAL, ``synchronous=NORMAL``, as the history). It leaves out what such a
    record would also need (details, metric headers, the checks that make references safe),
    so it is a floor, not a design."""

    def __init__(self, captures: dict[int, CapturedRows], path: Path, refs: Refs) -> None:
        self.captures, self.refs = captures, refs
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute(
            "CREATE TABLE batches (number INTEGER PRIMARY KEY, written REAL, data TEXT)"
        )
        self.results: list[EvalCaseResult] = []
        self.captured: list[CapturedRows] = []
        self.due = time.monotonic() + 0.05
        self.written = 0

    def __call__(self, result: EvalCaseResult) -> None:
        self.results.append(result)
        self.captured.append(self.captures.pop(id(result)))
        if time.monotonic() >= self.due:
            self.flush()

    def flush(self) -> None:
        results, captured = self.results, self.captured
        self.results, self.captured = [], []
        self.due = time.monotonic() + 0.05
        if not results:
            return
        values = list(chain.from_iterable(chain.from_iterable(map(_VALUES, captured))))
        ids, statuses, notes = zip(*map(_CASE, results), strict=True)
        runs, durations = zip(*map(_NOTES, notes), strict=True)
        per_invocation = list(map(_PER_INVOCATION, results))
        firsts = list(map(_FIRST, per_invocation))
        text = pydantic_core.to_json(
            {
                "i": ids,
                "f": bytes(statuses).hex(),
                "s": list(map(_FIRST, values)),
                "t": bytes(map(_SECOND, values)).hex(),
                "r": runs,
                "u": durations,
                "l": list(map(len, per_invocation)),
                "a": list(map(self.refs.actual.get, map(id, map(_ACTUAL, firsts)))),
                "e": list(map(self.refs.expected.get, map(id, map(_EXPECTED, firsts)))),
            }
        ).decode()
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("INSERT INTO batches VALUES (?, ?, ?)", (self.written, time.time(), text))
        self.db.execute("COMMIT")
        self.written += 1

    def close(self) -> None:
        self.flush()
        self.db.close()


class HandOff:
    """Each case's values pickled, in 50 ms batches, to a child process that discards them."""

    def __init__(self, captures: dict[int, CapturedRows], refs: Refs) -> None:
        self.captures, self.refs = captures, refs
        self.child = subprocess.Popen([sys.executable, "-c", _SINK], stdin=subprocess.PIPE)
        assert self.child.stdin is not None
        self.pipe = self.child.stdin.fileno()
        self.batch: list[Any] = []
        self.due = time.monotonic() + 0.05

    def __call__(self, result: EvalCaseResult) -> None:
        captured = self.captures.pop(id(result))
        rows = result.eval_metric_result_per_invocation
        self.batch.append(
            (
                result.eval_set_file,
                result.eval_set_id,
                result.eval_id,
                int(result.final_eval_status),
                result.session_id,
                result.user_id,
                _notes(result.assay),
                case_tokens(result),
                time.time(),
                self.refs.actual.get(id(rows[0].actual_invocation)) if rows else None,
                self.refs.expected.get(id(rows[0].expected_invocation)) if rows else None,
                captured.values,
            )
        )
        if time.monotonic() >= self.due:
            self.send()

    def send(self) -> None:
        data = pickle.dumps(self.batch, protocol=pickle.HIGHEST_PROTOCOL)
        os.write(self.pipe, len(data).to_bytes(4, "little") + data)
        self.batch.clear()
        self.due = time.monotonic() + 0.05

    def close(self) -> None:
        if self.batch:
            self.send()
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait()


def paired(
    job: EvalSetJob, traces: Traces, ways: dict[str, tuple[Record, dict[int, CapturedRows]]]
) -> dict[str, float]:
    """CPU seconds of the run's thread over all cases, scoring alone and scoring then recording
    each way: every case scored once per way, the order rotating from case to case, the
    collector off, and every result kept until the end, as ``evaluate`` keeps them (so no way
    pays for freeing results that a real run keeps)."""
    metrics = configured_metrics(job.config, default_registry())
    set_id = job.loaded.eval_set.eval_set_id
    names = ["alone", *ways]
    totals = dict.fromkeys(names, 0.0)
    clock = time.thread_time
    kept: list[EvalCaseResult] = []

    async def all_cases() -> None:
        for number, case in enumerate(job.loaded.eval_set.eval_cases):
            actual = traces.get(set_id, case.eval_id)
            turn = number % len(names)
            for name in names[turn:] + names[:turn]:
                began = clock()
                if name == "alone":
                    result = await score_case(set_id, case, actual, metrics)
                else:
                    record, captures = ways[name]
                    result = await score_case(set_id, case, actual, metrics, captures=captures)
                    record(result)
                kept.append(result)
                totals[name] += clock() - began

    collecting = gc.isenabled()
    gc.disable()
    try:
        run_sync(all_cases())
    finally:
        if collecting:
            gc.enable()
    return totals


def whole_runs(jobs: Sequence[EvalSetJob], traces: Traces, repeats: int) -> dict[str, float]:
    """Best seconds of whole runs (``evaluate``, nothing recorded), with the collector on
    (the loaded inputs frozen out of its way first) and off, alternating."""
    gc.collect()
    gc.freeze()
    best = {"collector on": float("inf"), "collector off": float("inf")}
    try:
        for _ in range(repeats):
            for name in best:
                if name == "collector off":
                    gc.disable()
                began = time.perf_counter()
                run_sync(evaluate(jobs, traces))
                best[name] = min(best[name], time.perf_counter() - began)
                gc.enable()
                gc.collect()
    finally:
        gc.unfreeze()
    return best


def main(argv: Sequence[str] | None = None) -> int:
    args = bench_history.arguments(__doc__, argv, repeats=2)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        evalset_path, traces_path = bench_history.write_inputs(args.cases, args.seed, folder)
        config = EvalConfig.model_validate({"criteria": bench_history.CRITERIA})
        jobs = [EvalSetJob(load_eval_set(evalset_path), config, "bench")]
        traces = load_traces([traces_path])
        run_sync(evaluate(jobs, traces))  # warms caches
        spec = run_spec(jobs, traces, traces_paths=[str(traces_path)])
        recording: Recording = start_recording(spec, history_file=str(folder / "assay.sqlite"))
        floor: Recording = start_recording(spec, history_file=str(folder / "floor.sqlite"))
        assert recording.captures is not None and floor.writer is not None
        refs = Refs(jobs[0], traces)
        mine: dict[int, CapturedRows] = {}
        theirs: dict[int, CapturedRows] = {}
        hand_off = HandOff(theirs, refs)
        taken: dict[int, CapturedRows] = {}
        batched: dict[int, CapturedRows] = {}
        columnar = ColumnarBatch(batched, folder / "batches.sqlite", refs)
        for each in (recording, floor):  # inputs kept before timing: their thread is not timed
            if each.writer is not None:
                each.writer.close()
        try:
            totals = paired(
                jobs[0],
                traces,
                {
                    "assay": (lambda r: recording.on_case(jobs[0], r), recording.captures),
                    "minimal record": (minimal_record(mine, floor.writer, refs), mine),
                    "hand-off": (hand_off, theirs),
                    "captured only": (CapturedOnly(taken), taken),
                    "columnar batch": (columnar, batched),
                },
            )
        finally:
            hand_off.close()
            columnar.close()
            for each in (recording, floor):
                each.finish([])
                each.close()
        whole = whole_runs(jobs, traces, args.repeats)

    per_case = 1e6 / args.cases
    alone = totals.pop("alone")
    print(f"{args.cases:,} cases; paired, case by case, collector off:")
    print(f"  {'scoring alone':<34} {alone * per_case:7.1f} us/case")
    for name, total in totals.items():
        cost = total - alone
        print(
            f"  {'recording: ' + name:<34} {cost * per_case:7.1f} us/case  "
            f"{cost / alone:6.1%} of scoring"
        )
    print(f"whole runs (evaluate, nothing recorded), best of {args.repeats}:")
    for name, seconds in whole.items():
        print(f"  {'scoring, ' + name:<34} {seconds * per_case:7.1f} us/case")
    return 0


if __name__ == "__main__":
    sys.exit(main())
