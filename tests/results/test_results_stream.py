"""Large results files (``assay eval --output``, ADK's ``.evalset_result.json``) read a case at a
time by ``assay report``, ``show`` and ``compare``: the same results and the same problems as the
eager reader, in a fraction of its memory."""

from __future__ import annotations

import copy
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from _support import Example

from assay.errors import InputError
from assay.evalset.io import load_eval_set
from assay.history.sources import read_results_file
from assay.results.collected import CaseResults
from assay.results.model import EvalSetResult
from assay.results.output import result_chunks
from assay.results.traces import load_traces
from assay.runner.evaluate import EvalSetJob, evaluate_sync


@pytest.fixture
def two_sets(example: Example) -> list[dict[str, Any]]:
    """A real run of the example as a results file of two sets (the same one under two ids)."""
    job = EvalSetJob(load_eval_set(example.evalset))
    [result] = evaluate_sync([job], load_traces([example.traces]))
    data = json.loads("".join(result_chunks([result])))
    return [data, {**copy.deepcopy(data), "eval_set_result_id": "second"}]


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> list[EvalSetResult]:
    monkeypatch.setenv("ASSAY_STREAM_MB", "0" if stream else "100000")
    return read_results_file(path)


def _problems(path: Path, monkeypatch: pytest.MonkeyPatch, *, stream: bool) -> list[str]:
    with pytest.raises(InputError) as caught:
        _read(path, monkeypatch, stream=stream)
    return [str(problem) for problem in caught.value.problems]


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("shape", ["list", "object", "camel"])
def test_a_streamed_results_file_reads_as_the_eager_reader_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, two_sets: list[dict[str, Any]]
) -> None:
    data: Any = copy.deepcopy(two_sets)
    if shape != "list":
        data = data[0]
    if shape == "camel":
        data["evalCaseResults"] = data.pop("eval_case_results")
    path = _write(tmp_path / "results.json", data)

    streamed = _read(path, monkeypatch, stream=True)

    assert streamed == _read(path, monkeypatch, stream=False)
    assert sum(len(s.eval_case_results) for s in streamed) >= 2


def test_a_streamed_results_file_past_the_limit_keeps_its_cases_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_sets: list[dict[str, Any]]
) -> None:
    monkeypatch.setenv("ASSAY_KEEP_CASES", "1")
    path = _write(tmp_path / "results.json", two_sets)

    streamed = _read(path, monkeypatch, stream=True)

    cases = streamed[0].eval_case_results
    assert isinstance(cases, CaseResults) and cases.spilled
    assert [list(s.eval_case_results) for s in streamed] == [
        s.eval_case_results for s in _read(path, monkeypatch, stream=False)
    ]


def test_a_bad_case_result_in_a_streamed_file_is_the_eager_readers_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_sets: list[dict[str, Any]]
) -> None:
    data = copy.deepcopy(two_sets)
    data[1]["eval_case_results"][0]["final_eval_status"] = "great"
    data[1]["eval_case_results"][0]["evalId"] = data[1]["eval_case_results"][0].pop("eval_id")
    data[0]["eval_set_id"] = 7
    path = _write(tmp_path / "results.json", data)

    streamed = _problems(path, monkeypatch, stream=True)

    assert streamed == _problems(path, monkeypatch, stream=False)
    assert any("[1].eval_case_results[0]" in p for p in streamed)
    assert any("[0].eval_set_id" in p for p in streamed)


@pytest.mark.parametrize(
    "text",
    [
        '"[]"',  # ADK's double-encoded form
        '{"eval_set_id": "s", "eval_case_results": 5}',
        '{"eval_set_id": "s", "eval_case_results": [], "eval_case_results": []}',
        "[1, 2]",
        '{"eval_set_id": "s", "eval_case_results": [}',
    ],
)
def test_shapes_only_the_eager_reader_reads_get_its_results_or_its_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    path = tmp_path / "results.json"
    path.write_text(text, encoding="utf-8")

    def outcome(stream: bool) -> Any:
        try:
            return _read(path, monkeypatch, stream=stream)
        except InputError as exc:
            return [str(p) for p in exc.problems]

    assert outcome(True) == outcome(False)


def test_a_streamed_read_of_a_large_results_file_peaks_far_below_the_eager_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_sets: list[dict[str, Any]]
) -> None:
    data = copy.deepcopy(two_sets[0])
    template = data["eval_case_results"][0]
    cases = []
    for n in range(800):
        case = copy.deepcopy(template)
        case["eval_id"] = f"case-{n:05d}"
        cases.append(case)
    data["eval_case_results"] = cases
    path = _write(tmp_path / "results.json", data)
    del cases, data
    monkeypatch.setenv("ASSAY_KEEP_CASES", "50")
    peaks = {}
    for stream in (False, True):
        tracemalloc.start()
        try:
            [result] = _read(path, monkeypatch, stream=stream)
            peaks[stream] = tracemalloc.get_traced_memory()[1]
            assert len(result.eval_case_results) == 800
            assert result.eval_case_results[-1].eval_id == "case-00799"
        finally:
            tracemalloc.stop()

    assert peaks[True] < peaks[False] / 4, peaks
