"""The worker's side of the Ray executor (:mod:`assay.runner.ray_executor`): Ray tasks that run
the in-process core, :class:`~assay.runner.executors.local.LocalExecutor`, on a few cases of one eval set.

A task gets the run's :class:`WorkerContext` (the agent spec, inference and judge settings, the
shared limiter and cache actors), its eval set (from the object store, kept per process, since
a worker runs many tasks of the same set) and which cases to run; it resolves the agent spec on
the worker (once per process), runs inference and scoring with the shared cache and limits, and
returns the case results, the judges' descriptions and the inferences as JSON
(:class:`ChunkOutcome`). :func:`shipping` says, on the driver, how the agent's code and spec
reach the workers. Nothing here imports Ray at module level: the tasks run on workers, where Ray
is imported already.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import os
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from assay._version import __version__
from assay.agents.base import Agent, AgentFactory, CaseContext, WrappedAgent
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.base import TokenUsage
from assay.llm.shared import RemoteLimit, RemoteStore, SharedLimit
from assay.results.model import EvalCaseResult, JudgeInfo
from assay.results.traces import Traces
from assay.runner.agent_run import AgentSettings
from assay.runner.executors.base import RunPlan
from assay.runner.executors.local import LocalExecutor
from assay.runner.inference import CaseInference, InferenceSettings
from assay.runner.judges import JudgeSettings
from assay.runner.sets import EvalSetJob

AGENT_KEY = "agent"
"""The shared limit's key for conversations with the agent (``--inference-concurrency``)."""

Runs = dict[str, list[tuple[int, list[Invocation]]]]
"""Recorded runs by eval id (scoring traces): the part of the traces a task needs."""


@dataclass(frozen=True)
class WorkerContext:
    """What every task of one run shares (put in the object store once)."""

    judges: JudgeSettings
    limiter: Any
    """The :class:`~assay.llm.shared.Limiter` actor's handle."""
    cache: Any | None
    """The :class:`~assay.llm.shared.CacheRelay` actor's handle; None without a cache."""
    concurrency: int = 8
    agent_spec: str | None = None
    inference: InferenceSettings | None = None
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The driver's variables that choose and reach judges (added to the worker's own)."""
    trace_sources: tuple[str, ...] = ()
    trace_notes: Traces | None = None
    """The notes of the traces' cases read from span files (:meth:`Traces.notes_only`)."""
    inferences: bool = True
    """Whether tasks send their conversations back (the driver's ``on_conversation`` or
    ``on_inference`` wants them): a task holds its chunk's conversations until it ends, which
    the chunk's size bounds."""


class InferredRun(BaseModel):
    """One :class:`~assay.runner.inference.CaseInference`, as it crosses to the driver."""

    eval_id: str
    run: int
    invocations: list[Invocation] = []
    error: str | None = None
    stop: str = ""
    attempts: int = 1
    simulator_usage: TokenUsage | None = None

    def inference(self) -> CaseInference:
        return CaseInference(
            self.eval_id,
            self.run,
            self.invocations,
            self.error,
            self.stop,
            self.attempts,
            simulator_usage=self.simulator_usage,
        )


class ChunkOutcome(BaseModel):
    """What a task gives back: its cases' results (eval-set order), how each metric was judged,
    and, running an agent, its inferences."""

    results: list[EvalCaseResult]
    judges: dict[str, JudgeInfo] = {}
    inferences: list[InferredRun] = []


class Probe(BaseModel):
    """What the probe task found on a worker."""

    version: str
    error: str | None = None


_factories: dict[str, AgentFactory] = {}
_sets: dict[str, EvalSetJob] = {}


def probe(agent_spec: str | None, env: Mapping[str, str]) -> str:
    """Check that this worker runs assay and can load the agent (a :class:`Probe` as JSON)."""
    error = None
    if agent_spec is not None:
        try:
            _factory(agent_spec, env)
        except Exception as exc:
            error = str(exc) or type(exc).__name__
    return Probe(version=__version__, error=error).model_dump_json()


def shipping(agent_spec: str | None) -> tuple[dict[str, Any], str | None]:
    """The runtime environment that brings the agent's code to the workers, and the spec the
    workers resolve: a file agent's folder as ``working_dir`` (the spec then names the file in
    it); a module or agent folder under the working directory as ``py_modules``; nothing for an
    installed module, a URL or a model."""
    if agent_spec is None:
        return {}, None
    spec = agent_spec.strip()
    if spec.startswith(("http://", "https://", "openai:", "ollama:")):
        return {}, spec
    head, sep, attr = spec.rpartition(":")
    target = head if sep and head and attr and "/" not in attr else spec
    suffix = spec[len(target) :]
    path = Path(target)
    if target.endswith(".py") or "/" in target or os.sep in target or path.is_dir():
        found = path.resolve()
        if found.is_file():
            return {"working_dir": str(found.parent)}, f"{found.name}{suffix}"
        if found.is_dir():
            return {"py_modules": [str(found)]}, f"{found.name}{suffix}"
        return {}, spec  # resolve_agent says what is wrong
    top = target.split(".")[0]
    try:
        module = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        module = None
    origin = module.origin if module is not None else None
    if origin is None or not Path(origin).resolve().is_relative_to(Path.cwd()):
        return {}, spec
    found = Path(origin).resolve()
    return {"py_modules": [str(found.parent if found.name == "__init__.py" else found)]}, spec


def run_cases(
    context: WorkerContext,
    job_box: list[Any],
    indices: list[int],
    owner: str,
    runs: Runs | None,
    done: dict[tuple[str, str, int], EvalCaseResult],
) -> str:
    """Run the cases at ``indices`` of the eval set in ``job_box`` (a list holding its object
    ref, so Ray does not fetch it when this process has it already); a :class:`ChunkOutcome`
    as JSON. ``owner`` names this task in the shared limiter; ``runs`` are the cases' recorded
    runs when scoring traces; ``done`` the results a resumed run keeps."""
    job = _job(job_box[0])
    outcome = asyncio.run(_run(context, job, indices, owner, runs, done))
    return outcome.model_dump_json()


def _job(ref: Any) -> EvalSetJob:
    key = ref.hex()
    found = _sets.get(key)
    if found is None:
        import ray

        found = ray.get(ref)
        if len(_sets) >= 4:
            _sets.pop(next(iter(_sets)))
        _sets[key] = found
    return found


def _factory(spec: str, env: Mapping[str, str]) -> AgentFactory:
    found = _factories.get(spec)
    if found is None:
        from assay.agents.spec import resolve_agent

        found = resolve_agent(spec, env={**os.environ, **env})
        _factories[spec] = found
    return found


async def _run(
    context: WorkerContext,
    job: EvalSetJob,
    indices: list[int],
    owner: str,
    runs: Runs | None,
    done: dict[tuple[str, str, int], EvalCaseResult],
) -> ChunkOutcome:
    generation: int = await context.limiter.begin.remote(owner)
    limit = RemoteLimit(context.limiter, owner, generation)
    cache = RemoteStore(context.cache) if context.cache is not None else None
    env = {**os.environ, **context.env}
    judges = dataclasses.replace(context.judges, env=env, shared_cache=cache, shared_limit=limit)
    every = job.loaded.eval_set.eval_cases
    cases = [every[i] for i in indices]
    eval_set = job.loaded.eval_set.model_copy(update={"eval_cases": cases})
    sub = dataclasses.replace(job, loaded=dataclasses.replace(job.loaded, eval_set=eval_set))
    agent = None
    traces = None
    if context.agent_spec is not None:
        assert context.inference is not None
        factory = _factory(context.agent_spec, context.env)
        agent = AgentSettings(
            make_agent=_limited(factory, limit, context.inference.concurrency, every),
            inference=context.inference,
        )
    else:
        notes = context.trace_notes or Traces()
        traces = Traces(
            sources=list(context.trace_sources),
            problems=notes.problems,
            content_notes=notes.content_notes,
            sessions=notes.sessions,
        )
        for eval_id, found in (runs or {}).items():
            for run, invocations in found:
                traces.add((eval_set.eval_set_id, eval_id), invocations, run)
    inferred: list[CaseInference] = []
    plan = RunPlan(
        traces=traces,
        agent=agent,
        concurrency=context.concurrency,
        judges=judges,
        done=done,
        on_conversation=(lambda _job, found: inferred.append(found))
        if context.inferences
        else None,
    )  # no progress: the driver reports the run's
    results = await LocalExecutor().run([sub], plan)
    (result,) = results
    return ChunkOutcome(
        results=result.eval_case_results,
        judges=result.assay.judges if result.assay else {},
        inferences=[_inferred(i) for i in inferred],
    )


def _inferred(inference: CaseInference) -> InferredRun:
    return InferredRun(
        eval_id=inference.eval_id,
        run=inference.run,
        invocations=inference.invocations,
        error=inference.error,
        stop=inference.stop,
        attempts=inference.attempts,
        simulator_usage=inference.simulator_usage,
    )


def _limited(
    factory: AgentFactory, limit: SharedLimit, slots: int, cases: Sequence[EvalCase]
) -> AgentFactory:
    """``factory``, each agent it makes holding a slot of the shared ``agent`` limit for its
    conversation; told about every case of the eval set, as in a run in one process."""

    async def make(context: CaseContext) -> Agent:
        held = limit.hold(AGENT_KEY, slots)
        await held.__aenter__()
        try:
            made = factory(dataclasses.replace(context, cases=cases))
            agent = await made if isinstance(made, Awaitable) else made
        except BaseException as exc:
            await held.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return _HeldAgent(agent, held)

    return make


class _HeldAgent(WrappedAgent):
    """An agent holding a slot of the shared limit until it is closed."""

    def __init__(self, agent: Agent, held: Any) -> None:
        super().__init__(agent)
        self._held = held

    async def aclose(self) -> None:
        try:
            await self._agent.aclose()
        finally:
            held, self._held = self._held, None
            if held is not None:
                await held.__aexit__(None, None, None)
