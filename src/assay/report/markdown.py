"""A short Markdown summary of a run, for a pull-request comment.

Totals, one table row per metric (pass rate and mean score over the cases it was evaluated on),
one line of what the judges cost (per metric, and the ``--max-cost`` cap; none when they cost
nothing), each judged metric's judge and how far it agrees with people (with a warning where its verdicts
are a smoke test), then the failing cases with their failing metrics and the cases that were not evaluated, each
list capped so a large run still makes a short comment. Every id, reason and other text that did
not come from assay is escaped, so it renders as the text it is (no tables broken by ``|``, no
links, no HTML, no ``@`` mentions).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assay.metrics.base import EvalStatus
from assay.report.cost import cost_of
from assay.report.judge_agreement import judged_metrics
from assay.report.numbers import score_text, value_text
from assay.report.why import why
from assay.results.model import EvalCaseResult, EvalSetResult

LISTED = 20
"""Cases listed per section before ``…and N more``."""

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_SIGNIFICANT = re.compile(r"[\\`*_{}\[\]()#+!|~<>&@:$]")
"""Characters that can open or close inline Markdown on GitHub: code, emphasis, links and images,
tables, strikethrough, HTML, mentions, emoji, autolinks and math."""


def escape_markdown(text: str) -> str:
    """``text`` as literal inline Markdown (in a table cell, or after a list marker) on one line:
    whitespace runs (newlines too) become one space, ``& < >`` become entities and the other
    significant characters are backslash-escaped, so ``|``, ``*``, ``[``, ``@``… stay text."""
    flat = " ".join(text.split())
    return _SIGNIFICANT.sub(lambda m: _ENTITIES.get(m[0]) or "\\" + m[0], flat)


@dataclass
class MetricTotals:
    """One metric over a run: how many cases it passed and failed, and its scores."""

    name: str
    passed: int = 0
    failed: int = 0
    informational: bool = False
    score_sum: float = 0.0
    scored: int = 0

    @property
    def pass_rate(self) -> float | None:
        """Passed over passed plus failed; None when no case was judged."""
        judged = self.passed + self.failed
        return self.passed / judged if judged else None

    @property
    def mean_score(self) -> float | None:
        """The mean of the finite scores; None without any."""
        return self.score_sum / self.scored if self.scored else None


def _add_totals(totals: dict[str, MetricTotals], case: EvalCaseResult) -> None:
    for row in case.overall_eval_metric_results:
        if row.metric_name in case.assay.not_applicable:
            continue
        entry = totals.setdefault(row.metric_name, MetricTotals(row.metric_name))
        entry.passed += row.eval_status is EvalStatus.PASSED
        entry.failed += row.eval_status is EvalStatus.FAILED
        entry.informational |= row.eval_status is EvalStatus.INFORMATIONAL
        if row.score is not None and math.isfinite(row.score):
            entry.score_sum += row.score
            entry.scored += 1


def metric_totals(results: Sequence[EvalSetResult]) -> list[MetricTotals]:
    """Every metric's totals over all eval sets, in the order metrics first appear; metrics that
    do not apply to a case are left out for that case."""
    totals: dict[str, MetricTotals] = {}
    for result in results:
        for case in result.eval_case_results:
            _add_totals(totals, case)
    return list(totals.values())


@dataclass
class _Listed:
    """A section's first :data:`LISTED` entries (the set's position, its id, case id, run,
    text) and how many there are in all."""

    shown: list[tuple[int, str, str, int, str]] = field(default_factory=list)
    count: int = 0

    def add(self, position: int, result: EvalSetResult, case: EvalCaseResult, text: str) -> None:
        self.count += 1
        if len(self.shown) < LISTED:
            entry = (position, result.eval_set_id, case.eval_id, case.assay.run, text)
            self.shown.append(entry)

    def lines(self, runs: set[int]) -> list[str]:
        return [
            f"- **{_label(set_id, eval_id, run if position in runs else None)}**: {text}"
            for position, set_id, eval_id, run, text in self.shown
        ]


def render_markdown(results: Sequence[EvalSetResult]) -> str:
    """The run as a Markdown comment: totals, a per-metric table, failing and unevaluated cases.
    One pass over the cases, holding only the totals and the cases listed."""
    count = {status: 0 for status in EvalStatus}
    totals: dict[str, MetricTotals] = {}
    failing, unevaluated = _Listed(), _Listed()
    runs: set[int] = set()  # the sets (by position) with a case run more than once
    for position, result in enumerate(results):
        for case in result.eval_case_results:
            count[case.final_eval_status] += 1
            _add_totals(totals, case)
            if case.assay.run > 1:
                runs.add(position)
            if case.final_eval_status is EvalStatus.FAILED:
                failing.add(position, result, case, _failing_metrics(case))
            elif case.final_eval_status is EvalStatus.NOT_EVALUATED:
                reason = escape_markdown(case.assay.reason or "no reason given")
                unevaluated.add(position, result, case, reason)
    sets = ", ".join(escape_markdown(result.eval_set_id) for result in results) or "none"
    lines = [
        "## assay results",
        "",
        f"**{count[EvalStatus.PASSED]} passed, {count[EvalStatus.FAILED]} failed, "
        f"{count[EvalStatus.NOT_EVALUATED]} not evaluated** of {sum(count.values())} case(s) "
        f"(eval sets: {sets})",
        "",
    ]
    lines += _metric_table(list(totals.values()))
    cost = cost_of(results)
    if cost is not None:
        lines += [f"**Judge cost:** {escape_markdown(cost.words())}", ""]
    lines += _judges(results)
    lines += _section("Failing cases", failing.lines(runs), failing.count)
    lines += _section("Not evaluated", unevaluated.lines(runs), unevaluated.count)
    return "\n".join(lines).rstrip("\n") + "\n"


def write_markdown(path: Path, results: Sequence[EvalSetResult]) -> None:
    """Write :func:`render_markdown`'s summary to ``path`` (UTF-8)."""
    path.write_text(render_markdown(results), encoding="utf-8")


def format_value(value: float | None, informational: bool = False, metric: str = "") -> str:
    """A score as every report writes it (:mod:`assay.report.numbers`: two decimals), an
    informational value with its unit; a dash for none."""
    if value is None:
        return "–"
    return value_text(metric, value) if informational else score_text(value)


def format_rate(rate: float | None, passed: int = 0, judged: int = 0) -> str:
    """A pass rate as a percentage with its counts, ``66.7% (2/3)``; a dash for none."""
    if rate is None:
        return "–"
    return f"{rate:.1%} ({passed}/{judged})" if judged else f"{rate:.1%}"


def _metric_table(totals: list[MetricTotals]) -> list[str]:
    if not totals:
        return ["No metric results.", ""]
    lines = ["| Metric | Pass rate | Mean score |", "|:--|--:|--:|"]
    for entry in totals:
        rate = format_rate(entry.pass_rate, entry.passed, entry.passed + entry.failed)
        mean = format_value(entry.mean_score, entry.informational, entry.name)
        name = escape_markdown(entry.name) + (" (informational)" if entry.informational else "")
        lines.append(f"| {name} | {rate} | {mean} |")
    return [*lines, ""]


def _judges(results: Sequence[EvalSetResult]) -> list[str]:
    """Each judged metric's judge and how far it agrees with people, then a warning for each
    judge whose verdicts are a smoke test."""
    judged = {
        (found.metric, found.judge, found.text): found
        for result in results
        for found in judged_metrics(result)
    }
    if not judged:
        return []
    lines = ["### Judges", ""]
    lines += [
        f"- **{escape_markdown(found.metric)}**: {escape_markdown(found.judge)}; "
        f"{escape_markdown(found.text)}"
        for found in judged.values()
    ]
    warnings = dict.fromkeys(found.warning for found in judged.values() if found.warning)
    lines += [f"\n> **Warning:** {escape_markdown(warning)}" for warning in warnings]
    return [*lines, ""]


def _section(title: str, shown: list[str], count: int) -> list[str]:
    if not count:
        return []
    more = [f"- …and {count - len(shown)} more"] if count > len(shown) else []
    return [f"### {title} ({count})", "", *shown, *more, ""]


def _failing_metrics(case: EvalCaseResult) -> str:
    """``metric 0.2500 < 0.8000 (why); …`` for every failing metric, or the case's reason. The
    why (:func:`~assay.report.why.why`) gives the judge's verdict as it gave it and, where a
    judge profile decided it otherwise, the decision and its rule."""
    parts = []
    for row in case.overall_eval_metric_results:
        if row.eval_status is not EvalStatus.FAILED or row.metric_name in case.assay.not_applicable:
            continue
        said = why(case, row)
        parts.append(
            f"{escape_markdown(row.metric_name)} {score_text(row.score, row.threshold)} < "
            f"{score_text(row.threshold)}" + (f" ({escape_markdown(said)})" if said else "")
        )
    return "; ".join(parts) or escape_markdown(case.assay.reason or "failed")


def _label(set_id: str, eval_id: str, run: int | None) -> str:
    """``set / case``, with ``(run N)`` after it in a set where some case ran more than once."""
    shown = "" if run is None else f" (run {run})"
    return f"{escape_markdown(set_id)} / {escape_markdown(eval_id)}{shown}"
