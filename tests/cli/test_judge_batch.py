"""``assay eval --judge-batch``: the example's judge calls go through a stub of OpenAI's files
and batches endpoints on 127.0.0.1, each batch is recorded in the run history, and a rerun
answers from the cache without a new batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _batch_server import BatchServer, Plan
from _judges import approve
from _support import Example, RunCli

from assay.history.records import default_history_path
from assay.history.store import HistoryStore
from assay.llm.batch import COLLECTED
from assay.metrics.base import EvalStatus


def test_judge_batch_sends_the_judges_calls_as_recorded_batches_and_a_rerun_reads_the_cache(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    given = ("eval", example.evalset, "--traces", example.traces, "--judge-batch")
    with BatchServer(answer=approve, default=Plan(polls=0)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = run_cli(*given, "--output", out)
        created = server.batches_created
        lines = sum(len(server.lines(b)) for b in server.batches)
        again = run_cli(*given)

    assert run.code == 0, run.output
    assert again.code == 0, again.output
    assert created >= 1
    assert lines == 42  # every judge call of the example, none sent one at a time
    assert server.completions == 0
    assert server.batches_created == created  # the rerun found every answer in the cache
    assert "5 passed, 0 failed, 0 not evaluated" in run.out
    data = json.loads(out.read_text(encoding="utf-8"))
    statuses = [
        m["eval_status"]
        for c in data["eval_case_results"]
        for m in c["overall_eval_metric_results"]
    ]
    assert EvalStatus.PASSED in statuses and EvalStatus.FAILED not in statuses
    with HistoryStore(default_history_path()) as store:
        recorded = store.query("SELECT batch_id, status FROM judge_batches")
    assert sorted(recorded) == sorted((b, COLLECTED) for b in server.batches)
