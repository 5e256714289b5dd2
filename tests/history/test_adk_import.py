"""ADK's own result files become finished runs in the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import Example, RunCli
from google.adk.evaluation._eval_set_results_manager_utils import parse_eval_set_result_json

from assay.errors import InputError
from assay.history.adk_import import import_files
from assay.history.store import HistoryStore


@pytest.fixture
def adk_history(run_cli: RunCli, example: Example, tmp_path: Path) -> Path:
    """An ``.adk/eval_history`` folder: one file as ADK writes it now, one double-encoded."""
    out = tmp_path / "results.json"
    assert run_cli("eval", example.evalset, "--traces", example.traces, "--output", out).code == 0
    adk = parse_eval_set_result_json(out.read_text(encoding="utf-8"))
    folder = tmp_path / ".adk" / "eval_history"
    folder.mkdir(parents=True)
    (folder / "app_a_1.evalset_result.json").write_text(adk.model_dump_json(indent=2))
    adk.eval_set_result_id = "legacy"
    (folder / "app_b_2.evalset_result.json").write_text(json.dumps(adk.model_dump_json()))
    return folder


def test_each_adk_result_file_becomes_one_finished_run(adk_history: Path, tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        imported = import_files(store, [adk_history])
        runs = {run.id: run for run in store.runs()}
        results = store.results(imported[1].run_id)

    assert [(i.cases, i.already) for i in imported] == [(5, False), (5, False)]
    assert {runs[i.run_id].status for i in imported} == {"finished"}
    assert {runs[i.run_id].source for i in imported} == {"adk"}
    assert runs[imported[0].run_id].passed == 5
    assert [c.eval_id for c in results[0].eval_case_results][:2] == [
        "forecast_paris",
        "book_flight_lisbon",
    ]


def test_importing_a_file_again_finds_the_run_made_the_first_time(
    adk_history: Path, tmp_path: Path
) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        first = import_files(store, [adk_history])
        again = import_files(store, [adk_history])
        count = len(store.runs())

    assert [i.run_id for i in again] == [i.run_id for i in first]
    assert all(i.already for i in again) and count == 2


def test_a_missing_path_or_a_folder_without_results_is_named(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store, pytest.raises(InputError) as info:
        import_files(store, [tmp_path / "nothing.json", tmp_path])
    assert [p.message for p in info.value.problems] == [
        "no such file or folder",
        "no *.evalset_result.json files in this folder",
    ]
