"""The process executor: a deterministic run from recorded traces scored by worker processes.

Scoring a case deterministically is pure CPU: validating its invocations, the metrics, and its
result's JSON. :class:`ProcessExecutor` forks ``workers`` processes once the inputs are read
(:mod:`assay.runner.process_worker`) and keeps the rest here: reading each case and its runs
from the inputs (a streamed one's JSON straight from the spill file), sending them in chunks,
and taking the results back in eval-set order, each stored as the worker made it (its JSON
for the results file, its record for the run history), so nothing is serialised twice.

* What the run's callbacks get: each result's summary, without its per-invocation rows (the
  results and the results file have them); the run history gets each case's full record.
* Resume: the text of each case a resumed run kept is read from the history here and decoded
  by a worker, which sends it back as it does a scored case (no callback is told of it).
* Failures: a worker that dies (killed, out of memory) is replaced, after a pause that doubles
  with each death (up to :data:`MAX_PAUSE_S`), and its cases are sent again, each alone; a case
  whose worker dies twice while scoring it alone is NOT_EVALUATED with the reason, while the
  rest of the run goes on. After
  :data:`MAX_RESTARTS` deaths no worker is started again, and what is left is scored here. A
  chunk whose scoring raises is scored here too (where the error, if it is one, is the run's).
* Where it does not apply (an agent to run, a judged metric, a system without ``fork``), the
  run is scored in this process, as :class:`~assay.runner.executors.local.LocalExecutor` does:
  :meth:`ProcessExecutor.why_local` says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import pickle
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

import msgspec

from assay._internal.collector import results_kept_frozen
from assay._internal.spill import SpilledSequence
from assay.evalset.case import EvalCase
from assay.history.compact import Header
from assay.history.records import HistoryError
from assay.history.stored import Decoder, KeptCases, kept_result
from assay.metrics.registry import MetricRegistry, default_registry
from assay.results.captured import CapturedRows, StoredRecord
from assay.results.collected import CaseResults, pack_output
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.results.trace_stream import INVOCATIONS, parse_invocations
from assay.results.traces import Traces
from assay.runner.executors.base import RunPlan
from assay.runner.executors.local import LocalExecutor, needs_judge
from assay.runner.process_worker import Item, Reply, Scored, serve
from assay.runner.scoring import ConfiguredMetric, score_case
from assay.runner.sets import EvalSetJob, job_metrics, set_result

CHUNK = 32
"""Cases sent to a worker in one message."""
CHUNKS_PER_WORKER = 3
"""Chunks sent to a worker and not yet answered, at most."""
MAX_RESTARTS = 32
"""Worker deaths after which no worker is started again."""
RESTART_PAUSE_S = 0.05
"""The pause before the first replacement worker starts (doubled after each death)..."""
MAX_PAUSE_S = 2.0
"""... up to this."""


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
            pool = _Pool(self.chosen(jobs), jobs, registry, plan.captures is not None, decoder)
            try:
                pool.start()
                run = _Run(jobs, plan, plan.traces, registry, pool, finished_case)
                return [await run.one_set(n, job) for n, job in enumerate(jobs)]
            finally:
                pool.close()


@dataclass
class _Worker:
    """One worker process: the chunks it has, and a thread that writes what it is sent to its
    pipe (a chunk is larger than a pipe holds: written from the event loop, it would hold the
    loop until the worker got to it, while the other workers wait for theirs)."""

    number: int
    process: Any
    tasks: Connection
    replies: Connection
    outstanding: dict[int, list[tuple[Item, asyncio.Future[_Outcome]]]] = field(
        default_factory=dict
    )
    headers: dict[int, Header] = field(default_factory=dict)
    outbox: queue.SimpleQueue[bytes | None] = field(default_factory=queue.SimpleQueue)
    sender: threading.Thread | None = None

    def start_sending(self) -> None:
        self.sender = threading.Thread(target=self._send, name="assay-worker-send", daemon=True)
        self.sender.start()

    def _send(self) -> None:
        """On its thread: each message of the outbox written to the worker's pipe, until None
        comes or the pipe breaks (the worker died); then the pipe is closed."""
        try:
            while (message := self.outbox.get()) is not None:
                self.tasks.send_bytes(message)
        except OSError:
            pass
        finally:
            self.tasks.close()

    def stop_sending(self, *, told: bool) -> None:
        """End the sending thread (after telling the worker to stop, when ``told``)."""
        if told:
            self.outbox.put(pickle.dumps(None))
        self.outbox.put(None)


@dataclass(frozen=True)
class _Outcome:
    """A case's outcome: scored by a worker (with the header its record follows), or to score
    here (``why`` the worker could not)."""

    scored: Scored | None = None
    header: Header | None = None
    why: str | None = None
    died: bool = False
    kept: EvalCaseResult | bytes | None = None
    """The result a resumed run kept, or its output as the history keeps it (stored as it is;
    no callback is told)."""


class _Pool:
    """The worker processes, the chunks each has, and a thread that reads their replies."""

    def __init__(
        self,
        size: int,
        jobs: Sequence[EvalSetJob],
        registry: MetricRegistry,
        recorded: bool,
        decoder: Decoder | None = None,
    ) -> None:
        self.size = size
        self.jobs = jobs
        self.registry = registry
        self.recorded = recorded
        self.decoder = decoder
        self.workers: dict[int, _Worker] = {}
        self.dead: list[_Worker] = []
        self._resending: set[asyncio.Task[None]] = set()
        self.numbers = itertools.count()
        self.seqs = itertools.count()
        self.deaths = 0
        self.struck: set[tuple[int, int, int]] = set()
        """The runs of cases a worker died scoring alone (a second time, they are not scored)."""
        self.changed = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        self._stop = False
        self._wake_r, self._wake_w = os.pipe()
        self._reader = threading.Thread(target=self._read, name="assay-workers", daemon=True)

    def start(self) -> None:
        for _ in range(self.size):
            self._fork()
        self._reader.start()

    def _fork(self) -> None:
        context = multiprocessing.get_context("fork")
        task_r, task_w = context.Pipe(duplex=False)
        reply_r, reply_w = context.Pipe(duplex=False)
        not_mine: list[Connection | int] = [task_w, reply_r, self._wake_r, self._wake_w]
        for other in self.workers.values():
            not_mine += [other.tasks, other.replies]
        process = context.Process(
            target=serve,
            args=(self.jobs, self.registry, self.recorded, self.decoder, task_r, reply_w),
            kwargs={"not_mine": not_mine},
            name="assay-worker",
            daemon=True,
        )
        process.start()
        task_r.close()
        reply_w.close()
        number = next(self.numbers)
        worker = self.workers[number] = _Worker(number, process, task_w, reply_r)
        worker.start_sending()
        os.write(self._wake_w, b"w")

    async def send(self, chunk: list[tuple[Item, asyncio.Future[_Outcome]]]) -> None:
        """Send ``chunk`` to the least busy worker, once one has room; scored here when no
        worker is left."""
        while True:
            if not self.workers:
                for _, future in chunk:
                    if not future.done():
                        future.set_result(_Outcome(why="no worker process left"))
                return
            worker = min(self.workers.values(), key=lambda w: len(w.outstanding))
            if len(worker.outstanding) < CHUNKS_PER_WORKER:
                break
            self.changed.clear()
            await self.changed.wait()
        seq = next(self.seqs)
        worker.outstanding[seq] = chunk
        worker.outbox.put(pickle.dumps((seq, [item for item, _ in chunk]), pickle.HIGHEST_PROTOCOL))

    def _read(self) -> None:
        """On a thread: each reply, and each worker's death, handed to the event loop. A dead
        worker's replies are read to the last before its death is told; its reply pipe is
        closed here (the event loop closes its task pipe)."""
        wake = self._wake_r
        gone: set[int] = set()
        while not self._stop:
            by_handle: dict[Any, _Worker] = {}
            for worker in list(self.workers.values()):
                if worker.number not in gone:
                    by_handle[worker.replies] = worker
                    by_handle[worker.process.sentinel] = worker
            for handle in wait([*by_handle, wake], timeout=1.0):
                if handle == wake:
                    os.read(wake, 4096)
                    continue
                worker = by_handle[handle]
                if worker.number in gone:
                    continue
                if handle is worker.replies and self._receive(worker):
                    continue
                while self._receive(worker, poll=True):
                    pass
                worker.process.join()
                worker.replies.close()
                gone.add(worker.number)
                self._tell(self._died, worker)

    def _tell(self, handler: Any, *args: Any) -> None:
        """Call ``handler(*args)`` on the event loop (not once the pool is closing)."""
        if self._stop:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
            self.loop.call_soon_threadsafe(handler, *args)

    def _receive(self, worker: _Worker, poll: bool = False) -> bool:
        """Read one reply of ``worker`` (when one is there, with ``poll``); False when there
        is none, or its pipe is closed."""
        try:
            if poll and not worker.replies.poll():
                return False
            reply: Reply = worker.replies.recv()
        except (EOFError, OSError):
            return False
        self._tell(self._replied, worker, reply)
        return True

    def _replied(self, worker: _Worker, reply: Reply) -> None:
        chunk = worker.outstanding.pop(reply[0], None)
        if chunk is None:
            return
        if len(reply) == 2:
            for _, future in chunk:
                if not future.done():
                    future.set_result(_Outcome(why=reply[1]))
        else:
            _, scored, headers = reply
            worker.headers.update(headers)
            for (_, future), one in zip(chunk, scored, strict=True):
                header = worker.headers.get(one.header) if one.header is not None else None
                if not future.done():
                    future.set_result(_Outcome(scored=one, header=header))
        self.changed.set()

    def _died(self, worker: _Worker) -> None:
        if self.workers.pop(worker.number, None) is None:
            return
        code = worker.process.exitcode
        why = f"the worker process scoring it died (exit code {code})"
        self.deaths += 1
        again: list[list[tuple[Item, asyncio.Future[_Outcome]]]] = []
        chunks = list(worker.outstanding.values())  # in the order sent, so scored
        if chunks:  # the one it died on: which case it was is not known unless it was alone
            if len(chunks[0]) > 1:
                again += [[one] for one in chunks[0]]
            else:
                item, future = chunks[0][0]
                key = (item.position, item.case_index, item.run)
                if key in self.struck:
                    future.set_result(_Outcome(why=f"{why}, twice", died=True))
                else:
                    self.struck.add(key)
                    again.append(chunks[0])
        again += chunks[1:]  # not begun
        worker.outstanding.clear()
        worker.stop_sending(told=False)
        self.dead.append(worker)
        if self.deaths <= MAX_RESTARTS:
            pause = min(RESTART_PAUSE_S * 2 ** (self.deaths - 1), MAX_PAUSE_S)
            self.loop.call_later(pause, self._replace, again)
        else:
            for chunk in again:
                for _, future in chunk:
                    future.set_result(_Outcome(why=f"{why}; no worker is started again"))
        self.changed.set()

    def _replace(self, again: list[list[tuple[Item, asyncio.Future[_Outcome]]]]) -> None:
        if self._stop:
            return
        self._fork()
        for chunk in again:  # held until sent: the event loop keeps only weak references
            task = self.loop.create_task(self.send(chunk))
            self._resending.add(task)
            task.add_done_callback(self._resending.discard)
        self.changed.set()

    def close(self) -> None:
        """Stop the reader thread, then the workers (killing those that do not stop)."""
        self._stop = True
        os.write(self._wake_w, b"s")
        if self._reader.is_alive():
            self._reader.join()
        for worker in self.workers.values():
            worker.stop_sending(told=True)
        deadline = time.monotonic() + 5.0
        for worker in self.workers.values():
            worker.process.join(max(deadline - time.monotonic(), 0.0))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            if worker.sender is not None:
                worker.sender.join()
            if not worker.replies.closed:
                worker.replies.close()
        for worker in self.dead:
            if worker.sender is not None:
                worker.sender.join()
        self.workers.clear()
        os.close(self._wake_r)
        os.close(self._wake_w)


class _Run:
    """One run: each set's cases sent to the pool in chunks, results taken back in order."""

    def __init__(
        self,
        jobs: Sequence[EvalSetJob],
        plan: RunPlan,
        traces: Traces,
        registry: MetricRegistry,
        pool: _Pool,
        finished_case: Any,
    ) -> None:
        self.jobs, self.plan, self.traces = jobs, plan, traces
        self.registry, self.pool, self.finished_case = registry, pool, finished_case
        self.metrics: dict[int, list[ConfiguredMetric]] = {}
        self.window = self.pool.size * CHUNKS_PER_WORKER * CHUNK + CHUNK

    async def one_set(self, position: int, job: EvalSetJob) -> EvalSetResult:
        started = time.perf_counter()
        collected = CaseResults()
        pending: deque[tuple[Item, asyncio.Future[_Outcome]]] = deque()
        chunk: list[tuple[Item, asyncio.Future[_Outcome]]] = []
        loop = asyncio.get_running_loop()
        for item in self._items(position, job):
            future: asyncio.Future[_Outcome] = loop.create_future()
            kept = self._kept(job, item)
            if isinstance(kept, EvalCaseResult | bytes):
                future.set_result(_Outcome(kept=kept))
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

    def _items(self, position: int, job: EvalSetJob) -> Iterator[Item]:
        """Each run of each case of ``job``, as a worker is sent it."""
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
            runs = traces.raw_runs(set_id, eval_id)
            content = traces.content_note(set_id, eval_id)
            if not runs:
                why = traces.problem(set_id, eval_id) or f"no trace for this case in {sources}"
                yield Item(position, index, text, 1, None, why, None, content)
                continue
            spans = (None, eval_id) in traces.sessions
            for run, found in runs:
                body = found if isinstance(found, bytes) else INVOCATIONS.dump_json(found)
                trace = None if spans else ["t", set_id, eval_id, run]
                yield Item(position, index, text, run, body, None, trace, content)

    def _kept(self, job: EvalSetJob, item: Item) -> EvalCaseResult | bytes | str | None:
        """What a resumed run kept for ``item``'s case and run: its output as the history
        keeps it, to store as it is; else the history's text, for a worker to decode; a result,
        when kept cases were given as results; else None."""
        done = self.plan.done
        if done is None:
            return None
        key = (job.loaded.eval_set.eval_set_id, _eval_id(item.case), item.run)
        if isinstance(done, KeptCases):
            found = done.take(key)
            if found is None:
                return None
            return found.text if found.output is None else found.output
        if key not in done:
            return None
        actual = None if item.invocations is None else parse_invocations(item.invocations)
        case = EvalCase.model_validate_json(item.case)
        return kept_result(done, key, actual, case.conversation)

    async def _take(
        self,
        position: int,
        job: EvalSetJob,
        collected: CaseResults,
        item: Item,
        future: asyncio.Future[_Outcome],
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
        self, position: int, job: EvalSetJob, item: Item, outcome: _Outcome
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
