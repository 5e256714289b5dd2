"""The collector benchmark runs end to end on a few cases and reports both ways of running
(its figures are for the note, not asserted: they depend on the machine)."""

from __future__ import annotations

import gc

import pytest
from _support import run_benchmark


def test_collector_benchmark_reports_frozen_and_left_alone_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run_benchmark("bench_collector", ["--cases", "30", "--repeats", "1"])

    out = capsys.readouterr().out
    assert code == 0
    assert "30 cases" in out
    assert "frozen (assay)" in out and "left alone" in out and "frozen / left alone" in out
    assert gc.get_freeze_count() == 0  # nothing left frozen behind it
