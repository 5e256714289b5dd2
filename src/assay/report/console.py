"""The console view of a run: a table per eval set, a summary line, optional detail tables."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult, RunSummary

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


def _metric_cells(case: EvalCaseResult, row: EvalMetricResult) -> list[str]:
    note = case.assay.metric_reasons.get(row.metric_name, "")
    informational = row.eval_status is EvalStatus.INFORMATIONAL and row.score is not None
    return [
        escape(row.metric_name),
        f"{row.score:.6g}" if informational and row.score is not None else format_score(row.score),
        format_score(row.threshold),
        status_text(row.eval_status),
        escape(note),
    ]


def _shown(row: EvalMetricResult) -> bool:
    """Informational metrics with no value (no usage or timing recorded) are left out."""
    return not (row.eval_status is EvalStatus.INFORMATIONAL and row.score is None)


def results_table(result: EvalSetResult) -> Table:
    """One row per case and metric: score, threshold, status and why it was not evaluated."""
    path = result.assay.eval_set_path if result.assay else None
    title = escape(result.eval_set_id) + (f"  [dim]({escape(path)})[/]" if path else "")
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in ("Case", "Metric", "Score", "Threshold", "Status", "Note"):
        table.add_column(
            column, overflow="fold", justify="right" if column in {"Score", "Threshold"} else "left"
        )
    for case in result.eval_case_results:
        label = f"{escape(case.eval_id)}\n{status_text(case.final_eval_status)}"
        rows = [row for row in case.overall_eval_metric_results if _shown(row)]
        reason = case.assay.reason
        if rows and reason and reason not in case.assay.metric_reasons.values():
            label += f"\n[dim]{escape(reason)}[/]"  # why the case itself was not evaluated
        if not rows:
            table.add_row(
                label,
                "-",
                "-",
                "-",
                status_text(case.final_eval_status),
                escape(case.assay.reason or ""),
            )
        for i, row in enumerate(rows):
            table.add_row(
                label if i == 0 else "", *_metric_cells(case, row), end_section=i == len(rows) - 1
            )
    return table


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
    """Per invocation: prompt, expected and actual response and tool calls, each metric's verdict."""
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
    metric_names = [m.metric_name for m in case.overall_eval_metric_results]
    for name in metric_names:
        table.add_column(escape(name), overflow="fold")
    for row in case.eval_metric_result_per_invocation:
        actual, expected = row.actual_invocation, row.expected_invocation
        verdicts = {m.metric_name: m for m in row.eval_metric_results}
        table.add_row(
            escape(content_text(actual.user_content)),
            escape(content_text(expected.final_response) if expected else ""),
            escape(content_text(actual.final_response)),
            escape(_calls(expected)),
            escape(_calls(actual)),
            *(
                f"{status_text(verdicts[n].eval_status)}\n{format_score(verdicts[n].score)}"
                if n in verdicts
                else "-"
                for n in metric_names
            ),
        )
    return table


def print_results(
    console: Console, results: Sequence[EvalSetResult], summary: RunSummary, detailed: bool = False
) -> None:
    """Print every set's table (and detail tables), then the summary line."""
    for result in results:
        console.print(results_table(result))
        if detailed:
            for case in result.eval_case_results:
                if case.eval_metric_result_per_invocation:
                    console.print(detail_table(case))
        console.print()
    console.print(summary_line(summary))
