"""Every judge a run will call, checked before the run calls anything.

A judge that cannot work would otherwise be found case by case: each judged metric of each case
NOT_EVALUATED with the same reason. So before the first agent or judge call, each judge model a
run will use (the judged metrics', and the simulated user's) is chosen as the run will choose it
(:func:`~assay.llm.selection.choose_judge_model`) and checked as far as it can be without a
judge call:

* the model string names a backend (a URL where a model belongs is refused, saying how to point
  at a server), and the backend can be made here: its extra installed, its credentials set, a
  ``scripted:`` file present and readable as a script, a ``local:`` model's parts installed or
  its file present (:func:`~assay.llm.registry.resolve_backend`);
* a backend that can say more without a judge call does (its ``check()``): an OpenAI-compatible
  or Ollama server answers ``GET /models`` in a few seconds and accepts the key; the embedded
  judge's runtime imports and a ``local:`` file starts as a GGUF file does. The embedded model is
  not loaded: that takes seconds to minutes and as much memory as the model, and the run loads
  it anyway.

Each judge that fails is one line: which judge, for which metrics, what is wrong and what to do.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from assay._internal.aio import run_sync
from assay.config import BaseCriterion, EvalConfig
from assay.errors import AssayError
from assay.llm.base import LlmBackend, LlmUnavailableError
from assay.llm.redact import redact
from assay.llm.registry import resolve_backend
from assay.llm.selection import JudgeChoice, choose_judge_model, describe_judge
from assay.metrics.registry import MetricRegistry, default_registry
from assay.results.model import SIMULATOR
from assay.runner.simulators import simulator_judge

if TYPE_CHECKING:
    from assay.runner.sets import EvalSetJob

SIMULATED_USER = SIMULATOR
"""The name the simulated user's model is asked for under (as in ``assay.judges``)."""

CHECKED_LATER = "judge checked before the run"
"""What :class:`JudgeRecorder` answers in place of a judge."""


class JudgeCheckError(AssayError):
    """A judge the run needs cannot work; the message has one line per such judge."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@runtime_checkable
class CheckableBackend(Protocol):
    """A backend that can check, without a judge call, that calls to it can work."""

    async def check(self) -> None:
        """Raise :class:`~assay.llm.base.LlmUnavailableError` saying what to do if not."""
        ...


@dataclass
class JudgeNeed:
    """One judge model a run will call, why it was chosen, and for what (metric names, and
    :data:`SIMULATED_USER` for the simulated user)."""

    choice: JudgeChoice
    metrics: list[str] = field(default_factory=list)

    def names(self) -> str:
        """The metrics in words: ``safety_v1, hallucinations_v1 and the simulated user``."""
        shown = [m for m in self.metrics if m != SIMULATED_USER]
        if SIMULATED_USER in self.metrics:
            shown.append("the simulated user")
        return ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]


class JudgeRecorder:
    """A judge provider that chooses each metric's judge as the run's pool will
    (``override``: ``--judge-model``; ``env``: ``ASSAY_JUDGE_MODEL``, credentials) and notes it,
    handing out no judge. Metrics for which no judge can be chosen at all are not noted: the
    run reports them (NOT_EVALUATED, with how to get a judge)."""

    def __init__(self, *, override: str | None, env: Mapping[str, str]) -> None:
        self.override = override
        self.env = env
        self._needs: dict[str, JudgeNeed] = {}

    def judge_for(self, metric: str, criterion: BaseCriterion | None) -> str:
        """Note the judge ``metric`` will get; give no judge."""
        choice = choose_judge_model(criterion, override=self.override, env=self.env)
        if isinstance(choice, JudgeChoice):
            need = self._needs.setdefault(choice.model, JudgeNeed(choice))
            if metric not in need.metrics:
                need.metrics.append(metric)
        return CHECKED_LATER

    def needs(self) -> list[JudgeNeed]:
        """Every judge noted, in the order first asked for."""
        return list(self._needs.values())


BackendFactory = Callable[[str], LlmBackend]


async def _problem(need: JudgeNeed, make: BackendFactory) -> str | None:
    """What is wrong with ``need``'s judge, as one line; None when the checks pass."""
    backend: LlmBackend | None = None
    try:
        backend = make(need.choice.model)
        if isinstance(backend, CheckableBackend):
            await backend.check()
    except LlmUnavailableError as exc:
        judge = describe_judge(need.choice)
        return redact(f"judge {judge}, for {need.names()}, cannot work: {exc}")
    finally:
        if backend is not None:
            await backend.aclose()
    return None


async def check_judges(
    needs: Sequence[JudgeNeed],
    *,
    env: Mapping[str, str],
    backend_factory: BackendFactory | None = None,
) -> list[str]:
    """What is wrong with each judge in ``needs`` (checked together), one line each, in the
    order of ``needs``; empty when every judge passes. ``backend_factory`` makes a backend from
    a model string (default: :func:`~assay.llm.registry.resolve_backend` with ``env``)."""

    def make(model: str) -> LlmBackend:
        return resolve_backend(model, env=env)

    factory = backend_factory or make
    checks: list[Awaitable[str | None]] = [_problem(need, factory) for need in needs]
    found = await asyncio.gather(*checks)
    return [problem for problem in found if problem is not None]


__all__ = [
    "CHECKED_LATER",
    "SIMULATED_USER",
    "CheckableBackend",
    "JudgeCheckError",
    "JudgeNeed",
    "JudgeRecorder",
    "check_judges",
]


def _judged(config: EvalConfig, registry: MetricRegistry) -> list[tuple[str, BaseCriterion]]:
    """The config's metrics that ask a judge (a custom metric's function asks none)."""
    custom = config.custom_metrics or {}
    return [
        (name, criterion)
        for name, criterion in config.criteria.items()
        if name not in custom and registry.is_judged(name)
    ]


def run_judges(
    jobs: Sequence[EvalSetJob],
    *,
    override: str | None,
    env: Mapping[str, str],
    simulated_user: bool,
    registry: MetricRegistry | None = None,
) -> list[JudgeNeed]:
    """Every judge the run will call, with its metrics: each judged criterion's, and, when
    ``simulated_user`` (an agent run) and a set has a ``conversation_scenario``, the simulated
    user's model."""
    registry = registry or default_registry()
    recorder = JudgeRecorder(override=override, env=env)
    for job in jobs:
        for name, criterion in _judged(job.config, registry):
            recorder.judge_for(name, criterion)
        cases = job.loaded.eval_set.eval_cases
        if simulated_user and any(case.conversation_scenario is not None for case in cases):
            simulator_judge(job.config, recorder)
    return recorder.needs()


def check_run_judges(
    jobs: Sequence[EvalSetJob],
    *,
    override: str | None,
    simulated_user: bool,
    env: Mapping[str, str] | None = None,
    registry: MetricRegistry | None = None,
) -> None:
    """Raise :class:`~assay.runner.preflight.JudgeCheckError` (exit 2) when a judge the run will
    call cannot work, one line per judge; call nothing else. ``override`` is
    ``--judge-model``; ``env`` (default ``os.environ``) what the run's judges read."""
    env = os.environ if env is None else env
    needs = run_judges(
        jobs, override=override, env=env, simulated_user=simulated_user, registry=registry
    )
    if not needs:
        return
    checked = check_judges(needs, env=env)
    problems = run_sync(checked)
    if problems:
        raise JudgeCheckError(problems)
