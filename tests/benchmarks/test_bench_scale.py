"""The scale benchmark runs end to end on a few cases: both sides, each its own process, give
figures and count the same passed and failed cases (the figures themselves are for the note,
not asserted: they depend on the machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import run_benchmark


def test_scale_benchmark_measures_both_sides_and_they_agree(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    figures = tmp_path / "figures.json"
    argv = ["--n", "30", "--repeat", "1", "--main-only", "--json", str(figures)]
    code = run_benchmark("bench_scale", [*argv, "--keep", str(tmp_path / "inputs")])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "N = 30 cases" in out and "agreement: every side counts" in out
    (run,) = json.loads(figures.read_text(encoding="utf-8"))["runs"]
    assert run["cases"] == 30 and run["agree"] and run["complete"]
    assay, adk = run["sides"]["assay"], run["sides"]["ADK"]
    for side in (assay, adk):
        assert side["cases"] == 30 and side["passed"] + side["failed"] == 30
        assert side["median_wall_s"] > 0 and side["median_max_rss_mb"] > 0
    assert (assay["passed"], assay["failed"]) == (adk["passed"], adk["failed"])
    assert run["ratios"]["assay"]["wall"] > 0 and run["ratios"]["assay"]["max_rss"] > 0


def test_scale_benchmark_streams_its_inputs(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        from bench_scale import write_inputs
    finally:
        sys.path.pop(0)
        sys.modules.pop("bench_scale", None)
    inputs = write_inputs(12, 3, tmp_path)

    eval_set = json.loads(inputs.evalset.read_text(encoding="utf-8"))
    lines = inputs.jsonl.read_text(encoding="utf-8").splitlines()
    traces = json.loads(inputs.traces.read_text(encoding="utf-8"))
    cases = eval_set["eval_cases"]
    assert len(cases) == 12 and len(lines) == 13 and len(traces) == 12
    assert json.loads(lines[0]) == {"eval_set_id": "bench_scale", "name": "bench_scale"}
    assert [json.loads(line) for line in lines[1:]] == cases
    assert sum(len(c["conversation"]) for c in cases) == inputs.invocations
    for case in cases:
        assert 1 <= len(case["conversation"]) <= 5
        assert len(traces[case["eval_id"]]) == len(case["conversation"])
