"""``assay compare``'s output: a rich table for the terminal, Markdown and a self-contained HTML
page. All three show the same rows and the same case lists."""

from __future__ import annotations

from collections.abc import Sequence

import jinja2
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay.compare.diff import CaseKey, Comparison, MetricChange
from assay.report.markdown import escape_markdown, format_value

LISTED = 20
"""Cases listed per list before ``…and N more``."""

COLUMNS = (
    "Metric",
    "n",
    "Mean (base → candidate)",
    "Δ mean [CI]",
    "Pass rate (base → candidate)",
    "Flips →fail / →pass",
    "McNemar p",
    "Verdict",
)


def verdict(row: MetricChange) -> str:
    """``regressed``, ``improved``, ``no significant change``, ``informational``, or
    ``not compared`` (no case had the metric in both runs)."""
    if row.regressed:
        return "regressed"
    if row.improved:
        return "improved"
    if row.informational:
        return "informational"
    return "no significant change" if row.scored or row.judged else "not compared"


def _signed(value: float, informational: bool = False) -> str:
    return f"{value:+.6g}" if informational else f"{value:+.4f}"


def _means(row: MetricChange) -> str:
    if row.base_mean is None or row.candidate_mean is None:
        return "–"
    info = row.informational
    return f"{format_value(row.base_mean, info)} → {format_value(row.candidate_mean, info)}"


def _change(row: MetricChange) -> str:
    ci, change = row.interval, row.mean_change
    if ci is None or change is None:
        return "–"
    info = row.informational
    return f"{_signed(change, info)} [{_signed(ci.low, info)}, {_signed(ci.high, info)}]"


def _rates(row: MetricChange) -> str:
    if not row.judged:
        return "–"
    return f"{row.base_passed}/{row.judged} → {row.candidate_passed}/{row.judged}"


def row_cells(row: MetricChange) -> list[str]:
    """A row's cells as plain text, in :data:`COLUMNS` order; only the first (the metric's
    name) comes from the results files."""
    judged = bool(row.judged)
    return [
        row.name,
        str(max(row.scored, row.judged)),
        _means(row),
        _change(row),
        _rates(row),
        f"{len(row.to_fail)} / {len(row.to_pass)}" if judged else "–",
        f"{row.p_value:.4g}" if judged else "–",
        verdict(row),
    ]


def case_lists(comparison: Comparison) -> list[tuple[str, list[CaseKey]]]:
    """The titled lists of cases worth naming: flips per metric, then unmatched cases."""
    lists: list[tuple[str, list[CaseKey]]] = []
    for row in comparison.rows:
        if row.to_fail:
            lists.append((f"{row.name}: pass→fail", list(row.to_fail)))
        if row.to_pass:
            lists.append((f"{row.name}: fail→pass", list(row.to_pass)))
    if comparison.only_in_base:
        lists.append((f"only in {comparison.base}", comparison.only_in_base))
    if comparison.only_in_candidate:
        lists.append((f"only in {comparison.candidate}", comparison.only_in_candidate))
    return lists


def headline(comparison: Comparison) -> str:
    """One sentence: what was compared and what the statistics mean."""
    level = f"{1 - comparison.alpha:.0%}"
    return (
        f"{comparison.matched} matched case(s); CI: {level} paired bootstrap interval of the "
        f"mean score change ({comparison.resamples:,} resamples, seed {comparison.seed}); "
        f"McNemar: exact two-sided test on pass/fail flips; significance level {comparison.alpha:g}"
    )


_STYLE = {"regressed": "bold red", "improved": "green", "informational": "dim"}


def print_comparison(console: Console, comparison: Comparison) -> None:
    """The comparison table, then the flipped and unmatched cases."""
    table = Table(
        title=f"{escape(comparison.base)} → {escape(comparison.candidate)}", title_justify="left"
    )
    for column in COLUMNS:
        left = column in {"Metric", "Verdict"}
        table.add_column(column, overflow="fold", justify="left" if left else "right")
    for row in comparison.rows:
        cells = [escape(cell) for cell in row_cells(row)]
        style = _STYLE.get(cells[-1])
        if style:
            cells[-1] = f"[{style}]{cells[-1]}[/]"
        table.add_row(
            *cells, end_section=row is comparison.metrics[-1] if comparison.metrics else False
        )
    console.print(table)
    console.print(f"[dim]{escape(headline(comparison))}[/]")
    for title, keys in case_lists(comparison):
        console.print(f"\n[bold]{escape(title)}[/] ({len(keys)})")
        for line in _capped([key.label for key in keys]):
            console.print(f"  {escape(line)}")


def _capped(labels: Sequence[str]) -> list[str]:
    more = [f"…and {len(labels) - LISTED} more"] if len(labels) > LISTED else []
    return [*labels[:LISTED], *more]


def render_comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: a table, a legend line and the case lists."""
    title = f"## assay compare: {escape_markdown(comparison.base)} → {escape_markdown(comparison.candidate)}"
    lines = [
        title,
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|:--|" + "--:|" * (len(COLUMNS) - 2) + ":--|",
    ]
    for row in comparison.rows:
        cells = row_cells(row)
        cells[0] = escape_markdown(cells[0])
        if row.regressed:
            cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", headline(comparison), ""]
    for title_text, keys in case_lists(comparison):
        lines += [f"### {escape_markdown(title_text)} ({len(keys)})", ""]
        lines += [f"- {escape_markdown(label)}" for label in _capped([k.label for k in keys])]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


_HTML = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>assay compare: {{ base }} → {{ candidate }}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child, td:last-child { text-align: left; }
tr.regressed td { background: #fde2e2; } tr.improved td { background: #e2f5e2; }
p.legend { color: #666; }
</style></head><body>
<h1>assay compare: {{ base }} → {{ candidate }}</h1>
<table><thead><tr>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr></thead><tbody>
{% for cls, cells in rows %}<tr class="{{ cls }}">{% for c in cells %}<td>{{ c }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>
<p class="legend">{{ legend }}</p>
{% for title, labels in lists %}<h2>{{ title }} ({{ labels | length }})</h2>
<ul>{% for label in labels %}<li>{{ label }}</li>{% endfor %}</ul>
{% endfor %}</body></html>
"""
)


def render_comparison_html(comparison: Comparison) -> str:
    """The comparison as one self-contained HTML page (no scripts, no external resources, and a
    Content-Security-Policy that allows neither); every id and label is escaped."""
    rows = [(verdict(row).replace(" ", "-"), row_cells(row)) for row in comparison.rows]
    lists = [
        (title, [*_capped([key.label for key in keys])]) for title, keys in case_lists(comparison)
    ]
    return _HTML.render(
        base=comparison.base,
        candidate=comparison.candidate,
        columns=COLUMNS,
        rows=rows,
        legend=headline(comparison),
        lists=lists,
    )
