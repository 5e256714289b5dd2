"""The recording-floors benchmark runs end to end on a few cases and reports every way of
recording (its figures are for the note, not asserted: they depend on the machine)."""

from __future__ import annotations

import pytest
from _support import run_benchmark


def test_recording_floors_benchmark_reports_each_way_and_whole_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run_benchmark("bench_recording_floors", ["--cases", "30", "--repeats", "1"])

    out = capsys.readouterr().out
    assert code == 0
    assert "30 cases" in out and "scoring alone" in out
    for way in ("assay", "minimal record", "hand-off", "captured only", "columnar batch"):
        assert f"recording: {way}" in out
    assert "scoring, collector on" in out and "scoring, collector off" in out
