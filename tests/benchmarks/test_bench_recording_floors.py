"""The recording-floors benchmark runs end to end on a few cases and reports every way of
recording (its figures are for the note, not asserted: they depend on the machine)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks"


def test_recording_floors_benchmark_reports_each_way_and_whole_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(FOLDER))
    spec = importlib.util.spec_from_file_location(
        "bench_recording_floors", FOLDER / "bench_recording_floors.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_recording_floors"] = module
    try:
        spec.loader.exec_module(module)
        code = module.main(["--cases", "30", "--repeats", "1"])
    finally:
        sys.modules.pop("bench_recording_floors", None)
        sys.modules.pop("bench_history", None)

    out = capsys.readouterr().out
    assert code == 0
    assert "30 cases" in out and "scoring alone" in out
    for way in ("assay", "minimal record", "hand-off"):
        assert f"recording: {way}" in out
    assert "scoring, collector on" in out and "scoring, collector off" in out
