"""How a run's LLM judges are chosen and called: :class:`JudgeSettings`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assay.llm.profile import JudgeProfile, bundled_profile

if TYPE_CHECKING:
    from assay.config.eval_config import ModelPrice
    from assay.llm.batch import Progress
    from assay.llm.shared import ResponseStore, SharedLimit


@dataclass(frozen=True)
class JudgeSettings:
    """How LLM judges are chosen and called (the CLI's ``--judge-*`` and ``--no-cache``).

    ``model`` overrides every criterion's judge (``--judge-model``; else ``ASSAY_JUDGE_MODEL``);
    ``concurrency`` bounds calls in flight per judge endpoint (a server, or a hosted model:
    :mod:`assay.llm.endpoint`), the ceiling they adapt under unless ``adaptive`` is False
    (``--judge-concurrency-fixed``); ``timeout_s`` bounds one attempt
    (default 120 s, 600 s for the embedded judge) and ``max_attempts`` the attempts of one call;
    ``cache`` keeps responses in ``cache_path`` (default ``.assay/cache.sqlite``) so an unchanged
    re-run makes no LLM call.
    """

    model: str | None = None
    concurrency: int = 8
    adaptive: bool = True
    timeout_s: float | None = None
    max_attempts: int = 4
    cache: bool = True
    cache_path: Path | None = None
    env: Mapping[str, str] | None = None
    profile: JudgeProfile | None = field(default_factory=bundled_profile)
    """A judge profile (``--judge-profile``): the fitted decision rule of each criterion it
    covers, applied where the judge is the model it was fitted for. By default the embedded
    judge's bundled alignment (which applies to no other judge); None for none."""
    transcript: dict[tuple[str, str], str] | None = None
    """When given, filled with each case's judge input by (metric, case id) (see
    :attr:`~assay.llm.judge.Judge.transcript`)."""
    shared_cache: ResponseStore | None = None
    """With ``cache``, the store to use instead of opening ``cache_path`` (one a cluster's
    workers share: :mod:`assay.runner.ray_executor`); the run does not close it."""
    shared_limit: SharedLimit | None = None
    """Also bounds calls to each remote judge model across every run sharing it."""
    early_stop: bool = False
    """``--early-stop-votes``: stop asking an invocation's samples once the majority vote is
    decided (:func:`assay.metrics.judging.ask_samples`)."""
    max_cost_usd: float | None = None
    """``--max-cost``: no judge call is started once the run's judges have cost this much."""
    prices: Mapping[str, ModelPrice] | None = None
    """The configs' own price table (``prices``), before the bundled one."""
    batch: bool = False
    """``--judge-batch``: send judge calls through the provider's batch API
    (:mod:`assay.llm.batch`) where the judge's server has one."""
    batch_history: Path | None = None
    """With ``batch``, the run history the batches are recorded in (so a killed run resumes
    them); None: recorded in memory only."""
    batch_progress: Progress | None = None
    """With ``batch``, told the batches submitted, running and done as they change."""
