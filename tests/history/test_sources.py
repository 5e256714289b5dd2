"""Reading a finished run's results, from a results file or the history: with the collector
paused while the objects are made (millions for a large run, none of them garbage)."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from assay.history import sources
from assay.history.store import HistoryStore
from assay.results.model import EvalSetResult

RESULT = {"eval_set_result_id": "r1", "eval_set_id": "travel", "eval_case_results": []}


def test_a_results_file_is_read_with_the_collector_paused_and_gets_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    original = sources._RESULTS

    class Watching:
        def validate_python(self, data: Any) -> list[EvalSetResult]:
            seen.append(gc.isenabled())
            return original.validate_python(data)

    monkeypatch.setattr(sources, "_RESULTS", Watching())
    path = tmp_path / "results.json"
    path.write_text(json.dumps(RESULT), encoding="utf-8")

    [result] = sources.results_for(str(path))

    assert result.eval_set_id == "travel"
    assert seen == [False] and gc.isenabled()


def test_a_run_in_the_history_is_read_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = tmp_path / "history.sqlite"
    with HistoryStore(history) as store:
        run = store.start_run(["travel.evalset.json"], {})
        store.finish_run(run, [EvalSetResult.model_validate(RESULT)])
    seen: list[bool] = []
    original = HistoryStore.results

    def watching(self: HistoryStore, ref: str) -> list[EvalSetResult]:
        seen.append(gc.isenabled())
        return original(self, ref)

    monkeypatch.setattr(HistoryStore, "results", watching)

    sources.results_for(run, history)

    assert seen == [False] and gc.isenabled()
