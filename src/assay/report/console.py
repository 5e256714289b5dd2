"""The console view of a run: a table per eval set, a summary line, optional detail tables.

A large eval set is not listed case by case: past ``max_cases`` cases, its table lists only the
cases that did not pass, up to that many, after a table per metric (passed, failed, not
evaluated, mean score), and says how to see the rest. (Rich took about a minute to lay out a
table of 10,000 cases, most of a deterministic ``assay eval`` of them, to print rows nobody
reads; the HTML report and ``--output`` keep every case.)"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.report.judge_agreement import MEASURE_HINT, NOT_MEASURED, judged_metrics
from assay.report.why import why
from assay.results.collected import CaseResults, heads
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult, RunSummary

MAX_CASES = 50
"""Cases the CLI lists per eval set before it lists only those that did not pass."""
MAX_CASES_HELP = (
    "Cases listed per eval set; a larger set gets a table per metric and only its cases that "
    "did not pass, up to this many (0: list every case)."
)

_STYLE = {
    EvalStatus.PASSED: "green",
    EvalStatus.FAILED: "bold red",
    EvalStatus.NOT_EVALUATED: "yellow",
    EvalStatus.INFORMATIONAL: "blue",
}


def status_text(status: EvalStatus) -> str:
    """A status as coloured markup."""
    return f"[{_STYLE[status]}]{status.name}[/]"


def format_score(score: float | None) -> str:
    """Scores to four decimals; a missing score as a dash."""
    return "-" if score is None else f"{score:.4f}"


def listed_cases(result: EvalSetResult, max_cases: int = 0) -> list[EvalCaseResult]:
    """The cases a set's table lists: all of them when there are at most ``max_cases`` (or
    ``max_cases`` is 0), else the first ``max_cases`` that did not pass."""
    return SetView.of(result, max_cases).listed


@dataclass
class _MetricCounts:
    passed: int = 0
    failed: int = 0
    not_evaluated: int = 0
    score_sum: float = 0.0
    scored: int = 0


@dataclass
class SetView:
    """What the console shows of one eval set, gathered in one pass over its cases (which may
    be read back from disk one at a time): the cases its table lists, how many did not pass,
    and, for a set too large to list, each metric's counts."""

    result: EvalSetResult
    total: int
    listed: list[EvalCaseResult]
    not_passed: int
    metrics: dict[str, _MetricCounts] = field(default_factory=dict)

    @classmethod
    def of(cls, result: EvalSetResult, max_cases: int = 0) -> SetView:
        """The view of ``result`` with at most ``max_cases`` cases listed (0: every case)."""
        cases = result.eval_case_results
        total = len(cases)
        view = cls(result, total, [], 0)
        if max_cases == 0 or total <= max_cases:  # every case listed: read whole
            for case in cases:
                view.not_passed += case.final_eval_status is not EvalStatus.PASSED
                view.listed.append(case)
            return view
        # Spilled results are read as heads (no rows per invocation: all the counting needs),
        # and the few cases listed are then read whole; other sequences are read once, whole.
        by_index = isinstance(cases, CaseResults) and cases.spilled
        chosen: list[int] = []
        for index, case in enumerate(heads(cases)):
            if case.final_eval_status is not EvalStatus.PASSED:
                view.not_passed += 1
                if len(chosen) < max_cases:
                    chosen.append(index)
                    if not by_index:
                        view.listed.append(case)
            for row in case.overall_eval_metric_results:
                found = view.metrics.setdefault(row.metric_name, _MetricCounts())
                if row.metric_name in case.assay.not_applicable:
                    continue
                if row.eval_status is EvalStatus.PASSED:
                    found.passed += 1
                elif row.eval_status is EvalStatus.FAILED:
                    found.failed += 1
                elif row.eval_status is EvalStatus.NOT_EVALUATED:
                    found.not_evaluated += 1
                if row.score is not None:
                    found.score_sum += row.score
                    found.scored += 1
        if by_index:
            view.listed = [cases[index] for index in chosen]
        return view


def _title(result: EvalSetResult) -> str:
    path = result.assay.eval_set_path if result.assay else None
    return escape(result.eval_set_id) + (f"  [dim]({escape(path)})[/]" if path else "")


def metrics_table(result: EvalSetResult | SetView) -> Table:
    """One row per metric over the set's cases: passed, failed, not evaluated (cases it does
    not apply to left out) and the mean of its scores."""
    view = result if isinstance(result, SetView) else SetView.of(result, max_cases=-1)  # no list
    table = Table(title=f"{_title(view.result)}: {view.total:,} cases", title_justify="left")
    for column in ("Metric", "Passed", "Failed", "Not evaluated", "Mean score"):
        table.add_column(column, justify="left" if column == "Metric" else "right")
    for name, found in view.metrics.items():
        mean = found.score_sum / found.scored if found.scored else None
        table.add_row(
            escape(name),
            f"{found.passed:,}",
            f"{found.failed:,}",
            f"{found.not_evaluated:,}",
            format_score(mean),
        )
    return table


WIDE = 110
"""Columns from which a table has a Why column, spells statuses out (``NOT_EVALUATED``) and
names the Threshold column. Narrower, a why goes on a line of its own under its row, statuses
are ``N/E`` and ``INFO`` (with a legend) and the threshold column is ``Min``."""
_SHORT = {EvalStatus.NOT_EVALUATED: "N/E", EvalStatus.INFORMATIONAL: "INFO"}
_INDENT = "  "


def _status_cell(status: EvalStatus, wide: bool) -> str:
    return (
        status_text(status) if wide else f"[{_STYLE[status]}]{_SHORT.get(status, status.name)}[/]"
    )


def _score_cell(row: EvalMetricResult) -> str:
    if row.eval_status is EvalStatus.INFORMATIONAL and row.score is not None:
        return f"{row.score:.6g}"
    return format_score(row.score)


def wrap_name(name: str, width: int, indent: str = "") -> list[str]:
    """``name`` in lines of at most ``width`` characters, broken only after an underscore
    (a part longer than the width alone is cut where it must be); continuation lines get two
    more spaces than ``indent``."""
    lines: list[str] = []
    line = indent
    for part in name.replace("_", "_\0").split("\0"):
        if line.strip() and len(line) + len(part) > width:
            lines.append(line)
            line = indent + _INDENT
        line += part
    lines.append(line)
    return [piece[i : i + width] for piece in lines for i in range(0, max(len(piece), 1), width)]


class _Layout:
    """Column widths for a table of ``names`` and ``scores`` (cell texts) on ``width`` columns."""

    def __init__(self, width: int, names: Sequence[str], scores: Sequence[str]) -> None:
        self.wide = width >= WIDE
        score = max([5, *(len(text) for text in scores)])
        if self.wide:  # five columns: six rules, a space either side of each cell
            fixed = 16 + score + len("Threshold") + len("NOT_EVALUATED")
            self.name = min(max(map(len, names)), max(18, width - fixed - 30))
        else:  # four columns
            fixed = 13 + score + 6 + len("Status")
            self.name = max(18, width - fixed)
        self.why = self.name - 2 * len(_INDENT)  # a why line under its row, narrow only

    def why_lines(self, text: str) -> str:
        return "\n".join(escape(line) for line in textwrap.wrap(text, self.why) or [""])


def results_table(result: EvalSetResult | SetView, max_cases: int = 0, width: int = 140) -> Table:
    """A row per case (its status, and why it was not evaluated) and under it a row per metric
    (score, threshold, status, and why it failed or was not evaluated:
    :func:`~assay.report.why.why`), laid out for ``width`` columns: names are never broken inside
    a word, and a reason shared by a case's rows is written once. Past ``max_cases`` cases, only
    those that did not pass (:func:`listed_cases`), with a caption that says so."""
    view = result if isinstance(result, SetView) else SetView.of(result, max_cases)
    result, cases, total = view.result, view.listed, view.total
    notes = []
    if len(cases) < total:
        notes.append(
            f"{len(cases):,} of the {view.not_passed:,} cases that did not pass, of {total:,} "
            "(--max-cases 0 lists every case)"
        )
    runs = any(case.assay.run > 1 for case in cases)
    labels = [case.eval_id + (f" (run {case.assay.run})" if runs else "") for case in cases]
    shown = [list(case.overall_eval_metric_results) for case in cases]
    layout = _Layout(
        width,
        ["Case / metric", *labels, *(_INDENT + r.metric_name for rows in shown for r in rows)],
        [_score_cell(row) for rows in shown for row in rows],
    )
    table = Table(title=_title(result), title_justify="left", show_lines=False)
    table.add_column("Case / metric", no_wrap=True, width=layout.name)
    table.add_column("Score", justify="right", no_wrap=True)
    table.add_column("Threshold" if layout.wide else "Min", justify="right", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    if layout.wide:
        table.add_column("Why", overflow="fold")

    def add(name: str, score: str, threshold: str, status: str, reason: str, *, last: bool) -> None:
        if layout.wide:
            table.add_row(name, score, threshold, status, escape(reason), end_section=last)
            return
        table.add_row(name, score, threshold, status, end_section=last and not reason)
        if reason:
            why_text = layout.why_lines(reason)
            indented = "\n".join(_INDENT * 2 + line for line in why_text.split("\n"))
            table.add_row(f"[dim]{indented}[/]", "", "", "", end_section=last)

    used: set[EvalStatus] = {case.final_eval_status for case in cases}
    for case, label, rows in zip(cases, labels, shown, strict=True):
        case_why = case.assay.reason or ("no metric was scored" if not rows else "")
        if case.assay.reason and all(r.eval_status is EvalStatus.NOT_EVALUATED for r in rows):
            rows = []  # nothing scored, for the case's one reason: one row says it
        title = "\n".join(f"[bold]{escape(line)}[/]" for line in wrap_name(label, layout.name))
        add(
            title,
            "",
            "",
            _status_cell(case.final_eval_status, layout.wide),
            case_why,
            last=not rows,
        )
        said = {case_why} if case_why else set()
        for i, row in enumerate(rows):
            name = "\n".join(
                escape(line) for line in wrap_name(row.metric_name, layout.name, _INDENT)
            )
            reason = why(case, row)
            if reason and reason == case_why:
                reason = ""  # the case's own reason, written on its row
            elif reason in said:
                reason = "as above"
            elif reason:
                said.add(reason)
            last = i == len(rows) - 1
            if row.metric_name in case.assay.not_applicable:
                add(f"[dim]{name}[/]", "-", "-", "[dim]n/a[/]", reason, last=last)
                continue
            used.add(row.eval_status)
            status = _status_cell(row.eval_status, layout.wide)
            add(name, _score_cell(row), format_score(row.threshold), status, reason, last=last)
    if not layout.wide and used & set(_SHORT):
        legend = (f"{_SHORT[s]}: {s.name.lower().replace('_', ' ')}" for s in _SHORT if s in used)
        notes.append(" · ".join(legend))
    if notes:
        table.caption = escape(" — ".join(notes))
    return table


def judges_line(result: EvalSetResult) -> str | None:
    """Which judge scored which metrics, one group per judge, named as
    :func:`~assay.llm.selection.describe_judge` names it (``judge embedded
    Qwen2.5-Coder-1.5B-Instruct Q4_K_M (no --judge-model, no ASSAY_JUDGE_MODEL, no Gemini
    credentials): final_response_match_v2, safety_v1``), and the metrics that had none; None
    when no metric asked a judge."""
    if result.assay is None or not result.assay.judges:
        return None
    groups: dict[str, list[str]] = {}
    aligned: list[str] = []
    for metric, info in result.assay.judges.items():
        described = info.describe()
        if described is not None:
            key = f"judge [bold]{escape(described)}[/]"
        else:
            key = "[yellow]no judge[/]"
        groups.setdefault(key, []).append(escape(metric))
        if info.profile:
            aligned.append(f"  {escape(metric)}: {escape(info.profile)}")
    lines = [f"{key}: {', '.join(metrics)}" for key, metrics in groups.items()]
    return "\n".join([*lines, *aligned])


def agreement_lines(result: EvalSetResult) -> list[str]:
    """Under the judges: how far each judged metric's judge agrees with people, a line per
    measured metric (``  safety_v1: judge agrees with people on 82% (kappa 0.61, 120 labels)``)
    and one naming those not measured, then a warning for each judge whose verdicts are a smoke
    test (:mod:`assay.report.judge_agreement`)."""
    judged = judged_metrics(result)
    lines = [f"  {escape(j.metric)}: {escape(j.text)}" for j in judged if j.agreement is not None]
    unmeasured = [escape(j.metric) for j in judged if j.agreement is None]
    if unmeasured:
        lines.append(f"  {NOT_MEASURED}: {', '.join(unmeasured)} [dim]({MEASURE_HINT})[/]")
    lines += [f"[yellow]warning:[/] {escape(j.warning)}" for j in judged if j.warning]
    return lines


def usage_line(results: Sequence[EvalSetResult]) -> str | None:
    """LLM calls, cache hits, retries and tokens over the run, or None when there were none."""
    total = TokenUsage()
    for result in results:
        if result.assay is not None:
            for usage in result.assay.usage.values():
                total = total + usage
    if total.calls == 0 and total.cache_hits == 0:
        return None
    return (
        f"judge calls: {total.calls} ({total.cache_hits} answered from the cache, "
        f"{total.retries} retries); tokens: {total.prompt_tokens:,} in, "
        f"{total.completion_tokens:,} out"
    )


def summary_line(summary: RunSummary) -> str:
    """``N passed, N failed, N not evaluated`` with colour."""
    return (
        f"[green]{summary.passed} passed[/], [red]{summary.failed} failed[/], "
        f"[yellow]{summary.not_evaluated} not evaluated[/]"
    )


def _calls(invocation: Invocation | None) -> str:
    if invocation is None:
        return ""
    return "\n".join(
        f"{call.name}({json.dumps(call.args, ensure_ascii=False) if call.args is not None else ''})"
        for call in invocation.tool_calls()
    )


def detail_table(case: EvalCaseResult) -> Table:
    """Per invocation: prompt, expected and actual response and tool calls, and every metric's
    verdict on it (one line per metric, so the table stays readable with many metrics)."""
    table = Table(
        title=escape(f"{case.eval_set_id} / {case.eval_id}"), title_justify="left", show_lines=True
    )
    for column in (
        "prompt",
        "expected_response",
        "actual_response",
        "expected_tool_calls",
        "actual_tool_calls",
    ):
        table.add_column(column, overflow="fold", max_width=28)
    table.add_column("verdicts", overflow="fold")
    for row in case.eval_metric_result_per_invocation:
        actual, expected = row.actual_invocation, row.expected_invocation
        verdicts = "\n".join(
            f"{escape(m.metric_name)}: {status_text(m.eval_status)} {format_score(m.score)}"
            for m in row.eval_metric_results
        )
        table.add_row(
            escape(content_text(actual.user_content)),
            escape(content_text(expected.final_response) if expected else ""),
            escape(content_text(actual.final_response)),
            escape(_calls(expected)),
            escape(_calls(actual)),
            verdicts,
        )
    return table


def print_results(
    console: Console,
    results: Sequence[EvalSetResult],
    summary: RunSummary,
    detailed: bool = False,
    max_cases: int = 0,
) -> None:
    """Print every set's table (and detail tables), then the summary line. A set of more than
    ``max_cases`` cases (0: no limit) gets its table per metric, then the cases that did not
    pass, up to ``max_cases``."""
    for result in results:
        view = SetView.of(result, max_cases)
        total = view.total
        if 0 < max_cases < total:
            console.print(metrics_table(view))
        if view.listed or not total:
            console.print(results_table(view, max_cases, console.width))
        else:  # a large set whose every case passed: nothing to list
            console.print(f"all {total:,} cases passed (--max-cases 0 lists every case)")
        judges = judges_line(result)
        if judges:
            console.print(judges)
        for line in agreement_lines(result):
            console.print(line)
        if detailed:
            for case in view.listed:
                if case.eval_metric_result_per_invocation:
                    console.print(detail_table(case))
        console.print()
    usage = usage_line(results)
    if usage:
        console.print(usage)
    console.print(summary_line(summary))
