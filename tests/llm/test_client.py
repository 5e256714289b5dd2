"""LlmClient against a real stub server: retries, timeouts, deadline, concurrency, the breaker."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest
from _judge_server import JudgeServer, Reply

from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.backends.scripted import ScriptedBackend
from assay.llm.base import (
    LlmCallError,
    LlmError,
    LlmRequest,
    LlmResponse,
    LlmUnavailableError,
    TokenUsage,
)
from assay.llm.cache import ResponseCache
from assay.llm.client import STOPPED, LlmClient, RetryPolicy, stopped_judge
from assay.llm.endpoint import Endpoints

from .conftest import FakeSleep, MakeClient

REQUEST = LlmRequest.user("Is the answer correct?")
KEY = "sk-test-SECRET123456"


async def _one(client: LlmClient, request: LlmRequest = REQUEST, sample: int = 0) -> LlmResponse:
    async with client:
        return await client.generate(request, sample=sample)


async def _error(client: LlmClient, request: LlmRequest = REQUEST) -> LlmError:
    async with client:
        try:
            await client.generate(request)
        except LlmError as error:
            return error
    raise AssertionError("the call did not fail")


def test_a_500_then_success_takes_two_requests_and_counts_one_retry(
    judge_server: JudgeServer, make_client: MakeClient
) -> None:
    judge_server.queue(Reply.error(500), Reply.ok("yes", prompt_tokens=11, completion_tokens=3))
    client = make_client()

    response = asyncio.run(_one(client))

    assert response.text == "yes"
    assert judge_server.count() == 2
    assert response.usage == TokenUsage(prompt_tokens=11, completion_tokens=3, calls=1, retries=1)
    assert client.stats.snapshot() == response.usage
    assert client.stats.failures == 0


def test_retry_after_is_waited_at_least(
    judge_server: JudgeServer, make_client: MakeClient, sleeps: FakeSleep
) -> None:
    judge_server.queue(Reply.error(429, headers={"Retry-After": "1"}), "yes")
    client = make_client(retry=RetryPolicy(initial_delay_s=0.01, max_delay_s=0.01))

    asyncio.run(_one(client))

    assert len(sleeps.delays) == 1
    assert sleeps.delays[0] >= 1.0


def test_backoff_grows_exponentially_with_full_jitter_under_the_cap(
    judge_server: JudgeServer, make_client: MakeClient, sleeps: FakeSleep
) -> None:
    judge_server.default = Reply.error(503)
    retry = RetryPolicy(max_attempts=6, initial_delay_s=1.0, multiplier=2.0, max_delay_s=5.0)
    client = make_client(retry=retry, rng=random.Random(3))

    asyncio.run(_error(client))

    expected_rng = random.Random(3)
    ceilings = [1.0, 2.0, 4.0, 5.0, 5.0]
    assert sleeps.delays == [expected_rng.uniform(0.0, c) for c in ceilings]


def test_an_attempt_past_the_timeout_is_cut_and_retried(
    judge_server: JudgeServer, make_client: MakeClient
) -> None:
    judge_server.default = Reply.hang(10)
    # 1 s, not less: on a loaded machine a shorter attempt can time out before its request
    # reaches the server, which then counts one request, not two.
    client = make_client(timeout_s=1.0, retry=RetryPolicy(max_attempts=2))

    started = time.monotonic()
    error = asyncio.run(_error(client))

    assert time.monotonic() - started < 8  # the 10 s hangs were cut, not waited out
    assert judge_server.count() == 2
    assert isinstance(error, LlmCallError)
    assert str(error).startswith("gave up after 2 attempts: timed out after 1 s")


def test_max_attempts_is_honoured_exactly(
    judge_server: JudgeServer, make_client: MakeClient
) -> None:
    judge_server.default = Reply.error(503)
    client = make_client(retry=RetryPolicy(max_attempts=3))

    error = asyncio.run(_error(client))

    assert judge_server.count() == 3
    assert str(error) == (
        f"gave up after 3 attempts: HTTP 503 from {judge_server.base_url} (service unavailable):"
        " stub error"
    )
    assert error.status == 503
    assert client.stats.retries == 2
    assert client.stats.failures == 1


def test_a_401_is_not_retried_and_never_shows_the_key(
    judge_server: JudgeServer, make_client: MakeClient, sleeps: FakeSleep
) -> None:
    judge_server.default = Reply.error(401, f"Incorrect API key provided: {KEY}")
    client = make_client(api_key=KEY)

    error = asyncio.run(_error(client))

    assert judge_server.count() == 1
    assert sleeps.delays == []
    assert error.status == 401
    assert "check OPENAI_API_KEY" in str(error)
    assert KEY not in str(error)
    assert "SECRET" not in repr(error)


def test_the_deadline_stops_a_retry_that_would_pass_it(
    judge_server: JudgeServer, make_client: MakeClient, sleeps: FakeSleep
) -> None:
    judge_server.default = Reply.error(429, headers={"Retry-After": "10"})
    client = make_client(retry=RetryPolicy(max_attempts=10, initial_delay_s=0.1, deadline_s=15))

    error = asyncio.run(_error(client))

    assert judge_server.count() == 2
    assert sleeps.delays == [10.0]
    assert "gave up after 2 attempts (a retry would pass the 15 s deadline)" in str(error)


def test_the_deadline_cuts_an_attempt_short(
    judge_server: JudgeServer, make_client: MakeClient
) -> None:
    judge_server.default = Reply.hang(300)
    # 1 s, not less: on a loaded 2-core CI machine a shorter deadline could expire before the
    # request even reached the server (seen with 0.25 s), and this test is about no retry.
    client = make_client(timeout_s=30, retry=RetryPolicy(max_attempts=5, deadline_s=1.0))

    started = time.monotonic()
    error = asyncio.run(_error(client))

    assert time.monotonic() - started < 60  # the 300 s hang was cut, not waited out
    assert judge_server.count() == 1
    assert "timed out after 1 s" in str(error)


def test_no_more_attempts_are_in_flight_than_the_concurrency(
    make_client: MakeClient, judge_server: JudgeServer
) -> None:
    judge_server.latency_s = 0.1
    client = make_client(concurrency=3)

    async def many() -> list[LlmResponse]:
        async with client:
            requests = [LlmRequest.user(f"question {i}") for i in range(12)]
            return list(await asyncio.gather(*(client.generate(r) for r in requests)))

    responses = asyncio.run(many())

    assert len(responses) == 12
    assert judge_server.max_in_flight == 3


def test_clients_of_two_models_sharing_an_endpoint_share_its_concurrency(
    judge_server: JudgeServer,
) -> None:
    judge_server.latency_s = 0.05
    endpoints = Endpoints(adaptive=False)
    clients = []
    for model in ("openai:model-a", "openai:model-b"):
        backend = OpenAICompatBackend(model, base_url=judge_server.base_url)
        clients.append(LlmClient(backend, endpoint=endpoints.for_backend(backend, 3)))

    async def many() -> None:
        async with clients[0], clients[1]:
            requests = [LlmRequest.user(f"question {i}") for i in range(8)]
            await asyncio.gather(*(c.generate(r) for r in requests for c in clients))

    asyncio.run(many())

    assert judge_server.count() == 16
    assert judge_server.max_in_flight == 3  # not 3 for each model
    assert clients[0].endpoint is clients[1].endpoint


def test_cached_answers_from_the_cache_alone_and_counts_a_hit(
    judge_server: JudgeServer, make_client: MakeClient, tmp_path: Path
) -> None:
    async def scenario(cache: ResponseCache) -> tuple[LlmResponse | None, LlmResponse | None]:
        async with make_client(cache=cache) as client:
            missing = await client.cached(LlmRequest.user("q"))
            await client.generate(LlmRequest.user("q"))
            found = await client.cached(LlmRequest.user("q"))
            assert (client.stats.calls, client.stats.cache_hits) == (1, 1)
            return missing, found

    judge_server.queue("first answer")
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        missing, found = asyncio.run(scenario(cache))
    assert missing is None
    assert found is not None and found.cached and found.text == "first answer"
    assert judge_server.count() == 1


def test_a_call_waiting_to_retry_does_not_hold_a_slot(
    judge_server: JudgeServer, make_client: MakeClient
) -> None:
    order: list[str] = []

    async def scenario() -> None:
        release = asyncio.Event()

        async def blocking_sleep(seconds: float) -> None:
            order.append("first waits")
            await release.wait()

        client = make_client(concurrency=1, sleep=blocking_sleep)
        judge_server.queue(Reply.error(500), "second", "first")
        async with client:
            first = asyncio.create_task(client.generate(LlmRequest.user("first")))
            while not order:
                await asyncio.sleep(0.01)
            second = await asyncio.wait_for(client.generate(LlmRequest.user("second")), 5)
            order.append(second.text)
            release.set()
            order.append((await first).text)

    asyncio.run(scenario())

    assert order == ["first waits", "second", "first"]


def test_a_non_retryable_error_after_one_attempt_is_raised_as_is(
    judge_server: JudgeServer, make_client: MakeClient
) -> None:
    judge_server.default = Reply.error(400, "bad temperature")
    error = asyncio.run(_error(make_client()))

    assert str(error) == f"HTTP 400 from {judge_server.base_url} (bad request): bad temperature"
    assert not error.retryable


def test_the_breaker_trips_after_calls_in_a_row_cannot_connect(
    make_client: MakeClient, closed_port: int, sleeps: FakeSleep
) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    client = make_client(base_url=base_url, retry=RetryPolicy(max_attempts=2), trip_after=2)

    async def scenario() -> list[LlmError]:
        errors: list[LlmError] = []
        async with client:
            for _ in range(4):
                try:
                    await client.generate(REQUEST)
                except LlmError as error:
                    errors.append(error)
        return errors

    errors = asyncio.run(scenario())

    assert len(errors) == 4
    assert str(errors[0]) == (
        f"gave up after 2 attempts: could not connect to {base_url}: connection refused"
    )
    assert isinstance(errors[1], LlmCallError)
    for later in errors[2:]:
        assert isinstance(later, LlmUnavailableError)
        assert str(later).startswith(
            f"judge openai:stub-judge stopped answering: {errors[1]} (2 calls"
        )
        assert str(later).endswith(STOPPED)
        assert stopped_judge(f"judge call failed (sample 0): {later}") == (
            "openai:stub-judge",
            "stopped answering",
            f"{errors[1]} (2 calls in a row could not reach it)",
        )
    assert len(sleeps.delays) == 2  # one wait per call that still tried; none after the trip
    assert client.stats.failures == 4


def test_a_success_resets_the_breaker(judge_server: JudgeServer, make_client: MakeClient) -> None:
    judge_server.queue(Reply.dropped(), "ok", Reply.dropped(), "ok")
    client = make_client(retry=RetryPolicy(max_attempts=1), trip_after=2)

    async def scenario() -> list[str]:
        seen: list[str] = []
        async with client:
            for _ in range(4):
                try:
                    seen.append((await client.generate(REQUEST)).text)
                except LlmError as error:
                    seen.append(type(error).__name__)
        return seen

    assert asyncio.run(scenario()) == ["LlmCallError", "ok", "LlmCallError", "ok"]


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_reaches_the_server_once_and_is_never_retried(
    judge_server: JudgeServer, make_client: MakeClient, sleeps: FakeSleep, status: int
) -> None:
    judge_server.default = Reply.error(status, "invalid api key")
    client = make_client(retry=RetryPolicy(max_attempts=4))

    async def scenario() -> list[LlmError]:
        errors: list[LlmError] = []
        async with client:
            for _ in range(5):
                try:
                    await client.generate(REQUEST)
                except LlmError as error:
                    errors.append(error)
        return errors

    errors = asyncio.run(scenario())

    assert judge_server.count() == 1
    assert sleeps.delays == []
    assert errors[0].status == status and "rejected the API key" in str(errors[0])
    for later in errors[1:]:
        assert isinstance(later, LlmUnavailableError)
        assert str(later).startswith("judge openai:stub-judge cannot be used: HTTP")
        assert str(later).endswith(STOPPED)


def test_an_auth_failure_a_backend_marks_retryable_is_still_not_retried(
    sleeps: FakeSleep,
) -> None:
    # A backend (or a gateway's Retry-After) may call a 401 transient: the key is still wrong.
    def rejected(request: LlmRequest) -> LlmError:
        return LlmCallError("token expired", retryable=True, status=401)

    backend = ScriptedBackend(rejected)
    client = LlmClient(backend, retry=RetryPolicy(max_attempts=4), sleep=sleeps, trip_after=0)

    async def scenario() -> None:
        async with client:
            for _ in range(2):
                with pytest.raises(LlmCallError):
                    await client.generate(REQUEST)

    asyncio.run(scenario())

    assert len(backend.requests) == 2  # the breaker is off: one attempt per call, no retries
    assert sleeps.delays == []


def test_errors_with_an_http_status_do_not_trip_the_breaker(
    judge_server: JudgeServer, make_client: MakeClient
) -> None:
    judge_server.default = Reply.error(503)
    client = make_client(retry=RetryPolicy(max_attempts=1), trip_after=2)

    async def scenario() -> list[LlmError]:
        errors: list[LlmError] = []
        async with client:
            for _ in range(3):
                try:
                    await client.generate(REQUEST)
                except LlmError as error:
                    errors.append(error)
        return errors

    errors = asyncio.run(scenario())

    assert [e.status for e in errors] == [503, 503, 503]
    assert judge_server.count() == 3


def test_an_error_message_from_the_backend_is_redacted(
    judge_server: JudgeServer, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-9f8e7d6c5b4a")
    judge_server.default = Reply.error(400, "unknown field 'tok-9f8e7d6c5b4a'")

    error = asyncio.run(_error(make_client()))

    assert "tok-9f8e7d6c5b4a" not in str(error)
    assert "unknown field '***'" in str(error)


def test_usage_is_counted_across_calls(judge_server: JudgeServer, make_client: MakeClient) -> None:
    judge_server.default = Reply.ok("fine", prompt_tokens=5, completion_tokens=2)
    client = make_client()

    async def two() -> None:
        async with client:
            await client.generate(REQUEST)
            await client.generate(REQUEST, sample=1)

    asyncio.run(two())

    assert client.stats.snapshot() == TokenUsage(prompt_tokens=10, completion_tokens=4, calls=2)
    assert client.model == "openai:stub-judge"


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"initial_delay_s": -1}, {"multiplier": 0.5}, {"deadline_s": 0}],
)
def test_a_retry_policy_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
