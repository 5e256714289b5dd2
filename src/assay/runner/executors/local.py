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
                if not needs_judge(jobs, registry) and not _needs_simulator(jobs, plan.agent):
                    return await run.all(None)
                settings = _with_prices(judges or JudgeSettings(), jobs)
                return _capped(await _with_judge_pool(settings, run.all), settings.max_cost_usd)
            return await run.all(judges)


def _capped(results: list[EvalSetResult], max_usd: float | None) -> list[EvalSetResult]:
    """``results``, each set's notes naming the run's ``--max-cost`` cap (what the reports show,
    with whether it was reached)."""
    if max_usd is not None:
        for result in results:
            if result.assay is not None:
                result.assay.max_cost_usd = max_usd
    return results


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
                _scoring_window(plan),
                position,
            )

        if plan.agent is None:
            assert plan.traces is not None
            return await scored(_from_traces(plan.traces, job.loaded.eval_set.eval_set_id))
        stream = _inference_stream(position, job, plan, provider)
        try:
            result = await scored(stream.attempts)
        except BaseException:
            stream.cancel()  # a failed (or cancelled) scoring stops the agent
            raise
        await stream.finish()
        if plan.on_inference is not None:
            plan.on_inference(job, stream.held)
        return result


def _scoring_window(plan: RunPlan) -> int:
    """Case runs started ahead of the oldest not yet scored: the scoring window, and, running
    an agent, at least twice its conversations at once, so that the agent stays busy while
    earlier cases are judged."""
    window = _window(plan.concurrency)
    if plan.agent is None:
        return window
    return max(window, 2 * plan.agent.inference.concurrency)


def needs_judge(jobs: Sequence[EvalSetJob], registry: MetricRegistry) -> bool:
    """Whether any of ``jobs`` asks for a judged metric."""
    return any(registry.is_judged(name) for job in jobs for name in job.config.criteria)


def _needs_simulator(jobs: Sequence[EvalSetJob], agent: AgentSettings | None) -> bool:
    if agent is None or agent.make_simulator is not None:
        return False
    return any(
        c.conversation_scenario is not None for j in jobs for c in j.loaded.eval_set.eval_cases
    )


def _inference_stream(
    position: int, job: EvalSetJob, plan: RunPlan, provider: JudgeProvider | None
) -> _Stream:
    """The agent run over the set's cases as scoring reaches them, but for those ``plan.done``
    holds every run of: their runs are ready at once, with nothing to score (they are taken
    from ``done``). Each conversation goes to the plan's ``on_conversation`` as it is scored,
    and is held for its ``on_inference`` only when there is one."""
    agent = plan.agent
    assert agent is not None
    simulators = agent.make_simulator or _default_simulators(job, provider)
    held: list[CaseInference] = []
    hook = plan.on_conversation

    def told(inference: CaseInference) -> None:
        if hook is not None:
            hook(job, inference)
        if plan.on_inference is not None:
            held.append(inference)

    stream = InferenceStream(
        job.loaded.eval_set.eval_cases,
        agent,
        simulators,
        place=(position,),
        on_conversation=told if hook is not None or plan.on_inference is not None else None,
    )
    runs = range(1, agent.inference.num_runs + 1)
    done = plan.done if plan.done is not None else {}  # not `or`: len() may query
    return _Stream(stream, job.loaded.eval_set.eval_set_id, runs, done, held)


@dataclass
class _Stream:
    """An :class:`InferenceStream`, and the cases a resumed run already has (every run of them
    in ``done``): handed out in eval-set order, each with its place in the set."""

    stream: InferenceStream
    set_id: str
    runs: range
    done: DoneCases
    held: list[CaseInference]
    index: int = 0

    def attempts(self, case: EvalCase) -> Sequence[Attempt | Awaitable[Attempt]]:
        index, self.index = self.index, self.index + 1
        if all((self.set_id, case.eval_id, run) in self.done for run in self.runs):
            return [Attempt(run, None) for run in self.runs]
        return self.stream.attempts(case, index)

    def cancel(self) -> None:
        self.stream.cancel()

    async def finish(self) -> None:
        await self.stream.finish()


def _default_simulators(job: EvalSetJob, provider: JudgeProvider | None) -> SimulatorFactory:
    from assay.runner.simulators import simulators_for

    return simulators_for(job.config, provider)
