"""Running an agent instead of reading traces: the settings, the simulators, saved traces.

:func:`infer_set` runs every case of one eval set through the agent (see
:mod:`assay.runner.inference`) and returns, per case, one :class:`Attempt` per run: the
invocations to score, or the reason there are none. :func:`write_traces` saves what ``--traces``
reads back, so inference and scoring can be separated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
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


def _attempt(done: CaseInference) -> Attempt:
    if done.error is not None:
        return Attempt(done.run, None, done.error, done.simulator_usage)
    return Attempt(done.run, done.invocations, simulator_usage=done.simulator_usage)


async def infer_set(
    cases: Sequence[EvalCase], settings: AgentSettings, make_simulator: SimulatorFactory
) -> tuple[dict[str, list[Attempt]], list[CaseInference]]:
    """Run the agent over ``cases``; the attempts by eval id, and the raw inferences."""
    done = await run_inference(cases, settings.make_agent, make_simulator, settings.inference)
    attempts: dict[str, list[Attempt]] = {}
    for inference in done:
        attempts.setdefault(inference.eval_id, []).append(_attempt(inference))
    return attempts, done


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
