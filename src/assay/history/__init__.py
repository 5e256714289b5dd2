"""Run history: every run recorded in SQLite, resumable, importable from ADK's results."""

from assay.history.adk_import import import_files
from assay.history.records import HistoryError, RunInfo, config_hash, default_history_path
from assay.history.sources import read_results_file, results_for
from assay.history.store import HistoryStore

__all__ = [
    "HistoryError",
    "HistoryStore",
    "RunInfo",
    "config_hash",
    "default_history_path",
    "import_files",
    "read_results_file",
    "results_for",
]
