"""Judge calls through OpenAI's batch API (``--judge-batch``), over real HTTP against a stub of
the files and batches endpoints on 127.0.0.1, with a real response cache and run history."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from _batch_server import BatchServer, GeminiBatchServer, Plan

from assay.history.store import HistoryStore
from assay.llm.backends.gemini import GeminiBackend
from assay.llm.backends.gemini_batch import GeminiBatchApi
from assay.llm.backends.openai_batch import OpenAIBatchApi, batch_api
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.backends.scripted import ScriptedBackend
from assay.llm.base import LlmBackend, LlmCallError, LlmRequest, LlmResponse
from assay.llm.batch import (
    BatchingClient,
    BatchProgress,
    BatchRecords,
    BatchSettings,
    batch_of,
)
from assay.llm.batch_pool import BatchJudgePool
from assay.llm.cache import ResponseCache
from assay.llm.client import LlmClient, RetryPolicy

FAST = BatchSettings(idle_s=0.05, poll_s=0.02)


@pytest.fixture
def server() -> Iterator[BatchServer]:
    with BatchServer() as running:
        yield running


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "cache.sqlite") as opened:
        yield opened


def batching(
    server: BatchServer,
    cache: ResponseCache,
    *,
    records: BatchRecords | None = None,
    attempts: int = 3,
    progress: list[BatchProgress] | None = None,
) -> BatchingClient:
    backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
    return BatchingClient(
        backend,
        OpenAIBatchApi(backend),
        records=records,
        settings=FAST,
        on_progress=None if progress is None else progress.append,
        cache=cache,
        retry=RetryPolicy(max_attempts=attempts, initial_delay_s=0.0),
    )


def questions(count: int) -> list[LlmRequest]:
    return [LlmRequest.user(f"is answer {n} right?") for n in range(count)]


async def ask_all(client: LlmClient, requests: list[LlmRequest]) -> list[LlmResponse]:
    return list(await asyncio.gather(*(client.generate(r) for r in requests)))


def test_cache_misses_go_as_one_batch_whose_answers_land_in_the_cache(
    server: BatchServer, cache: ResponseCache
) -> None:
    server.answer = lambda body: "yes " + body["messages"][-1]["content"]
    requests = questions(5)
    progress: list[BatchProgress] = []

    async def run() -> tuple[list[LlmResponse], list[LlmResponse]]:
        async with batching(server, cache, progress=progress) as client:
            first = await ask_all(client, [*requests, requests[0]])  # the same request twice
        async with batching(server, cache) as again:
            return first, await ask_all(again, requests)

    first, second = asyncio.run(run())

    assert [r.text for r in first] == [f"yes {r.messages[-1].content}" for r in requests] + [
        f"yes {requests[0].messages[-1].content}"
    ]
    assert server.batches_created == 1
    (batch_id,) = server.batches
    assert len(server.lines(batch_id)) == 5
    assert server.completions == 0
    assert {batch_of(r) for r in first} == {batch_id}
    assert all(r.cached for r in second)
    assert {batch_of(r) for r in second} == {None}
    assert [r.text for r in second] == [r.text for r in first[:5]]
    assert any(p.running == 1 for p in progress)
    assert (progress[-1].submitted, progress[-1].running, progress[-1].done) == (1, 0, 1)


def test_failed_lines_are_retried_as_ordinary_calls(
    server: BatchServer, cache: ResponseCache
) -> None:
    server.plan(Plan(fail=frozenset({1, 3})))

    async def run() -> tuple[list[LlmResponse], BatchProgress]:
        async with batching(server, cache) as client:
            return await ask_all(client, questions(5)), client.progress

    answers, progress = asyncio.run(run())

    assert [a.text for a in answers] == ["yes"] * 5
    assert [batch_of(a) is not None for a in answers] == [True, False, True, False, True]
    assert server.batches_created == 1
    assert server.completions == 2
    assert (progress.answered, progress.retried) == (3, 2)


def test_an_expired_batch_keeps_its_answers_and_retries_the_lines_it_did_not_reach(
    server: BatchServer, cache: ResponseCache
) -> None:
    server.plan(Plan(expire_after=2))

    async def run() -> list[LlmResponse]:
        async with batching(server, cache) as client:
            return await ask_all(client, questions(4))

    answers = asyncio.run(run())

    assert [a.text for a in answers] == ["yes"] * 4
    assert server.completions == 2
    (batch,) = server.batches.values()
    assert batch.status == "expired"


def test_a_failed_line_with_no_attempt_left_fails_with_the_batchs_reason(
    server: BatchServer, cache: ResponseCache
) -> None:
    server.plan(Plan(fail=frozenset({0})))

    async def run() -> LlmCallError:
        async with batching(server, cache, attempts=1) as client:
            with pytest.raises(LlmCallError) as caught:
                await client.generate(questions(1)[0])
            return caught.value

    error = asyncio.run(run())

    assert "the batch failed this line (server_error: The model failed this request.)" in str(error)
    assert "no attempt left for an ordinary call (1 allowed)" in str(error)
    assert server.completions == 0


def test_a_server_without_a_batch_api_gets_ordinary_calls_and_is_not_asked_again(
    server: BatchServer, cache: ResponseCache
) -> None:
    server.no_batch_api = True

    async def run() -> tuple[list[LlmResponse], list[LlmResponse]]:
        async with batching(server, cache) as client:
            first = await ask_all(client, questions(2))
            later = await ask_all(client, questions(4)[2:])
            return first, later

    first, later = asyncio.run(run())

    assert [a.text for a in first + later] == ["yes"] * 4
    assert server.completions == 4
    assert server.batches_created == 0


def test_a_run_killed_mid_poll_resumes_by_polling_its_batch_not_submitting_again(
    server: BatchServer, cache: ResponseCache, tmp_path: Path
) -> None:
    server.plan(Plan(held=True))
    history = tmp_path / "history.sqlite"
    requests = questions(3)

    async def killed() -> None:
        with HistoryStore(history) as store:
            client = batching(server, cache, records=store.batches)
            asking = asyncio.ensure_future(ask_all(client, requests))
            while server.polls < 2:
                await asyncio.sleep(0.01)
            asking.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asking
            await client.aclose()

    asyncio.run(killed())
    with HistoryStore(history) as store:
        (left_open,) = store.batches.pending(f"openai {server.base_url}", "openai:judge")
    assert len(left_open.keys) == 3
    server.release(left_open.batch_id)

    async def resumed() -> list[LlmResponse]:
        with HistoryStore(history) as store:
            async with batching(server, cache, records=store.batches) as client:
                return await ask_all(client, requests)

    answers = asyncio.run(resumed())

    assert [a.text for a in answers] == ["yes"] * 3
    assert server.batches_created == 1
    assert server.completions == 0
    with HistoryStore(history) as store:
        assert store.batches.pending(f"openai {server.base_url}", "openai:judge") == []


def test_a_pool_batches_judges_whose_server_has_a_batch_api_but_never_the_simulated_user(
    server: BatchServer, cache: ResponseCache
) -> None:
    def backend(model: str) -> LlmBackend:
        if model.startswith("openai:"):
            return OpenAICompatBackend(model, base_url=server.base_url)
        return ScriptedBackend("yes", model=model)

    async def run() -> tuple[object, object, object]:
        pool = BatchJudgePool(batch_api=batch_api, settings=FAST, backend_factory=backend)
        try:
            pool.override = "openai:judge"
            batched = pool.judge_for("a", None)
            user = pool.judge_for("user_simulator", None)
            pool.override = "scripted:judge"
            plain = pool.judge_for("b", None)
            return batched, user, plain
        finally:
            await pool.aclose()

    batched, user, plain = asyncio.run(run())

    batching_client = getattr(batched, "client", None)
    assert isinstance(batching_client, BatchingClient)
    user_client = getattr(user, "client", None)
    assert isinstance(user_client, LlmClient) and not isinstance(user_client, BatchingClient)
    assert user_client.backend is batching_client.backend
    plain_client = getattr(plain, "client", None)
    assert isinstance(plain_client, LlmClient)
    assert not isinstance(plain_client, BatchingClient)


GEMINI_KEY = "AIzaSyD-not-a-real-key-0123456789abcdefg"


def test_gemini_judge_calls_go_through_gemini_batch_mode_and_failed_lines_are_retried(
    cache: ResponseCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    requests = [
        LlmRequest.user(f"is answer {n} right?", system="You grade.", temperature=0.0)
        for n in range(3)
    ]
    with GeminiBatchServer(answer=lambda body: "yes") as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        server.plan(Plan(fail=frozenset({1})))

        async def run() -> list[LlmResponse]:
            backend = GeminiBackend("gemini-2.5-flash", env={"GOOGLE_API_KEY": GEMINI_KEY})
            api = batch_api(backend)
            assert isinstance(api, GeminiBatchApi)
            async with BatchingClient(
                backend, api, settings=FAST, cache=cache, retry=RetryPolicy(max_attempts=2)
            ) as client:
                return await ask_all(client, requests)

        answers = asyncio.run(run())
        (sent,) = server.batches.values()

    assert [a.text for a in answers] == ["yes"] * 3
    assert [batch_of(a) is not None for a in answers] == [True, False, True]
    assert answers[0].usage.prompt_tokens == 10
    assert server.completions == 1
    assert [line["request"]["contents"][0]["parts"][0]["text"] for line in sent["requests"]] == [
        r.messages[-1].content for r in requests
    ]
    assert all(line["metadata"]["assay_key"] for line in sent["requests"])
