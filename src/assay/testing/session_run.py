"""The pytest plugin's record in the run history: one run per pytest session.

``assay eval`` records one run per invocation, however many eval sets it is given; so does the
plugin, per session: the run is opened once the session's tests are collected (its eval sets
are those of the eval-case tests that will run, each whole), each eval-case test's result is
handed to it as the test finishes, and the session's end marks it finished, or interrupted
(resumable) when the session stopped before every eval-case test ran (``-x``, Ctrl-C). A
resumed session (``--assay-resume``) reopens the run: the cases it already has are taken as they
are, neither run through the agent nor judged again, and their tests pass or fail as recorded.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from assay.errors import InputError
from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult, EvalSetResult, JudgeInfo
from assay.runner.evaluate import DoneCases, EvalSetJob, set_result
from assay.runner.options import RunOptions
from assay.runner.recording import (
    Notice,
    Recording,
    run_spec,
    start_recording,
    unrecordable,
    warn_of,
)


def _ignore(_message: str) -> None:
    """Nothing said."""


@dataclass
class SessionRun:
    """One pytest session's run in the history: its eval sets, and the case results its
    eval-case tests have handed it so far."""

    recording: Recording
    jobs: Sequence[EvalSetJob]
    expected: int
    """How many eval-case tests the session is to run."""
    started: float = field(default_factory=time.perf_counter)
    ran: int = 0
    cases: dict[tuple[int, int], list[EvalCaseResult]] = field(default_factory=dict)
    judges: dict[str, JudgeInfo] = field(default_factory=dict)

    def done_for(self, job: EvalSetJob, eval_id: str, num_runs: int) -> DoneCases | None:
        """The runs of one case the run already has (None when it has none)."""
        done = self.recording.done
        set_id = job.loaded.eval_set.eval_set_id
        keys = [CaseKey(set_id, eval_id, run) for run in range(1, num_runs + 1)]
        kept: dict[tuple[str, str, int], EvalCaseResult] = {
            key: found for key in keys if (found := done.get(key)) is not None
        }
        return kept or None

    def took(self, job: EvalSetJob, index: int, results: Sequence[EvalSetResult]) -> None:
        """An eval-case test's results (its case's runs, kept or new)."""
        runs = self.cases.setdefault((id(job), index), [])
        for result in results:
            runs.extend(result.eval_case_results)
            if result.assay is not None:
                self.judges.update(result.assay.judges)

    def end(self, *, interrupted: bool) -> None:
        """Mark the run finished, with every set's result, or interrupted when the session
        stopped early; then close the history."""
        try:
            if interrupted or self.ran < self.expected:
                self.recording.interrupted()
            else:
                self.recording.finish(self._results())
        finally:
            self.recording.close()

    def _results(self) -> list[EvalSetResult]:
        results = []
        for job in self.jobs:
            count = len(job.loaded.eval_set.eval_cases)
            cases = [
                result for index in range(count) for result in self.cases.get((id(job), index), ())
            ]
            results.append(set_result(job, cases, dict(self.judges), self.started))
        return results


def open_session_run(
    tests: Sequence[tuple[EvalSetJob, str]],
    options: RunOptions,
    *,
    warn: Notice = warn_of,
    note: Notice = _ignore,
) -> SessionRun:
    """The run of a session whose eval-case tests are ``tests`` (each test's whole eval set and
    the name of its agent), recorded as ``options`` say (or the run ``options.resume`` names,
    reopened). An :class:`~assay.errors.InputError` when the eval sets cannot be recorded
    together, a :class:`~assay.history.records.HistoryError` when the run cannot be resumed."""
    jobs = list({id(job): job for job, _agent in tests}.values())
    if problems := unrecordable(jobs):
        raise InputError(problems)
    agents = ", ".join(dict.fromkeys(agent for _job, agent in tests))
    spec = run_spec(
        jobs,
        None,
        agent=agents,
        num_runs=options.num_runs,
        mock_tools=options.mock_tools,
        judge_model=options.judge_model,
    )
    history_file = options.history_file
    recording = start_recording(
        spec,
        history_file=str(history_file) if history_file is not None else None,
        resume=options.resume,
        warn=warn,
        note=note,
    )
    return SessionRun(recording, jobs, expected=len(tests))
