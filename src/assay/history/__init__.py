"""Run history: every run recorded in SQLite, resumable, importable from ADK's results."""

from assay.history.sources import read_results_file, results_for

__all__ = ["read_results_file", "results_for"]
