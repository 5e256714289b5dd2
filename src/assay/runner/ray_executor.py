"""``assay eval --executor ray``: inference and scoring as Ray tasks, results on the driver.

:func:`evaluate_on_ray` takes what :func:`~assay.runner.evaluate.evaluate` takes. It joins the
cluster ``address`` names (``--ray-address``, else ``RAY_ADDRESS``: ``auto``, ``HOST:PORT``,
``ray://HOST:PORT``) or starts a local one, checks with one small task that the workers run
this assay and can load the agent, then runs the cases as tasks (:mod:`assay.runner.ray_worker`,
a case each by default), at most ``window`` in flight. Results come back in eval-set order to
``on_case``, as in a run in one process, and each set's result is built by
:func:`~assay.runner.evaluate.set_result`, so the output has the same shape.

* Limits: ``--judge-concurrency`` and ``--inference-concurrency`` hold for the whole cluster,
  through one :class:`~assay.llm.shared.Limiter` actor (keys ``judge:<endpoint>`` and ``agent``).
* Cache: workers ask the driver's response cache, through a
  :class:`~assay.llm.shared.CacheRelay` actor and the driver's
  :class:`~assay.llm.shared.CacheBridge` thread, so a re-run on the cluster makes no LLM call.
* Failures: a task whose worker dies (killed, out of memory, its node lost) is run again, up
  to ``task_attempts`` in all, after the slots the dead attempt held are freed; then its cases
  are NOT_EVALUATED with the reason. A case is handed to ``on_case`` once, whatever happened.
* Code: an agent given as ``path/file.py:attr`` ships its folder as the tasks' ``working_dir``;
  one given as ``module:attr`` (or an agent folder) found under the working directory ships as
  ``py_modules``; an installed one must be installed on the nodes.

Ray is imported only here, and only when this runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from assay._internal.aio import in_event_loop, run_sync
from assay._version import __version__
from assay.errors import AssayError
from assay.evalset.case import EvalCase
from assay.llm.cache import ResponseCache
from assay.llm.shared import shared_actors
from assay.metrics.registry import default_registry
from assay.results.captured import Captures
from assay.results.collected import CaseResults
from assay.results.model import EvalCaseResult, EvalSetResult, JudgeInfo
from assay.results.traces import Traces
from assay.runner.agent_run import AgentSettings
from assay.runner.inference import CaseInference
from assay.runner.judges import JudgeSettings
from assay.runner.ray_worker import (
    ChunkOutcome,
    Probe,
    Runs,
    WorkerContext,
    probe,
    run_cases,
    shipping,
)
from assay.runner.scoring import score_case
from assay.runner.sets import (
    CaseCallback,
    DoneCases,
    EvalSetJob,
    configured_metrics,
    set_result,
)

TASK_ATTEMPTS = 3
"""Attempts per task whose worker dies before it gives its cases back."""
PROBE_TIMEOUT_S = 300.0
"""How long the first task (which may install the agent's code on a worker) may take."""
MAX_CASES_PER_TASK = 8
"""The most cases one task runs when the caller does not say: a task costs some milliseconds
(scheduling, a fresh event loop, metrics), so a large eval set is run a few cases a task, at
least four tasks per task slot of the cluster."""
AHEAD = 4
"""Tasks submitted past the oldest one not handed on, in windows: a slow case holds back at
most this many windows of finished results."""
CONNECT_TIMEOUT_S = 5.0
FORWARDED = ("ASSAY_", "OPENAI_", "OLLAMA_", "GOOGLE_", "GEMINI_", "LITELLM_", "VERTEX")
"""The driver's variables the workers get (in the object store, not the runtime environment,
which the dashboard shows): what chooses and reaches the judges."""


class RayExecutorError(AssayError):
    """The Ray executor cannot run: no Ray, no cluster, workers without assay or the agent."""


@dataclass
class _Unit:
    """Cases of one eval set run by one task (none when every run of them is done)."""

    set_index: int
    indices: list[int]
    done: dict[tuple[str, str, int], EvalCaseResult]
    runs: Runs | None = None
    owner: str = field(default_factory=lambda: uuid.uuid4().hex)
    tries: int = 0
    outcome: ChunkOutcome | None = None


_FLUSHED = ChunkOutcome(results=[])
"""A unit's outcome once handed on."""


@dataclass
class _SetState:
    job: EvalSetJob
    ref: Any = None
    started: float | None = None
    results: CaseResults = field(default_factory=CaseResults)
    """Held while few, spilled past ``ASSAY_KEEP_CASES``, as in a run in one process."""
    judges: dict[str, JudgeInfo] = field(default_factory=dict)
    units_left: int = 0
    inferences: list[CaseInference] = field(default_factory=list)
    """The set's conversations, held only for an ``on_inference`` that wants them all."""


def evaluate_on_ray(
    jobs: Sequence[EvalSetJob],
    traces: Traces | None = None,
    *,
    agent: AgentSettings | None = None,
    agent_spec: str | None = None,
    concurrency: int = 8,
    on_case: CaseCallback | None = None,
    on_inference: Callable[[EvalSetJob, list[CaseInference]], None] | None = None,
    judges: JudgeSettings | None = None,
    on_conversation: Callable[[EvalSetJob, CaseInference], None] | None = None,
    done: DoneCases | None = None,
    captures: Captures | None = None,
    address: str | None = None,
    task_attempts: int = TASK_ATTEMPTS,
    cases_per_task: int | None = None,
    task_cpus: float = 1.0,
    window: int | None = None,
) -> list[EvalSetResult]:
    """Evaluate ``jobs`` on a Ray cluster; one result per set, as
    :func:`~assay.runner.evaluate.evaluate` gives them (see the module docstring).

    ``agent_spec`` is the agent's spec string (the workers resolve it; ``agent`` gives the
    inference settings). ``captures`` is accepted for the same call and left empty: the run
    history reads the rows back from each result. Raises :class:`RayExecutorError` before any
    agent or judge call when the cluster or the agent cannot be used."""
    if (traces is None) == (agent is None):
        raise ValueError("give either traces or an agent")
    if agent is not None and agent_spec is None:
        raise ValueError("the Ray executor needs the agent's spec string (agent_spec)")
    if task_attempts < 1 or (cases_per_task or 1) < 1 or concurrency < 1 or task_cpus <= 0:
        raise ValueError(
            "task_attempts, cases_per_task, concurrency and task_cpus must be positive"
        )
    del captures
    ray = _import_ray()
    settings = judges or JudgeSettings()
    source = settings.env if settings.env is not None else os.environ
    env = {k: v for k, v in source.items() if k.startswith(FORWARDED)}
    shipped, worker_spec = shipping(agent_spec)
    with _cluster(ray, address, shipped) as runtime_env:
        _probe(ray, worker_spec, runtime_env, env)
        cache = None
        if settings.cache:
            cache = ResponseCache(settings.cache_path or ResponseCache.default_path(source))
        with shared_actors(ray, cache, scheduling_strategy=_here(ray)) as (limiter, relay):
            context = WorkerContext(
                judges=dataclasses.replace(settings, env=None, transcript=None),
                limiter=limiter,
                cache=relay,
                concurrency=concurrency,
                agent_spec=worker_spec,
                inference=agent.inference if agent is not None else None,
                env=env,
                trace_sources=tuple(traces.sources) if traces is not None else (),
                trace_notes=traces.notes_only() if traces is not None else None,
                inferences=on_inference is not None or on_conversation is not None,
            )
            driver = _Driver(
                ray,
                jobs,
                traces,
                agent,
                context,
                runtime_env,
                on_case=on_case,
                on_inference=on_inference,
                on_conversation=on_conversation,
                done=done or {},
                task_attempts=task_attempts,
                cases_per_task=cases_per_task,
                task_cpus=task_cpus,
                window=window or _window(ray, task_cpus),
            )
            try:
                return driver.run()
            finally:
                if cache is not None:
                    cache.close()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayExecutorError(
            "--executor ray needs Ray: pip install 'assay[ray]' (here and on every node)"
        ) from None
    return ray


@contextmanager
def _cluster(ray: Any, address: str | None, shipped: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Connected to the cluster (started locally when no address is given) for the block, the
    agent's code (``shipped``: local paths) in the job's runtime environment; a connection this
    process already has is used as it is, and left open: the code is then uploaded here, and the
    block gets the runtime environment each task must name."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        check_reachable(address)
    if ray.is_initialized():
        yield _uploaded(shipped)
        return
    try:
        if address is None:
            ray.init(include_dashboard=False, logging_level="WARNING", runtime_env=shipped or None)
        else:
            ray.init(address=address, logging_level="WARNING", runtime_env=shipped or None)
    except Exception as exc:
        where = f"at {address}" if address else "(starting a local one)"
        raise RayExecutorError(
            f"cannot connect to a Ray cluster {where}: {_first_line(exc)}"
        ) from None
    try:
        yield {}
    finally:
        ray.shutdown()


def _uploaded(shipped: dict[str, Any]) -> dict[str, Any]:
    """``shipped`` with its local paths uploaded to the cluster (Ray takes local paths only in
    the job's runtime environment, which a connection made elsewhere has fixed already)."""
    if not shipped:
        return {}
    try:
        from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
        from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
    except ImportError:  # pragma: no cover - a Ray without them
        raise RayExecutorError(
            "this process is connected to Ray already, and this Ray cannot upload the agent's "
            f"code ({shipped}) to it: let assay connect (--ray-address), or install the agent "
            "on the nodes"
        ) from None
    env = dict(shipped)
    for upload in (upload_py_modules_if_needed, upload_working_dir_if_needed):
        call: Any = upload  # private, and its parameters differ between Ray versions
        if "include_gitignore" in inspect.signature(upload).parameters:
            env = call(env, include_gitignore=True)
        else:  # pragma: no cover - an older Ray
            env = call(env)
    return env


def check_reachable(address: str) -> None:
    """Raise :class:`RayExecutorError` when ``address`` names a host and port that refuses a
    connection (Ray itself would retry for minutes); ``auto`` and ``local`` are Ray's to check."""
    if address in ("auto", "local"):
        return
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise RayExecutorError(
            f"Ray address {address!r} is not HOST:PORT, ray://HOST:PORT, auto or local"
        )
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise RayExecutorError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc} (is the cluster "
            "up, and is this its head node's address: ray status prints it?)"
        ) from None


def _probe(ray: Any, spec: str | None, runtime_env: dict[str, Any], env: dict[str, str]) -> None:
    """One small task: the workers run this assay and can load the agent, or an error saying
    what is missing, before any agent call."""
    task = ray.remote(probe).options(num_cpus=0, runtime_env=runtime_env or None, max_retries=1)
    try:
        found = Probe.model_validate_json(ray.get(task.remote(spec, env), timeout=PROBE_TIMEOUT_S))
    except ray.exceptions.GetTimeoutError:
        raise RayExecutorError(
            f"no Ray worker ran the first task within {PROBE_TIMEOUT_S:g} s (does the cluster "
            "have a node with free CPUs?)"
        ) from None
    except ray.exceptions.RuntimeEnvSetupError as exc:
        raise RayExecutorError(
            f"the workers cannot set up the agent's code ({runtime_env}): {_first_line(exc)}"
        ) from None
    except ray.exceptions.RayError as exc:
        text = str(exc)
        if "failed to import on the worker" in text or "No module named 'assay" in text:
            raise RayExecutorError(
                "the cluster's workers cannot import assay: install it on every node "
                f"(pip install 'assay[ray]=={__version__}') or in the cluster's image"
            ) from None
        raise RayExecutorError(f"the first Ray task failed: {_first_line(exc)}") from None
    if found.version != __version__:
        raise RayExecutorError(
            f"the cluster's workers run assay {found.version}, this is assay {__version__}: "
            "install the same version on every node"
        )
    if found.error is not None:
        raise RayExecutorError(f"the workers cannot load the agent {spec!r}: {found.error}")


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def _here(ray: Any) -> Any:
    """Where the shared actors go: the driver's node when it is one (it outlives workers'
    nodes), else anywhere."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        node = ray.get_runtime_context().get_node_id()
    except Exception:  # Ray Client: the driver is no node
        return "DEFAULT"
    return NodeAffinitySchedulingStrategy(node_id=node, soft=True) if node else "DEFAULT"


def _window(ray: Any, task_cpus: float) -> int:
    """Tasks in flight: three per task slot of the cluster, so none waits for the driver."""
    slots = float(ray.cluster_resources().get("CPU", 1)) / task_cpus
    return max(2, int(3 * slots))


class _Driver:
    """Submits the units of a run, at most ``window`` at once, and hands their results on in
    eval-set order."""

    def __init__(
        self,
        ray: Any,
        jobs: Sequence[EvalSetJob],
        traces: Traces | None,
        agent: AgentSettings | None,
        context: WorkerContext,
        runtime_env: dict[str, Any],
        *,
        on_case: CaseCallback | None,
        on_inference: Callable[[EvalSetJob, list[CaseInference]], None] | None,
        on_conversation: Callable[[EvalSetJob, CaseInference], None] | None,
        done: DoneCases,
        task_attempts: int,
        cases_per_task: int | None,
        task_cpus: float,
        window: int,
    ) -> None:
        self.ray = ray
        self.traces = traces
        self.agent = agent
        self.on_case = on_case
        self.on_inference = on_inference
        self.on_conversation = on_conversation
        self.done = done
        self.task_attempts = task_attempts
        self.window = window
        self.sets = [_SetState(job) for job in jobs]
        self.limiter = context.limiter
        self.context_ref = ray.put(context)
        options: dict[str, Any] = {"max_retries": 0, "num_cpus": task_cpus}
        if runtime_env:
            options["runtime_env"] = runtime_env
        self.task = ray.remote(run_cases).options(**options)
        if cases_per_task is None:
            cases = sum(len(state.job.loaded.eval_set.eval_cases) for state in self.sets)
            cases_per_task = min(MAX_CASES_PER_TASK, max(1, cases * 3 // (4 * window)))
        self.units = list(self._units(cases_per_task))
        for unit in self.units:
            self.sets[unit.set_index].units_left += 1
        self.results: list[EvalSetResult | None] = [None] * len(self.sets)

    def run(self) -> list[EvalSetResult]:
        in_flight: dict[Any, int] = {}
        submitted = flushed = 0
        while flushed < len(self.units):
            ahead = flushed + AHEAD * self.window  # results kept for order stay bounded
            while submitted < min(len(self.units), ahead) and len(in_flight) < self.window:
                self._submit(submitted, in_flight)
                submitted += 1
            if in_flight:
                ready, _ = self.ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    self._collect(ref, in_flight)
            while flushed < len(self.units) and self.units[flushed].outcome is not None:
                self._flush(self.units[flushed])
                flushed += 1
        for state in self.sets:  # an eval set without cases
            if state.units_left == 0 and self.results[self.sets.index(state)] is None:
                self._finish(state)
        return [result for result in self.results if result is not None]

    def _units(self, size: int) -> Iterator[_Unit]:
        runs_per_case = self.agent.inference.num_runs if self.agent is not None else 1
        for set_index, state in enumerate(self.sets):
            eval_set = state.job.loaded.eval_set
            set_id = eval_set.eval_set_id
            pending: list[int] = []
            for index, case in enumerate(eval_set.eval_cases):
                runs = self._runs(set_id, case, runs_per_case)
                kept = {
                    (set_id, case.eval_id, r): self.done[(set_id, case.eval_id, r)]
                    for r in runs
                    if (set_id, case.eval_id, r) in self.done
                }
                if runs and len(kept) == len(runs):
                    if pending:
                        yield self._unit(set_index, pending)
                        pending = []
                    outcome = ChunkOutcome(results=list(kept.values()))
                    yield _Unit(set_index, [index], kept, outcome=outcome)
                    continue
                pending.append(index)
                if len(pending) >= size:
                    yield self._unit(set_index, pending)
                    pending = []
            if pending:
                yield self._unit(set_index, pending)

    def _runs(self, set_id: str, case: EvalCase, runs_per_case: int) -> list[int]:
        if self.traces is None:
            return list(range(1, runs_per_case + 1))
        return [run for run, _ in self.traces.runs(set_id, case.eval_id)] or [1]

    def _unit(self, set_index: int, indices: list[int]) -> _Unit:
        eval_set = self.sets[set_index].job.loaded.eval_set
        set_id = eval_set.eval_set_id
        cases = [eval_set.eval_cases[i] for i in indices]
        kept = {key: result for key, result in self.done.items() if key[0] == set_id}
        kept = {k: v for k, v in kept.items() if k[1] in {c.eval_id for c in cases}}
        runs = None
        if self.traces is not None:
            runs = {c.eval_id: self.traces.runs(set_id, c.eval_id) for c in cases}
        return _Unit(set_index, list(indices), kept, runs)

    def _submit(self, position: int, in_flight: dict[Any, int]) -> None:
        unit = self.units[position]
        if unit.outcome is not None:
            return
        state = self.sets[unit.set_index]
        if state.ref is None:
            state.ref = self.ray.put(_shipped(state.job))
            state.started = time.perf_counter()
        unit.tries += 1
        ref = self.task.remote(
            self.context_ref, [state.ref], unit.indices, unit.owner, unit.runs, unit.done
        )
        in_flight[ref] = position

    def _collect(self, ref: Any, in_flight: dict[Any, int]) -> None:
        position = in_flight.pop(ref)
        unit = self.units[position]
        errors = self.ray.exceptions
        try:
            unit.outcome = ChunkOutcome.model_validate_json(self.ray.get(ref))
            return
        except errors.RayTaskError as exc:  # the task itself raised: running it again won't help
            reason = f"the Ray task running this case raised: {_first_line(exc)}"
        except errors.RayError as exc:  # its worker or node died, or it ran out of memory
            self._free(unit.owner)  # what the dead attempt held
            if unit.tries < self.task_attempts:
                self._submit(position, in_flight)
                return
            reason = (
                f"the Ray task running this case failed {unit.tries} time(s) "
                f"({type(exc).__name__}): {_first_line(exc)}"
            )
        self._free(unit.owner)
        unit.outcome = self._failed(unit, reason)

    def _free(self, owner: str) -> None:
        """Free the limiter's slots ``owner`` holds (a limiter that is gone holds none)."""
        with contextlib.suppress(self.ray.exceptions.RayError):
            self.ray.get(self.limiter.end.remote(owner))

    def _failed(self, unit: _Unit, reason: str) -> ChunkOutcome:
        """NOT_EVALUATED results for the unit's runs that are not done, for ``reason``."""
        state = self.sets[unit.set_index]
        job = state.job
        eval_set = job.loaded.eval_set
        set_id = eval_set.eval_set_id
        try:
            metrics = configured_metrics(job.config, default_registry())
        except Exception:  # a custom metric this process cannot import: the reason still says
            metrics = []
        metrics = [
            dataclasses.replace(m, judge_model=state.judges[m.name].judge_model)
            if m.name in state.judges and m.judge_model is None
            else m
            for m in metrics
        ]
        runs_per_case = self.agent.inference.num_runs if self.agent is not None else 1
        results = []
        for index in unit.indices:
            case = eval_set.eval_cases[index]
            for run in self._runs(set_id, case, runs_per_case):
                kept = unit.done.get((set_id, case.eval_id, run))
                results.append(
                    kept or _run_sync(score_case(set_id, case, None, metrics, reason, run))
                )
        return ChunkOutcome(results=results)

    def _flush(self, unit: _Unit) -> None:
        state = self.sets[unit.set_index]
        outcome = unit.outcome
        assert outcome is not None
        for metric, info in outcome.judges.items():
            state.judges.setdefault(metric, info)
        unit.outcome = _FLUSHED  # handed on: not held for the rest of the run
        for found in outcome.inferences:
            inference = found.inference()
            if self.on_conversation is not None:
                self.on_conversation(state.job, inference)
            if self.on_inference is not None:
                state.inferences.append(inference)
        set_id = state.job.loaded.eval_set.eval_set_id
        for result in outcome.results:
            kept = self.done.get((set_id, result.eval_id, result.assay.run))
            if kept is not None:
                state.results.append(kept)
                continue
            state.results.append(result)
            if self.on_case is not None:
                self.on_case(state.job, result)
        state.units_left -= 1
        if state.units_left == 0:
            self._finish(state)

    def _finish(self, state: _SetState) -> None:
        started = state.started if state.started is not None else time.perf_counter()
        index = self.sets.index(state)
        self.results[index] = set_result(state.job, state.results.close(), state.judges, started)
        if self.on_inference is not None:
            inferences, state.inferences = state.inferences, []
            self.on_inference(state.job, inferences)


def _shipped(job: EvalSetJob) -> EvalSetJob:
    """``job`` as the workers get it: its eval set's path absolute (custom metrics' code is
    found beside it)."""
    path = job.loaded.path
    if path.name.startswith("<") or path.is_absolute():
        return job
    return dataclasses.replace(job, loaded=dataclasses.replace(job.loaded, path=path.resolve()))


def _run_sync(coroutine: Any) -> EvalCaseResult:
    """``coroutine``'s result, run to its end here (on a thread of its own when this thread
    runs an event loop already: :class:`~assay.runner.executors.ray.RayExecutor` is called from
    one)."""
    import asyncio

    if not in_event_loop():
        return run_sync(coroutine)  # type: ignore[no-any-return]
    with ThreadPoolExecutor(max_workers=1) as thread:
        result: EvalCaseResult = thread.submit(asyncio.run, coroutine).result()
    return result
