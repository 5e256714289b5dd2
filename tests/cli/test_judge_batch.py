"""``assay eval --judge-batch``: the example's judge calls go through a stub of OpenAI's files
and batches endpoints on 127.0.0.1, each batch is recorded in the run history, and a rerun
answers from the cache without a new batch; the answers a batch gave are priced at the batch
price (half) in the recorded cost."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from _batch_server import BatchServer, Plan
from _judges import approve
from _support import Example, RunCli

from assay.history.records import default_history_path
from assay.history.store import HistoryStore
from assay.llm import batch_pool
from assay.llm.batch import COLLECTED, BatchSettings
from assay.metrics.base import EvalStatus
from assay.results.traces import Traces
from assay.runner.executors.base import RunPlan
from assay.runner.executors.ray import RayExecutor
from assay.runner.jobs import jobs_for
from assay.runner.judges import JudgeSettings

QUICK = BatchSettings(idle_s=0.2, poll_s=0.02)
"""The CLI's batch waits (2 s idle, 30 s between polls), shortened for a test."""


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


def _priced(tmp_path: Path, example: Example) -> Path:
    """The example's config with the stub judge priced at $1,000 per million tokens, in and
    out (the stub reports 12 tokens a call: $0.012)."""
    data: dict[str, Any] = json.loads(example.config.read_text(encoding="utf-8"))
    data["prices"] = {"stub-judge": {"input": 1000.0, "output": 1000.0}}
    path = tmp_path / "priced_config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _cost(results: Path) -> dict[str, float]:
    """The judge cost per metric a results file records."""
    notes: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))["assay"]
    return dict(notes["cost_usd"])


def test_a_batched_run_records_half_the_judge_cost_of_the_same_run_sent_call_by_call(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = _priced(tmp_path, example)
    monkeypatch.setattr(batch_pool, "BatchSettings", lambda: QUICK)
    given = ("eval", example.evalset, "--traces", example.traces, "--config", config, "--no-cache")
    with BatchServer(answer=approve, default=Plan(polls=0)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        plain = run_cli(*given, "--output", tmp_path / "plain.json")
        batched = run_cli(*given, "--judge-batch", "--output", tmp_path / "batched.json")
        lines = sum(len(server.lines(b)) for b in server.batches)
        calls = server.completions

    assert plain.code == batched.code == 0, plain.output + batched.output
    assert (calls, lines) == (42, 42)  # the first run's calls, the second run's batched lines
    full, half = _cost(tmp_path / "plain.json"), _cost(tmp_path / "batched.json")
    assert sum(full.values()) == pytest.approx(42 * 0.012)
    assert half == pytest.approx({metric: dollars / 2 for metric, dollars in full.items()})
    assert "judge cost: $0.25" in batched.out  # 42 calls at $0.006


def test_batches_are_shown_as_they_change_a_line_each_never_one_per_poll(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_pool, "BatchSettings", lambda: QUICK)
    monkeypatch.setenv("ASSAY_HEARTBEAT_S", "0")
    with BatchServer(answer=approve, default=Plan(polls=5)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = run_cli("eval", example.evalset, "--traces", example.traces, "--judge-batch")
        batches, polls = server.batches_created, server.polls

    assert run.code == 0, run.output
    shown = [line for line in run.err.splitlines() if "batches:" in line]
    assert polls >= 6 * batches  # five polls in progress each, then one over: never a line each
    assert len(shown) == 2 * batches  # a line as each starts, and as it ends
    assert re.fullmatch(
        r"\[0/5\] batches: 1 submitted, 1 running, 0 done · lines 0/\d+ done", shown[0]
    )
    assert shown[-1].endswith(
        f"batches: {batches} submitted, 0 running, {batches} done · lines 42/42 done"
    )


def test_judge_batch_on_a_ray_cluster_is_refused_saying_why_and_what_to_use(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--judge-batch", "--executor", "ray"
    )

    assert run.code == 2
    assert "each worker would send and wait on batches of its own" in run.err
    assert "--executor local" in run.err
    assert "Traceback" not in run.output


def test_judge_batch_on_a_ray_executor_through_the_python_api_is_refused(
    example: Example,
) -> None:
    plan = RunPlan(traces=Traces(), judges=JudgeSettings(batch=True))
    with pytest.raises(ValueError, match="judge_batch cannot be used with the Ray executor"):
        asyncio.run(RayExecutor().run(jobs_for([str(example.evalset)], None), plan))


def test_a_cost_cap_on_a_ray_executor_through_the_python_api_is_refused(
    example: Example,
) -> None:
    plan = RunPlan(traces=Traces(), judges=JudgeSettings(max_cost_usd=1.0))
    with pytest.raises(ValueError, match="max_cost_usd cannot be used with the Ray executor"):
        asyncio.run(RayExecutor().run(jobs_for([str(example.evalset)], None), plan))
