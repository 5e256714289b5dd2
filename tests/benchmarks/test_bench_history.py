"""The history benchmark runs end to end on a few cases (its figures are for the note, not
asserted: they depend on the machine)."""

from __future__ import annotations

import pytest
from _support import run_benchmark


def test_history_benchmark_records_every_case_and_reports(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run_benchmark("bench_history", ["--cases", "40", "--repeats", "1"])

    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "40 cases" in out and "recording the scored results" in out
    assert "history file:" in out and "recording / scoring:" in out
    assert "paired recording / scoring:" in out and "recording (the difference)" in out
