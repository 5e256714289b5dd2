"""Evaluating eval sets: the async core and its sync facade.

Inference (running an agent) and scoring are separate stages; today the actual invocations come
from recorded traces. Cases are scored concurrently up to ``concurrency`` and come back in the
order of the eval set.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from assay._version import __version__
from assay.config import INFORMATIONAL_METRICS, EvalConfig, default_config
from assay.evalset.case import EvalCase
from assay.evalset.io import LoadedEvalSet
from assay.metrics.base import EvalStatus
from assay.metrics.registry import MetricRegistry, default_registry
from assay.results.model import EvalCaseResult, EvalSetResult, RunSummary, SetNotes
from assay.results.traces import Traces
from assay.runner.scoring import ConfiguredMetric, score_case


@dataclass(frozen=True)
class EvalSetJob:
    """One eval set to evaluate, with its config and where that config came from."""

    loaded: LoadedEvalSet
    config: EvalConfig = field(default_factory=default_config)
    config_source: str = "defaults"


CaseCallback = Callable[[EvalSetJob, EvalCaseResult], None]


def configured_metrics(config: EvalConfig, registry: MetricRegistry) -> list[ConfiguredMetric]:
    """The metrics a config asks for, in config order, then ADK's informational efficiency
    metrics (tool calls, model calls, tokens, duration), which are reported on every run."""
    metrics = [
        ConfiguredMetric(name, criterion, registry.create(name, criterion))
        for name, criterion in config.criteria.items()
    ]
    metrics += [
        ConfiguredMetric(name, None, registry.create(name, None))
        for name in INFORMATIONAL_METRICS
        if name not in config.criteria
    ]
    return metrics


def summarize(results: Sequence[EvalCaseResult]) -> RunSummary:
    """Count passed, failed and not-evaluated cases."""
    statuses = [r.final_eval_status for r in results]
    return RunSummary(
        passed=statuses.count(EvalStatus.PASSED),
        failed=statuses.count(EvalStatus.FAILED),
        not_evaluated=len(statuses)
        - statuses.count(EvalStatus.PASSED)
        - statuses.count(EvalStatus.FAILED),
    )


def _app_name(cases: Sequence[EvalCase]) -> str:
    for case in cases:
        if case.session_input and case.session_input.app_name:
            return case.session_input.app_name
    return "assay"


async def _evaluate_set(
    job: EvalSetJob,
    traces: Traces,
    registry: MetricRegistry,
    semaphore: asyncio.Semaphore,
    on_case: CaseCallback | None,
) -> EvalSetResult:
    started = time.perf_counter()
    eval_set = job.loaded.eval_set
    metrics = configured_metrics(job.config, registry)
    sources = ", ".join(traces.sources) or "the traces"

    async def one(case: EvalCase) -> EvalCaseResult:
        async with semaphore:
            actual = traces.get(eval_set.eval_set_id, case.eval_id)
            missing = None if actual is not None else f"no trace for this case in {sources}"
            result = await score_case(eval_set.eval_set_id, case, actual, metrics, missing)
        if on_case is not None:
            on_case(job, result)
        return result

    case_results = list(await asyncio.gather(*(one(case) for case in eval_set.eval_cases)))
    created = time.time()
    result_id = f"{_app_name(eval_set.eval_cases)}_{eval_set.eval_set_id}_{created}"
    return EvalSetResult(
        eval_set_result_id=result_id,
        eval_set_result_name=result_id.replace("/", "_"),
        eval_set_id=eval_set.eval_set_id,
        eval_case_results=case_results,
        creation_timestamp=created,
        assay=SetNotes(
            version=__version__,
            eval_set_path=str(job.loaded.path),
            config_source=job.config_source,
            criteria={k: v.model_dump(mode="json") for k, v in job.config.criteria.items()},
            summary=summarize(case_results),
            duration_s=round(time.perf_counter() - started, 6),
        ),
    )


async def evaluate(
    jobs: Sequence[EvalSetJob],
    traces: Traces,
    *,
    registry: MetricRegistry | None = None,
    concurrency: int = 8,
    on_case: CaseCallback | None = None,
) -> list[EvalSetResult]:
    """Score every case of every eval set against its recorded trace; one result per set."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    registry = registry or default_registry()
    semaphore = asyncio.Semaphore(concurrency)
    return [await _evaluate_set(job, traces, registry, semaphore, on_case) for job in jobs]


def evaluate_sync(
    jobs: Sequence[EvalSetJob],
    traces: Traces,
    *,
    registry: MetricRegistry | None = None,
    concurrency: int = 8,
    on_case: CaseCallback | None = None,
) -> list[EvalSetResult]:
    """:func:`evaluate` for code that is not async."""
    return asyncio.run(
        evaluate(jobs, traces, registry=registry, concurrency=concurrency, on_case=on_case)
    )
