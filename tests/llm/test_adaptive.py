"""Adaptive concurrency: the limit an endpoint is sent falls under 429s and rises again when they
stop, a ``Retry-After`` holds the whole endpoint back when even one call at a time is refused,
a judged metric against a provider that serves 4 requests at once leaves nothing NOT_EVALUATED,
two metrics judged by two models on one server share its limit (in a process and on a cluster),
and a fixed limit (``--judge-concurrency-fixed``) does not adapt. The HTTP tests run against a
real stub provider on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from _judge_server import JudgeServer, Reply

from assay.config import JudgeModelOptions, LlmAsAJudgeCriterion
from assay.evalset import EvalCase, Invocation
from assay.llm.adaptive import AdaptiveLimit, AdaptivePolicy, Outcome
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.base import LlmRequest
from assay.llm.client import LlmClient, RetryPolicy
from assay.llm.judge import Judge
from assay.llm.selection import JudgePool
from assay.llm.shared import Limiter, RemoteLimit
from assay.llm.slots import PromptSlots
from assay.metrics.final_response_match import FinalResponseMatchV2Metric
from assay.runner.options import RunOptions

REFUSED = Outcome(ok=False, status=429, retry_after=1.0)
ANSWERED = Outcome(ok=True, latency_s=0.1)
QUICK_RETRY = RetryPolicy(max_attempts=8, initial_delay_s=0.01, max_delay_s=0.05, deadline_s=60)
PATIENT = RetryPolicy(max_attempts=100, initial_delay_s=0.01, max_delay_s=0.05, deadline_s=60)
"""For a fixed limit above what the server serves: some calls are refused many times."""


def _client(server: JudgeServer, concurrency: int, retry: RetryPolicy = QUICK_RETRY) -> LlmClient:
    backend = OpenAICompatBackend("openai:judge", base_url=server.base_url, api_key=None)
    return LlmClient(backend, concurrency=concurrency, retry=retry, cache=None)


async def _ask(client: LlmClient, count: int, start: int = 0) -> list[str]:
    requests = [LlmRequest.user(f"question {start + i}") for i in range(count)]
    responses = await asyncio.gather(*(client.generate(r) for r in requests))
    return [r.text for r in responses]


# --- the rule, without a server ----------------------------------------------------------------


def test_each_refusal_of_a_burst_lowers_the_limit_by_one_landing_on_what_the_server_serves() -> (
    None
):
    limit = AdaptiveLimit(16)
    tickets = [limit.sent() for _ in range(16)]
    for ticket in tickets[4:]:  # a 4-at-once server refuses 12 of them at once
        limit.finished(ticket, REFUSED)
    assert limit.limit == 4
    for ticket in tickets[:4]:
        limit.finished(ticket, ANSWERED)
    assert limit.limit == 4
    assert limit.paused_until == 0.0  # the server kept serving: no call waits for Retry-After


def test_the_limit_grows_by_one_a_round_only_while_every_slot_is_in_use() -> None:
    limit = AdaptiveLimit(8, AdaptivePolicy(hold_rounds=0))
    burst = [limit.sent() for _ in range(8)]
    for ticket in burst[2:]:
        limit.finished(ticket, REFUSED)
    for ticket in burst[:2]:
        limit.finished(ticket, ANSWERED)
    assert limit.limit == 2
    for _ in range(20):  # one call at a time while two are allowed: nothing learnt
        limit.finished(limit.sent(), ANSWERED)
    assert limit.limit == 2
    flowing = [limit.sent(), limit.sent()]  # the first sent alone: only the second is at 2
    for _ in range(4):  # then a round at 2 and a bit, each finished one replaced at once
        limit.finished(flowing.pop(0), ANSWERED)
        flowing.append(limit.sent())
    assert limit.limit == 3


def test_a_failed_probe_waits_twice_as_many_rounds_before_the_next() -> None:
    limit = AdaptiveLimit(8, AdaptivePolicy(hold_rounds=2))

    def full_rounds_until_growth() -> int:
        level = limit.limit
        flowing = [limit.sent() for _ in range(level)]
        finished = 0
        while limit.limit == level:  # each finished call replaced by the next at once
            limit.finished(flowing.pop(0), ANSWERED)
            flowing.append(limit.sent())
            finished += 1
        for ticket in flowing:
            limit.finished(ticket, ANSWERED)
        return finished // level

    probe = [limit.sent() for _ in range(8)]
    for ticket in probe[4:]:
        limit.finished(ticket, REFUSED)
    for ticket in probe[:4]:
        limit.finished(ticket, ANSWERED)
    first = full_rounds_until_growth()
    assert limit.limit == 5
    probe = [limit.sent() for _ in range(5)]
    limit.finished(probe[-1], REFUSED)  # the probe at 5 is refused
    for ticket in probe[:-1]:
        limit.finished(ticket, ANSWERED)
    assert limit.limit == 4
    assert full_rounds_until_growth() > first


def test_a_rise_in_latency_halves_the_limit() -> None:
    limit = AdaptiveLimit(8, AdaptivePolicy(min_samples=5, smoothing=0.5))
    flowing = [limit.sent() for _ in range(8)]
    for _ in range(80):
        limit.finished(flowing.pop(0), ANSWERED)
        flowing.append(limit.sent())
    assert limit.limit == 8
    for ticket in flowing:
        limit.finished(ticket, Outcome(ok=True, latency_s=2.0))
    assert limit.limit == 4
    assert limit.stats.halvings == 1  # one cut for the rise, not one per slow answer


def test_a_refusal_at_one_call_at_a_time_pauses_the_endpoint_for_its_retry_after() -> None:
    limit = AdaptiveLimit(1)
    limit.finished(limit.sent(), Outcome(ok=False, status=429, retry_after=2.5), now=100.0)
    assert limit.paused_until == 102.5
    assert limit.limit == 1


def test_errors_that_are_not_about_load_leave_the_limit_alone() -> None:
    limit = AdaptiveLimit(4)
    for status in (None, 400, 500):
        limit.finished(limit.sent(), Outcome(ok=False, status=status))
    assert limit.limit == 4


def test_fewer_slots_take_effect_as_calls_finish_and_more_go_to_waiting_calls_at_once() -> None:
    async def scenario() -> list[int]:
        slots = PromptSlots(2)
        request = LlmRequest.user("q")
        release = asyncio.Event()
        running: list[int] = []

        async def call() -> None:
            async with slots.hold(request):
                running.append(slots.held)
                await release.wait()

        tasks = [asyncio.create_task(call()) for _ in range(4)]
        await asyncio.sleep(0.01)
        seen = [slots.held]
        slots.resize(1)
        seen.append(slots.held)  # nothing in flight is cut off
        slots.resize(3)
        await asyncio.sleep(0.01)
        seen.append(slots.held)  # one more went at once
        release.set()
        await asyncio.gather(*tasks)
        return [*seen, slots.held]

    assert asyncio.run(scenario()) == [2, 2, 3, 0]


def test_the_cluster_limiter_adapts_to_the_outcomes_released_with_its_slots() -> None:
    async def scenario() -> tuple[int, int]:
        limiter = Limiter()
        generation = await limiter.begin("task")
        leases = [await limiter.acquire("judge:m", 8, "task", generation) for _ in range(8)]
        for lease in leases[3:]:
            await limiter.release(lease, REFUSED)
        after_refusals = (await limiter.limits())["judge:m"]
        for lease in leases[:3]:
            await limiter.release(lease, ANSWERED)
        more = [await limiter.acquire("judge:m", 8, "task", generation) for _ in range(3)]
        fourth = asyncio.create_task(limiter.acquire("judge:m", 8, "task", generation))
        await asyncio.sleep(0.01)
        waiting = 0 if fourth.done() else 1
        for lease in more:
            await limiter.release(lease, ANSWERED)
        await limiter.release(await fourth, ANSWERED)
        return after_refusals, waiting

    assert asyncio.run(scenario()) == (3, 1)


# --- over real HTTP ----------------------------------------------------------------------------


def test_the_limit_falls_under_429s_and_rises_again_when_they_stop() -> None:
    async def scenario(server: JudgeServer) -> tuple[int, int, int, list[str]]:
        async with _client(server, concurrency=8) as client:
            assert client.adaptive is not None
            first = await _ask(client, 40)
            under_limit = client.adaptive.limit
            server.max_concurrent = None  # the server stops refusing
            later = await _ask(client, 200, start=40)
            lowest = client.adaptive.stats.lowest
            return lowest, under_limit, client.adaptive.limit, first + later

    with JudgeServer(default="fine", latency_s=0.02, max_concurrent=2, retry_after="0") as server:
        lowest, under_limit, after, texts = asyncio.run(scenario(server))
        assert server.refused > 0
        assert max(server.served_at_once) <= 2
    assert texts == ["fine"] * 240
    assert lowest == 2  # what the server serves, never below
    assert under_limit <= 3  # there, or one above it while a probe is under way
    assert after > 4


def test_a_refusal_at_one_call_at_a_time_holds_every_call_back_for_its_retry_after() -> None:
    async def scenario(server: JudgeServer) -> None:
        async with _client(server, concurrency=1) as client:
            await _ask(client, 2)  # the first is refused; the second waits with it

    with JudgeServer(default="fine") as server:
        server.queue(Reply.error(429, headers={"Retry-After": "0.4"}))
        asyncio.run(scenario(server))
        arrivals = [r.at for r in server.completions]
    assert len(arrivals) == 3
    assert arrivals[1] - arrivals[0] >= 0.35  # not sent before the Retry-After passed


VERDICT = '{"reasoning": "same", "is_the_agent_response_valid": "valid"}'


def _invocations(count: int, prefix: str = "") -> list[Invocation]:
    return [
        Invocation.model_validate(
            {
                "invocation_id": f"i{n}",
                "user_content": {"role": "user", "parts": [{"text": f"{prefix}question {n}"}]},
                "final_response": {"role": "model", "parts": [{"text": f"answer {n}"}]},
            }
        )
        for n in range(count)
    ]


def test_no_invocation_is_not_evaluated_against_a_server_that_serves_four_at_once() -> None:
    invocations = _invocations(30)
    verdict = VERDICT

    async def scenario(server: JudgeServer) -> list[float | None]:
        # the default retry policy (4 attempts): adapting is what keeps every call within it
        async with _client(server, concurrency=16, retry=RetryPolicy()) as client:
            options = JudgeModelOptions(judge_model="openai:judge", num_samples=5)
            metric = FinalResponseMatchV2Metric(
                LlmAsAJudgeCriterion(threshold=0.5, judge_model_options=options),
                Judge(client, "final_response_match_v2", source="test"),
            )
            case = EvalCase(eval_id="limited", conversation=invocations)
            result = await metric.evaluate(invocations, invocations, case)
            return [r.score for r in result.per_invocation]

    with JudgeServer(
        default=verdict, latency_s=0.02, max_concurrent=4, retry_after="0.2"
    ) as server:
        scores = asyncio.run(scenario(server))
        refused, answered = server.refused, server.count() - server.refused
    assert scores == [1.0] * 30
    assert answered == 150
    assert refused < 0.05 * (answered + refused) + 12  # the first burst of 16 refuses 12


class _Method:
    """A method of a local object called as a Ray actor's is: ``method.remote(...)``."""

    def __init__(self, method: Callable[..., Awaitable[Any]]) -> None:
        self.remote = method


class _LocalActor:
    """A :class:`Limiter` reached the way a Ray worker reaches the cluster's actor."""

    def __init__(self, limiter: Limiter) -> None:
        self.acquire = _Method(limiter.acquire)
        self.release = _Method(limiter.release)


def test_a_cluster_limit_follows_the_429s_its_workers_clients_report() -> None:
    async def scenario(server: JudgeServer) -> tuple[dict[str, int], list[str]]:
        limiter = Limiter()
        limit = RemoteLimit(_LocalActor(limiter), "task", await limiter.begin("task"))
        clients = [  # two workers' clients, of two models on the one server
            LlmClient(
                OpenAICompatBackend(model, base_url=server.base_url, api_key=None),
                concurrency=8,
                retry=QUICK_RETRY,
                cache=None,
                limit=limit,
            )
            for model in ("openai:model-a", "openai:model-b")
        ]
        async with clients[0], clients[1]:
            texts = await asyncio.gather(_ask(clients[0], 30), _ask(clients[1], 30, start=30))
        return await limiter.limits(), [*texts[0], *texts[1]]

    with JudgeServer(default="fine", latency_s=0.02, max_concurrent=3, retry_after="0") as server:
        limits, texts = asyncio.run(scenario(server))
        key = f"judge:http://127.0.0.1:{server.base_url.split(':')[2].split('/')[0]}"
    assert texts == ["fine"] * 60
    assert list(limits) == [key]  # one limit for the server, not one per model
    # down from 8 to what the server serves (or one above it, a probe under way at the end)
    assert 3 <= limits[key] <= 4


def test_two_metrics_judged_by_two_models_on_one_server_stay_within_what_it_serves() -> None:
    def metric(model: str, name: str) -> FinalResponseMatchV2Metric:
        options = JudgeModelOptions(judge_model=model, num_samples=5)
        criterion = LlmAsAJudgeCriterion(threshold=0.5, judge_model_options=options)
        judge = pool.judge_for(name, criterion)
        assert isinstance(judge, Judge)
        return FinalResponseMatchV2Metric(criterion, judge)

    async def judged(found: FinalResponseMatchV2Metric, prefix: str) -> list[float | None]:
        invocations = _invocations(30, prefix)
        case = EvalCase(eval_id=prefix, conversation=invocations)
        result = await found.evaluate(invocations, invocations, case)
        return [r.score for r in result.per_invocation]

    async def scenario() -> list[list[float | None]]:
        metrics = [metric("openai:model-a", "first"), metric("openai:model-b", "second")]
        try:
            return list(await asyncio.gather(judged(metrics[0], "a "), judged(metrics[1], "b ")))
        finally:
            await pool.aclose()

    with JudgeServer(
        default=VERDICT, latency_s=0.02, max_concurrent=4, retry_after="0.2"
    ) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-not-a-key-0000"}
        pool = JudgePool(env=env, concurrency=8, cache=None, profile=None)
        scores = asyncio.run(scenario())
        refused, total, at_once = server.refused, server.count(), server.max_in_flight
        models = {r.body["model"] for r in server.completions if isinstance(r.body, dict)}
    assert scores == [[1.0] * 30, [1.0] * 30]  # every verdict evaluated
    assert models == {"model-a", "model-b"}
    assert len(pool.endpoints) == 1
    assert at_once <= 8  # the one ceiling: two limits would send up to 16 at once
    assert total - refused == 300
    assert refused < 0.05 * total


def test_a_fixed_limit_keeps_its_concurrency_under_429s() -> None:
    async def scenario(server: JudgeServer) -> tuple[list[str], int]:
        backend = OpenAICompatBackend("openai:judge", base_url=server.base_url, api_key=None)
        async with LlmClient(
            backend, concurrency=4, retry=PATIENT, cache=None, adaptive=False
        ) as client:
            assert client.adaptive is None
            texts = await _ask(client, 40)
            return texts, client.endpoint.slots.capacity

    with JudgeServer(default="fine", latency_s=0.02, max_concurrent=2, retry_after="0") as server:
        texts, capacity = asyncio.run(scenario(server))
        refused = server.refused
    assert texts == ["fine"] * 40
    assert capacity == 4  # never lowered
    assert refused > 10  # it kept sending 4 at once to a server that serves 2


def test_a_fixed_limit_reports_no_outcome_so_the_cluster_limit_stays_put() -> None:
    async def scenario(server: JudgeServer) -> dict[str, int]:
        limiter = Limiter()
        limit = RemoteLimit(_LocalActor(limiter), "task", await limiter.begin("task"))
        backend = OpenAICompatBackend("openai:judge", base_url=server.base_url, api_key=None)
        client = LlmClient(
            backend, concurrency=6, retry=PATIENT, cache=None, limit=limit, adaptive=False
        )
        async with client:
            await _ask(client, 30)
        return await limiter.limits()

    with JudgeServer(default="fine", latency_s=0.02, max_concurrent=2, retry_after="0") as server:
        limits = asyncio.run(scenario(server))
        assert server.refused > 0
    assert list(limits.values()) == [6]


def test_judge_concurrency_fixed_reaches_every_client_of_the_run() -> None:
    settings = RunOptions(judge_concurrency=3, judge_concurrency_fixed=True).judges()
    assert settings.adaptive is False
    assert RunOptions().judges().adaptive is True
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-test-not-a-key-0000"}
    pool = JudgePool(env=env, concurrency=settings.concurrency, adaptive=settings.adaptive)
    options = JudgeModelOptions(judge_model="openai:judge")
    judge = pool.judge_for("m", LlmAsAJudgeCriterion(threshold=0.5, judge_model_options=options))
    assert isinstance(judge, Judge) and isinstance(judge.client, LlmClient)
    assert judge.client.adaptive is None
    assert judge.client.endpoint.slots.capacity == 3
    asyncio.run(pool.aclose())


def test_a_cancelled_call_no_longer_counts_as_in_flight() -> None:
    async def scenario(server: JudgeServer) -> int:
        async with _client(server, concurrency=4) as client:
            assert client.adaptive is not None
            call = asyncio.create_task(client.generate(LlmRequest.user("slow")))
            while server.in_flight == 0:
                await asyncio.sleep(0.01)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
            return client.adaptive.in_flight

    with JudgeServer(default=Reply.hang(5.0)) as server:
        assert asyncio.run(scenario(server)) == 0
