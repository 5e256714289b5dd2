"""What ``assay eval`` says while its run goes (:class:`Shown`): the jobs and their warnings,
the judge profile, progress (and judge batches), the history's notes, the judges' agreement
with people, and ``--save-traces`` written as conversations end."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assay.cli.output import make_console

if TYPE_CHECKING:
    from rich.console import Console

    from assay.llm.batch import BatchProgress
    from assay.llm.profile import JudgeProfile
    from assay.report.progress import RunProgress
    from assay.results.model import EvalCaseResult, EvalSetResult
    from assay.runner.agent_run import TracesWriter
    from assay.runner.inference import CaseInference
    from assay.runner.options import RunOptions
    from assay.runner.run import RunHooks
    from assay.runner.sets import CaseCallback, EvalSetJob


def _attach_agreement(
    console: Console,
    jobs: Sequence[EvalSetJob],
    results: Sequence[EvalSetResult],
    history_file: str | None,
    profile: JudgeProfile | None = None,
) -> None:
    """How far each judged metric's judge agrees with people, from the newest matching judge
    card in the run history (read even with ``--no-history``; a missing file is not made). A
    criterion the judge profile decided is matched on a prompt version that includes it."""
    if not any(result.assay and result.assay.judges for result in results):
        return
    from rich.markup import escape

    from assay.agreement.cards import attach_agreement
    from assay.history.records import HistoryError, default_history_path

    profile_for = profile.entry_for if profile else None
    path = Path(history_file) if history_file else default_history_path()
    try:
        attach_agreement(results, [job.config for job in jobs], path, profile_for)
    except HistoryError as exc:
        console.print(f"[yellow]warning:[/] {escape(str(exc))}; judge agreement not shown")


def _announce_profile(console: Console, options: RunOptions) -> None:
    """The profile ``--judge-profile`` names, announced (the bundled one, or none, is not)."""
    from rich.markup import escape

    profile = options.profile
    if profile is not None and options.judge_profile is not None:
        covered = ", ".join(profile.criteria)
        console.print(
            f"[dim]judge profile {escape(options.judge_profile)} for "
            f"{escape(profile.judge_model)}: {escape(covered)}[/]"
        )


def unapplied_profile(profile: JudgeProfile | None, results: Sequence[EvalSetResult]) -> list[str]:
    """A warning per criterion the profile covers that another judge scored (so the profile's
    rule, fitted for its own judge, was not applied)."""
    from assay.llm.profile import bundled_source

    warnings: dict[str, str] = {}
    if profile is None or profile.source == bundled_source():
        return []
    for result in results:
        for metric, info in (result.assay.judges if result.assay else {}).items():
            used = info.judge_model or info.model
            if metric in profile.criteria and used and used != profile.judge_model:
                warnings[metric] = (
                    f"the judge profile was fitted for {profile.judge_model}, but {metric} was "
                    f"judged by {used}: its rule was not applied"
                )
    return list(warnings.values())


def _heartbeat_s() -> float:
    """``ASSAY_HEARTBEAT_S``: seconds without a finished case before a progress line says the
    run is alive (default 15; 0 turns it off)."""
    from assay.report.progress import HEARTBEAT_S

    raw = os.environ.get("ASSAY_HEARTBEAT_S", "").strip()
    if not raw:
        return HEARTBEAT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise click.UsageError(f"ASSAY_HEARTBEAT_S must be a number of seconds; got {raw!r}")
    return seconds


class Shown:
    """What ``assay eval`` says while its run goes: the jobs and their warnings, the judge
    profile, progress, the history's notes, the judges' agreement with people."""

    def __init__(
        self,
        console: Console,
        show_progress: bool,
        options: RunOptions,
        history_file: str | None,
    ) -> None:
        from assay.cli.judge_check import StoppedJudges

        self.console = console
        self.show_progress = show_progress
        self.options = options
        self.traces: TracesWriter | None = None
        """``--save-traces``: each conversation written as it is scored."""
        self.stopped = StoppedJudges()
        self.history_file = history_file
        """Where the judges' agreement is read (even with --no-history)."""
        self.progress: RunProgress | None = None
        """The run's :class:`~assay.report.progress.RunProgress`, while it shows."""

    def batches(self, state: BatchProgress) -> None:
        """--judge-batch's batches (a :class:`~assay.llm.batch.BatchProgress`), shown by the
        run's progress when it shows."""
        if self.progress is not None:
            self.progress.batches(state)

    def hooks(self) -> RunHooks:
        from rich.markup import escape

        from assay.runner.run import RunHooks

        return RunHooks(
            on_case=lambda _job, result: self.stopped.see(result),
            on_conversation=self.save_conversation,
            watch=self.watch,
            loaded=self.loaded,
            finishing=self.finishing,
            warn=lambda message: make_console(stderr=True).print(
                f"[yellow]warning:[/] {escape(message)}"
            ),
            note=lambda message: make_console().print(escape(message)),
        )

    @contextlib.contextmanager
    def saving_traces(self, path: str | None) -> Iterator[None]:
        """``--save-traces PATH`` around the run: written as ``PATH.partial`` as conversations
        are scored, renamed to ``PATH`` when the run ends; a run that fails or is stopped
        leaves what it wrote (a complete document) as ``PATH.partial``."""
        if not path:
            yield
            return
        from rich.markup import escape

        from assay.runner.agent_run import TracesWriter

        self.traces = writer = TracesWriter(Path(path))
        try:
            with writer:
                yield
        except BaseException:
            if writer.partial.exists():
                where = escape(str(writer.partial))
                make_console(stderr=True).print(
                    f"[yellow]warning:[/] the conversations that ended are in {where}"
                )
            raise
        finally:
            self.traces = None

    def save_kept(self, kept: Sequence[EvalCaseResult]) -> None:
        """With ``--save-traces``, the conversations of the cases a resumed run kept (after
        those it ran; a case it ran again is not written twice)."""
        if self.traces is None:  # not read at all: a resumed run's are read from the history
            return
        from assay.runner.agent_run import recorded_inference

        for case in kept:
            self.save_conversation(None, recorded_inference(case))

    def save_conversation(self, _job: EvalSetJob | None, done: CaseInference) -> None:
        """With ``--save-traces``, ``done`` written to the traces file."""
        if self.traces is not None:
            self.traces.add(done)

    def loaded(self, jobs: Sequence[EvalSetJob], traces_note: str | None) -> None:
        """The traces' warning, each job's criteria and warnings, and the profile."""
        from rich.markup import escape

        console = self.console
        for line in traces_note.splitlines() if traces_note is not None else ():
            console.print(f"[yellow]warning:[/] {escape(line)}")
        configs_shown: set[int] = set()  # a config's warnings are shown once, however many sets
        for job in jobs:
            names = ", ".join(job.config.criteria) or "(none)"
            console.print(
                f"[dim]{escape(str(job.loaded.path))}: criteria from "
                f"{escape(job.config_source)}: {escape(names)}[/]"
            )
            config_warnings = () if id(job.config) in configs_shown else job.config.warnings
            configs_shown.add(id(job.config))
            for warning in (*job.loaded.warnings, *config_warnings):
                console.print(f"  [yellow]warning:[/] {escape(str(warning))}")
        _announce_profile(console, self.options)

    @contextlib.contextmanager
    def watch(self, cases: int, on_case: CaseCallback | None) -> Iterator[CaseCallback | None]:
        """The live progress on stderr (unless --no-progress) around the run."""
        if not self.show_progress:
            yield on_case
            return
        from assay.report.progress import RunProgress

        progress = RunProgress(make_console(stderr=True), cases, heartbeat_s=_heartbeat_s())
        self.progress = progress

        def shown(job: EvalSetJob, result: EvalCaseResult) -> None:
            if on_case is not None:
                on_case(job, result)
            progress.case_done(job, result)

        with progress:
            yield shown

    def finishing(self, jobs: Sequence[EvalSetJob], results: list[EvalSetResult]) -> None:
        """Each judge's agreement with people, and the profile's rules not applied."""
        from rich.markup import escape

        profile = self.options.profile
        _attach_agreement(self.console, jobs, results, self.history_file, profile)
        for message in unapplied_profile(profile, results):
            self.console.print(f"[yellow]warning:[/] {escape(message)}")
