"""The collector benchmark runs end to end on a few cases and reports both ways of running
(its figures are for the note, not asserted: they depend on the machine)."""

from __future__ import annotations

import gc
import sys

import pytest
from _support import BENCHMARKS, load_script


def test_collector_benchmark_reports_frozen_and_left_alone_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    try:
        module = load_script("bench_collector", BENCHMARKS / "bench_collector.py")
        code = module.main(["--cases", "30", "--repeats", "1"])
    finally:
        sys.modules.pop("bench_collector", None)
        sys.modules.pop("bench_history", None)

    out = capsys.readouterr().out
    assert code == 0
    assert "30 cases" in out
    assert "frozen (assay)" in out and "left alone" in out and "frozen / left alone" in out
    assert gc.get_freeze_count() == 0  # nothing left frozen behind it
