"""A run's input files, kept in the history and loaded back as the run loaded them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from _support import Example

from assay.evalset.io import load_eval_set
from assay.history.inputs import digests, input_files, load_stored, pack, read_inputs
from assay.history.store import HistoryStore
from assay.results.traces import load_traces

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_stored_files_load_back_to_the_eval_sets_and_traces_the_run_read(
    example: Example,
) -> None:
    loaded = load_eval_set(example.evalset)
    files = input_files([(str(example.evalset), loaded.format)], [str(example.traces)])

    inputs = load_stored(read_inputs(files))

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
    stored = read_inputs(files)
    shutil.rmtree(folder)  # the run's files are gone; the history still has them

    [eval_set] = load_stored(stored).eval_sets

    assert [f.kind for f in files] == ["eval_set", "session"]
    assert eval_set == loaded.eval_set
    assert eval_set.eval_cases[0].session_input is not None
    assert eval_set.eval_cases[0].session_input.state == {"lang": "fr"}


def test_each_file_is_kept_once_however_many_runs_read_it(example: Example, tmp_path: Path) -> None:
    files = input_files([(str(example.evalset), "evalset")], [str(example.traces)])
    stored = read_inputs(files)
    with HistoryStore(tmp_path / "history.sqlite") as store:
        runs = [store.start_run([str(example.evalset)], {}) for _ in range(3)]
        for run in runs:
            known = store.known_blobs([item.sha256 for item in stored])
            store.store_inputs(run, pack(stored, known), {"digests": digests(stored)})
        kept = store._read("SELECT COUNT(*), SUM(size), SUM(LENGTH(zlib)) FROM blobs")[0]
        assert [store.stored_inputs(run) == stored for run in runs] == [True] * 3
        assert store.get(runs[0]).config == {"digests": digests(stored)}

    sizes = example.evalset.stat().st_size + example.traces.stat().st_size
    assert kept[:2] == (2, sizes) and kept[2] * 3 < sizes  # compressed
    assert [p.packed is None for p in pack(stored, {stored[0].sha256})] == [True, False]
