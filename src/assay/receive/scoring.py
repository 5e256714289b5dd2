"""Scoring closed sessions live, and recording them in one long-lived run of the history.

Each closed session is a case of the receiver's eval set (``assay-receive``), its id the
session's case key (:func:`assay.traces.session_key`), with no expected invocations: criteria
that need them are NOT_EVALUATED, saying so; a session with a problem is NOT_EVALUATED with it.
Cases are scored in batches by the runner (:func:`assay.runner.evaluate.evaluate`, not recorded
there) and written to the history here, into the run the receiver keeps (its id in the state
file), which is reopened after a restart and marked finished when the receiver stops.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assay.config import EvalConfig
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.io import LoadedEvalSet
from assay.history.records import HistoryError, case_row
from assay.history.store import HistoryStore
from assay.metrics.base import EvalStatus
from assay.report.otel_events import SpanRef, VerdictExporter, span_ref
from assay.results.model import EvalCaseResult, EvalMetricResult
from assay.results.traces import Traces
from assay.runner.evaluate import EvalSetJob, evaluate
from assay.runner.options import RunOptions
from assay.traces import Session, session_key

EVAL_SET_ID = "assay-receive"
"""The eval set id the receiver's cases are recorded under."""


@dataclass
class Scored:
    """One session scored: its case result, the span its verdicts are about, its digest."""

    result: EvalCaseResult
    target: SpanRef | None
    session_id: str
    digest: str


@dataclass
class LiveRun:
    """The receiver's run in the history: started, or reopened, once; cases written as scored.

    ``config_path`` is the config file (recorded with the run), ``judge_model`` overrides every
    criterion's judge. ``warn`` hears what goes wrong (a history that cannot be written, a
    failed verdict export); nothing here raises into the receiver."""

    history: Path
    config: EvalConfig
    config_path: str
    judge_model: str | None = None
    export_to: str | None = None
    warn: Callable[[str], None] = print
    run_id: str = ""
    cases: int = 0
    _store: HistoryStore | None = field(default=None, repr=False)
    _taken: set[str] = field(default_factory=set, repr=False)

    def open(self, known_run: str | None) -> str:
        """Open the history and start the run (or reopen ``known_run``); the run's id."""
        self._store = HistoryStore(self.history)
        if known_run is not None and self._store.find(known_run) is not None:
            self._store.reopen(known_run)
            self.run_id = known_run
            self._taken = {key[1] for key in self._store.done_cases(known_run)}
            return known_run
        settings = {
            "sets": [
                {
                    "path": f"<assay receive: {self.config_path}>",
                    "eval_set_id": EVAL_SET_ID,
                    "config_source": self.config_path,
                    "criteria": self.config.criteria_as_written(),
                }
            ],
            "inputs": {"receive": True},
            "judge_model": self.judge_model,
        }
        self.run_id = self._store.start_run([EVAL_SET_ID], settings)
        return self.run_id

    async def score(
        self,
        sessions: Sequence[tuple[Session, str]],
        noting: Callable[[Sequence[tuple[str, str, str]]], None] | None = None,
    ) -> list[Scored]:
        """Score ``sessions`` (each with its span digest), record them, export their verdicts.
        ``noting`` hears (digest, session id, case id) of each before its case is written."""
        if not sessions:
            return []
        keyed = _keyed(sessions, self._taken)
        results = await _scored(keyed, self.config, self.judge_model)
        if noting is not None:
            noting([(digest, session.session_id, key) for key, session, digest in keyed])
        scored = [
            Scored(result, span_ref(session), session.session_id, digest)
            for result, (_key, session, digest) in zip(results, keyed, strict=True)
        ]
        self._record([item.result for item in scored])
        if self.export_to:
            exporter = VerdictExporter(self.export_to, warn=self.warn)
            for item in scored:
                exporter.add(item.result, item.target)
            exporter.close()
        return scored

    def recorded(self, case_id: str) -> bool:
        """The run in the history holds a case ``case_id`` (read when it was reopened)."""
        return case_id in self._taken

    def _record(self, results: Sequence[EvalCaseResult]) -> None:
        if self._store is None:
            return
        # the rows record_case writes, a batch in one transaction (one commit, not one a case)
        rows = [case_row(result, result.model_dump_json(exclude_none=True)) for result in results]
        try:
            self._store.write_cases(self.run_id, rows)
        except HistoryError as exc:
            self.warn(f"{exc}; the sessions are scored but not recorded")
        else:
            self.cases += len(rows)

    def close(self) -> None:
        """Mark the run finished (its cases listed, so reports read it as any run)."""
        if self._store is None:
            return
        try:
            # the cases are read back a batch at a time as finish_run lists them, never all
            # held: a receiver that ran for days stops in bounded memory
            self._store.finish_run(self.run_id, self._store.results(self.run_id))
        except HistoryError as exc:
            self.warn(f"{exc}; the receiver's run is left as it was")
        finally:
            self._store.close()
            self._store = None


def _keyed(
    sessions: Sequence[tuple[Session, str]], taken: set[str]
) -> list[tuple[str, Session, str]]:
    """Each session with its case id: its case key, made unique within the run (a
    conversation that goes on after its session closed is a second case, ``KEY#2``)."""
    keyed = []
    for session, digest in sessions:
        key = base = session_key(session) or session.session_id or digest[:16]
        count = 1
        while key in taken:
            count += 1
            key = f"{base}#{count}"
        taken.add(key)
        keyed.append((key, session, digest))
    return keyed


async def _scored(
    keyed: Sequence[tuple[str, Session, str]], config: EvalConfig, judge_model: str | None
) -> list[EvalCaseResult]:
    """The batch scored by the runner: one eval set, one case a session, in order."""
    cases = [  # no expected invocations: criteria that need them are not applicable (as in
        # `assay eval --traces SPANS` with no eval set, runner.jobs.session_jobs)
        EvalCase.model_construct(eval_id=key, conversation=None, conversation_scenario=None)
        for key, _session, _digest in keyed
    ]
    eval_set = EvalSet(eval_set_id=EVAL_SET_ID, eval_cases=[])
    eval_set.eval_cases = cases  # made, not validated: cases without expected invocations
    loaded = LoadedEvalSet(eval_set, Path(f"<{EVAL_SET_ID}>"), "evalset")
    job = EvalSetJob(loaded, config, "given")
    traces = Traces(by_case={(EVAL_SET_ID, key): s.invocations for key, s, _d in keyed})
    options = RunOptions(progress=False, history=False, judge_model=judge_model)
    [result] = await evaluate([job], traces, options=options)
    by_id = {case.eval_id: case for case in result.eval_case_results}
    return [_with_problem(by_id[key], session) for key, session, _digest in keyed]


def _with_problem(result: EvalCaseResult, session: Session) -> EvalCaseResult:
    """A session with a problem: its case NOT_EVALUATED with the problem as the reason."""
    notes = result.assay
    if session.problem is None:
        if session.notes and notes.reason is None and not result.overall_eval_metric_results:
            notes = notes.model_copy(update={"reason": "; ".join(session.notes)})
        return result.model_copy(update={"session_id": session.session_id, "assay": notes})
    reason = f"session {session.session_id}: {session.problem}"
    return result.model_copy(
        update={
            "final_eval_status": EvalStatus.NOT_EVALUATED,
            "session_id": session.session_id,
            "assay": notes.model_copy(update={"reason": reason}),
            "overall_eval_metric_results": [
                _not_evaluated(metric) for metric in result.overall_eval_metric_results
            ],
            "eval_metric_result_per_invocation": [],
        }
    )


def _not_evaluated(metric: EvalMetricResult) -> EvalMetricResult:
    return metric.model_copy(update={"score": None, "eval_status": EvalStatus.NOT_EVALUATED})


def now() -> float:
    """The time, for the buffer's clocks (a seam for tests)."""
    return time.time()
