"""Scoring eval sets in this process: a set's cases scored as they come, in order, with the
judges each metric got (:func:`score_set`), and the set's result (:func:`set_result`).

Cases are scored concurrently up to the run's ``concurrency`` and handed on in the order of the
eval set, each as soon as it and those before it are done. A case's LLM calls go before a later
case's (:func:`~assay.llm.slots.working_on` marks them), so with few judge slots cases finish in
turn; a case's ``duration_s`` is its own working time (its agent's conversations, and its scoring
less the time its calls only waited for a slot). LLM-judged metrics get their judge from a
:class:`JudgeProvider`; by default a pool built from :class:`JudgeSettings` (one client per judge
model, shared limits, the response cache), opened and closed inside the run's event loop.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assay._version import __version__
from assay.config import (
    CRITERION_TYPES,
    INFORMATIONAL_METRICS,
    BaseCriterion,
    EvalConfig,
    default_config,
)
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.io import LoadedEvalSet, StreamedEvalSet
from assay.history.stored import kept_output
from assay.llm.base import TokenUsage
from assay.llm.judge import Judge
from assay.llm.slots import working_on
from assay.metrics.custom import custom_metric
from assay.metrics.registry import JudgeProvider, MetricRegistry
from assay.results.captured import Captures
from assay.results.collected import CaseResults
from assay.results.model import EvalCaseResult, EvalSetResult, JudgeInfo, SetNotes
from assay.results.model import summarize as summarize  # re-exported: callers import it from here
from assay.results.traces import Traces
from assay.runner.agent_run import Attempt
from assay.runner.judges import JudgeSettings
from assay.runner.scoring import ConfiguredMetric, score_case

if TYPE_CHECKING:
    from assay.llm.batch import BatchRecords
    from assay.llm.budget import CostMeter
    from assay.llm.selection import JudgeChoice, JudgePool


@dataclass(frozen=True)
class EvalSetJob:
    """One eval set to evaluate, with its config and where that config came from."""

    loaded: LoadedEvalSet
    config: EvalConfig = field(default_factory=default_config)
    config_source: str = "defaults"


_W = TypeVar("_W")
_R = TypeVar("_R")

CaseCallback = Callable[[EvalSetJob, EvalCaseResult], None]

DoneCases = Mapping[tuple[str, str, int], EvalCaseResult]
"""Case results a resumed run already has, by eval set id, eval id and run number: those cases
are neither run through the agent nor scored again (``assay eval --resume``)."""


class _RecordingProvider:
    """Remembers which judge (or which reason for none) each metric got, and, when the judges
    come from a :class:`~assay.llm.selection.JudgePool`, why it was chosen."""

    def __init__(self, inner: JudgeProvider) -> None:
        self.inner = inner
        self.seen: dict[str, Judge | str] = {}
        self.choices: dict[str, JudgeChoice] = {}

    def judge_for(self, metric: str, criterion: BaseCriterion | None) -> Judge | str:
        choice = self.inner.judge_for(metric, criterion)
        self.seen[metric] = choice
        chosen = self._chosen(metric)
        if chosen is not None:
            self.choices[metric] = chosen
        else:
            self.choices.pop(metric, None)
        return choice

    def _chosen(self, metric: str) -> JudgeChoice | None:
        if isinstance(self.inner, _RecordingProvider):
            return self.inner.choices.get(metric)
        from assay.llm.selection import JudgePool

        return self.inner.models().get(metric) if isinstance(self.inner, JudgePool) else None

    def judge_model(self, metric: str) -> str | None:
        """The model string naming ``metric``'s judge in its rows' criteria
        (:func:`~assay.llm.selection.judged_model`); None when it has no judge."""
        judge = self.seen.get(metric)
        if not isinstance(judge, Judge):
            return None
        from assay.llm.selection import judged_model

        return judged_model(judge.model)


def configured_metrics(
    config: EvalConfig,
    registry: MetricRegistry,
    judges: JudgeProvider | None = None,
    *,
    eval_set_folder: Path | None = None,
) -> list[ConfiguredMetric]:
    """The metrics a config asks for, in config order, then ADK's informational efficiency
    metrics (tool calls, model calls, tokens, duration), which are reported on every run.
    A judged metric's rows name the judge that scores it in their criterion.

    A metric declared under ``custom_metrics`` runs its function (:mod:`assay.metrics.custom`,
    imported now, with ``eval_set_folder`` and the working directory on ``sys.path``), as in ADK
    even when it has a built-in metric's name; only a name that is no ADK metric but is
    registered in ``registry`` keeps its registered metric."""
    recording = (
        judges
        if judges is None or isinstance(judges, _RecordingProvider)
        else _RecordingProvider(judges)
    )
    custom = config.custom_metrics or {}
    metrics = []
    for name, criterion in config.criteria.items():
        declared = custom.get(name)
        adk_name = name in CRITERION_TYPES or name in INFORMATIONAL_METRICS
        if declared is not None and (adk_name or not registry.is_registered(name)):
            built = custom_metric(name, criterion, declared, eval_set_folder=eval_set_folder)
            metrics.append(
                ConfiguredMetric(
                    name, criterion, built, custom_function_path=declared.code_config.name
                )
            )
            continue
        metric = registry.create(name, criterion, recording)
        judge_model = recording.judge_model(name) if recording is not None else None
        metrics.append(
            ConfiguredMetric(name, criterion, metric, registry.applies_to(name), judge_model)
        )
    metrics += [
        ConfiguredMetric(name, None, registry.create(name, None))
        for name in INFORMATIONAL_METRICS
        if name not in config.criteria
    ]
    return metrics


def job_metrics(
    job: EvalSetJob, registry: MetricRegistry, judges: JudgeProvider | None = None
) -> list[ConfiguredMetric]:
    """:func:`configured_metrics` of ``job``'s config, custom metrics' functions imported from
    beside its eval set file."""
    return configured_metrics(
        job.config, registry, judges, eval_set_folder=_folder_of(job.loaded.path)
    )


def _folder_of(eval_set_path: Path) -> Path | None:
    """The folder of an eval set file; None for an eval set that was not read from a file."""
    return eval_set_path.parent if eval_set_path.is_file() else None


def _app_name(eval_set: EvalSet) -> str:
    """The app name ADK puts in a result's id: the first case's that has one, else ``assay``."""
    if isinstance(eval_set, StreamedEvalSet):  # noted as it was read
        return eval_set.app_name or "assay"
    for case in eval_set.eval_cases:
        if case.session_input and case.session_input.app_name:
            return case.session_input.app_name
    return "assay"


def judge_infos(recording: _RecordingProvider | None) -> dict[str, JudgeInfo]:
    """What ``assay.judges`` says of each judge (and of the simulated user's model): the model,
    its backend, why it was chosen and the judge in words; or why there was none."""
    if recording is None or not recording.seen:
        return {}
    from assay.llm.redact import redact
    from assay.llm.selection import JudgeChoice, describe_judge, judge_backend, judged_model

    infos: dict[str, JudgeInfo] = {}
    for metric, judge in recording.seen.items():
        if isinstance(judge, str):
            infos[metric] = JudgeInfo(unavailable=judge)
            continue
        chosen = recording.choices.get(metric)
        if chosen is None or (chosen.model, chosen.source) != (judge.model, judge.source):
            chosen = JudgeChoice(judge.model, judge.source)
        infos[metric] = JudgeInfo(
            model=redact(judge.model),
            source=judge.source,
            backend=judge_backend(judge),
            judge_model=judged_model(judge.model),
            description=describe_judge(chosen),
            profile=judge.profile_note(),
        )
    return infos


def _from_traces(traces: Traces, eval_set_id: str) -> Callable[[EvalCase], list[Attempt]]:
    sources = ", ".join(traces.sources) or "the traces"

    def attempts(case: EvalCase) -> list[Attempt]:
        runs = traces.runs(eval_set_id, case.eval_id)
        if not runs:
            why = traces.problem(eval_set_id, case.eval_id)
            return [Attempt(1, None, why or f"no trace for this case in {sources}")]
        content = traces.content_note(eval_set_id, case.eval_id)
        spans = (None, case.eval_id) in traces.sessions  # kept whole: read back, keys may differ
        return [
            Attempt(
                run,
                invocations,
                trace=None if spans else ["t", eval_set_id, case.eval_id, run],
                content=content,
            )
            for run, invocations in runs
        ]

    return attempts


AttemptsOf = Callable[[EvalCase], Sequence[Attempt | Awaitable[Attempt]]]
"""A case's runs to score: each ready, or to await (its agent still running)."""


async def score_set(
    job: EvalSetJob,
    attempts: AttemptsOf,
    registry: MetricRegistry,
    semaphore: asyncio.Semaphore,
    on_case: CaseCallback | None,
    judges: JudgeProvider | None,
    started: float | None = None,
    done: DoneCases | None = None,
    captures: Captures | None = None,
    finished_case: Callable[[], None] | None = None,
    window: int = 64,
    position: int | None = None,
) -> EvalSetResult:
    started = time.perf_counter() if started is None else started
    eval_set = job.loaded.eval_set
    recording = judges if isinstance(judges, _RecordingProvider) or judges is None else None
    if judges is not None and recording is None:
        recording = _RecordingProvider(judges)
    metrics = job_metrics(job, registry, recording)

    async def one(
        item: tuple[int, EvalCase, Attempt | Awaitable[Attempt]],
    ) -> EvalCaseResult | bytes:
        index, case, ready = item
        attempt = ready if isinstance(ready, Attempt) else await ready
        key = (eval_set.eval_set_id, case.eval_id, attempt.run)
        finished = kept_output(done, key, attempt.invocations, case.conversation)  # not reread
        if finished is not None:
            return finished
        async with semaphore:
            with working_on((position or 0, index, attempt.run)) as clock:
                began = time.perf_counter()
                result = await score_case(
                    eval_set.eval_set_id,
                    case,
                    attempt.invocations,
                    metrics,
                    attempt.reason,
                    attempt.run,
                    attempt.simulator_usage,
                    captures,
                    attempt.content,
                )
                scoring_s = clock.working_s(time.perf_counter() - began)
        result.assay.duration_s = round(attempt.working_s + scoring_s, 6)
        remember(case, index, attempt, result)
        if on_case is not None:
            on_case(job, result)
        if finished_case is not None:
            finished_case()
        return result

    def remember(case: EvalCase, index: int, attempt: Attempt, result: EvalCaseResult) -> None:
        """Say where the case's invocations came from, for the run history's encoder."""
        captured = captures.get(id(result)) if captures is not None else None
        if captured is not None:
            place = None if position is None else [position, index]
            captured.came_from(attempt.trace, attempt.invocations, place, case.conversation)

    work = (
        (index, case, attempt)
        for index, case in enumerate(eval_set.eval_cases)
        for attempt in attempts(case)
    )
    collected = CaseResults()
    async for result in in_order(work, one, window=window):
        if isinstance(result, bytes):  # kept: the history's output, stored as it is
            collected.append_output(result)
        else:
            collected.append(result)
    return set_result(job, collected.close(), judge_infos(recording), started)


def _window(concurrency: int) -> int:
    """Cases started ahead of the oldest unfinished one: enough to keep ``concurrency`` busy
    past a slow case, few enough that memory does not grow with the eval set."""
    return max(4 * concurrency, 64)


async def in_order(
    work: Iterable[_W], one: Callable[[_W], Awaitable[_R]], *, window: int
) -> AsyncIterator[_R]:
    """``one`` of each item of ``work``, at most ``window`` started and not yet handed on, the
    results in the order of ``work`` (which is read as it goes: a generator over a streamed eval
    set is never held whole), each handed on as soon as it and those before it are done. If one
    fails, the others are cancelled."""
    pending: deque[asyncio.Future[_R]] = deque()
    try:
        for item in work:
            pending.append(asyncio.ensure_future(one(item)))
            if len(pending) >= window:
                yield await pending.popleft()
        while pending:
            yield await pending.popleft()
    finally:
        for future in pending:
            future.cancel()


def set_result(
    job: EvalSetJob,
    case_results: Sequence[EvalCaseResult],
    judges: dict[str, JudgeInfo],
    started: float,
) -> EvalSetResult:
    """One eval set's result: its case results in eval-set order (a :class:`CaseResults` as the
    runner collects them, or any sequence), with the set's notes (the summary and token usage
    over its cases, ``judges`` as :func:`judge_infos` describes them, the time since
    ``started``, a :func:`time.perf_counter` reading)."""
    eval_set = job.loaded.eval_set
    collected = CaseResults.of(case_results)
    created = time.time()
    result_id = f"{_app_name(eval_set)}_{eval_set.eval_set_id}_{created}"
    notes = SetNotes(
        version=__version__,
        eval_set_path=str(job.loaded.path),
        config_source=job.config_source,
        criteria=job.config.criteria_as_written(),
        summary=collected.summary,
        duration_s=round(time.perf_counter() - started, 6),
        judges=judges,
        usage=collected.usage,
        cost_usd=_costs(job, judges, collected.usage),
    )
    fields: dict[str, Any] = {
        "eval_set_result_id": result_id,
        "eval_set_result_name": result_id.replace("/", "_"),
        "eval_set_id": eval_set.eval_set_id,
        "creation_timestamp": created,
        "assay": notes,
    }
    if collected.spilled:  # read back on each pass; validating it would make it a list
        return EvalSetResult.model_construct(eval_case_results=collected, **fields)
    return EvalSetResult(eval_case_results=list(collected), **fields)


def _costs(
    job: EvalSetJob, judges: dict[str, JudgeInfo], usage: Mapping[str, TokenUsage]
) -> dict[str, float]:
    """US dollars per judged metric of the set, where its judge's price is known (the config's
    ``prices``, the bundled table, LiteLLM's offline map once a LiteLLM judge loaded it); the
    part of a metric's usage a batch API answered (:attr:`TokenUsage.batched`) at the batch
    price."""
    if not usage or not judges:
        return {}
    from assay.llm.prices import PriceBook

    book = PriceBook(job.config.prices, use_litellm="litellm" in sys.modules)
    costs = {}
    for metric, used in usage.items():
        info = judges.get(metric)
        model = info.judge_model or info.model if info is not None else None
        dollars = book.cost(model, used, batched=used.batched) if model and used.calls else None
        if dollars is not None:
            costs[metric] = round(dollars, 6)
    return costs


async def _with_judge_pool(
    settings: JudgeSettings,
    run: Callable[[JudgeProvider], Awaitable[list[EvalSetResult]]],
) -> list[EvalSetResult]:
    """Open the judge pool (and its response cache) for one run, and close both after it."""
    from assay.llm.cache import ResponseCache
    from assay.llm.client import RetryPolicy

    env = settings.env if settings.env is not None else os.environ
    cache = None
    if settings.cache and settings.shared_cache is None:
        cache = ResponseCache(settings.cache_path or ResponseCache.default_path(env))
    history = None
    if settings.batch and settings.batch_history is not None:
        from assay.history.store import HistoryStore

        history = HistoryStore(settings.batch_history)
    pool = _judge_pool(
        settings,
        history.batches if history is not None else None,
        early_stop=settings.early_stop,
        meter=_cost_meter(settings),
        override=settings.model,
        env=env,
        concurrency=settings.concurrency,
        adaptive=settings.adaptive,
        timeout_s=settings.timeout_s,
        retry=RetryPolicy(max_attempts=settings.max_attempts),
        cache=settings.shared_cache if settings.cache and cache is None else cache,
        profile=settings.profile,
        transcript=settings.transcript,
        limit=settings.shared_limit,
    )
    try:
        return await run(pool)
    finally:
        await pool.aclose()
        if cache is not None:
            cache.close()
        if history is not None:
            history.close()


def _cost_meter(settings: JudgeSettings) -> CostMeter | None:
    """The run's cost meter under ``--max-cost`` (prices: the configs' table, then the bundled
    one, then LiteLLM's offline map when a LiteLLM judge has already loaded it); else None."""
    if settings.max_cost_usd is None:
        return None
    from assay.llm.budget import CostMeter
    from assay.llm.prices import PriceBook

    book = PriceBook(settings.prices, use_litellm="litellm" in sys.modules)
    return CostMeter(book, settings.max_cost_usd)


def _judge_pool(settings: JudgeSettings, records: BatchRecords | None, **pool: Any) -> JudgePool:
    """The run's judge pool: one that sends judge calls through the provider's batch API with
    ``--judge-batch`` (recording each batch in the run history), else the ordinary one."""
    from assay.llm.backends.openai_batch import batch_api
    from assay.llm.batch_pool import BatchJudgePool
    from assay.llm.selection import JudgePool

    if not settings.batch:
        return JudgePool(**pool)
    return BatchJudgePool(
        batch_api=batch_api,
        records=records,
        on_progress=settings.batch_progress,
        **pool,
    )
