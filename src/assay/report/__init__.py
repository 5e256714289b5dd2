"""Reports of a run: the console view."""

from assay.report.console import detail_table, print_results, results_table
from assay.report.named import summary_line

__all__ = ["detail_table", "print_results", "results_table", "summary_line"]
