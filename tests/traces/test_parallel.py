"""Converting with worker processes gives what converting in one process gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import TracesError
from assay.traces import load_sessions, traces_json
from assay.traces.parallel import built_sessions, write_built
from tests._support import load_script

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_otel.py"


def test_workers_write_the_sessions_one_process_would_in_order(tmp_path: Path) -> None:
    bench = load_script("bench_otel", BENCH)
    spans = tmp_path / "spans.jsonl"
    bench.write_file(spans, 5 * 600, 300)  # 600 turns of 300 interleaved sessions
    expected = traces_json(load_sessions([spans]))
    out = tmp_path / "traces.json"
    count, said = write_built(built_sessions(load_sessions([spans]), workers=2), out)
    written = json.loads(out.read_text())
    assert count == 300 and said == []
    assert list(written) == list(expected) and written == expected
    assert all(len(turns) == 2 for turns in written.values())


def _one_turn_a_line(tmp_path: Path) -> Path:
    bench = load_script("bench_otel", BENCH)
    spans = tmp_path / "lines.jsonl"
    lines = [
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": bench.turn_spans(k % 40, k, k)}]}]})
        for k in range(300)
    ]
    spans.write_text("".join(line + "\n" for line in lines))
    return spans


def test_lines_parsed_by_workers_give_the_sessions_one_process_gives(tmp_path: Path) -> None:
    spans = _one_turn_a_line(tmp_path)
    expected = traces_json(load_sessions([spans]))
    assert traces_json(load_sessions([spans], workers=2)) == expected
    assert len(expected) == 40


def test_a_bad_line_read_by_workers_is_reported_as_one_process_reports_it(
    tmp_path: Path,
) -> None:
    spans = _one_turn_a_line(tmp_path)
    lines = spans.read_text().splitlines(keepends=True)
    lines[200] = lines[200][:50] + "\n"
    spans.write_text("".join(lines))
    with pytest.raises(TracesError) as alone:
        load_sessions([spans], strict=True)
    with pytest.raises(TracesError) as shared:
        load_sessions([spans], strict=True, workers=2)
    assert str(shared.value) == str(alone.value)
    assert "line 201" in str(alone.value)


def test_benchmark_converts_its_file_and_checks_the_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bench = load_script("bench_otel", BENCH)
    assert bench.main(["--spans", "1000", "--sessions", "10"]) == 0
    out = capsys.readouterr().out
    assert "wrote 1,000 spans" in out and "10 sessions, 200 invocations" in out
