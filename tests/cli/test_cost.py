"""``assay eval --max-cost`` and ``--early-stop-votes`` on the example, its judge a real
OpenAI-compatible server on 127.0.0.1: a cap reached mid-run stops new judge calls (the verdicts
left NOT_EVALUATED with the reason, the rest kept), each set's cost is recorded, and votes stop
asking once decided."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _judge_server import JudgeServer
from _support import Example, RunCli

from assay.metrics.base import EvalStatus

JUDGED = {"final_response_match_v2", "safety_v1"}
"""The example's judged metrics."""


def _config(tmp_path: Path, example: Example, samples: int, price: float) -> Path:
    """The example's config, each judged criterion asking ``samples`` samples, and the stub
    judge priced at ``price`` dollars per million tokens, in and out."""
    data: dict[str, Any] = json.loads(example.config.read_text(encoding="utf-8"))
    for criterion in data["criteria"].values():
        if isinstance(criterion, dict) and "judge_model_options" in criterion:
            criterion["judge_model_options"]["num_samples"] = samples
    data["prices"] = {"stub-judge": {"input": price, "output": price}}
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _metrics(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [m for case in data["eval_case_results"] for m in case["overall_eval_metric_results"]]


def test_a_cost_cap_reached_mid_run_leaves_the_rest_not_evaluated_and_keeps_what_finished(
    run_cli: RunCli, example: Example, judge_env: JudgeServer, tmp_path: Path
) -> None:
    config = _config(tmp_path, example, samples=1, price=1000.0)  # about $0.3-1.5 a call
    out = tmp_path / "results.json"
    before = judge_env.count()  # the server serves the whole session

    run = run_cli("eval", example.evalset, "--traces", example.traces, "--config", config,
                  "--max-cost", "2", "--concurrency", "1", "--output", out)  # fmt: skip

    assert run.code == 1, run.output
    metrics = _metrics(out)
    judged = [m for m in metrics if m["metric_name"] in JUDGED]
    assert any(m["eval_status"] == EvalStatus.PASSED for m in judged)  # finished: kept
    assert any(m["eval_status"] == EvalStatus.NOT_EVALUATED for m in judged)
    reasons = json.dumps(json.loads(out.read_text(encoding="utf-8"))["eval_case_results"])
    assert "--max-cost 2.00 reached" in reasons
    assert judge_env.count() - before < 42  # the example's 42 judge calls were not all made
    notes = json.loads(out.read_text(encoding="utf-8"))["assay"]
    # calls already in flight when the cap is reached (a case's metrics are judged at once) end
    # past it, and are counted
    assert 2.0 <= sum(notes["cost_usd"].values()) < 8.0
    assert notes["max_cost_usd"] == 2.0  # the cap is recorded with the results
    assert "judge cost: $" in run.out
    assert "--max-cost 2.00 reached" in run.out


def test_a_cost_cap_on_a_ray_cluster_is_refused_saying_why(
    run_cli: RunCli, example: Example
) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--executor", "ray",
                  "--max-cost", "2", "--no-history")  # fmt: skip

    assert run.code == 2
    assert "Traceback" not in run.output
    assert "--max-cost" in run.err and "each worker would hold a cap of its own" in run.err


def test_early_stopped_votes_ask_fewer_samples_for_the_same_verdicts(
    run_cli: RunCli, example: Example, judge_env: JudgeServer, tmp_path: Path
) -> None:
    config = _config(tmp_path, example, samples=5, price=0.0)
    given = ("eval", example.evalset, "--traces", example.traces, "--config", config, "--no-cache")

    before = judge_env.count()  # the server serves the whole session
    every = run_cli(*given, "--output", tmp_path / "every.json")
    asked_every = judge_env.count() - before
    stopped = run_cli(*given, "--early-stop-votes", "--output", tmp_path / "stopped.json")
    asked_stopped = judge_env.count() - before - asked_every

    assert every.code == stopped.code == 0, stopped.output
    verdicts = lambda name: [(m["metric_name"], m["eval_status"], m.get("score"))  # noqa: E731
                             for m in _metrics(tmp_path / name)]  # fmt: skip
    assert verdicts("stopped.json") == verdicts("every.json")
    assert asked_stopped < asked_every  # the approving judge is unanimous: 3 of 5 decide


def test_a_cap_already_reached_still_scores_from_the_answers_the_cache_holds(
    run_cli: RunCli, example: Example, judge_env: JudgeServer, tmp_path: Path
) -> None:
    config = _config(tmp_path, example, samples=1, price=1000.0)
    given = ("eval", example.evalset, "--traces", example.traces, "--config", config)
    first = run_cli(*given, "--output", tmp_path / "first.json")  # fills the response cache
    assert first.code == 0, first.output
    before = judge_env.count()  # the server serves the whole session

    capped = run_cli(*given, "--max-cost", "0", "--output", tmp_path / "capped.json")

    assert capped.code == 0, capped.output
    assert judge_env.count() == before  # every answer came from the cache
    verdicts = lambda name: [(m["metric_name"], m["eval_status"], m.get("score"))  # noqa: E731
                             for m in _metrics(tmp_path / name)]  # fmt: skip
    assert verdicts("capped.json") == verdicts("first.json")
    assert any(n in JUDGED and s == EvalStatus.PASSED for n, s, _ in verdicts("capped.json"))
    cases = json.loads((tmp_path / "capped.json").read_text(encoding="utf-8"))["eval_case_results"]
    assert "--max-cost" not in json.dumps(cases)  # no verdict was stopped by the cap
