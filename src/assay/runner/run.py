"""One run, from its inputs to its results: checked, recorded, executed.

:func:`run_jobs` runs eval-set jobs as :class:`~assay.runner.options.RunOptions` say: it opens
the run's recording in the history (or reopens the run it resumes), runs the cases on the
options' executor (in this process by default), shows progress, and finishes the recording.
:func:`~assay.runner.evaluate.evaluate` is it for the Python API; :func:`run_eval_sets` is it for
``assay eval``, reading and checking the inputs first (eval sets, config, traces, the agent, the
judges, whether the run can be recorded), so that all of a run's work lies below the CLI, which
only builds the options and says what happened.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

from assay._internal.aio import run_sync
from assay._internal.collector import collections_paused
from assay.errors import InputError, Problem
from assay.metrics.registry import JudgeProvider, MetricRegistry
from assay.report.progress import reporting
from assay.results.captured import Captures
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.results.trace_coverage import traces_note
from assay.results.traces import SpanReading, Traces, load_traces
from assay.runner.agent_run import AgentSettings
from assay.runner.executors.base import ConversationCallback, InferenceCallback, RunPlan
from assay.runner.executors.local import LocalExecutor
from assay.runner.jobs import jobs_for, session_jobs
from assay.runner.judges import JudgeSettings
from assay.runner.options import RunOptions
from assay.runner.preflight import check_run_judges
from assay.runner.recording import Notice, Recording, recorded, run_spec, unrecordable, warn_of
from assay.runner.sets import CaseCallback, DoneCases, EvalSetJob

_A = TypeVar("_A")
_R = TypeVar("_R")

Watch = Callable[[int, CaseCallback | None], AbstractContextManager[CaseCallback | None]]
"""Around a run of so many cases: the case callback extended to show its progress."""


def _ignore(_message: str) -> None:
    """Nothing said."""


@dataclass(frozen=True)
class RunHooks:
    """What a run's caller hears besides its results.

    ``on_case`` gets each case result as it finishes, ``on_conversation`` each agent
    conversation as it is scored (in case order; nothing is held for it), ``on_inference`` each
    set's agent conversations once the set is scored (all held for it until then). ``watch`` shows progress (by default as the options' ``progress`` says).
    ``loaded`` is told the jobs once they are read and checked, with a warning when the traces
    lack some cases; ``finishing`` gets the results before the run is marked finished in the
    history (what it adds to them is recorded). ``warn`` and ``note`` get what the user should
    know (by default a warning, and nothing).
    """

    on_case: CaseCallback | None = None
    on_inference: InferenceCallback | None = None
    on_conversation: ConversationCallback | None = None
    watch: Watch | None = None
    loaded: Callable[[Sequence[EvalSetJob], str | None], None] | None = None
    finishing: Callable[[Sequence[EvalSetJob], list[EvalSetResult]], None] | None = None
    warn: Notice = warn_of
    note: Notice = _ignore


@dataclass
class RunOutcome:
    """A finished run: its results, and its record in the history."""

    results: list[EvalSetResult]
    run_id: str = ""
    """The run's id in the history ('' when it was not recorded)."""
    recorded: bool = False
    """Whether the whole run was recorded."""
    kept: Sequence[EvalCaseResult] = field(default_factory=list)
    """The case results a resumed run already had (not run again), read as they are reached."""
    traces: Traces | None = None
    """The traces the run read (:func:`run_eval_sets`): span files' sessions name the span each
    case's verdicts are about (:attr:`~assay.results.traces.Traces.sessions`)."""


@dataclass(frozen=True)
class EvalInputs:
    """What ``assay eval`` reads besides its eval set files: a config (else each set's own), and
    recorded traces or an agent spec (exactly one). Span files among the traces are read as
    ``case_key``, ``sample`` and ``trace_filters`` say (:class:`~assay.results.traces.
    SpanReading`); with no eval set, each of their sessions is a case of its own."""

    config: str | None = None
    traces: Sequence[str] = ()
    agent: str | None = None
    case_key: str | None = None
    sample: float | None = None
    trace_filters: tuple[tuple[str, str], ...] = ()

    def reading(self) -> SpanReading:
        """How span files' sessions become cases."""
        return SpanReading(self.case_key, self.sample, self.trace_filters)


async def run_jobs(
    jobs: Sequence[EvalSetJob],
    source: Traces | AgentSettings,
    options: RunOptions,
    hooks: RunHooks = RunHooks(),
    *,
    judges: JudgeProvider | JudgeSettings | None = None,
    registry: MetricRegistry | None = None,
    done: DoneCases | None = None,
    captures: Captures | None = None,
    traces_paths: Sequence[str] = (),
) -> RunOutcome:
    """Run ``jobs`` over ``source`` (recorded traces, or an agent to run) as ``options`` say.

    ``judges`` is a provider to use as it is, or the judge pool's settings (by default the
    options'). With ``options.history`` the run is recorded (a ValueError if ``done`` is given
    too: a recorded run's finished cases are its own); ``traces_paths`` are the files the traces
    were read from, which the history keeps with the run."""
    traces = source if isinstance(source, Traces) else None
    agent = source if isinstance(source, AgentSettings) else None
    recording_on = options.history is not False
    if recording_on and (done is not None or captures is not None):
        raise ValueError("done and captures are the run history's own when it records the run")
    if recording_on and (problems := unrecordable(jobs)):
        raise InputError(problems)
    plan = RunPlan(
        traces=traces,
        agent=agent,
        concurrency=options.cases_at_once,
        judges=judges if judges is not None else options.judges(),
        registry=registry,
        done=done,
        captures=captures,
        on_inference=hooks.on_inference,
        on_conversation=hooks.on_conversation,
    )
    spec = run_spec(
        jobs,
        traces,
        traces_paths=traces_paths or (traces.sources if traces is not None else ()),
        agent=_agent_name(agent),
        num_runs=options.num_runs,
        mock_tools=options.mock_tools,
        judge_model=options.judge_model,
    )
    with recorded(
        spec,
        enabled=recording_on,
        history_file=options.history_file,
        resume=options.resume,
        warn=hooks.warn,
        note=hooks.note,
    ) as recording:
        results = await _executed(jobs, _recorded_plan(plan, recording), options, hooks)
        if hooks.finishing is not None:
            hooks.finishing(jobs, results)
        recording.finish(results)
    return RunOutcome(results, recording.run, recording.recorded, recording.kept())


def _agent_name(agent: AgentSettings | None) -> str | None:
    """What the history records of the agent: its name, its spec, else its factory's qualified
    name."""
    if agent is None:
        return None
    if agent.name or agent.spec:
        return agent.name or agent.spec
    make = agent.make_agent
    module = getattr(make, "__module__", None) or type(make).__module__
    name = getattr(make, "__qualname__", None) or type(make).__qualname__
    return f"{module}:{name}"


def _recorded_plan(plan: RunPlan, recording: Recording) -> RunPlan:
    """``plan`` handing each case to ``recording`` (and taking the cases a resumed run has)."""
    if recording.writer is None:
        return plan
    return replace(
        plan,
        done=cast(DoneCases, recording.done),
        captures=recording.captures,
        on_case=recording.on_case,
    )


async def _executed(
    jobs: Sequence[EvalSetJob], plan: RunPlan, options: RunOptions, hooks: RunHooks
) -> list[EvalSetResult]:
    """The results of ``plan`` run on the options' executor, with progress watched."""
    runs = plan.agent.inference.num_runs if plan.agent is not None else 1
    cases = sum(len(job.loaded.eval_set.eval_cases) for job in jobs) * runs
    cases -= len(plan.done) if plan.done is not None else 0  # taken as they are: not reported
    watch = hooks.watch or partial(reporting, options.progress)
    with watch(max(cases, 0), _each_case(plan, hooks)) as on_case:
        executor = options.executor or LocalExecutor()
        return await executor.run(jobs, replace(plan, on_case=on_case))


def _each_case(plan: RunPlan, hooks: RunHooks) -> CaseCallback | None:
    """The case callback: the recording's (when it records), then the caller's."""
    recording_on_case = plan.on_case
    if recording_on_case is None:
        return hooks.on_case
    caller = hooks.on_case

    def on_case(job: EvalSetJob, result: EvalCaseResult) -> None:
        recording_on_case(job, result)
        if caller is not None:
            caller(job, result)

    return on_case


def run_eval_sets(
    eval_sets: Sequence[str],
    inputs: EvalInputs,
    options: RunOptions,
    hooks: RunHooks = RunHooks(),
    make_agent: Callable[[str], Any] | None = None,
) -> RunOutcome:
    """``assay eval``'s run of ``eval_sets``: they, the config and the traces read and checked
    together (every problem raised at once as an :class:`~assay.errors.InputError`), the agent
    resolved (``make_agent``, by default :func:`~assay.agents.spec.resolve_agent`) and every judge
    checked before any is called, then :func:`run_jobs`."""
    problems: list[Problem] = []  # eval sets, configs and traces all checked: reported together
    with _quietly():
        traces = _attempt(partial(load_traces, reading=inputs.reading()), inputs.traces, problems)
        if eval_sets:
            jobs = _attempt(partial(jobs_for, config=inputs.config or None), eval_sets, problems)
        else:
            jobs = _sessions_as_cases(traces, inputs, problems)
    if problems or jobs is None or traces is None:
        raise InputError(problems)
    note = _traces_note(traces, jobs, bool(eval_sets)) if inputs.traces else None
    if options.history is not False and (problems := unrecordable(jobs)):
        raise InputError(problems)
    source = (
        options.agent(_resolved(inputs.agent, make_agent), inputs.agent) if inputs.agent else traces
    )
    check_run_judges(
        jobs,
        override=options.judge_model or None,
        simulated_user=inputs.agent is not None,
        env=options.env,
    )
    if hooks.loaded is not None:
        hooks.loaded(jobs, note)
    outcome = run_sync(run_jobs(jobs, source, options, hooks, traces_paths=inputs.traces))
    outcome.traces = traces
    return outcome


def _sessions_as_cases(
    traces: Traces | None, inputs: EvalInputs, problems: list[Problem]
) -> list[EvalSetJob] | None:
    """With no eval set: a job of the span files' sessions, each a case (see
    :func:`~assay.runner.jobs.session_jobs`); None with a problem added when there is none."""
    if traces is None:
        return None
    files = ", ".join(inputs.traces)
    if not traces.sessions and traces.left_out:
        why = "no session left to score after --sample and --trace-filter"
        problems.append(Problem(files, "", why))
        return None
    if not traces.sessions:
        why = (
            "Missing argument 'EVALSET...': only OpenTelemetry span files are scored without "
            "an eval set (each session a case); an ADK traces file is scored against the eval "
            "set it records"
        )
        problems.append(Problem(files, "", why))
        return None
    keys = [eval_id for _, eval_id in traces.sessions]
    make = partial(session_jobs, source=Path(inputs.traces[0]), config=inputs.config or None)
    return _attempt(make, keys, problems)


def _traces_note(traces: Traces, jobs: Sequence[EvalSetJob], with_sets: bool) -> str | None:
    """The warning of cases without a trace and sessions without a case (with eval sets), and
    how many sessions the sample and filters left out."""
    note = traces_note(traces, [job.loaded.eval_set for job in jobs]) if with_sets else None
    if traces.left_out:
        left = f"{traces.left_out} session(s) left out by --sample / --trace-filter"
        note = left if note is None else f"{note}\n{left}"
    return note


def _resolved(spec: str, make_agent: Callable[[str], Any] | None) -> Any:
    """The agent factory ``spec`` names (a bad spec is reported now, not per case)."""
    if make_agent is not None:
        return make_agent(spec)
    from assay.agents.spec import resolve_agent

    return resolve_agent(spec)


def _attempt(step: Callable[[_A], _R], arg: _A, problems: list[Problem]) -> _R | None:
    """``step(arg)``, or None with its problems added to ``problems``."""
    try:
        return step(arg)
    except InputError as exc:
        problems.extend(exc.problems)
        return None


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    """Reading millions of objects with no garbage among them (:mod:`assay._internal.collector`),
    a config's warnings held back (they are shown with its jobs)."""
    from warnings import catch_warnings, simplefilter

    from assay.errors import ConfigWarning

    with collections_paused(), catch_warnings():
        simplefilter("ignore", ConfigWarning)
        yield
