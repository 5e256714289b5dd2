"""Running an agent instead of reading traces: the settings, the simulators, saved traces.

:class:`InferenceStream` runs an eval set's cases through the agent (see
:mod:`assay.runner.inference`) as scoring reaches them, and gives, per case, one
:class:`Attempt` per run to await: the invocations to score, or the reason there are none.
:class:`TracesWriter` saves what ``--traces`` reads back, as conversations end, so inference and
scoring can be separated."""

from __future__ import annotations

import asyncio
import json
import os
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from assay.agents.base import Agent, AgentFactory, CaseContext
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.base import TokenUsage
from assay.results.model import EvalCaseResult
from assay.runner.inference import (
    CaseInference,
    Conversations,
    InferenceSettings,
    Simulator,
)

SimulatorFactory = Callable[[CaseContext, Agent], Simulator]


@dataclass(frozen=True)
class AgentSettings:
    """The agent to run (a factory called once per case and run) and how inference runs."""

    make_agent: AgentFactory
    inference: InferenceSettings = field(default_factory=InferenceSettings)
    make_simulator: SimulatorFactory | None = None
    spec: str | None = None
    """The ``--agent`` spec the agent was resolved from, if it was: what a Ray cluster's
    workers resolve it from again."""
    name: str | None = None
    """What the run history records of the agent (default: its spec, else the factory's
    qualified name)."""


@dataclass(frozen=True)
class Attempt:
    """One run of one case: the invocations to score, or why there are none."""

    run: int
    invocations: list[Invocation] | None
    reason: str | None = None
    simulator_usage: TokenUsage | None = None
    trace: list[Any] | None = None
    """Where the invocations were read, ``["t", eval set id, eval id, run]`` (the run
    history stores that instead of them): set when they came from a traces file."""
    working_s: float = 0.0
    """The seconds the agent's conversation took in this run (0 for recorded traces)."""
    content: str | None = None
    """Set when the invocations were read from spans that carry no message content: the note
    saying which setting to turn on (the metrics that need content are not run)."""


def _attempt(done: CaseInference) -> Attempt:
    if done.error is not None:
        return Attempt(done.run, None, done.error, done.simulator_usage, working_s=done.working_s)
    return Attempt(
        done.run, done.invocations, simulator_usage=done.simulator_usage, working_s=done.working_s
    )


ConversationHook = Callable[[CaseInference], None]
"""Told each finished conversation, in case order (runs together)."""


class InferenceStream:
    """The agent run over a set's cases as scoring reaches them (made inside an event loop):
    :meth:`attempts` starts a case's runs (at most ``settings.inference.concurrency``
    conversations at once over the stream) and gives each to await, ready as soon as its
    conversation ends. Nothing is kept of a conversation once it is handed on, so memory is
    bounded by the cases scoring has started, not by the set.

    ``cases`` is what each agent factory is told of the eval set (a streamed set's cases are
    read as they are used). ``place`` prefixes each case's place in the run's order (its index,
    then its run): which LLM calls go first (:mod:`assay.llm.slots`). ``on_conversation`` is told
    each conversation in the order the runs were started (case order), as soon as it and those
    before it have ended; only the conversations still waiting for an earlier one are held for
    it."""

    def __init__(
        self,
        cases: Sequence[EvalCase],
        settings: AgentSettings,
        make_simulator: SimulatorFactory,
        place: tuple[int, ...] = (),
        on_conversation: ConversationHook | None = None,
    ) -> None:
        self._conversations = Conversations(
            cases, settings.make_agent, make_simulator, settings.inference
        )
        self._runs = range(1, settings.inference.num_runs + 1)
        self._place = place
        self._next = 0
        self._running: set[asyncio.Task[CaseInference]] = set()
        self._on_conversation = on_conversation
        self._unreported: deque[asyncio.Task[CaseInference]] = deque()

    def attempts(self, case: EvalCase, index: int | None = None) -> list[Awaitable[Attempt]]:
        """Start ``case``'s runs (``index``: its place in the eval set, by default the one after
        the case before); each, in order, to await."""
        index = self._next if index is None else index
        self._next = index + 1
        found: list[Awaitable[Attempt]] = []
        for run in self._runs:
            task = asyncio.ensure_future(
                self._conversations.run(case, run, (*self._place, index, run))
            )
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            if self._on_conversation is not None:
                self._unreported.append(task)
            found.append(_Handed(self, task))
        return found

    def _report(self) -> None:
        """Tell ``on_conversation`` the conversations that have ended with every one before."""
        hook, waiting = self._on_conversation, self._unreported
        while hook is not None and waiting and waiting[0].done():
            task = waiting.popleft()
            if not task.cancelled() and task.exception() is None:
                hook(task.result())

    async def finish(self) -> None:
        """Wait for the conversations still running (none, once every attempt was awaited)."""
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    def cancel(self) -> None:
        """Stop the conversations still running."""
        for task in list(self._running):
            task.cancel()


class _Handed:
    """The attempt of one conversation, to await: ready once it ends (its failure or
    cancellation raised where it is awaited, so no waiter is left hanging). An object rather
    than a coroutine: one never awaited (a run that stopped early) is no coroutine left
    unawaited."""

    def __init__(self, stream: InferenceStream, task: asyncio.Task[CaseInference]) -> None:
        self._stream = stream
        self._task: asyncio.Task[CaseInference] | None = task

    def __await__(self) -> Generator[Any, None, Attempt]:
        task = self._task
        assert task is not None, "awaited twice"
        self._task = None  # nothing held once handed on
        inference = yield from task.__await__()
        self._stream._report()
        return _attempt(inference)


def traces_key(inference: CaseInference) -> str:
    """A run's key in a traces file: its eval id for the first run, else
    ``"<eval_id>#run<N>"``."""
    return inference.eval_id if inference.run == 1 else f"{inference.eval_id}#run{inference.run}"


def _invocations_json(inference: CaseInference) -> list[object]:
    return [
        invocation.model_dump(mode="json", exclude_none=True)
        for invocation in inference.invocations
    ]


def traces_document(inferences: Iterable[CaseInference]) -> dict[str, object]:
    """``{eval_id: [Invocation, ...]}`` for the first run of each case (what ``--traces``
    reads); later runs go under ``"<eval_id>#run<N>"``. A case whose inference failed is left
    out, so scoring the file again reports it as missing rather than scoring half a
    conversation."""
    return {
        traces_key(inference): _invocations_json(inference)
        for inference in inferences
        if inference.error is None
    }


def recorded_inference(result: EvalCaseResult) -> CaseInference:
    """A finished case's inference as its result holds it (``--save-traces`` with ``--resume``:
    the cases a resumed run keeps are not run again). A result without invocations is one
    whose inference failed, and is left out of a traces file like any other."""
    rows = result.eval_metric_result_per_invocation
    return CaseInference(
        result.eval_id,
        result.assay.run,
        [row.actual_invocation for row in rows],
        error=None if rows else (result.assay.reason or "no invocations recorded"),
    )


def write_traces(path: Path, inferences: Iterable[CaseInference]) -> None:
    """Save the inferences as a traces file (through a :class:`TracesWriter`)."""
    with TracesWriter(path) as writer:
        for inference in inferences:
            writer.add(inference)


_JSON_STRING: Callable[[str], str] = json.encoder.encode_basestring


def _indented(value: object, indent: str, parts: list[str]) -> None:
    """``value`` (JSON data) as ``json.dumps(value, indent=2, ensure_ascii=False)`` writes it at
    ``indent``, added to ``parts``. Not ``json.dumps`` itself: with an indent it encodes through
    closures that refer to each other, a reference cycle per call that only the cycle collector
    frees, and a run pauses it (:mod:`assay._internal.collector`), so they piled up."""
    if isinstance(value, dict):
        items: Iterable[tuple[object, object]] = value.items()
        opening, closing = "{", "}"
    elif isinstance(value, list | tuple):
        items = ((None, item) for item in value)
        opening, closing = "[", "]"
    else:
        parts.append(_scalar(value))
        return
    inner = indent + "  "
    start = len(parts)
    for key, item in items:
        parts.append(opening + "\n" + inner if len(parts) == start else ",\n" + inner)
        if opening == "{":
            parts.append(_JSON_STRING(key if isinstance(key, str) else _key(key)) + ": ")
        _indented(item, inner, parts)
    parts.append(opening + closing if len(parts) == start else "\n" + indent + closing)


def _key(key: object) -> str:
    """A dict key that is not a string, as ``json.dumps`` makes it one."""
    if isinstance(key, bool) or key is None or isinstance(key, float):
        return _scalar(key)
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return _JSON_STRING(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class TracesWriter:
    """A traces file written as conversations finish: the bytes ``json.dumps(traces_document(
    ...), indent=2, ensure_ascii=False)`` and a newline give, one entry at a time, nothing held
    but the keys written (a later entry under a key already written is left out).

    The file is written as ``<name>.partial`` (made on the first entry, or on :meth:`close`)
    and renamed to its name only when :meth:`close` ends a complete run: a run that fails or is
    interrupted closes the document and leaves it as ``<name>.partial`` (a valid traces file of
    the conversations that ended), and a killed one leaves at most that half-written
    ``.partial``, never a half file under the real name."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self._file: TextIO | None = None
        self._keys: set[str] = set()

    def add(self, inference: CaseInference) -> None:
        """Write ``inference`` (left out when it failed, as :func:`traces_document` does)."""
        key = traces_key(inference)
        if inference.error is not None or key in self._keys:
            return
        parts = ["{\n  " if not self._keys else ",\n  ", _JSON_STRING(key), ": "]
        _indented(_invocations_json(inference), "  ", parts)
        self._open().write("".join(parts))
        self._keys.add(key)

    def _open(self) -> TextIO:
        if self._file is None:
            self._file = self.partial.open("w", encoding="utf-8")
        return self._file

    def _end(self) -> None:
        file = self._open()
        file.write("\n}\n" if self._keys else "{}\n")
        file.close()

    def close(self) -> None:
        """End the document and give the file its name."""
        self._end()
        os.replace(self.partial, self.path)

    def abandon(self) -> None:
        """End the document, left as ``<name>.partial`` (only if something was written)."""
        if self._file is not None:
            self._end()

    def __enter__(self) -> TracesWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()
