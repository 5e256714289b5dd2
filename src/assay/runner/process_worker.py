"""The worker side of :class:`~assay.runner.executors.processes.ProcessExecutor`: a process
forked from the run's, scoring the cases it is sent and sending back each result ready to store.

A worker is forked once the run's inputs are read, so it has the jobs (their configs, the custom
metrics' functions) without their being pickled. It never reads the spill file (an SQLite
connection must not be used across a fork): each case comes as its JSON and that of its run's
invocations (:class:`Item`), or, for a case a resumed run kept, also its stored text, which the
worker decodes instead of scoring. For each it sends back a :class:`Scored`: the result's JSON as the
results file holds it, its summary (the result without its per-invocation rows, for the run's
counts, progress and callbacks), and, when the run is recorded, its history record, encoded by
an encoder of the worker's own (:mod:`assay.history.compact`) whose new metric headers go back
with the chunk that first used them.

A chunk is ``(seq, items)``; the reply ``(seq, scored, new headers)``, or ``(seq, why)`` when
scoring raised (the run's process scores those cases itself). ``None``, or the run's process
going away, ends the worker. Ctrl-C is the run's process's to handle: a worker ignores it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from assay.evalset.case import EvalCase
from assay.history.compact import CaseEncoder, Header, Inputs, record_header
from assay.history.stored import Decoder
from assay.metrics.registry import MetricRegistry
from assay.results.captured import Captures
from assay.results.collected import spill_forms
from assay.results.model import EvalCaseResult
from assay.results.trace_stream import parse_invocations
from assay.runner.scoring import ConfiguredMetric, score_case
from assay.runner.sets import EvalSetJob, job_metrics


class Item(NamedTuple):
    """One run of a case, to score."""

    position: int
    """The eval set's place among the run's jobs."""
    case_index: int
    """The case's place in its eval set."""
    case: bytes
    """The case's JSON."""
    run: int
    invocations: bytes | None
    """The run's actual invocations, as JSON; None when there are none (see ``reason``)."""
    reason: str | None
    """Why there is nothing to score."""
    trace: list[Any] | None
    """Where the invocations are among the run's traces, as the history refers to them."""
    content: str | None
    """The note of a session whose spans carry no message content."""
    kept: str | None = None
    """The run history's text of the result a resumed run kept for it: decoded, not scored."""


class Scored(NamedTuple):
    """One case scored: what the run stores of it."""

    stored: tuple[bytes, bytes]
    """What the spill file keeps of the result (:func:`~assay.results.collected.spill_forms`):
    its JSON as the results file holds it, compressed, and its head."""
    summary: bytes
    """The result without its per-invocation rows, as JSON."""
    record: str | None
    """Its history record (None when the run is not recorded)."""
    header: int | None
    """The number of the worker's metric header the record follows (None: stored in full)."""
    kept: bool = False
    """Whether it is a kept result, decoded (no callback is told of it)."""


Reply = tuple[int, list[Scored], list[tuple[int, Header]]] | tuple[int, str]
"""What a worker sends back for a chunk: its results and the metric headers it added, or why
it could not score it."""


def serve(
    jobs: Sequence[EvalSetJob],
    registry: MetricRegistry,
    recorded: bool,
    decoder: Decoder | None,
    tasks: Connection,
    replies: Connection,
    not_mine: Sequence[Connection | int] = (),
) -> None:
    """Score the chunks ``tasks`` brings, each reply on ``replies``, until None comes (or the
    run's process goes away); ``decoder`` decodes a resumed run's kept results.

    ``not_mine`` are the pipe ends this process got by being forked and must close: its own
    pipes' other ends and the other workers' (while this process held a pipe's writing end, it
    would never read the end of its tasks when the run's process dies; holding its replies'
    reading end, it would wait for ever on a full pipe)."""
    for end in not_mine:
        with contextlib.suppress(OSError):  # closed as the fork was made: nothing to close
            if isinstance(end, int):
                os.close(end)
            elif not end.closed:
                end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loop = asyncio.new_event_loop()
    worker = _Worker(jobs, registry, recorded, decoder)
    try:
        while True:
            try:
                message = tasks.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            seq, items = message
            reply: Reply
            try:
                scored = loop.run_until_complete(worker.chunk(items))
                reply = (seq, scored, worker.new_headers())
            except Exception as exc:  # the run's process scores them instead, and sees why
                reply = (seq, f"{type(exc).__name__}: {exc}")
            try:
                replies.send(reply)
            except (BrokenPipeError, OSError):
                return
    finally:
        loop.close()


class _Worker:
    """One worker's state: the jobs' metrics as they are needed, and its history encoder."""

    def __init__(
        self,
        jobs: Sequence[EvalSetJob],
        registry: MetricRegistry,
        recorded: bool,
        decoder: Decoder | None,
    ) -> None:
        self.jobs = jobs
        self.registry = registry
        self.decoder = decoder
        self.metrics: dict[int, list[ConfiguredMetric]] = {}
        self.encoder = CaseEncoder(Inputs()) if recorded else None
        self.sent = 0

    def configured(self, position: int) -> list[ConfiguredMetric]:
        found = self.metrics.get(position)
        if found is None:
            found = self.metrics[position] = job_metrics(self.jobs[position], self.registry)
        return found

    def new_headers(self) -> list[tuple[int, Header]]:
        """The metric headers added since the last reply."""
        if self.encoder is None:
            return []
        headers = self.encoder.headers
        added = [(n, headers[n]) for n in range(self.sent, len(headers))]
        self.sent = len(headers)
        return added

    async def chunk(self, items: Sequence[Item]) -> list[Scored]:
        return [await self.one(item) for item in items]

    async def one(self, item: Item) -> Scored:
        job = self.jobs[item.position]
        case = EvalCase.model_validate_json(item.case)
        actual = None if item.invocations is None else parse_invocations(item.invocations)
        if item.kept is not None:
            if self.decoder is None:
                raise ValueError("a kept result, and no decoder")
            kept = self.decoder(case.eval_id, item.kept, actual, case.conversation)
            compact = kept.__pydantic_serializer__.to_json(kept, exclude_none=True)
            return Scored(spill_forms(kept, compact), _summary(kept), None, None, kept=True)
        captures: Captures | None = {} if self.encoder is not None else None
        began = time.perf_counter()
        result = await score_case(
            job.loaded.eval_set.eval_set_id,
            case,
            actual,
            self.configured(item.position),
            item.reason,
            item.run,
            None,
            captures,
            item.content,
        )
        result.assay.duration_s = round(time.perf_counter() - began, 6)
        stored = spill_forms(
            result, result.__pydantic_serializer__.to_json(result, exclude_none=True)
        )
        summary = _summary(result)
        if self.encoder is None or captures is None:
            return Scored(stored, summary, None, None)
        captured = captures.pop(id(result), None)
        if captured is not None:
            place = [item.position, item.case_index]
            captured.came_from(item.trace, actual, place, case.conversation)
        record = self.encoder.encode(result, captured).text
        return Scored(stored, summary, record, record_header(record))


def _summary(result: EvalCaseResult) -> bytes:
    """``result`` without its per-invocation rows, as JSON."""
    rows = result.eval_metric_result_per_invocation
    result.eval_metric_result_per_invocation = []
    try:
        return result.__pydantic_serializer__.to_json(result, exclude_none=True)
    finally:
        result.eval_metric_result_per_invocation = rows
