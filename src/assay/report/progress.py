"""Progress of a run while it goes: a live display on a terminal, plain log lines elsewhere.

On a terminal, a rich progress bar shows cases done out of all, and the LLM calls, cache hits,
retries and tokens of the cases finished so far, with the run's LLM calls done out of all and an
ETA. When output goes to a file or a CI log, one plain line per finished case is written instead
(``[3/12] travel / greeting PASSED · 4 LLM calls, 1 cached, 0 retries, 1,234 tokens · calls 12/~47
· ETA 3m 10s``), so the log is readable without escape codes. Both go to stderr, which leaves
stdout for the results table. Log lines are written to the console's file as they are (ids are
never read as markup, and never wrapped).

While no case finishes, a heartbeat line says the run is alive every ``heartbeat_s`` seconds (15 by
default): cases done, LLM calls in flight and waiting, calls done out of all, ETA, time elapsed
(``[0/5] running: 1 LLM call in flight, 23 waiting · calls 3/27 so far · ETA at least 1m 20s ·
1m 45s elapsed``); on a terminal the bar shows the same counts. A judge on a CPU can take minutes
before the first case is scored, and a silent log looks like a hung job.

With ``--judge-batch``, :meth:`RunProgress.batches` is told the judges' batches as they change
(:class:`~assay.llm.batch.BatchProgress`): the bar and the heartbeat show them, and a log gets a
line each time a batch is submitted, resumed, starts or ends (``[0/5] batches: 1 submitted, 1
running, 0 done · lines 0/42 done``), never one per poll.

The calls are the attempts this process sent to a backend since the run began (``ACTIVITY``, where
the clients' slots are handed out; cached answers are not calls). Their total is exact only at the
end: before a case has finished it is the calls made, in flight and waiting ("so far": it grows as
cases start); after, it is the calls per finished case times the cases, or the calls known if more
("~"). The ETA is the calls left times the mean time a finished call held its slot, over the slots
of the clients now busy; "at least" while the total counts only the calls so far.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Literal, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from assay.llm.base import TokenUsage
from assay.llm.slots import ACTIVITY
from assay.results.model import EvalCaseResult

if TYPE_CHECKING:
    from assay.llm.batch import BatchProgress


def case_usage(result: EvalCaseResult) -> TokenUsage:
    """The LLM calls and tokens one case cost: its judged metrics and its simulated user."""
    total = TokenUsage()
    for notes in result.assay.metrics.values():
        total = total + notes.usage
    if result.assay.simulator_usage is not None:
        total = total + result.assay.simulator_usage
    return total


HEARTBEAT_S = 15.0
"""Seconds without a finished case after which a heartbeat line is written."""


def elapsed_text(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``1h 02m``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def activity_text() -> str:
    """``N LLM call(s) in flight, N waiting`` for this process now."""
    flying, waiting = ACTIVITY.in_flight, ACTIVITY.waiting
    calls = "1 LLM call" if flying == 1 else f"{flying} LLM calls"
    return f"{calls} in flight, {waiting} waiting"


@dataclass(frozen=True)
class RunUpdate:
    """Where a run stands when a case has finished (what a ``progress`` callback gets)."""

    cases_done: int
    cases_total: int
    calls_done: int
    """LLM calls (attempts) finished in this run; cached answers are not calls."""
    calls_total: int
    calls_basis: Literal["so far", "estimated", "final"]
    """How ``calls_total`` was found: the calls made, in flight and waiting (it still grows), an
    estimate from the calls of the cases finished, or exact (the run is over)."""
    eta_s: float | None
    """Seconds left at the mean measured call time; None before a call has finished. While
    ``calls_basis`` is ``"so far"``, a lower bound."""
    elapsed_s: float
    case: EvalCaseResult | None = None
    """The case that just finished."""

    def calls_text(self) -> str:
        """``calls 12/47 so far``, ``calls 12/~47`` or ``calls 47/47``, with `` · ETA ...``;
        empty when the run has made no LLM call."""
        if not self.calls_total:
            return ""
        total = {"so far": f"{self.calls_total} so far", "estimated": f"~{self.calls_total}"}
        text = f"calls {self.calls_done}/{total.get(self.calls_basis, str(self.calls_total))}"
        if self.eta_s is None or self.cases_done >= self.cases_total:
            return text
        bound = "at least " if self.calls_basis == "so far" else ""
        return f"{text} · ETA {bound}{elapsed_text(self.eta_s)}"


ProgressCallback = Callable[[RunUpdate], None]


class CallCounter:
    """Counts a run's finished cases and LLM calls from when it is made (or :meth:`restart`)."""

    def __init__(self, cases_total: int) -> None:
        self.cases_total = cases_total
        self.cases_done = 0
        self.case_calls = 0  # the calls (attempts) of the finished cases
        self.restart()

    def restart(self) -> None:
        """Count from now."""
        self.started = time.monotonic()
        self._done0, self._busy0 = ACTIVITY.done, ACTIVITY.busy_s
        self._capacity = 1

    def case_done(self, spent: TokenUsage) -> None:
        """Count one finished case that cost ``spent``."""
        self.cases_done += 1
        self.case_calls += spent.calls + spent.retries

    def update(self, case: EvalCaseResult | None = None) -> RunUpdate:
        """Where the run stands now."""
        measured = ACTIVITY.done - self._done0
        busy = ACTIVITY.busy_s - self._busy0
        done, known = measured, measured + ACTIVITY.in_flight + ACTIVITY.waiting
        if not known:  # no call in this process (a Ray cluster's workers make them): the cases'
            done = known = self.case_calls
        basis: Literal["so far", "estimated", "final"] = "so far"
        total = known
        if self.cases_done >= self.cases_total:
            basis, total = "final", done
        elif self.cases_done:
            basis = "estimated"
            total = max(known, round(self.case_calls / self.cases_done * self.cases_total))
        self._capacity = ACTIVITY.busy_capacity() or self._capacity
        eta = None
        if measured and total > done:
            eta = math.ceil((total - done) / self._capacity) * busy / measured
        elapsed = time.monotonic() - self.started
        return RunUpdate(self.cases_done, self.cases_total, done, total, basis, eta, elapsed, case)


def usage_text(usage: TokenUsage) -> str:
    """``N LLM call(s), N cached, N retries, N tokens``."""
    calls = "1 LLM call" if usage.calls == 1 else f"{usage.calls:,} LLM calls"
    return (
        f"{calls}, {usage.cache_hits:,} cached, {usage.retries:,} retries, "
        f"{usage.total_tokens:,} tokens"
    )


class RunProgress:
    """Counts finished cases and their LLM usage; shows them live or as log lines.

    Use as a context manager around the run and pass :meth:`case_done` as the runner's
    ``on_case`` callback (it takes the job and the case result). ``live`` defaults to whether
    ``console`` is a terminal.
    """

    def __init__(
        self,
        console: Console,
        total: int,
        *,
        live: bool | None = None,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self.console = console
        self.total = total
        self.done = 0
        self.usage = TokenUsage()
        self.live = console.is_terminal if live is None else live
        self.heartbeat_s = heartbeat_s
        self.counter = CallCounter(total)
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._started = self._last_line = time.monotonic()
        self._write = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._batches = ""
        self._batch_state: tuple[int, ...] = ()

    def __enter__(self) -> RunProgress:
        if self.live:
            self._bar = Progress(
                TextColumn("[bold]cases"),
                BarColumn(bar_width=40 if self.console.width >= 120 else 10),
                MofNCompleteColumn(),
                TextColumn("{task.fields[usage]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("cases", total=self.total, usage=self._bar_text())
        self._started = self._last_line = time.monotonic()
        self.counter.restart()
        if self.heartbeat_s > 0:
            self._stop.clear()
            self._beat = threading.Thread(
                target=self._heartbeat, name="assay-progress", daemon=True
            )
            self._beat.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _heartbeat(self) -> None:
        """Every second: refresh the bar's counts; with no bar, a line once ``heartbeat_s``
        seconds have passed since the last one."""
        tick = min(1.0, self.heartbeat_s)
        while not self._stop.wait(tick):
            now = time.monotonic()
            if self._bar is not None and self._task is not None:
                self._bar.update(self._task, usage=self._bar_text())
            elif not self.live and now - self._last_line >= self.heartbeat_s:
                parts = [
                    f"[{self.done}/{self.total}] running: {activity_text()}",
                    self._batches,
                    self.counter.update().calls_text(),
                    f"{elapsed_text(now - self._started)} elapsed",
                ]
                self._line(" · ".join(part for part in parts if part))

    def _bar_text(self) -> str:
        """The calls and ETA first, then what is in flight; the finished cases' usage only where
        the line has room for it (from 160 columns)."""
        flying = f"{ACTIVITY.in_flight} in flight, {ACTIVITY.waiting} waiting"
        parts = [self._batches, self.counter.update().calls_text(), flying]
        if self.console.width >= 160:
            parts.append(usage_text(self.usage))
        return " · ".join(part for part in parts if part)

    def _line(self, text: str) -> None:
        with self._write:
            self.console.file.write(text + "\n")
            self.console.file.flush()
            self._last_line = time.monotonic()

    def batches(self, progress: BatchProgress) -> None:
        """Show the judges' batches (``--judge-batch``'s ``batch_progress`` hook): on the bar and
        in the heartbeat; in a log, a line when a batch is submitted, resumed, starts or ends."""
        self._batches = progress.describe()
        state = (progress.submitted, progress.resumed, progress.running, progress.done)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, usage=self._bar_text())
        elif not self.live and state != self._batch_state:
            self._line(f"[{self.done}/{self.total}] {self._batches}")
        self._batch_state = state

    def case_done(self, job: object, result: EvalCaseResult) -> None:
        """Count one finished case (the runner's ``on_case`` callback)."""
        self.done += 1
        spent = case_usage(result)
        self.usage = self.usage + spent
        self.counter.case_done(spent)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, usage=self._bar_text())
            return
        if self.live:
            return
        run = f" (run {result.assay.run})" if result.assay.run > 1 else ""
        # Written as it is, not through rich: a log line needs no markup, wrapping or measuring,
        # and printing 10,000 of them through Console.print cost as much as scoring them.
        line = (
            f"[{self.done}/{self.total}] {result.eval_set_id} / {result.eval_id}{run} "
            f"{result.final_eval_status.name} · {usage_text(spent)}"
        )
        calls = self.counter.update().calls_text()
        self._line(f"{line} · {calls}" if calls else line)


_J = TypeVar("_J")


def heartbeat_from_env() -> float:
    """``ASSAY_HEARTBEAT_S`` when it is a number of seconds (0: no heartbeat), else the default."""
    try:
        seconds = float(os.environ.get("ASSAY_HEARTBEAT_S", ""))
    except ValueError:
        return HEARTBEAT_S
    return seconds if seconds >= 0 else HEARTBEAT_S


@contextmanager
def reporting(
    progress: ProgressCallback | bool,
    cases: int,
    on_case: Callable[[_J, EvalCaseResult], None] | None,
) -> Iterator[Callable[[_J, EvalCaseResult], None] | None]:
    """The Python API's progress around a run of ``cases`` cases: ``on_case`` extended to call
    ``progress`` with a :class:`RunUpdate` per finished case; or, for ``True``, to write
    :class:`RunProgress`'s plain lines (and heartbeat) on stderr; ``False``: ``on_case`` alone."""
    if progress is False:
        yield on_case
        return
    if progress is True:
        lines = RunProgress(
            Console(stderr=True, highlight=False),
            cases,
            live=False,
            heartbeat_s=heartbeat_from_env(),
        )

        def written(job: _J, result: EvalCaseResult) -> None:
            if on_case is not None:
                on_case(job, result)
            lines.case_done(job, result)

        with lines:
            yield written
        return
    counter = CallCounter(cases)
    callback = progress

    def called(job: _J, result: EvalCaseResult) -> None:
        if on_case is not None:
            on_case(job, result)
        counter.case_done(case_usage(result))
        callback(counter.update(result))

    yield called
