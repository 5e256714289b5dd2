"""Running an agent instead of reading traces: the settings, the simulators, saved traces.

:func:`infer_set` runs every case of one eval set through the agent (see
:mod:`assay.runner.inference`) and returns, per case, one :class:`Attempt` per run: the
invocations to score, or the reason there are none. :func:`write_traces` saves what ``--traces``
reads back, so inference and scoring can be separated.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.base import Agent, AgentFactory, CaseContext
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.base import TokenUsage
from assay.results.model import EvalCaseResult
from assay.runner.inference import (
    CaseInference,
    CaseOrder,
    InferenceSettings,
    Simulator,
    run_inference,
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


async def infer_set(
    cases: Sequence[EvalCase], settings: AgentSettings, make_simulator: SimulatorFactory
) -> tuple[dict[str, list[Attempt]], list[CaseInference]]:
    """Run the agent over ``cases``; the attempts by eval id, and the raw inferences."""
    done = await run_inference(cases, settings.make_agent, make_simulator, settings.inference)
    attempts: dict[str, list[Attempt]] = {}
    for inference in done:
        attempts.setdefault(inference.eval_id, []).append(_attempt(inference))
    return attempts, done


class InferenceStream:
    """The agent run over ``cases`` in the background (started on creation, inside an event
    loop): :meth:`attempts` gives each case's runs to await, each ready as soon as its
    conversation ends; :meth:`finish` the raw inferences once all have ended."""

    def __init__(
        self,
        cases: Sequence[EvalCase],
        settings: AgentSettings,
        make_simulator: SimulatorFactory,
        order: CaseOrder | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        self._runs = range(1, settings.inference.num_runs + 1)
        self._ready: dict[tuple[str, int], list[asyncio.Future[Attempt]]] = {}
        for case in cases:
            for run in self._runs:
                self._ready.setdefault((case.eval_id, run), []).append(loop.create_future())
        self._task = asyncio.ensure_future(
            run_inference(
                cases,
                settings.make_agent,
                make_simulator,
                settings.inference,
                on_done=self._done,
                order=order,
            )
        )
        self._task.add_done_callback(self._ended)
        self._handed: dict[tuple[str, int], int] = {}

    def _done(self, inference: CaseInference) -> None:
        for future in self._ready.get((inference.eval_id, inference.run), []):
            if not future.done():
                future.set_result(_attempt(inference))
                return

    def _ended(self, task: asyncio.Task[list[CaseInference]]) -> None:
        """A failed or cancelled inference leaves no run waiting for ever."""
        error = None if task.cancelled() else task.exception()
        for futures in self._ready.values():
            for future in futures:
                if future.done():
                    continue
                if error is None:
                    future.cancel()
                else:
                    future.set_exception(error)
                    future.exception()  # raised where it is awaited; not logged as unretrieved

    def attempts(self, case: EvalCase) -> list[Awaitable[Attempt]]:
        """``case``'s runs, in order, each ready when its conversation has ended."""
        found: list[Awaitable[Attempt]] = []
        for run in self._runs:
            key = (case.eval_id, run)
            handed = self._handed.get(key, 0)
            futures = self._ready.get(key, [])
            if handed < len(futures):
                found.append(futures[handed])
                self._handed[key] = handed + 1
        return found

    async def finish(self) -> list[CaseInference]:
        """Every inference, in case order, runs together."""
        return await self._task

    def cancel(self) -> None:
        """Stop the conversations still running."""
        self._task.cancel()


def traces_document(inferences: Sequence[CaseInference]) -> dict[str, object]:
    """``{eval_id: [Invocation, ...]}`` for the first run of each case (what ``--traces``
    reads); later runs go under ``"<eval_id>#run<N>"``. A case whose inference failed is left
    out, so scoring the file again reports it as missing rather than scoring half a
    conversation."""
    document: dict[str, object] = {}
    for inference in inferences:
        if inference.error is not None:
            continue
        key = inference.eval_id if inference.run == 1 else f"{inference.eval_id}#run{inference.run}"
        document[key] = [
            invocation.model_dump(mode="json", exclude_none=True)
            for invocation in inference.invocations
        ]
    return document


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


def write_traces(path: Path, inferences: Sequence[CaseInference]) -> None:
    """Save the inferences as a traces file."""
    path.write_text(json.dumps(traces_document(inferences), indent=2, ensure_ascii=False) + "\n")
