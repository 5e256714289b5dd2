"""Comparing two runs: matched cases, per-metric changes, flips, and the statistics to tell a
regression from noise (a paired bootstrap interval and an exact McNemar test)."""

from assay.compare.diff import CASE_VERDICT, CaseKey, Comparison, MetricChange, compare_runs
from assay.compare.render import (
    print_comparison,
    render_comparison_html,
    render_comparison_markdown,
)
from assay.compare.stats import Interval, mcnemar_exact, paired_bootstrap_ci

__all__ = [
    "CASE_VERDICT",
    "CaseKey",
    "Comparison",
    "Interval",
    "MetricChange",
    "compare_runs",
    "mcnemar_exact",
    "paired_bootstrap_ci",
    "print_comparison",
    "render_comparison_html",
    "render_comparison_markdown",
]
