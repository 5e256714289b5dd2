"""A run's input files, kept in the history and loaded back as the run loaded them, a chunk at
a time however large they are."""

from __future__ import annotations

import json
import os
import shutil
import tracemalloc
from pathlib import Path

import pytest
from _support import Example

from assay.evalset.io import load_eval_set
from assay.history import inputs as inputs_module
from assay.history.inputs import InputFile, digests, input_files, pack, read_inputs
from assay.history.records import HistoryError
from assay.history.store import HistoryStore
from assay.results.traces import load_traces

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _stored_run(store: HistoryStore, files: list[InputFile], folder: Path) -> str:
    """A run whose input files ``files`` are kept in ``store``."""
    run = store.start_run([files[0].path], {})
    hashed = read_inputs(files)
    known = store.known_blobs([item.sha256 for item in hashed])
    store.store_inputs(run, pack(hashed, folder, known), {"digests": digests(hashed)})
    return run


def test_stored_files_load_back_to_the_eval_sets_and_traces_the_run_read(
    example: Example, tmp_path: Path
) -> None:
    loaded = load_eval_set(example.evalset)
    files = input_files([(str(example.evalset), loaded.format)], [str(example.traces)])
    with HistoryStore(tmp_path / "history.sqlite") as store:
        inputs = store.run_inputs(_stored_run(store, files, tmp_path))

    assert list(inputs.eval_sets) == [loaded.eval_set]
    assert inputs.traces is not None
    assert inputs.traces.by_case == load_traces([example.traces]).by_case


def test_a_legacy_eval_set_keeps_the_session_file_beside_it(tmp_path: Path) -> None:
    folder = tmp_path / "legacy"
    folder.mkdir()
    turns = [{"query": "hi", "expected_tool_use": [], "reference": "hello"}]
    (folder / "greet.test.json").write_text(json.dumps(turns), encoding="utf-8")
    session = {"app_name": "app", "user_id": "u1", "state": {"lang": "fr"}}
    (folder / "initial.session.json").write_text(json.dumps(session), encoding="utf-8")
    loaded = load_eval_set(folder / "greet.test.json")
    files = input_files([(str(folder / "greet.test.json"), loaded.format)])
    with HistoryStore(tmp_path / "history.sqlite") as store:
        run = _stored_run(store, files, tmp_path)
        shutil.rmtree(folder)  # the run's files are gone; the history still has them

        [eval_set] = store.run_inputs(run).eval_sets

    assert [f.kind for f in files] == ["eval_set", "session"]
    assert eval_set == loaded.eval_set
    assert eval_set.eval_cases[0].session_input is not None
    assert eval_set.eval_cases[0].session_input.state == {"lang": "fr"}


def test_each_file_is_kept_once_however_many_runs_read_it(example: Example, tmp_path: Path) -> None:
    files = input_files([(str(example.evalset), "evalset")], [str(example.traces)])
    hashed = read_inputs(files)
    with HistoryStore(tmp_path / "history.sqlite") as store:
        runs = [_stored_run(store, files, tmp_path) for _ in range(3)]
        kept = store._read("SELECT COUNT(*), SUM(size), SUM(LENGTH(zlib)) FROM blobs")[0]
        for n, run in enumerate(runs):
            back = store.extract_inputs(run, tmp_path / f"back{n}")
            assert [p.read_bytes() for _, p in back] == [Path(f.path).read_bytes() for f in files]
        assert store.get(runs[0]).config == {"digests": digests(hashed)}

    sizes = example.evalset.stat().st_size + example.traces.stat().st_size
    assert kept[:2] == (2, sizes) and kept[2] * 3 < sizes  # compressed
    packed = pack(hashed, tmp_path, {hashed[0].sha256})
    assert [p.packed is None for p in packed] == [True, False]


def test_a_file_larger_than_a_part_is_kept_in_parts_and_written_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs_module, "PART", 4096)
    data = os.urandom(50_000)  # incompressible: about 13 parts
    source = tmp_path / "big.evalset.json"
    source.write_bytes(data)
    files = [InputFile("eval_set", 0, str(source))]
    with HistoryStore(tmp_path / "history.sqlite") as store:
        run = _stored_run(store, files, tmp_path)
        [(file, back)] = store.extract_inputs(run, tmp_path / "back")
        counted = store._read("SELECT COUNT(*), SUM(LENGTH(zlib)) FROM blob_parts")[0]
        row = store._read("SELECT size, LENGTH(zlib) FROM blobs")[0]

        assert back.read_bytes() == data and file == files[0]
        assert counted[0] >= 12 and counted[1] > len(data) and row == (len(data), 0)
        store._write("DELETE FROM blob_parts WHERE part = 3", ())
        with pytest.raises(HistoryError, match="damaged"):
            store.extract_inputs(run, tmp_path / "again")


def test_hashing_and_packing_a_large_file_holds_a_chunk_not_the_file(tmp_path: Path) -> None:
    source = tmp_path / "large.traces.json"
    source.write_bytes(b'{"case": "' + b"x" * 40_000_000 + b'"}')
    files = [InputFile("traces", 0, str(source))]

    tracemalloc.start()
    try:
        [packed] = pack(read_inputs(files), tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert packed.size == source.stat().st_size and packed.packed is not None
    assert peak < 8_000_000, f"peak {peak:,} bytes"
