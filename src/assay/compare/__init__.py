"""Comparing two runs: matched cases, the cases that regressed, per-metric changes, flips, and
the statistics to tell a regression from noise (a paired bootstrap interval and an exact McNemar
test), with the fewest cases either needs to mean anything."""

from assay.compare.diff import (
    CASE_VERDICT,
    CaseRegression,
    Comparison,
    MetricChange,
    compare_runs,
)
from assay.compare.render import (
    print_comparison,
    render_comparison_html,
    render_comparison_markdown,
)
from assay.compare.stats import Interval, mcnemar_exact, min_pairs_to_test, paired_bootstrap_ci
from assay.results.keys import CaseKey

__all__ = [
    "CASE_VERDICT",
    "CaseKey",
    "CaseRegression",
    "Comparison",
    "Interval",
    "MetricChange",
    "compare_runs",
    "mcnemar_exact",
    "min_pairs_to_test",
    "paired_bootstrap_ci",
    "print_comparison",
    "render_comparison_html",
    "render_comparison_markdown",
]
