"""The judges of an ``assay eval`` run: checked before it (:func:`check_run_judges`), and a judge
that stopped during it said once (:class:`StoppedJudges`); those of ``assay judge agree`` and
``align``, checked before they ask the judge (:func:`check_labelled_judges`).

A judge that cannot work is exit 2 before any agent or judge call, as a bad ``--agent`` is: see
:mod:`assay.runner.preflight` for what is checked. A judge that stops during the run (its server
goes away, it rejects the key) makes every later call fail at once (the client's circuit
breaker, :mod:`assay.llm.client`); the metrics it left are NOT_EVALUATED with that reason, and
one line after the results names the judge, why, and the metrics and cases it left."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape

from assay._internal.aio import run_sync
from assay.agreement.labels import LabelledRun
from assay.config import BaseCriterion, EvalConfig
from assay.llm.client import stopped_judge
from assay.metrics.registry import MetricRegistry, default_registry
from assay.results.model import EvalCaseResult
from assay.runner.evaluate import EvalSetJob
from assay.runner.preflight import JudgeCheckError, JudgeNeed, JudgeRecorder, check_judges
from assay.runner.simulators import simulator_judge


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
    problems = run_sync(check_judges(needs, env=env))
    if problems:
        raise JudgeCheckError(problems)


def check_labelled_judges(
    run: LabelledRun, *, override: str | None, env: Mapping[str, str] | None = None
) -> None:
    """``assay judge agree`` and ``align``: raise :class:`~assay.runner.preflight.JudgeCheckError`
    (exit 2) when the judge of a labelled criterion cannot work; call nothing else."""
    env = os.environ if env is None else env
    recorder = JudgeRecorder(override=override, env=env)
    for criterion in dict.fromkeys(label.criterion for label in run.labels):
        recorder.judge_for(criterion, run.config.criteria.get(criterion))
    problems = run_sync(check_judges(recorder.needs(), env=env))
    if problems:
        raise JudgeCheckError(problems)


@dataclass
class _Stopped:
    state: str
    why: str
    metrics: dict[str, None] = field(default_factory=dict)
    cases: dict[str, None] = field(default_factory=dict)


_SHOWN_CASES = 5


@dataclass
class StoppedJudges:
    """The judges that stopped during a run, gathered from each case result as it finishes
    (:meth:`see`), said once each after the run (:meth:`lines`)."""

    _found: dict[str, _Stopped] = field(default_factory=dict)

    def see(self, result: EvalCaseResult) -> None:
        """Note the metrics of ``result`` that a stopped judge left NOT_EVALUATED."""
        for metric, reason in result.assay.metric_reasons.items():
            stopped = stopped_judge(reason)
            if stopped is None:
                continue
            entry = self._found.setdefault(stopped.model, _Stopped(stopped.state, stopped.why))
            entry.metrics[metric] = None
            entry.cases[result.eval_id] = None

    def report(self, console: Console) -> None:
        """Print :meth:`lines`, each as a warning."""
        for line in self.lines():
            console.print(f"[yellow]warning:[/] {escape(line)}")

    def lines(self) -> list[str]:
        """One line per judge that stopped: the judge, why, and what it left unevaluated."""
        out = []
        for model, entry in self._found.items():
            cases = list(entry.cases)
            shown = ", ".join(cases[:_SHOWN_CASES])
            if len(cases) > _SHOWN_CASES:
                shown += f" and {len(cases) - _SHOWN_CASES:,} more"
            noun = "case" if len(cases) == 1 else "cases"
            out.append(
                f"judge {model} {entry.state} during the run ({entry.why}), and was not "
                f"called again: {', '.join(entry.metrics)} not evaluated in {len(cases):,} "
                f"{noun} ({shown}); the results are saved"
            )
        return out
