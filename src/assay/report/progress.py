"""Progress of a run while it goes: a live display on a terminal, plain log lines elsewhere.

On a terminal, a rich progress bar shows cases done out of all, and the LLM calls, cache hits,
retries and tokens of the cases finished so far. When output goes to a file or a CI log, one
plain line per finished case is written instead (``[3/12] travel / greeting PASSED · 4 LLM
calls, 1 cached, 0 retries, 1,234 tokens``), so the log is readable without escape codes. Both
go to stderr, which leaves stdout for the results table. Log lines are written to the console's
file as they are (ids are never read as markup, and never wrapped).
"""

from __future__ import annotations

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
from assay.results.model import EvalCaseResult


def case_usage(result: EvalCaseResult) -> TokenUsage:
    """The LLM calls and tokens one case cost: its judged metrics and its simulated user."""
    total = TokenUsage()
    for notes in result.assay.metrics.values():
        total = total + notes.usage
    if result.assay.simulator_usage is not None:
        total = total + result.assay.simulator_usage
    return total


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

    def __init__(self, console: Console, total: int, *, live: bool | None = None) -> None:
        self.console = console
        self.total = total
        self.done = 0
        self.usage = TokenUsage()
        self.live = console.is_terminal if live is None else live
        self._bar: Progress | None = None
        self._task: TaskID | None = None

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
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def case_done(self, job: object, result: EvalCaseResult) -> None:
        """Count one finished case (the runner's ``on_case`` callback)."""
        self.done += 1
        spent = case_usage(result)
        self.usage = self.usage + spent
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, usage=usage_text(self.usage))
            return
        if self.live:
            return
        run = f" (run {result.assay.run})" if result.assay.run > 1 else ""
        # Written as it is, not through rich: a log line needs no markup, wrapping or measuring,
        # and printing 10,000 of them through Console.print cost as much as scoring them.
        self.console.file.write(
            f"[{self.done}/{self.total}] {result.eval_set_id} / {result.eval_id}{run} "
            f"{result.final_eval_status.name} · {usage_text(spent)}\n"
        )
