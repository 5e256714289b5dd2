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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from assay._internal.aio import run_sync
from assay.llm.client import stopped_judge
from assay.results.model import EvalCaseResult
from assay.runner.preflight import JudgeCheckError, JudgeRecorder, check_judges
from assay.runner.preflight import check_run_judges as check_run_judges  # where tests look
from assay.runner.preflight import run_judges as run_judges

if TYPE_CHECKING:  # the labels' package imports numpy (its statistics): `assay eval` needs neither
    from assay.agreement.labels import LabelledRun


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
