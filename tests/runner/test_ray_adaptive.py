"""The judge limit adapts for the whole Ray cluster: two workers judging against a provider that
serves 4 requests at once share one limit (the :class:`~assay.llm.shared.Limiter` actor), which
falls to what the provider serves after the first burst, so few calls are refused and every case
is evaluated. A real local Ray cluster of two CPUs, a real stub provider on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _judge_server import JudgeServer

from assay.metrics.base import EvalStatus
from assay.results.traces import Traces
from assay.runner.evaluate import JudgeSettings
from assay.runner.jobs import jobs_for
from assay.runner.ray_executor import evaluate_on_ray

ray = pytest.importorskip("ray")  # the [ray] extra; CI installs it, so this never skips there

VALID = '{"reasoning": "same", "is_the_agent_response_valid": "valid"}'
CASES, TURNS, SAMPLES = 8, 10, 5


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    """One local Ray cluster of two CPUs (two workers) for the module."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    try:
        yield
    finally:
        ray.shutdown()


def _eval_set(folder: Path) -> Path:
    """CASES cases of TURNS turns each, judged by final_response_match_v2 with SAMPLES samples a
    turn: CASES * TURNS * SAMPLES judge calls."""
    cases = [
        {
            "eval_id": f"case_{case}",
            "conversation": [
                {
                    "invocation_id": f"inv-{case}-{turn}",
                    "user_content": {"role": "user", "parts": [{"text": f"question {turn}"}]},
                    "final_response": {"role": "model", "parts": [{"text": f"answer {turn}"}]},
                }
                for turn in range(TURNS)
            ],
        }
        for case in range(CASES)
    ]
    path = folder / "limited.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "limited", "eval_cases": cases}))
    options = {"num_samples": SAMPLES}
    criteria = {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": options}}
    (folder / "test_config.json").write_text(json.dumps({"criteria": criteria}))
    return path


def test_two_workers_share_one_adaptive_limit_so_few_calls_are_refused_and_none_fails(
    tmp_path: Path,
) -> None:
    jobs = jobs_for([str(_eval_set(tmp_path))], None)
    traces = Traces()
    for case in jobs[0].loaded.eval_set.eval_cases:
        traces.add(("limited", case.eval_id), list(case.conversation or []))
    with JudgeServer(default=VALID, latency_s=0.02, max_concurrent=4, retry_after="0.2") as server:
        env = {"ASSAY_JUDGE_MODEL": "openai:stub-judge", "OPENAI_BASE_URL": server.base_url}
        # 8 calls at once allowed: the ceiling, for the cluster as a whole
        judges = JudgeSettings(concurrency=8, cache=False, env=env, profile=None)
        (result,) = evaluate_on_ray(jobs, traces, judges=judges, cases_per_task=1)
        refused, answered = server.refused, server.count() - server.refused

    assert answered == CASES * TURNS * SAMPLES
    assert refused < 0.05 * (answered + refused)  # about 10 of 410 when run alone
    statuses = [c.final_eval_status for c in result.eval_case_results]
    assert statuses == [EvalStatus.PASSED] * CASES
    turns = [
        metric.eval_status
        for scored in result.eval_case_results
        for invocation in scored.eval_metric_result_per_invocation
        for metric in invocation.eval_metric_results
        if metric.metric_name == "final_response_match_v2"
    ]
    assert turns == [EvalStatus.PASSED] * (CASES * TURNS)  # every turn judged, none given up
