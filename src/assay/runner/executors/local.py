"""The in-process executor: every case run and scored in this process's event loop."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from assay._internal.collector import results_kept_frozen
from assay.evalset.case import EvalCase
from assay.metrics.registry import JudgeProvider, MetricRegistry, default_registry
from assay.results.model import EvalSetResult
from assay.runner.agent_run import AgentSettings, Attempt, InferenceStream, SimulatorFactory
from assay.runner.executors.base import RunPlan
from assay.runner.inference import CaseInference
from assay.runner.judges import JudgeSettings
from assay.runner.sets import (
    AttemptsOf,
    DoneCases,
    EvalSetJob,
    _from_traces,
    _RecordingProvider,
    _window,
    _with_judge_pool,
    score_set,
)


class LocalExecutor:
    """Runs the cases in this process: up to the plan's ``concurrency`` scored at once, an
    agent's conversations as its inference settings say."""

    async def run(self, jobs: Sequence[EvalSetJob], plan: RunPlan) -> list[EvalSetResult]:
        """Score every case of every job as ``plan`` says; one result per set."""
        registry = plan.registry or default_registry()
        with results_kept_frozen() as finished_case:
            run = _LocalRun(jobs, plan, registry, asyncio.Semaphore(plan.concurrency))
            run.finished_case = finished_case
            judges = plan.judges
            if isinstance(judges, JudgeSettings) or judges is None:
                if not _needs_judge(jobs, registry) and not _needs_simulator(jobs, plan.agent):
                    return await run.all(None)
                settings = _with_prices(judges or JudgeSettings(), jobs)
                return await _with_judge_pool(settings, run.all)
            return await run.all(judges)


def _with_prices(settings: JudgeSettings, jobs: Sequence[EvalSetJob]) -> JudgeSettings:
    """``settings`` with the price tables of the jobs' configs (for ``--max-cost``)."""
    prices = {name: price for job in jobs for name, price in (job.config.prices or {}).items()}
    return dataclasses.replace(settings, prices=prices) if prices else settings


class _LocalRun:
    """One run of :class:`LocalExecutor`: the sets scored one after the other."""

    def __init__(
        self,
        jobs: Sequence[EvalSetJob],
        plan: RunPlan,
        registry: MetricRegistry,
        semaphore: asyncio.Semaphore,
    ) -> None:
        self.jobs = jobs
        self.plan = plan
        self.registry = registry
        self.semaphore = semaphore
        self.finished_case: Callable[[], None] | None = None

    async def all(self, pool: JudgeProvider | None) -> list[EvalSetResult]:
        return [await self.one_set(n, job, pool) for n, job in enumerate(self.jobs)]

    async def one_set(
        self, position: int, job: EvalSetJob, pool: JudgeProvider | None
    ) -> EvalSetResult:
        plan = self.plan
        started = time.perf_counter()
        provider = _RecordingProvider(pool) if pool is not None else None  # judges and user

        def scored(attempts: AttemptsOf) -> Awaitable[EvalSetResult]:
            return score_set(
                job,
                attempts,
                self.registry,
                self.semaphore,
                plan.on_case,
                provider,
                started,
                plan.done,
                plan.captures,
                self.finished_case,
                _window(plan.concurrency),
                position,
            )

        if plan.agent is None:
            assert plan.traces is not None
            return await scored(_from_traces(plan.traces, job.loaded.eval_set.eval_set_id))
        stream = _inference_stream(position, job, plan.agent, provider, plan.done)
        try:
            result = await scored(stream.attempts)
        except BaseException:
            stream.cancel()  # a failed (or cancelled) scoring stops the agent
            raise
        if plan.on_inference is not None:
            plan.on_inference(job, await stream.finish())
        return result


def _needs_judge(jobs: Sequence[EvalSetJob], registry: MetricRegistry) -> bool:
    return any(registry.is_judged(name) for job in jobs for name in job.config.criteria)


def _needs_simulator(jobs: Sequence[EvalSetJob], agent: AgentSettings | None) -> bool:
    if agent is None or agent.make_simulator is not None:
        return False
    return any(
        c.conversation_scenario is not None for j in jobs for c in j.loaded.eval_set.eval_cases
    )


def _inference_stream(
    position: int,
    job: EvalSetJob,
    agent: AgentSettings,
    provider: JudgeProvider | None,
    done: DoneCases | None,
) -> _Stream:
    """The agent started over the set's cases that ``done`` does not hold every run of; the
    others' runs are ready at once, with nothing to score (they are taken from ``done``)."""
    simulators = agent.make_simulator or _default_simulators(job, provider)
    runs = range(1, agent.inference.num_runs + 1)
    cases = job.loaded.eval_set.eval_cases
    set_id = job.loaded.eval_set.eval_set_id
    had = done if done is not None else {}
    skipped = {c.eval_id for c in cases if all((set_id, c.eval_id, run) in had for run in runs)}
    index = {id(case): n for n, case in enumerate(cases)}
    stream = InferenceStream(
        [c for c in cases if c.eval_id not in skipped],
        agent,
        simulators,
        order=lambda case, run: (position, index[id(case)], run),
    )
    return _Stream(stream, skipped, [Attempt(run, None) for run in runs])


@dataclass
class _Stream:
    """An :class:`InferenceStream`, and the cases a resumed run already has."""

    stream: InferenceStream
    skipped: set[str]
    kept: list[Attempt]

    def attempts(self, case: EvalCase) -> Sequence[Attempt | Awaitable[Attempt]]:
        return self.kept if case.eval_id in self.skipped else self.stream.attempts(case)

    def cancel(self) -> None:
        self.stream.cancel()

    async def finish(self) -> list[CaseInference]:
        return await self.stream.finish()


def _default_simulators(job: EvalSetJob, provider: JudgeProvider | None) -> SimulatorFactory:
    from assay.runner.simulators import simulators_for

    return simulators_for(job.config, provider)
