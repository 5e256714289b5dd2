"""The deterministic-metrics benchmark runs, and assay agrees with ADK on its data."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from _support import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_deterministic.py"


def _load() -> ModuleType:
    return load_script("bench_deterministic", SCRIPT)


def test_benchmark_reports_agreement(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _load()
    assert bench.main(["--n", "200", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "200 invocation pairs" in out
    assert "agreement: all 400 per-invocation scores and statuses agree with ADK" in out
    for name in ("tool_trajectory_avg_score", "response_match_score", "combined"):
        assert name in out


def test_benchmark_data_is_reproducible_and_sized() -> None:
    bench = _load()
    cases = bench.generate(200, 0)
    assert cases == bench.generate(200, 0)
    assert sum(len(actual) for actual, _ in cases) == 200
    assert all(1 <= len(actual) == len(expected) <= 5 for actual, expected in cases)
