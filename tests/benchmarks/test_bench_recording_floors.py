"""The recording-floors benchmark runs end to end on a few cases and reports every way of
recording (its figures are for the note, not asserted: they depend on the machine)."""

from __future__ import annotations

import sys

import pytest
from _support import BENCHMARKS, load_script


def test_recording_floors_benchmark_reports_each_way_and_whole_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    try:
        module = load_script("bench_recording_floors", BENCHMARKS / "bench_recording_floors.py")
        code = module.main(["--cases", "30", "--repeats", "1"])
    finally:
        sys.modules.pop("bench_recording_floors", None)
        sys.modules.pop("bench_history", None)

    out = capsys.readouterr().out
    assert code == 0
    assert "30 cases" in out and "scoring alone" in out
    for way in ("assay", "minimal record", "hand-off", "captured only", "columnar batch"):
        assert f"recording: {way}" in out
    assert "scoring, collector on" in out and "scoring, collector off" in out
