"""A streamed eval set's duplicate eval ids are found through the spill file, not a set of every
id held while the file is read, with the warnings a set read whole gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay._internal.spill import shared_spill
from assay.evalset import load_eval_set, streamed_io

IDS = ["a", "b", "a", "c", "b", "a", "d\x1fe", "d\x1fe"]


def _case(eval_id: str) -> dict[str, object]:
    return {"eval_id": eval_id, "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}


@pytest.mark.parametrize("suffix", [".evalset.json", ".evalset.jsonl"])
def test_duplicate_ids_of_a_streamed_set_warn_as_a_set_read_whole_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"s{suffix}"
    if suffix.endswith("l"):
        lines = [json.dumps({"eval_set_id": "s"}), *(json.dumps(_case(i)) for i in IDS)]
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": [_case(i) for i in IDS]}))
    monkeypatch.setenv("ASSAY_STREAM_MB", "1000")
    whole = load_eval_set(path)
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    streamed = load_eval_set(path)

    assert streamed.streamed and not whole.streamed
    said = [(w.path, w.message) for w in streamed.warnings]
    assert said == [(w.path, w.message) for w in whole.warnings]
    assert [path for path, _ in said] == [f"eval_cases[{i}].eval_id" for i in (2, 4, 5, 7)]
    assert "(first at eval_cases[6])" in said[-1][1]


def test_a_streamed_sets_ids_are_dropped_from_the_spill_once_its_duplicates_are_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": [_case(i) for i in IDS]}))
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    loaded = load_eval_set(path)

    assert len(loaded.warnings) == 4
    rows = (
        shared_spill()
        ._db.execute("SELECT COUNT(*) FROM items WHERE kind = ?", (streamed_io._IDS,))
        .fetchone()
    )
    assert rows == (0,)


def test_reading_a_streamed_set_holds_no_id_of_every_case(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """20,000 cases: with a set of every id read so far the load peaked at 2.4 MB traced; with
    the ids in the spill, 1.2 MB (200,000 cases: 27.9 against 1.3 MB)."""
    import tracemalloc

    path = tmp_path / "many.evalset.jsonl"
    lines = [json.dumps({"eval_set_id": "s"})]
    lines += [json.dumps(_case(f"case_{i:07d}")) for i in range(20_000)]
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("ASSAY_STREAM_MB", "0")
    shared_spill()  # made before measuring: the spill's own connection is not the set's
    tracemalloc.start()
    try:
        loaded = load_eval_set(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert len(loaded.eval_set.eval_cases) == 20_000
    assert peak < 1_800_000, peak
