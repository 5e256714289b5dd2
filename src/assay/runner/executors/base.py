"""Where a run's cases run: the :class:`Executor` protocol, and the :class:`RunPlan` it is given.

An executor scores every case of every eval set and returns one result per set, in the order
of the jobs. :class:`~assay.runner.executors.local.LocalExecutor` runs them in this process;
:class:`~assay.runner.executors.ray.RayExecutor` as tasks on a Ray cluster. The run around them
(the run history, progress, the checks before) is the same for both:
:func:`~assay.runner.evaluate.evaluate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from assay.metrics.registry import JudgeProvider, MetricRegistry
from assay.results.captured import Captures
from assay.results.model import EvalSetResult
from assay.results.traces import Traces
from assay.runner.agent_run import AgentSettings
from assay.runner.inference import CaseInference
from assay.runner.judges import JudgeSettings
from assay.runner.sets import CaseCallback, DoneCases, EvalSetJob

InferenceCallback = Callable[[EvalSetJob, list[CaseInference]], None]
"""Called with each set's inferences (the agent's conversations) once the set is scored (they
are all held for it until then)."""

ConversationCallback = Callable[[EvalSetJob, CaseInference], None]
"""Called with each of the agent's conversations as it is handed to scoring, in case order (runs
together); nothing is held for it."""


@dataclass(frozen=True)
class RunPlan:
    """What an executor runs besides the jobs: the actual invocations' source (``traces``, or
    ``agent`` run over each case), how cases are scored and judged, and whom to tell.

    ``on_case`` gets each case result as it finishes (not those in ``done``, which a resumed
    run already has and which are taken as they are); ``on_conversation`` each conversation
    with the agent as it is scored, ``on_inference`` each set's once the set is; ``captures``, when given, receives each
    scored case's rows for the run history.
    """

    traces: Traces | None = None
    agent: AgentSettings | None = None
    concurrency: int = 8
    judges: JudgeProvider | JudgeSettings | None = None
    registry: MetricRegistry | None = None
    on_case: CaseCallback | None = None
    on_inference: InferenceCallback | None = None
    done: DoneCases | None = None
    captures: Captures | None = None
    on_conversation: ConversationCallback | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if (self.traces is None) == (self.agent is None):
            raise ValueError("give either traces or an agent")


@runtime_checkable
class Executor(Protocol):
    """Runs a plan over eval sets: one result per set, in the order of ``jobs``."""

    async def run(self, jobs: Sequence[EvalSetJob], plan: RunPlan) -> list[EvalSetResult]:
        """Score every case of every job as ``plan`` says."""
        ...
