"""The Ray executor: a run's cases as tasks on a Ray cluster (docs/ray.md).

The machinery is :mod:`assay.runner.ray_executor` (the driver) and
:mod:`assay.runner.ray_worker` (the tasks); Ray itself is imported only when a run starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assay.results.model import EvalSetResult
from assay.runner.executors.base import RunPlan
from assay.runner.judges import JudgeSettings
from assay.runner.sets import EvalSetJob


@dataclass(frozen=True)
class RayExecutor:
    """Runs the cases as tasks on the Ray cluster at ``address`` (``HOST:PORT``,
    ``ray://HOST:PORT`` or ``auto``; default ``$RAY_ADDRESS``, else a local cluster started for
    the run), where the plan's concurrency limits hold for the whole cluster.

    The workers resolve the agent from its spec (:attr:`~assay.runner.agent_run.AgentSettings.
    spec`), so an agent run needs one; the judges are the plan's :class:`JudgeSettings` (a
    judge provider object cannot be shipped). ``task_attempts``, ``cases_per_task``,
    ``task_cpus`` and ``window`` are as :func:`~assay.runner.ray_executor.evaluate_on_ray` takes
    them. The run holds the calling thread (and its event loop) until it ends; its callbacks
    are called on that thread.
    """

    address: str | None = None
    task_attempts: int | None = None
    cases_per_task: int | None = None
    task_cpus: float = 1.0
    window: int | None = None

    async def run(self, jobs: Sequence[EvalSetJob], plan: RunPlan) -> list[EvalSetResult]:
        """Score every case of every job on the cluster, as ``plan`` says."""
        from assay.runner.ray_executor import TASK_ATTEMPTS, evaluate_on_ray

        if plan.judges is not None and not isinstance(plan.judges, JudgeSettings):
            raise ValueError("the Ray executor needs the judges' settings, not a judge provider")
        if plan.judges is not None and plan.judges.batch:  # batches live in one process's judges
            raise ValueError("judge_batch cannot be used with the Ray executor; run it locally")
        if plan.judges is not None and plan.judges.max_cost_usd is not None:  # one meter a worker
            raise ValueError("max_cost_usd cannot be used with the Ray executor; run it locally")
        if plan.registry is not None:
            raise ValueError("the Ray executor's workers use the default metric registry")
        return evaluate_on_ray(
            jobs,
            plan.traces,
            agent=plan.agent,
            agent_spec=plan.agent.spec if plan.agent is not None else None,
            concurrency=plan.concurrency,
            on_case=plan.on_case,
            on_inference=plan.on_inference,
            on_conversation=plan.on_conversation,
            judges=plan.judges,
            done=plan.done,
            captures=plan.captures,
            address=self.address,
            task_attempts=self.task_attempts or TASK_ATTEMPTS,
            cases_per_task=self.cases_per_task,
            task_cpus=self.task_cpus,
            window=self.window,
        )
