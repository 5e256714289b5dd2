"""The history benchmark runs end to end on a few cases (its figures are for the note, not
asserted: they depend on the machine)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks"


def test_history_benchmark_records_every_case_and_reports(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(FOLDER))
    spec = importlib.util.spec_from_file_location("bench_history", FOLDER / "bench_history.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_history"] = module
    try:
        spec.loader.exec_module(module)
        code = module.main(["--cases", "40", "--repeats", "1"])
    finally:
        sys.modules.pop("bench_history", None)

    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "40 cases" in out and "recording the scored results" in out
    assert "history file:" in out and "recording / scoring:" in out
    assert "paired recording / scoring:" in out and "recording (the difference)" in out
