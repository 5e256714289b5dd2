"""The process executor: a deterministic run from recorded traces scored by worker processes.

Scoring a case deterministically is pure CPU: validating its invocations, the metrics, and its
result's JSON. :class:`ProcessExecutor` forks ``workers`` processes once the inputs are read
(:mod:`assay.runner.process_worker`) and keeps the rest here: reading each case and its runs
from the inputs (a streamed one's JSON straight from the spill file), sending them in chunks,
and taking the results back in eval-set order, each stored as the worker made it (its JSON
for the results file, its record for the run history), so nothing is serialised twice.

* What the run's callbacks get: each result's summary, without its per-invocation rows (the
  results and the results file have them); the run history gets each case's full record.
* Resume: a case a resumed run kept is added back as the history keeps its output (what a
  worker made of it when it was scored), without reading its runs from the traces; a kept case
  recorded without one (scored in one process, or by another version of assay) has its text
  read from the history here and decoded by a worker, which sends it back as it does a scored
  case. No callback is told of a kept case.
* Failures (:mod:`~assay.runner.executors.pool`): a worker that dies is replaced and its cases
  are sent again, each alone; a case whose worker dies twice while scoring it alone is
  NOT_EVALUATED with the reason, while the rest of the run goes on; after too many deaths, what
  is left is scored here. A chunk whose scoring raises is scored here too (where the error, if
  it is one, is the run's).
* Where it does not apply (an agent to run, a judged metric, a system without ``fork``), the
  run is scored in this process, as :class:`~assay.runner.executors.local.LocalExecutor` does:
  :meth:`ProcessExecutor.why_local` says why.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from assay._internal.collector import results_kept_frozen
from assay._internal.spill import SpilledSequence
from assay.evalset.case import EvalCase
from assay.history.records import HistoryError
from assay.history.stored import KeptCases, kept_result
from assay.metrics.registry import MetricRegistry, default_registry
from assay.results.captured import CapturedRows, StoredRecord
from assay.results.collected import CaseResults, pack_output
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.results.trace_stream import INVOCATIONS, parse_invocations
from assay.results.traces import Traces
from assay.runner.executors.base import RunPlan
from assay.runner.executors.local import LocalExecutor, needs_judge
from assay.runner.executors.pool import CHUNKS_PER_WORKER, Outcome, Pool
from assay.runner.process_worker import Item
from assay.runner.scoring import ConfiguredMetric, score_case
from assay.runner.sets import EvalSetJob, job_metrics, set_result

CHUNK = 32
"""Cases sent to a worker in one message."""


class _Id(msgspec.Struct):
    eval_id: str | None = None
    evalId: str | None = None  # the key as camelCase files spell it


_decode_id = msgspec.json.Decoder(_Id).decode


def _eval_id(case: bytes) -> str:
    """A case's eval_id from its JSON, without building the case (read whole when the JSON
    spells it both ways, as the models then decide)."""
    found = _decode_id(case)
    if (found.eval_id is None) != (found.evalId is None):
        return found.eval_id if found.eval_id is not None else str(found.evalId)
    return EvalCase.model_validate_json(case).eval_id


def can_fork() -> bool:
    """Whether worker processes can be forked here (Linux: elsewhere forking a process that
    has threads is not safe, and a spawned worker would have to read the inputs again)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


AUTO_MIN_CASES = 2000
"""The fewest cases for which ``workers=None`` starts workers (below, their start and the
messages cost about what they save)."""
AUTO_MAX_WORKERS = 8


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@dataclass(frozen=True)
class ProcessExecutor:
    """Scores a deterministic run from traces in ``workers`` forked processes (see the module);
    any other run in this process. ``workers=None`` chooses: one a usable core (at most
    :data:`AUTO_MAX_WORKERS`) for a run of :data:`AUTO_MIN_CASES` cases or more, else none."""

    workers: int | None = 2
    told: Callable[[str], None] | None = field(default=None, compare=False)
    """Told how the run is scored: by how many workers, or (``workers`` given) why in one
    process."""

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError("workers must be at least 1")

    def chosen(self, jobs: Sequence[EvalSetJob]) -> int:
        """How many workers score ``jobs``' cases."""
        if self.workers is not None:
            return self.workers
        cases = sum(len(job.loaded.eval_set.eval_cases) for job in jobs)
        return min(usable_cores(), AUTO_MAX_WORKERS) if cases >= AUTO_MIN_CASES else 1

    def why_local(self, jobs: Sequence[EvalSetJob], plan: RunPlan) -> str | None:
        """Why this run is scored in this process (None when workers score it)."""
        if self.chosen(jobs) < 2:
            return "one worker"
        if plan.agent is not None:
            return "an agent's conversations run in one"
        if needs_judge(jobs, plan.registry or default_registry()):
            return "judged metrics are scored in one (their calls wait on the judge)"
        if not can_fork():
            return f"workers are forked, which is not safe on {sys.platform}"
        return None

    async def run(self, jobs: Sequence[EvalSetJob], plan: RunPlan) -> list[EvalSetResult]:
        """Score every case of every job as ``plan`` says; one result per set."""
        why = self.why_local(jobs, plan)
        if why is not None:
            if self.told is not None and self.workers is not None and self.workers > 1:
                self.told(f"--workers {self.workers}: scored in one process, as {why}")
            return await LocalExecutor().run(jobs, plan)
        if self.told is not None:
            self.told(f"scored by {self.chosen(jobs)} worker processes")
        assert plan.traces is not None
        registry = plan.registry or default_registry()
        with results_kept_frozen() as finished_case:
            decoder = plan.done.detached_decoder() if isinstance(plan.done, KeptCases) else None
            pool = Pool(self.chosen(jobs), jobs, registry, plan.captures is not None, decoder)
            try:
                pool.start()
                run = _Run(jobs, plan, plan.traces, registry, pool, finished_case)
                return [await run.one_set(n, job) for n, job in enumerate(jobs)]
            finally:
                pool.close()


KeptRun = EvalCaseResult | bytes | str | None
"""What a resumed run kept of a case's run (:meth:`_Run._kept`)."""


class _Run:
    """One run: each set's cases sent to the pool in chunks, results taken back in order."""

    def __init__(
        self,
        jobs: Sequence[EvalSetJob],
        plan: RunPlan,
        traces: Traces,
        registry: MetricRegistry,
        pool: Pool,
        finished_case: Any,
    ) -> None:
        self.jobs, self.plan, self.traces = jobs, plan, traces
        self.registry, self.pool, self.finished_case = registry, pool, finished_case
        self.metrics: dict[int, list[ConfiguredMetric]] = {}
        self.window = self.pool.size * CHUNKS_PER_WORKER * CHUNK + CHUNK

    async def one_set(self, position: int, job: EvalSetJob) -> EvalSetResult:
        started = time.perf_counter()
        collected = CaseResults()
        pending: deque[tuple[Item, asyncio.Future[Outcome]]] = deque()
        chunk: list[tuple[Item, asyncio.Future[Outcome]]] = []
        loop = asyncio.get_running_loop()
        for item, kept in self._items(position, job):
            future: asyncio.Future[Outcome] = loop.create_future()
            if isinstance(kept, EvalCaseResult | bytes):
                future.set_result(Outcome(kept=kept))
            else:
                item = item if kept is None else item._replace(kept=kept)
                chunk.append((item, future))
            pending.append((item, future))
            if len(chunk) >= CHUNK:
                await self.pool.send(chunk)
                chunk = []
            while pending and (pending[0][1].done() or len(pending) >= self.window):
                if not pending[0][1].done() and chunk:
                    await self.pool.send(chunk)
                    chunk = []
                await self._take(position, job, collected, *pending.popleft())
        if chunk:
            await self.pool.send(chunk)
        while pending:
            await self._take(position, job, collected, *pending.popleft())
        return set_result(job, collected.close(), {}, started)

    def _items(self, position: int, job: EvalSetJob) -> Iterator[tuple[Item, KeptRun]]:
        """Each run of each case of ``job``, as a worker is sent it, and what a resumed run
        kept of it (:meth:`_kept`; a run kept whole is not read from the traces)."""
        eval_set = job.loaded.eval_set
        set_id = eval_set.eval_set_id
        cases = eval_set.eval_cases
        traces = self.traces
        sources = ", ".join(traces.sources) or "the traces"
        if isinstance(cases, SpilledSequence):
            texts: Iterator[bytes] = cases.bodies()
        else:
            texts = (c.__pydantic_serializer__.to_json(c, by_alias=True) for c in cases)
        for index, text in enumerate(texts):
            eval_id = _eval_id(text)
            key, runs = traces.run_numbers(set_id, eval_id)
            content = traces.content_note(set_id, eval_id)
            spans = (None, eval_id) in traces.sessions
            given = 0
            for run in runs:
                trace = None if spans else ["t", set_id, eval_id, run]
                item = Item(position, index, text, run, None, None, trace, content)
                kept = self._kept(set_id, eval_id, run)
                if not isinstance(kept, EvalCaseResult | bytes):  # its invocations needed
                    found = traces.raw(key[0], key[1], run)
                    if found is None:
                        continue
                    body = found if isinstance(found, bytes) else INVOCATIONS.dump_json(found)
                    item = item._replace(invocations=body)
                given += 1
                yield item, kept
            if not given:
                why = traces.problem(set_id, eval_id) or f"no trace for this case in {sources}"
                item = Item(position, index, text, 1, None, why, None, content)
                yield item, self._kept(set_id, eval_id, 1)

    def _kept(self, set_id: str, eval_id: str, run: int) -> KeptRun:
        """What a resumed run kept for this case and run: its output as the history keeps it,
        to store as it is; else the history's text, for a worker to decode; a result, when
        kept cases were given as results; else None."""
        done = self.plan.done
        if done is None:
            return None
        key = (set_id, eval_id, run)
        if isinstance(done, KeptCases):
            found = done.take(key)
            if found is None:
                return None
            return found.text if found.output is None else found.output
        return done.get(key)  # results given as they are (not `or`: len() may query)

    async def _take(
        self,
        position: int,
        job: EvalSetJob,
        collected: CaseResults,
        item: Item,
        future: asyncio.Future[Outcome],
    ) -> None:
        """Store ``item``'s result in order, and tell the run's callbacks."""
        outcome = await future
        if isinstance(outcome.kept, bytes):
            collected.append_output(outcome.kept)
            return
        if outcome.kept is not None:
            collected.append(outcome.kept)
            return
        if outcome.scored is not None and outcome.scored.kept:
            collected.append(
                EvalCaseResult.model_validate_json(outcome.scored.summary), outcome.scored.stored
            )
            return
        if outcome.why is not None and item.kept is not None:  # decoded here instead
            collected.append(self._decoded(job, item))
            return
        if outcome.scored is not None:
            scored = outcome.scored
            result = EvalCaseResult.model_validate_json(scored.summary)
            if self.plan.captures is not None and scored.record is not None:
                output = pack_output(scored.stored, result)
                stored = StoredRecord(scored.record, scored.header, outcome.header, output)
                self.plan.captures[id(result)] = CapturedRows(stored=stored)
            collected.append(result, scored.stored)
        else:
            result = await self._here(position, job, item, outcome)
            collected.append(result)
        if self.plan.on_case is not None:
            self.plan.on_case(job, result)
        self.finished_case()

    def _decoded(self, job: EvalSetJob, item: Item) -> EvalCaseResult:
        """A kept result decoded in this process, with the run's inputs (a worker could not)."""
        case = EvalCase.model_validate_json(item.case)
        actual = None if item.invocations is None else parse_invocations(item.invocations)
        key = (job.loaded.eval_set.eval_set_id, case.eval_id, item.run)
        found = kept_result(self.plan.done, key, actual, case.conversation)
        if found is None:
            raise HistoryError(f"case {case.eval_id} (run {item.run}): its kept result is gone")
        return found

    async def _here(
        self, position: int, job: EvalSetJob, item: Item, outcome: Outcome
    ) -> EvalCaseResult:
        """``item`` scored in this process: NOT_EVALUATED when workers died scoring it, else
        scored in full (a worker could not)."""
        metrics = self.metrics.get(position)
        if metrics is None:
            metrics = self.metrics[position] = job_metrics(job, self.registry)
        case = EvalCase.model_validate_json(item.case)
        actual = None if item.invocations is None else parse_invocations(item.invocations)
        reason = item.reason
        if outcome.died:
            actual, reason = None, outcome.why
        captures = self.plan.captures
        began = time.perf_counter()
        set_id = job.loaded.eval_set.eval_set_id
        result = await score_case(
            set_id, case, actual, metrics, reason, item.run, None, captures, item.content
        )
        result.assay.duration_s = round(time.perf_counter() - began, 6)
        captured = captures.get(id(result)) if captures is not None else None
        if captured is not None:
            captured.came_from(item.trace, actual, [position, item.case_index], case.conversation)
        return result
