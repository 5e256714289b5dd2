"""``--max-cost``: a run's judge spending is priced as answers arrive; once the cap is reached no
new judge call starts, the verdicts left are NOT_EVALUATED with the reason, and every verdict
finished before is kept; an answer the response cache already holds costs nothing and is served
even past the cap; an answer a provider's batch API gave is charged at the batch price. Over real
HTTP (the stub servers report token usage), with a real SQLite response cache."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _batch_server import BatchServer, Plan
from _judge_server import JudgeServer, Reply

from assay.config import LlmAsAJudgeCriterion
from assay.config.eval_config import ModelPrice
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.backends.openai_batch import OpenAIBatchApi
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.batch import BatchingClient, BatchSettings
from assay.llm.budget import CostCapReached, CostMeter
from assay.llm.cache import ResponseCache
from assay.llm.client import LlmClient, RetryPolicy
from assay.llm.judge import Judge
from assay.llm.prices import PriceBook
from assay.metrics.base import EvalStatus, MetricResult
from assay.metrics.final_response_match import FinalResponseMatchV2Metric

# 1,000 prompt tokens at $1/M and 100 completion tokens at $10/M: $0.002 a call.
PRICES = PriceBook({"judge": ModelPrice(input=1.0, output=10.0)}, use_litellm=False)
VALID = json.dumps({"reasoning": "r", "is_the_agent_response_valid": "valid"})


def _reply(body: dict[str, object]) -> Reply:
    return Reply.ok(VALID, prompt_tokens=1000, completion_tokens=100)


def _invocation(index: int) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": f"inv-{index}",
            "user_content": {"role": "user", "parts": [{"text": f"question {index}"}]},
            "final_response": {"role": "model", "parts": [{"text": f"answer {index}"}]},
        }
    )


async def _judged(server: JudgeServer, meter: CostMeter, invocations: int) -> MetricResult:
    backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
    async with LlmClient(backend, concurrency=1) as client:
        return await _verdicts(client, meter, invocations, parallel=1)


async def _verdicts(
    client: LlmClient, meter: CostMeter, invocations: int, *, parallel: int
) -> MetricResult:
    criterion = LlmAsAJudgeCriterion.model_validate(
        {"threshold": 0.5, "judge_model_options": {"num_samples": 1, "parallelism_limit": parallel}}
    )
    judge = Judge(client, "final_response_match_v2", meter=meter)
    metric = FinalResponseMatchV2Metric(criterion, judge)
    actual = [_invocation(i) for i in range(invocations)]
    case = EvalCase(eval_id="c", conversation=actual)
    return await metric.evaluate(actual, actual, case)


def test_a_cap_reached_mid_run_stops_new_calls_and_keeps_the_finished_verdicts() -> None:
    meter = CostMeter(PRICES, max_usd=0.005)
    with JudgeServer(reply=_reply) as server:
        result = asyncio.run(_judged(server, meter, invocations=10))
        calls = server.count()
    assert calls == 3  # $0.002, $0.004, $0.006: the cap is reached after the third
    statuses = [inv.status for inv in result.per_invocation]
    assert statuses[:3] == [EvalStatus.PASSED] * 3
    assert statuses[3:] == [EvalStatus.NOT_EVALUATED] * 7
    assert result.notes is not None
    reasons = [inv.reason for inv in result.notes.per_invocation]
    assert reasons[:3] == [None] * 3
    assert all(r is not None and r.startswith("--max-cost 0.005 reached") for r in reasons[3:])
    assert meter.spent_usd == pytest.approx(0.006)
    assert meter.metric_costs() == {"final_response_match_v2": pytest.approx(0.006)}
    assert meter.refused == 7


def test_answers_the_cache_holds_are_served_under_a_cap_already_reached(tmp_path: Path) -> None:
    async def judged(server: JudgeServer, cache: ResponseCache, meter: CostMeter) -> MetricResult:
        backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
        async with LlmClient(backend, concurrency=1, cache=cache) as client:
            return await _verdicts(client, meter, 4, parallel=1)

    with JudgeServer(reply=_reply) as server, ResponseCache(tmp_path / "cache.sqlite") as cache:
        asyncio.run(judged(server, cache, CostMeter(PRICES)))  # fills the cache
        assert server.count() == 4
        capped = CostMeter(PRICES, max_usd=0.0)  # reached before the first call
        result = asyncio.run(judged(server, cache, capped))
        assert server.count() == 4  # no call made
    assert [inv.status for inv in result.per_invocation] == [EvalStatus.PASSED] * 4
    assert capped.refused == 0
    assert capped.spent_usd == 0.0


def test_a_cap_already_reached_still_refuses_what_the_cache_does_not_hold(tmp_path: Path) -> None:
    with JudgeServer(reply=_reply) as server, ResponseCache(tmp_path / "cache.sqlite") as cache:

        async def judged() -> MetricResult:
            backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
            async with LlmClient(backend, concurrency=1, cache=cache) as client:
                return await _verdicts(client, CostMeter(PRICES, max_usd=0.0), 2, parallel=1)

        result = asyncio.run(judged())
        assert server.count() == 0
    assert [inv.status for inv in result.per_invocation] == [EvalStatus.NOT_EVALUATED] * 2


def test_without_a_cap_every_call_is_made_and_priced() -> None:
    meter = CostMeter(PRICES)
    with JudgeServer(reply=_reply) as server:
        result = asyncio.run(_judged(server, meter, invocations=4))
        assert server.count() == 4
    assert result.status is EvalStatus.PASSED
    assert meter.spent_usd == pytest.approx(0.008)


def test_a_judge_without_a_known_price_is_not_run_under_a_cap() -> None:
    meter = CostMeter(PriceBook(use_litellm=False), max_usd=1.0)
    with pytest.raises(CostCapReached, match="needs a price for openai:judge"):
        meter.check("openai:judge")
    meter.check("local:")  # the embedded judge costs nothing


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        CostMeter(PRICES, max_usd=-1.0)


async def _judged_in_batches(server: BatchServer, meter: CostMeter, invocations: int) -> None:
    backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
    client = BatchingClient(
        backend,
        OpenAIBatchApi(backend),
        settings=BatchSettings(idle_s=0.05, poll_s=0.02),
        retry=RetryPolicy(max_attempts=2, initial_delay_s=0.0),
    )
    async with client:
        result = await _verdicts(client, meter, invocations, parallel=invocations)
    assert result.status is EvalStatus.PASSED


async def _judged_one_at_a_time(server: BatchServer, meter: CostMeter, invocations: int) -> None:
    backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
    async with LlmClient(backend, concurrency=1) as client:
        result = await _verdicts(client, meter, invocations, parallel=1)
    assert result.status is EvalStatus.PASSED


def test_answers_a_batch_gave_are_charged_half_price_and_its_lines_sent_again_full_price() -> None:
    # the batch stub reports 10 prompt and 2 completion tokens a line: $0.00003 a call, listed
    ordinary, batched = CostMeter(PRICES), CostMeter(PRICES)
    with BatchServer(answer=lambda body: VALID) as server:
        server.plan(Plan(polls=0, fail=frozenset({1})))  # its second line fails: sent again
        asyncio.run(_judged_in_batches(server, batched, invocations=4))
        asyncio.run(_judged_one_at_a_time(server, ordinary, invocations=4))
        assert server.completions == 1 + 4  # the failed line, then the ordinary run's calls

    assert ordinary.spent_usd == pytest.approx(4 * 0.00003)
    assert batched.spent_usd == pytest.approx(3 * 0.000015 + 0.00003)
