"""Progress of a run while it goes: a live display on a terminal, plain log lines elsewhere.

On a terminal, a rich progress bar shows cases done out of all, and the LLM calls, cache hits,
retries and tokens of the cases finished so far. When output goes to a file or a CI log, one
plain line per finished case is written instead (``[3/12] travel / greeting PASSED · 4 LLM
calls, 1 cached, 0 retries, 1,234 tokens``), so the log is readable without escape codes. Both
go to stderr, which leaves stdout for the results table. Log lines are written to the console's
file as they are (ids are never read as markup, and never wrapped).

While no case finishes, a heartbeat line says the run is alive every ``heartbeat_s`` seconds (15 by
default): cases done, LLM calls in flight and waiting, time elapsed (``[0/5] running: 1 LLM call
in flight, 23 waiting · 1m 45s elapsed``); on a terminal the bar shows the same counts. A judge on a
CPU can take minutes before the first case is scored, and a silent log looks like a hung job.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

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


def usage_text(usage: TokenUsage) -> str:
    """``N LLM calls, N cached, N retries, N tokens``."""
    return (
        f"{usage.calls} LLM calls, {usage.cache_hits} cached, {usage.retries} retries, "
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
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._started = self._last_line = time.monotonic()
        self._write = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> RunProgress:
        if self.live:
            self._bar = Progress(
                TextColumn("[bold]cases"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[usage]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("cases", total=self.total, usage=usage_text(self.usage))
        self._started = self._last_line = time.monotonic()
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
                self._line(
                    f"[{self.done}/{self.total}] running: {activity_text()} · "
                    f"{elapsed_text(now - self._started)} elapsed"
                )

    def _bar_text(self) -> str:
        return f"{usage_text(self.usage)} · {activity_text()}"

    def _line(self, text: str) -> None:
        with self._write:
            self.console.file.write(text + "\n")
            self.console.file.flush()
            self._last_line = time.monotonic()

    def case_done(self, job: object, result: EvalCaseResult) -> None:
        """Count one finished case (the runner's ``on_case`` callback)."""
        self.done += 1
        spent = case_usage(result)
        self.usage = self.usage + spent
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, usage=self._bar_text())
            return
        if self.live:
            return
        run = f" (run {result.assay.run})" if result.assay.run > 1 else ""
        # Written as it is, not through rich: a log line needs no markup, wrapping or measuring,
        # and printing 10,000 of them through Console.print cost as much as scoring them.
        self._line(
            f"[{self.done}/{self.total}] {result.eval_set_id} / {result.eval_id}{run} "
            f"{result.final_eval_status.name} · {usage_text(spent)}"
        )
