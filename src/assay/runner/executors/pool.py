"""The worker processes of :mod:`~assay.runner.executors.processes`: forked, sent chunks of cases
through a thread each, their replies and deaths read by one thread and handed to the event loop.

A worker that dies is replaced after a pause that doubles with each death (up to
:data:`MAX_PAUSE_S`), and its cases are sent again, each alone; a case whose worker dies twice
while scoring it alone is NOT_EVALUATED with the reason. After :data:`MAX_RESTARTS` deaths no
worker is started again, and what is left is scored in the run's process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import pickle
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from assay.history.compact import Header
from assay.history.stored import Decoder
from assay.metrics.registry import MetricRegistry
from assay.results.model import EvalCaseResult
from assay.runner.process_worker import Item, Reply, Scored, serve
from assay.runner.sets import EvalSetJob

CHUNKS_PER_WORKER = 3
"""Chunks sent to a worker and not yet answered, at most."""
MAX_RESTARTS = 32
"""Worker deaths after which no worker is started again."""
RESTART_PAUSE_S = 0.05
"""The pause before the first replacement worker starts (doubled after each death)..."""
MAX_PAUSE_S = 2.0
"""... up to this."""


@dataclass
class WorkerProcess:
    """One worker process: the chunks it has, and a thread that writes what it is sent to its
    pipe (a chunk is larger than a pipe holds: written from the event loop, it would hold the
    loop until the worker got to it, while the other workers wait for theirs)."""

    number: int
    process: Any
    tasks: Connection
    replies: Connection
    outstanding: dict[int, list[tuple[Item, asyncio.Future[Outcome]]]] = field(default_factory=dict)
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
class Outcome:
    """A case's outcome: scored by a worker (with the header its record follows), or to score
    here (``why`` the worker could not)."""

    scored: Scored | None = None
    header: Header | None = None
    why: str | None = None
    died: bool = False
    kept: EvalCaseResult | bytes | None = None
    """The result a resumed run kept, or its output as the history keeps it (stored as it is;
    no callback is told)."""


class Pool:
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
        self.workers: dict[int, WorkerProcess] = {}
        self.dead: list[WorkerProcess] = []
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
        worker = self.workers[number] = WorkerProcess(number, process, task_w, reply_r)
        worker.start_sending()
        os.write(self._wake_w, b"w")

    async def send(self, chunk: list[tuple[Item, asyncio.Future[Outcome]]]) -> None:
        """Send ``chunk`` to the least busy worker, once one has room; scored here when no
        worker is left."""
        while True:
            if not self.workers:
                for _, future in chunk:
                    if not future.done():
                        future.set_result(Outcome(why="no worker process left"))
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
            by_handle: dict[Any, WorkerProcess] = {}
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

    def _receive(self, worker: WorkerProcess, poll: bool = False) -> bool:
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

    def _replied(self, worker: WorkerProcess, reply: Reply) -> None:
        chunk = worker.outstanding.pop(reply[0], None)
        if chunk is None:
            return
        if len(reply) == 2:
            for _, future in chunk:
                if not future.done():
                    future.set_result(Outcome(why=reply[1]))
        else:
            _, scored, headers = reply
            worker.headers.update(headers)
            for (_, future), one in zip(chunk, scored, strict=True):
                header = worker.headers.get(one.header) if one.header is not None else None
                if not future.done():
                    future.set_result(Outcome(scored=one, header=header))
        self.changed.set()

    def _died(self, worker: WorkerProcess) -> None:
        if self.workers.pop(worker.number, None) is None:
            return
        code = worker.process.exitcode
        why = f"the worker process scoring it died (exit code {code})"
        self.deaths += 1
        again: list[list[tuple[Item, asyncio.Future[Outcome]]]] = []
        chunks = list(worker.outstanding.values())  # in the order sent, so scored
        if chunks:  # the one it died on: which case it was is not known unless it was alone
            if len(chunks[0]) > 1:
                again += [[one] for one in chunks[0]]
            else:
                item, future = chunks[0][0]
                key = (item.position, item.case_index, item.run)
                if key in self.struck:
                    future.set_result(Outcome(why=f"{why}, twice", died=True))
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
                    future.set_result(Outcome(why=f"{why}; no worker is started again"))
        self.changed.set()

    def _replace(self, again: list[list[tuple[Item, asyncio.Future[Outcome]]]]) -> None:
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
