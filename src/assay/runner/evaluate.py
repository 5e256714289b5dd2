"""Evaluating eval sets: :func:`evaluate`, the Python API's run, and its sync facade.

Inference (running an agent) and scoring are separate stages: the actual invocations come from
recorded traces, or from running an agent over each case (:mod:`assay.runner.inference`), each
case scored as soon as its conversations have ended (:mod:`assay.runner.sets`). Where the cases
run is the run's executor (:mod:`assay.runner.executors`: this process by default, or a Ray
cluster); a run can record itself in the run history, and resume a recorded one
(:mod:`assay.runner.recording`), as ``assay eval`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay._internal.aio import sync_of
from assay.metrics.registry import JudgeProvider, MetricRegistry
from assay.report.progress import ProgressCallback
from assay.results.captured import Captures
from assay.results.model import EvalSetResult
from assay.results.model import summarize as summarize  # re-exported: callers import it from here
from assay.results.traces import Traces
from assay.runner.agent_run import AgentSettings
from assay.runner.executors.base import Executor, InferenceCallback
from assay.runner.judges import JudgeSettings as JudgeSettings
from assay.runner.options import HistoryOption, RunOptions
from assay.runner.run import RunHooks, run_jobs
from assay.runner.sets import AttemptsOf as AttemptsOf
from assay.runner.sets import CaseCallback as CaseCallback
from assay.runner.sets import DoneCases as DoneCases
from assay.runner.sets import EvalSetJob as EvalSetJob
from assay.runner.sets import _RecordingProvider as _RecordingProvider
from assay.runner.sets import configured_metrics as configured_metrics
from assay.runner.sets import in_order as in_order
from assay.runner.sets import judge_infos as judge_infos
from assay.runner.sets import set_result as set_result


async def evaluate(
    jobs: Sequence[EvalSetJob],
    traces: Traces | None = None,
    *,
    agent: AgentSettings | None = None,
    registry: MetricRegistry | None = None,
    concurrency: int = 8,
    on_case: CaseCallback | None = None,
    on_inference: InferenceCallback | None = None,
    judges: JudgeProvider | JudgeSettings | None = None,
    done: DoneCases | None = None,
    captures: Captures | None = None,
    progress: ProgressCallback | bool = True,
    history: HistoryOption = False,
    resume: str | None = None,
    executor: Executor | None = None,
    options: RunOptions | None = None,
) -> list[EvalSetResult]:
    """Score every case of every eval set; one result per set.

    The actual invocations come from ``traces``, or from running ``agent`` (one scored case
    result per case and run). ``on_inference`` gets each set's inferences (the agent's
    conversations) once the set is scored: every conversation of the set is held for it until
    then, so on a large set prefer ``on_case`` (each result holds its actual invocations). ``judges`` is a provider to use as it is, or the settings of the
    judge pool this run opens (and closes) itself; by default :class:`JudgeSettings` ``()``.
    Cases in ``done`` are taken as they are (``on_case`` is not called for them). With
    ``captures``, each scored case's rows are captured there for the run history (see
    :class:`~assay.results.captured.CapturedRows`). ``progress`` is called with a
    :class:`~assay.report.progress.RunUpdate` (cases and LLM calls done out of all, an ETA, the
    case) as each case finishes; by default a line per finished case, and a heartbeat while none
    finishes, goes to stderr; False for neither.

    ``history`` records the run in the run history, as ``assay eval`` does (True: the default
    history, else the history file's path), so that ``assay runs`` and ``assay show`` list it;
    ``resume`` (a run's id, or ``latest``) continues a recorded run with the same eval sets and
    options, its finished cases kept. ``executor`` is where the cases run (by default in this
    process; :class:`~assay.runner.executors.ray.RayExecutor` for a Ray cluster). ``options``
    gives all of these settings (and the judges') in one :class:`RunOptions`, in place of
    ``concurrency``, ``progress``, ``history``, ``resume`` and ``executor``.
    """
    if options is None:
        options = RunOptions(
            concurrency=concurrency,
            progress=progress,
            history=history,
            resume=resume,
            executor=executor,
        )
        judges = judges if judges is not None else JudgeSettings()
    elif (concurrency, progress, history, resume, executor) != (8, True, False, None, None):
        raise ValueError(
            "give concurrency, progress, history, resume and executor in options, not beside it"
        )
    if (traces is None) == (agent is None):
        raise ValueError("give either traces or an agent")
    source = traces if traces is not None else agent
    assert source is not None
    hooks = RunHooks(on_case=on_case, on_inference=on_inference)
    outcome = await run_jobs(
        jobs, source, options, hooks, judges=judges, registry=registry, done=done, captures=captures
    )
    return outcome.results


evaluate_sync = sync_of(evaluate, "evaluate_sync", ":func:`evaluate` for code that is not async.")
