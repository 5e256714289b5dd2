"""A streamed EvalSet object is read in one pass of spans: each case's text checked by pydantic
and stored as it is, and what ijson would refuse still refused as it refuses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay._internal.spill import shared_spill
from assay.errors import EvalSetError
from assay.evalset import io as evalset_io
from assay.evalset import load_eval_set, streamed_io
from assay.evalset.io import StreamedEvalSet

CASE = '{"eval_id": "%s", "conversation": [{"user_content": {"parts": [{"text": "%s"}]}}]}'


def test_a_clean_set_is_read_in_one_pass_and_stored_as_its_text(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cases = [CASE % ("a", "hi"), CASE % ("b", 'x]}\\"'), CASE % ("a", "again")]
    path = tmp_path / "s.evalset.json"
    path.write_text('{"eval_cases": [' + ", ".join(cases) + '], "eval_set_id": "s"}')
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")

    def no_events(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read with ijson's events")

    monkeypatch.setattr(streamed_io, "scan", no_events)
    monkeypatch.setattr(streamed_io, "items", no_events)
    loaded = load_eval_set(path)

    assert loaded.streamed and isinstance(loaded.eval_set, StreamedEvalSet)
    assert loaded.eval_set.eval_set_id == "s"
    assert [c.eval_id for c in loaded.eval_set.eval_cases] == ["a", "b", "a"]
    second = loaded.eval_set.eval_cases[1].model_dump(exclude_none=True)
    assert second["conversation"][0]["user_content"] == {"parts": [{"text": 'x]}"'}]}
    key = loaded.eval_set.eval_cases._key  # type: ignore[attr-defined]
    assert list(shared_spill().scan("case", key)) == [c.encode() for c in cases]
    assert [w.path for w in loaded.warnings] == ["eval_cases[2].eval_id"]


@pytest.mark.parametrize("number", ["123456789012345678901234567890", "1e400"])
def test_a_number_ijson_refuses_in_a_huge_eval_set_is_still_a_syntax_error(
    number: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "huge.evalset.json"
    case = CASE % ("a", "hi")
    stamped = f'{case[:-1]}, "creation_timestamp": {number}}}'
    path.write_text(f'{{"eval_set_id": "s", "eval_cases": [{stamped}]}}')
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    monkeypatch.setattr(evalset_io, "EXACT_LIMIT", 0)  # as if too big to read whole

    with pytest.raises(EvalSetError) as caught:
        load_eval_set(path)

    [problem] = caught.value.problems
    assert problem.message.startswith("malformed JSON: ")
    assert "overflow at line 1 column" in problem.message


def test_a_clean_jsonl_case_line_is_checked_in_one_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"eval_set_id": "s"}\n' + CASE % ("a", "hi") + "\n\n" + CASE % ("b", "yo"))
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    parsed: list[str] = []
    two_steps = streamed_io.parse_line

    def noted(line: str, *rest: str) -> Any:
        parsed.append(line)
        return two_steps(line, *rest)

    monkeypatch.setattr(streamed_io, "parse_line", noted)

    loaded = load_eval_set(path)

    assert loaded.streamed and loaded.eval_set.eval_set_id == "s"
    assert [c.eval_id for c in loaded.eval_set.eval_cases] == ["a", "b"]
    assert parsed == ['{"eval_set_id": "s"}']  # the header alone
