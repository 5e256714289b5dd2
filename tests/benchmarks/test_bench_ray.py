"""The Ray benchmark runs end to end on a tiny workload: in process, then on one local Ray worker,
every case passing, with the figures written (the figures themselves depend on the machine and
are for the note, not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import run_benchmark

pytest.importorskip("ray")  # the [ray] extra; CI installs it, so this never skips there


def test_a_tiny_ray_benchmark_runs_every_side_and_passes_every_case(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    figures = tmp_path / "figures.json"
    argv = ["--cases", "4", "--turns", "1", "--cpu-ms", "5", "--latency-ms", "10"]
    argv += ["--workers", "1", "--overhead-workers", "1", "--overhead-cases", "4"]
    argv += ["--json", str(figures)]

    code = run_benchmark("bench_ray", argv)

    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 cases x 1 turns" in out and "per case" in out
    found = json.loads(figures.read_text(encoding="utf-8"))
    assert found["complete"]
    assert [run["name"] for run in found["runs"]] == ["in-process", "ray, 1 worker"]
    assert all(run["passed"] == run["cases"] == 4 and run["wall_s"] > 0 for run in found["runs"])
    assert [run["passed"] for run in found["overhead"]] == [4, 4]
