"""The console view of a run: a table per eval set, a summary line, optional detail tables.

A large eval set is not listed case by case: past ``max_cases`` cases, its table lists only the
cases that did not pass, up to that many, after a table per metric (passed, failed, not
evaluated, mean score), and says how to see the rest. (Rich took about a minute to lay out a
table of 10,000 cases, most of a deterministic ``assay eval`` of them, to print rows nobody
reads; the HTML report and ``--output`` keep every case.)"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.llm.base import TokenUsage
from assay.llm.client import StoppedJudge, replace_stopped, stopped_judge
from assay.metrics.base import EvalStatus
from assay.report.cost import cost_of
from assay.report.judge_agreement import (
    MEASURE_HINT,
    NOT_MEASURED,
    OTHER_PROMPT,
    judged_metrics,
)
from assay.report.named import NamedIds, summary_line
from assay.report.numbers import MISSING, label, measure_text, score_text, value_text
from assay.report.why import case_reason, why
from assay.results.collected import CaseResults, Head, heads
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult, RunSummary

_STYLE = {
    EvalStatus.PASSED: "green",
    EvalStatus.FAILED: "bold red",
    EvalStatus.NOT_EVALUATED: "yellow",
    EvalStatus.INFORMATIONAL: "blue",
}


def _stopped_words(judge: StoppedJudge) -> str:
    """A stopped judge in a row: its name only, since the warning after the table says why once
    for every case it left."""
    return f"judge {judge.model} {judge.state} (why: the warning after the table)"


_IN_A_ROW = re.compile(r" \(\d+ calls in a row could not reach it\)$")


def _briefing(cases: Sequence[EvalCaseResult]) -> Callable[[str], str]:
    """What a row says of a reason: a stopped judge's error, and the same error of the calls
    that failed before it was stopped, cut to the judge's name (:func:`_stopped_words`)."""
    stopped: dict[str, StoppedJudge] = {}
    for case in cases:
        for reason in case.assay.metric_reasons.values():
            judge = stopped_judge(reason)
            if judge is not None and judge.state == "stopped answering":
                stopped[_IN_A_ROW.sub("", judge.why)] = judge

    def brief(reason: str) -> str:
        reason = replace_stopped(reason, _stopped_words)
        for error, judge in stopped.items():
            reason = reason.replace(error, _stopped_words(judge))
        return reason

    return brief


def status_text(status: EvalStatus) -> str:
    """A status as coloured markup."""
    return f"[{_STYLE[status]}]{status.name}[/]"


def format_score(score: float | None, threshold: float | None = None) -> str:
    """A score as every report writes it (:func:`~assay.report.numbers.score_text`): two
    decimals, a missing score as a dash."""
    return score_text(score, threshold)


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
    graded: bool = False  # some status other than INFORMATIONAL


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
    named: dict[EvalStatus, NamedIds] = field(default_factory=dict)
    """The ids of the cases that did not pass, by status, each once (for the summary line)."""

    def _not_passed(self, case: Head) -> None:
        self.not_passed += 1
        self.named.setdefault(case.final_eval_status, NamedIds()).add(case.eval_id)

    @classmethod
    def of(
        cls,
        result: EvalSetResult,
        max_cases: int = 0,
        named: dict[EvalStatus, NamedIds] | None = None,
    ) -> SetView:
        """The view of ``result`` with at most ``max_cases`` cases listed (0: every case); the
        ids of the cases that did not pass go to ``named`` when given (shared by several sets)."""
        cases = result.eval_case_results
        total = len(cases)
        view = cls(result, total, [], 0, named={} if named is None else named)
        if max_cases == 0 or total <= max_cases:  # every case listed: read whole
            for case in cases:
                if case.final_eval_status is not EvalStatus.PASSED:
                    view._not_passed(case)
                view.listed.append(case)
            return view
        # Spilled results are read as heads (no rows per invocation: all the counting needs),
        # and the few cases listed are then read whole; other sequences are read once, whole.
        by_index = isinstance(cases, CaseResults) and cases.spilled
        chosen: list[int] = []
        for index, head in enumerate(heads(cases)):
            if head.final_eval_status is not EvalStatus.PASSED:
                view._not_passed(head)
                if len(chosen) < max_cases:
                    chosen.append(index)
                    if isinstance(head, EvalCaseResult):  # read whole (never when spilled)
                        view.listed.append(head)
            for row in head.overall_eval_metric_results:
                found = view.metrics.setdefault(row.metric_name, _MetricCounts())
                if row.metric_name in head.assay.not_applicable:
                    continue
                found.graded |= row.eval_status is not EvalStatus.INFORMATIONAL
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
    not apply to left out) and the mean of its scores; an informational metric, which neither
    passes nor fails, its mean value with its unit and no counts."""
    view = result if isinstance(result, SetView) else SetView.of(result, max_cases=-1)  # no list
    table = Table(title=f"{_title(view.result)}: {view.total:,} cases", title_justify="left")
    for column in ("Metric", "Passed", "Failed", "Not evaluated", "Mean score"):
        table.add_column(column, justify="left" if column == "Metric" else "right")
    for name, found in view.metrics.items():
        mean = found.score_sum / found.scored if found.scored else None
        if not found.graded:
            shown = value_text(name, mean)
            table.add_row(f"[dim]{escape(name)}[/]", "", "", "", f"[dim]{escape(shown)}[/]")
            continue
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
are ``N/E`` (with a legend) and the threshold column is ``Min``."""
_SHORT = {EvalStatus.NOT_EVALUATED: "N/E"}
_INDENT = "  "
_PER_TURN = "per turn"


def _status_cell(status: EvalStatus, wide: bool) -> str:
    return (
        status_text(status) if wide else f"[{_STYLE[status]}]{_SHORT.get(status, status.name)}[/]"
    )


def _score_cell(row: EvalMetricResult) -> str:
    return format_score(row.score, row.threshold)


def wrap_name(name: str, width: int, indent: str = "") -> list[str]:
    """``name`` in lines of at most ``width`` characters, broken only after an underscore
    (a part longer than the width alone is cut where it must be); continuation lines get two
    more spaces than ``indent``."""
    return wrap_parts(name.replace("_", "_\0").split("\0"), width, indent, indent + _INDENT)


def wrap_parts(
    parts: Sequence[str], width: int, first: str = "", rest: str = "", sep: str = ""
) -> list[str]:
    """``parts`` joined by ``sep`` in lines of at most ``width`` characters, after ``first`` on
    the first line and ``rest`` on the others, broken only between parts (a part longer than
    the width alone is cut where it must be)."""
    lines: list[str] = []
    line, empty = first, True
    for part in parts:
        joined = part if empty else sep + part
        if not empty and len(line) + len(joined.rstrip()) > width:
            lines.append(line.rstrip())
            line = rest + part
        else:
            line += joined
        empty = False
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


@dataclass
class _Notes:
    """What a table says once under it, however many cases it concerns: why metrics did not
    apply (by reason) and why an informational value is missing (by metric)."""

    not_applicable: dict[str, list[str]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = []
        for reason, names in self.not_applicable.items():
            said = reason.removeprefix("not applicable: ")
            out.append(f"n/a {', '.join(names)}: {said}" if said else f"n/a {', '.join(names)}")
        for name, reason in self.missing.items():
            out.append(f"{label(name)} {MISSING}: {reason}")
        return out


def _split(
    case: EvalCaseResult, rows: Sequence[EvalMetricResult]
) -> tuple[list[EvalMetricResult], list[EvalMetricResult], list[EvalMetricResult]]:
    """A case's rows as those that pass or fail, those that do not apply, and the informational
    ones (shown as values on one line)."""
    graded, skipped, info = [], [], []
    for row in rows:
        if row.metric_name in case.assay.not_applicable:
            skipped.append(row)
        elif row.eval_status is EvalStatus.INFORMATIONAL:
            info.append(row)
        else:
            graded.append(row)
    return graded, skipped, info


class _Rows:
    """A results table's rows, case by case, laid out by ``layout``, gathering what is said once
    under the table (:class:`_Notes`) and the statuses shown (for the legend)."""

    def __init__(self, table: Table, layout: _Layout, brief: Callable[[str], str]) -> None:
        self.table, self.layout, self.brief = table, layout, brief
        self.shared = _Notes()
        self.used: set[EvalStatus] = set()

    def add(
        self, name: str, score: str, threshold: str, status: str, reason: str, last: bool
    ) -> None:
        if self.layout.wide:
            self.table.add_row(name, score, threshold, status, escape(reason), end_section=last)
            return
        self.table.add_row(name, score, threshold, status, end_section=last and not reason)
        if reason:
            why_text = self.layout.why_lines(reason)
            indented = "\n".join(_INDENT * 2 + line for line in why_text.split("\n"))
            self.table.add_row(f"[dim]{indented}[/]", "", "", "", end_section=last)

    def case(self, case: EvalCaseResult, title: str) -> None:
        graded, skipped, info = _split(case, case.overall_eval_metric_results)
        case_why = case_reason(case) or ("no metric was scored" if not graded else "")
        if case.assay.reason and all(r.eval_status is EvalStatus.NOT_EVALUATED for r in graded):
            graded, skipped = [], []  # nothing scored, for the case's one reason: one row says it
        if case_why and not case.assay.reason and not graded:
            skipped = []  # the case's reason says which do not apply, and why
        self.used.add(case.final_eval_status)
        lines = [*graded, *skipped[:1], *info[:1]]
        heading = "\n".join(
            f"[bold]{escape(line)}[/]" for line in wrap_name(title, self.layout.name)
        )
        status = _status_cell(case.final_eval_status, self.layout.wide)
        self.add(heading, "", "", status, case_why, last=not lines)
        said = {case_why} if case_why else set()
        for i, row in enumerate(graded):
            reason = self.brief(why(case, row))
            if reason and reason == case_why:
                reason = ""  # the case's own reason, written on its row
            elif reason in said:
                reason = "as above"
            elif reason:
                said.add(reason)
            self.graded(row, reason, last=i == len(lines) - 1)
        if skipped:
            self.not_applicable(case, skipped, last=not info)
        if info:
            self.informational(case, info)

    def graded(self, row: EvalMetricResult, reason: str, *, last: bool) -> None:
        wrapped = wrap_name(row.metric_name, self.layout.name, _INDENT)
        self.used.add(row.eval_status)
        self.add(
            "\n".join(escape(line) for line in wrapped),
            _score_cell(row),
            format_score(row.threshold),
            _status_cell(row.eval_status, self.layout.wide),
            reason,
            last=last,
        )

    def not_applicable(
        self, case: EvalCaseResult, rows: Sequence[EvalMetricResult], *, last: bool
    ) -> None:
        """One row naming them; why, once under the table."""
        for row in rows:
            reason = case.assay.metric_reasons.get(row.metric_name, "")
            names = self.shared.not_applicable.setdefault(reason, [])
            if row.metric_name not in names:
                names.append(row.metric_name)
        parts = [row.metric_name for row in rows]
        text = wrap_parts(parts, self.layout.name, f"{_INDENT}n/a: ", _INDENT * 3, ", ")
        name = "\n".join(f"[dim]{escape(line)}[/]" for line in text)
        self.add(name, "", "", "[dim]n/a[/]", "", last=last)

    def informational(self, case: EvalCaseResult, rows: Sequence[EvalMetricResult]) -> None:
        """One row of values with their units; why one is missing, once under the table."""
        measures = []
        for row in rows:
            measures.append(measure_text(row.metric_name, row.score))
            if row.score is None and (missing := why(case, row)):
                self.shared.missing.setdefault(row.metric_name, missing)
        if self.layout.wide:
            values = f"[dim]{escape(' · '.join(measures))}[/]"
            self.table.add_row(
                f"[dim]{_INDENT}{_PER_TURN}[/]", "", "", "", values, end_section=True
            )
            return
        first = f"{_INDENT}{_PER_TURN}: "
        text = wrap_parts(measures, self.layout.name, first, _INDENT * 3, " · ")
        self.add("\n".join(f"[dim]{escape(line)}[/]" for line in text), "", "", "", "", last=True)


def results_table(result: EvalSetResult | SetView, max_cases: int = 0, width: int = 140) -> Table:
    """A row per case (its status, and why it was not evaluated) and under it a row per metric
    that passes or fails (score, threshold, status, and why it failed or was not evaluated:
    :func:`~assay.report.why.why`), one row naming the metrics that do not apply to it and one
    with its informational values (``per turn: tool calls 1 · duration 12 ms``), laid out for
    ``width`` columns: names are never broken inside a word, and a reason shared by a case's
    rows is written once, one shared by cases once under the table. Past ``max_cases`` cases,
    only those that did not pass (:func:`listed_cases`), with a caption that says so."""
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
    shown = [_split(case, case.overall_eval_metric_results) for case in cases]
    names = [_INDENT + r.metric_name for graded, _, _ in shown for r in graded]
    names += [f"{_INDENT}n/a: {r.metric_name}" for _, skipped, _ in shown for r in skipped]
    layout = _Layout(
        width,
        ["Case / metric", *labels, *names],
        [_score_cell(row) for graded, _, _ in shown for row in graded],
    )
    table = Table(title=_title(result), title_justify="left", show_lines=False)
    table.add_column("Case / metric", no_wrap=True, width=layout.name)
    table.add_column("Score", justify="right", no_wrap=True)
    table.add_column("Threshold" if layout.wide else "Min", justify="right", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    if layout.wide:
        table.add_column("Why", overflow="fold")
    rows = _Rows(table, layout, _briefing(cases))
    for case, title in zip(cases, labels, strict=True):
        rows.case(case, title)
    if not layout.wide and rows.used & set(_SHORT):
        legend = (
            f"{_SHORT[s]}: {s.name.lower().replace('_', ' ')}" for s in _SHORT if s in rows.used
        )
        notes.append(" · ".join(legend))
    notes += rows.shared.lines()
    if notes:
        table.caption = escape("\n".join(notes))
        table.caption_justify = "left"
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
    measured metric in :mod:`assay.report.judge_agreement`'s words (yellow where its verdicts
    are a smoke test: the line says so), then one naming those measured for another prompt and
    one naming those not measured."""
    judged = judged_metrics(result)
    lines = [
        f"  {escape(j.metric)}: "
        + (f"[yellow]{escape(j.text)}[/]" if j.warning else escape(j.text))
        for j in judged
        if j.measured
    ]
    for words in (OTHER_PROMPT, NOT_MEASURED):
        names = [escape(j.metric) for j in judged if not j.measured and j.text == words]
        if names:
            lines.append(f"  {words}: {', '.join(names)} [dim]({MEASURE_HINT})[/]")
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


def cost_line(results: Sequence[EvalSetResult]) -> str | None:
    """The judges' cost over the run, per metric (``judge cost: $0.0123 (final_response_match_v2
    $0.0100, ...)``), with the ``--max-cost`` cap when the run had one and whether it was
    reached (:meth:`~assay.report.cost.RunCost.words`); None when nothing was priced or every
    judge cost nothing (the embedded one): no noise."""
    found = cost_of(results)
    return None if found is None else escape(f"judge cost: {found.words()}")


def _calls(invocation: Invocation | None) -> str:
    if invocation is None:
        return ""
    return "\n".join(
        f"{call.name}({json.dumps(call.args, ensure_ascii=False) if call.args is not None else ''})"
        for call in invocation.tool_calls()
    )


def detail_table(case: EvalCaseResult) -> Table:
    """Per invocation: prompt, expected and actual response and tool calls, and every metric's
    verdict on it (one line per metric), a row each: a column of labels and one of text, which
    reads at any width (free text wraps between words; a metric's name is never broken where
    the table has room for it)."""
    table = Table(
        title=escape(f"{case.eval_set_id} / {case.eval_id}"), title_justify="left", show_lines=False
    )
    table.add_column("", no_wrap=True)
    table.add_column("", overflow="fold")
    table.show_header = False
    rows = case.eval_metric_result_per_invocation
    for number, row in enumerate(rows, 1):
        actual, expected = row.actual_invocation, row.expected_invocation
        verdicts = _verdicts(case, row.eval_metric_results)
        turn = f"turn {number}" + (f" of {len(rows)}" if len(rows) > 1 else "")
        table.add_row(f"[bold]{turn}[/]", f"[dim]{escape(actual.invocation_id or '')}[/]")
        fields = [("prompt", content_text(actual.user_content))]
        if expected is not None:
            fields.append(("expected answer", content_text(expected.final_response)))
        fields.append(("actual answer", content_text(actual.final_response)))
        if expected is not None:
            fields.append(("expected calls", _calls(expected) or "(none)"))
        fields.append(("actual calls", _calls(actual) or "(none)"))
        for name, text in fields:
            table.add_row(f"[dim]{name}[/]", escape(text))
        table.add_row("[dim]verdicts[/]", verdicts, end_section=number < len(rows))
    return table


def _verdicts(case: EvalCaseResult, rows: Sequence[EvalMetricResult]) -> str:
    """A turn's verdicts, a line per metric (``name: STATUS score``, ``name: n/a``), then its
    informational values on one line (``this turn: tool calls 1 · duration 12 ms``)."""
    graded, skipped, info = _split(case, rows)
    lines = [
        f"{escape(m.metric_name)}: {status_text(m.eval_status)} "
        f"{format_score(m.score, m.threshold)}"
        for m in graded
    ]
    lines += [f"[dim]{escape(m.metric_name)}: n/a[/]" for m in skipped]
    if info:
        values = " · ".join(measure_text(m.metric_name, m.score) for m in info)
        lines.append(f"[dim]this turn: {escape(values)}[/]")
    return "\n".join(lines)


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
    named: dict[EvalStatus, NamedIds] = {}  # across the sets, each id once
    for result in results:
        view = SetView.of(result, max_cases, named)
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
    cost = cost_line(results)
    if cost:
        console.print(cost)
    console.print(summary_line(summary, named))
