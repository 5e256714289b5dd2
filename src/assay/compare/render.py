"""``assay compare``'s output: a rich table for the terminal, Markdown and a self-contained HTML
page. All three show the same rows and the same case lists."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay._version import __version__
from assay.compare.diff import CaseRegression, Comparison, MetricChange
from assay.metrics.base import EvalStatus
from assay.report.cost import CostRow, cost_rows
from assay.report.fit import Column, fit, fitted_table
from assay.report.markdown import escape_markdown
from assay.report.numbers import score_text, signed_score, signed_value, value_text
from assay.report.page import environment
from assay.results.keys import CaseKey

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


def verdict_kind(row: MetricChange) -> str:
    """The verdict's kind, for styling: ``regressed``, ``improved``, ``informational``,
    ``not compared`` (no case had the metric in both runs), ``no change`` (every counted case
    the same in both runs), ``too few cases`` (no test could be significant with so few) or
    ``no significant change``."""
    if row.regressed:
        return "regressed"
    if row.improved:
        return "improved"
    if row.informational:
        return "informational"
    if not row.compared:
        return "not compared"
    if row.unchanged:
        return "no change"
    return "no significant change" if row.testable else "too few cases"


def verdict(row: MetricChange, alpha: float) -> str:
    """The verdict cell: :func:`verdict_kind`, with the counts when there were too few cases."""
    kind = verdict_kind(row)
    if kind != "too few cases":
        return kind
    counts = f"{row.discordant} discordant"
    if row.scored:
        counts = f"{row.scored} scored and {counts}"
    return f"too few cases to test: {counts}, at least {row.min_pairs} needed at alpha {alpha:g}"


def _number(row: MetricChange, value: float) -> str:
    """A mean as every report writes it: a score to two decimals, an informational metric's
    value with its unit (:mod:`assay.report.numbers`)."""
    return value_text(row.name, value) if row.informational else score_text(value)


def _signed(row: MetricChange, value: float) -> str:
    return signed_value(row.name, value) if row.informational else signed_score(value)


def _means(row: MetricChange) -> str:
    if row.base_mean is None or row.candidate_mean is None:
        return "–"
    return f"{_number(row, row.base_mean)} → {_number(row, row.candidate_mean)}"


def _change(row: MetricChange) -> str:
    ci, change = row.interval, row.mean_change
    if ci is None or change is None:
        return "–"
    return f"{_signed(row, change)} [{_signed(row, ci.low)}, {_signed(row, ci.high)}]"


def _rates(row: MetricChange) -> str:
    if not row.judged:
        return "–"
    return f"{row.base_passed}/{row.judged} → {row.candidate_passed}/{row.judged}"


def row_cells(row: MetricChange, alpha: float) -> list[str]:
    """A row's cells as plain text, in :data:`COLUMNS` order; only the first (the metric's
    name) comes from the results files."""
    judged = bool(row.judged)
    return [
        row.name,
        str(row.compared),
        _means(row),
        _change(row),
        _rates(row),
        f"{len(row.to_fail)} / {len(row.to_pass)}" if judged else "–",
        f"{row.p_value:.4g}" if judged else "–",
        verdict(row, alpha),
    ]


REGRESSED_CASES = "regressed cases: passed in base, failed or not evaluated in candidate"
"""The title of the list of :attr:`Comparison.case_regressions`."""


def regression_line(regression: CaseRegression) -> str:
    """``set / case: passed → failed (failed: m1, m2)`` or ``… → not evaluated (reason)``."""
    became = f"{regression.key.label}: passed → {regression.became_label}"
    if regression.became is EvalStatus.FAILED and regression.failed_metrics:
        return f"{became} (failed: {', '.join(regression.failed_metrics)})"
    if regression.reason:
        return f"{became} ({regression.reason})"
    return became


def case_lists(comparison: Comparison) -> list[tuple[str, list[str]]]:
    """The titled lists of cases worth naming: the regressed cases, the flips per metric (the
    case verdict's pass→fail flips are among the regressed cases), then unmatched cases."""
    lists: list[tuple[str, list[str]]] = []
    if comparison.case_regressions:
        lines = [regression_line(regression) for regression in comparison.case_regressions]
        lists.append((REGRESSED_CASES, lines))
    for row in comparison.rows:
        if row.to_fail and row is not comparison.verdict:
            lists.append((f"{row.name}: pass→fail", _labels(row.to_fail)))
        if row.to_pass:
            lists.append((f"{row.name}: fail→pass", _labels(row.to_pass)))
    if comparison.only_in_base:
        lists.append((f"only in {comparison.base}", _labels(comparison.only_in_base)))
    if comparison.only_in_candidate:
        lists.append((f"only in {comparison.candidate}", _labels(comparison.only_in_candidate)))
    return lists


def regression_summary(comparison: Comparison) -> str | None:
    """One sentence counting the regressed cases, for the top of a Markdown or HTML page (the
    terminal ends with it instead); None when no case regressed."""
    count = len(comparison.case_regressions)
    if not count:
        return None
    return f"{count} case(s) passed in base and failed or were not evaluated in candidate."


def _labels(keys: Sequence[CaseKey]) -> list[str]:
    return [key.label for key in keys]


def coverage(comparison: Comparison) -> list[str]:
    """How the matched cases relate to each row's n: one sentence when every row counts them
    all; otherwise a sentence, then one line per group of rows with the same n and the same
    reasons for the cases left out (the largest group last, as "every other row")."""
    unmatched = [
        f"{len(keys)} only in {side}"
        for keys, side in (
            (comparison.only_in_base, "base"),
            (comparison.only_in_candidate, "candidate"),
        )
        if keys
    ]
    matched = f"{comparison.matched} matched case(s)"
    if unmatched:
        matched += f" ({', '.join(unmatched)})"
    groups: dict[tuple[int, tuple[tuple[str, int], ...]], list[str]] = {}
    for row in comparison.rows:
        groups.setdefault((row.compared, row.left_out), []).append(row.name)
    if len(groups) == 1 and not next(iter(groups))[1]:
        return [f"{matched}, counted on every row"]
    largest = max(groups, key=lambda group: len(groups[group]))
    order = [group for group in groups if group != largest] + [largest]
    lines = [f"{matched}; a row's n counts only those both runs scored or judged on it:"]
    for group in order:
        n, left_out = group
        if group != largest:
            names = ", ".join(groups[group])
        else:
            names = "every other row" if len(groups) > 1 else "every row"
        why = ", ".join(f"{count} {reason}" for reason, count in left_out) or "all of them"
        lines.append(f"n = {n} on {names}: {why}")
    return lines


def legend(comparison: Comparison) -> str:
    """What the statistics mean, and how many cases they need to mean anything."""
    level = f"{1 - comparison.alpha:.0%}"
    return (
        f"CI: {level} paired bootstrap interval of the mean score change "
        f"({comparison.resamples:,} resamples, seed {comparison.seed}); McNemar: exact two-sided "
        f"test on pass/fail flips; significance level {comparison.alpha:g}, which no test can "
        f"reach with fewer than {comparison.min_pairs} scored cases (bootstrap) or discordant "
        "pairs (McNemar)"
    )


_STYLE = {"regressed": "bold red", "improved": "green", "informational": "dim"}
_STYLE |= {"too few cases": "yellow", "not compared": "dim"}


_CONSOLE_COLUMNS = (
    "Metric",
    "n",
    "Mean\nbase → candidate",
    "Δ mean [CI]",
    "Passed\nbase → candidate",
    "Flips\n→fail / →pass",
    "p\n(McNemar)",
    "Verdict",
)
"""The console's headings for :data:`COLUMNS`, each line kept whole."""


def _console_cells(row: MetricChange, alpha: float) -> list[str]:
    """A row's console cells: :func:`row_cells`, the verdict without its counts (the legend
    says how many cases a test needs)."""
    cells = row_cells(row, alpha)
    cells[-1] = cells[-1].split(":")[0]
    return cells


def _figures(row: MetricChange, cells: Sequence[str]) -> str:
    """A row's figures stacked in one cell, one a line, for a narrow terminal."""
    _, n, means, change, rates, _, p, _ = cells
    lines = [f"mean {means}", f"Δ {change}"] if means != "–" else []
    if rates != "–":
        lines += [f"passed {rates}", f"→fail {len(row.to_fail)}, →pass {len(row.to_pass)}, p {p}"]
    return "\n".join([*lines, f"n {n}"])


def _first_fitting(
    layouts: Sequence[tuple[list[Column], list[list[str]]]], width: int
) -> tuple[list[Column], list[list[str]], list[int]]:
    """The first layout that fits ``width``, with its widths; else the last, as wide as it is."""
    for columns, cells in layouts:
        widths = fit(columns, width)
        if widths is not None:
            return columns, cells, widths
    columns, cells = layouts[-1]
    return columns, cells, [column.widest() for column in columns]


def comparison_table(comparison: Comparison, width: int) -> Table:
    """The comparison's table for ``width`` columns, no metric's name broken and no figure
    split: a column per figure where they fit, else a metric's verdict and its figures stacked
    beside its name."""
    title = f"{escape(comparison.base)} → {escape(comparison.candidate)}"
    rows = [_console_cells(row, comparison.alpha) for row in comparison.rows]
    wide = [
        Column(
            header,
            [cells[i] for cells in rows],
            wrap=header == "Verdict",
            justify="left" if header in {"Metric", "Verdict"} else "right",
        )
        for i, header in enumerate(_CONSOLE_COLUMNS)
    ]
    names = Column("Metric", [cells[0] for cells in rows], wrap=False)
    verdicts = [cells[-1] for cells in rows]
    figures = [_figures(row, cells) for row, cells in zip(comparison.rows, rows, strict=True)]
    both = [f"{v}\n{f}" for v, f in zip(verdicts, figures, strict=True)]
    layouts: list[tuple[list[Column], list[list[str]]]] = [
        (wide, rows),
        (
            [names, Column("Verdict", verdicts), Column("Figures", figures, wrap=False)],
            [[c[0], v, f] for c, v, f in zip(rows, verdicts, figures, strict=True)],
        ),
        (
            [names, Column("Verdict and figures", both)],
            [[c[0], b] for c, b in zip(rows, both, strict=True)],
        ),
    ]
    columns, shown, widths = _first_fitting(layouts, width)
    table = fitted_table(columns, widths, title=title)
    last = comparison.metrics[-1] if comparison.metrics else None
    verdict_at = len(columns) - 1 if columns is wide else 1
    for row, cells in zip(comparison.rows, shown, strict=True):
        marked = [escape(cell) for cell in cells]
        style = _STYLE.get(verdict_kind(row))
        if style:
            first, _, rest = marked[verdict_at].partition("\n")
            marked[verdict_at] = f"[{style}]{first}[/]" + (f"\n[dim]{rest}[/]" if rest else "")
        elif "\n" in marked[verdict_at]:
            first, _, rest = marked[verdict_at].partition("\n")
            marked[verdict_at] = f"{first}\n[dim]{rest}[/]"
        table.add_row(*marked, end_section=row is last or columns is not wide)
    return table


def print_comparison(console: Console, comparison: Comparison) -> None:
    """The comparison table, how its n relate to the matched cases, what the statistics mean,
    then the regressed, flipped and unmatched cases."""
    console.print(comparison_table(comparison, console.width))
    first, *groups = coverage(comparison)
    console.print(escape(first))
    for line in groups:
        console.print(f"  {escape(line)}")
    console.print(f"[dim]{escape(legend(comparison))}[/]")
    for line in cost_lines(comparison):
        console.print(escape(line))
    for title, labels in case_lists(comparison):
        bold = "bold red" if title == REGRESSED_CASES else "bold"
        console.print(f"\n[{bold}]{escape(title)}[/] ({len(labels)})")
        for line in _capped(labels):
            console.print(f"  {escape(line)}")


COST_COLUMNS = ("Judge cost", "Base", "Candidate", "Change")
"""The headings of the HTML page's cost table."""


def costs(comparison: Comparison) -> list[CostRow]:
    """The two runs' judge costs, the total then each metric
    (:func:`~assay.report.cost.cost_rows`); empty when neither run's judges cost anything."""
    return cost_rows(comparison.base_cost, comparison.candidate_cost)


def _arrow(row: CostRow) -> str:
    change = f" ({row.change})" if row.change else ""
    return f"{row.base} → {row.candidate}{change}"


def cost_lines(comparison: Comparison) -> list[str]:
    """The console's cost lines: ``judge cost: $0.50 → $0.25 (-$0.25)``, then a line per
    metric, indented, when there are several."""
    rows = costs(comparison)
    if not rows:
        return []
    total, *metrics = rows
    lines = [f"judge cost: {_arrow(total)}"]
    if len(metrics) > 1:
        lines += [f"  {row.what}: {_arrow(row)}" for row in metrics]
    return lines


def _capped(labels: Sequence[str]) -> list[str]:
    more = [f"…and {len(labels) - LISTED} more"] if len(labels) > LISTED else []
    return [*labels[:LISTED], *more]


def render_comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: a table, the coverage and legend lines and the case lists."""
    title = f"## assay compare: {escape_markdown(comparison.base)} → {escape_markdown(comparison.candidate)}"
    lines = [
        title,
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|:--|" + "--:|" * (len(COLUMNS) - 2) + ":--|",
    ]
    summary = regression_summary(comparison)
    if summary:
        lines[1:1] = ["", f"**{escape_markdown(summary)}**"]
    for row in comparison.rows:
        cells = row_cells(row, comparison.alpha)
        cells[0] = escape_markdown(cells[0])
        if row.regressed:
            cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    first, *groups = coverage(comparison)
    lines += ["", escape_markdown(first), ""]
    if groups:
        lines += [*(f"- {escape_markdown(line)}" for line in groups), ""]
    lines += [legend(comparison), ""]
    spent = costs(comparison)
    if spent:
        total, *metrics = spent
        lines += [f"**Judge cost:** {escape_markdown(_arrow(total))}", ""]
        if len(metrics) > 1:
            lines += [f"- {escape_markdown(r.what)}: {escape_markdown(_arrow(r))}" for r in metrics]
            lines.append("")
    for title_text, labels in case_lists(comparison):
        lines += [f"### {escape_markdown(title_text)} ({len(labels)})", ""]
        lines += [f"- {escape_markdown(label)}" for label in _capped(labels)]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _cost_cells(row: CostRow) -> list[str]:
    return [row.what, row.base, row.candidate, row.change or "–"]


_TEMPLATES = Path(__file__).resolve().parent / "templates"


def render_comparison_html(comparison: Comparison) -> str:
    """The comparison as one self-contained HTML page (no scripts, no external resources, and a
    Content-Security-Policy that allows neither); every id, label and reason is escaped."""
    rows = [
        (verdict_kind(row).replace(" ", "-"), row_cells(row, comparison.alpha))
        for row in comparison.rows
    ]
    lists = [
        ("regressed-cases" if title == REGRESSED_CASES else "", title, _capped(labels))
        for title, labels in case_lists(comparison)
    ]
    return (
        environment(_TEMPLATES)
        .get_template("compare.html.j2")
        .render(
            version=__version__,
            base=comparison.base,
            candidate=comparison.candidate,
            columns=COLUMNS,
            rows=rows,
            summary=regression_summary(comparison),
            coverage=coverage(comparison),
            legend=legend(comparison),
            cost_columns=COST_COLUMNS,
            costs=[_cost_cells(row) for row in costs(comparison)],
            lists=lists,
        )
    )
