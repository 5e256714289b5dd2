"""The results file written a case at a time: the same JSON as the whole-file dump, for one set,
several and none, with non-ASCII text and empty sets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import Example

from assay import EvalSetJob, evaluate_sync, load_config, load_eval_set, load_traces
from assay._internal.files import write_atomically
from assay._internal.spill import Spill
from assay.results.collected import CaseResults
from assay.results.model import EvalSetResult
from assay.results.output import result_bytes, result_chunks


@pytest.fixture(scope="module")
def scored() -> EvalSetResult:
    example = Example()
    job = EvalSetJob(load_eval_set(example.evalset), load_config(example.config), "config")
    config = job.config.model_copy(
        update={
            "criteria": {
                k: v
                for k, v in job.config.criteria.items()
                if k in ("tool_trajectory_avg_score", "response_match_score")
            }
        }
    )
    [result] = evaluate_sync([EvalSetJob(job.loaded, config)], load_traces([example.traces]))
    return result


def _whole(results: list[EvalSetResult]) -> str:
    payload = [r.model_dump(mode="json", exclude_none=True) for r in results]
    chosen = payload[0] if len(payload) == 1 else payload
    return json.dumps(chosen, indent=2, ensure_ascii=False) + "\n"


def test_one_set_is_written_as_the_whole_dump_would_be(scored: EvalSetResult) -> None:
    text = "".join(result_chunks([scored]))
    assert json.loads(text) == json.loads(_whole([scored]))
    assert text == _whole([scored])  # the same layout too: two-space indents, UTF-8 as is


def test_several_sets_and_empty_ones_are_a_list(scored: EvalSetResult) -> None:
    empty = EvalSetResult(eval_set_result_id="e", eval_set_id="s", assay=None)
    accented = scored.model_copy(update={"eval_set_id": "réservations ✈ 予約"})
    for results in ([scored, accented], [empty, scored], [empty], []):
        text = "".join(result_chunks(results))
        if results:
            assert text == _whole(results)
        else:
            assert json.loads(text) == []


@pytest.mark.parametrize("keep", [0, 3])
def test_a_set_whose_results_were_spilled_is_written_byte_for_byte_as_one_held(
    scored: EvalSetResult, tmp_path: Path, keep: int
) -> None:
    cases = list(scored.eval_case_results)
    spill = Spill(tmp_path)
    try:
        collected = CaseResults(keep=keep, spill=spill)
        for case in cases:
            collected.append(case)
        spilled = scored.model_copy(update={"eval_case_results": collected.close()})
        held = scored.model_copy(update={"eval_case_results": CaseResults.of(cases)})
        assert collected.spilled and not held.eval_case_results.spilled  # type: ignore[attr-defined]
        as_list = scored.model_copy(update={"eval_case_results": cases})

        written = b"".join(result_bytes([spilled]))
        assert written == b"".join(result_bytes([held])) == b"".join(result_bytes([as_list]))
        assert written == _whole([as_list]).encode()
        assert b"".join(result_bytes([held, spilled])) == _whole([as_list, as_list]).encode()
    finally:
        spill.close()


def test_the_text_pieces_are_the_bytes_decoded(scored: EvalSetResult) -> None:
    for results in ([scored], [scored, scored], []):
        assert "".join(result_chunks(results)).encode() == b"".join(result_bytes(results))


def test_the_file_is_written_from_its_pieces_atomically(
    scored: EvalSetResult, tmp_path: Path
) -> None:
    path = tmp_path / "results.json"
    write_atomically(path, result_chunks([scored]))
    assert path.read_text(encoding="utf-8") == _whole([scored])
    assert not path.with_name("results.json.tmp").exists()

    def broken() -> Iterator[str]:
        yield "{"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(path, broken())
    assert path.read_text(encoding="utf-8") == _whole([scored])  # the old file stays whole
    assert not path.with_name("results.json.tmp").exists()
